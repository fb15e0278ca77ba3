//! The `loopsim` command: argument parsing and wiring only. Each command lives in `cmd/`.

use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;
use loopsim_world::scenario::Scenario;
use loopsim_world::sim::{RunOptions, RunSummary, run};
use loopsim_world::trace::{SharedBuf, TraceWriter};

mod args;
mod cmd;
mod inputs;
mod out;
mod suite;

use args::{Cli, Command};
use out::{BrokenPipe, CheckFailed};

/// glibc's allocator serialises frees of memory allocated on another thread, which a sweep
/// does for every row; mimalloc does not (see the sweep bench).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Exit code for bad input or usage.
const BAD_INPUT: u8 = 2;
/// Exit code for a failed expectation or check.
const FAILED: u8 = 1;

/// Runs once, keeping the trace in memory.
pub fn run_to_memory(sc: &Scenario, opts: &RunOptions) -> Result<(RunSummary, Vec<u8>)> {
    let buf = SharedBuf::default();
    let summary = run(sc, opts, TraceWriter::to_writer(Box::new(buf.clone()))).map_err(
        |e| -> anyhow::Error {
            match e {
                // A broken invariant is loopsim's failure, not the input's: exit 1.
                loopsim_world::sim::RunError::Invariant(v) => {
                    out::CheckFailed(format!("{}: {v}", sc.path)).into()
                }
                e => e.into(),
            }
        },
    )?;
    Ok((summary, buf.bytes()))
}

fn dispatch(cli: &Cli) -> Result<()> {
    match &cli.command {
        Command::Run {
            scenario,
            engine,
            seed,
            out,
            schedule,
            check_determinism,
            check_invariants,
            seeded_faults,
            format,
            compare_profiles,
            compare_configs,
            guard_engine,
        } => cmd::run::run(cmd::run::Args {
            path: scenario,
            engine,
            seed: *seed,
            out: out.as_ref(),
            schedule: *schedule,
            check: *check_determinism,
            check_invariants: *check_invariants,
            seeded_faults: *seeded_faults,
            format: *format,
            compare_profiles,
            compare_configs,
            guard_engine,
        }),
        Command::Replay {
            trace,
            engine,
            format,
            out,
        } => cmd::replay::run(trace, engine, *format, out.as_ref()),
        Command::Import {
            database,
            session,
            list,
            agent_log,
            prices,
            profile,
            out,
            format,
        } => cmd::import::run(
            database,
            session.as_deref(),
            *list,
            agent_log.as_deref(),
            prices.as_deref(),
            *profile,
            out.as_ref(),
            *format,
        ),
        Command::Sweep {
            scenarios,
            grid,
            seeds,
            profiles,
            platform,
            config,
            out,
            shard,
            suite,
            format,
        } => cmd::sweep::run(cmd::sweep::Args {
            paths: scenarios,
            grid,
            seeds,
            profiles,
            platform: platform.as_deref(),
            config: config.as_deref(),
            out: out.as_ref(),
            shard: shard.as_deref(),
            suite: suite.as_deref(),
            format: *format,
        }),
        Command::Merge {
            shards,
            out,
            format,
        } => cmd::sweep::merge(shards, out, *format),
        Command::Compare {
            paths,
            profiles,
            out,
            suite,
            format,
        } => cmd::compare::run(cmd::compare::Args {
            paths,
            profiles,
            out: out.as_deref(),
            suite: suite.as_deref(),
            format: *format,
        }),
        Command::Explore {
            paths,
            seeds,
            expectations,
            faults,
            shrink,
            config,
            profile,
            suite,
            format,
        } => cmd::explore::run(cmd::explore::Args {
            paths,
            seeds,
            expectations: *expectations,
            faults: *faults,
            shrink: *shrink,
            config: config.as_deref(),
            profile: *profile,
            suite: suite.as_deref(),
            format: *format,
        }),
        Command::Check {
            paths,
            junit,
            coverage,
            save_baseline,
            config,
            suite,
            format,
        } => cmd::check::run_check(cmd::check::CheckArgs {
            paths,
            coverage: *coverage,
            junit: junit.as_ref(),
            save: save_baseline.as_ref(),
            config: config.as_deref(),
            suite: suite.as_deref(),
            format: *format,
        }),
        Command::Gate {
            baseline,
            max_increase,
            fail_on_any_change,
            update,
            bmf,
            config,
            suite,
            format,
        } => cmd::check::run_gate(cmd::check::GateArgs {
            baseline,
            max_increase,
            any: *fail_on_any_change,
            update: *update,
            bmf: bmf.as_ref(),
            config: config.as_deref(),
            suite: suite.as_deref(),
            format: *format,
        }),
        Command::Diff {
            scenario,
            live: Some(runtime),
            engine_args,
            seed,
            timeout,
            format,
            ..
        } => cmd::live::diff(scenario, runtime, engine_args, *seed, *timeout, *format),
        Command::Diff {
            scenario,
            engines,
            engine_args,
            seed,
            format,
            ..
        } => cmd::diff::run(scenario, engines, engine_args, *seed, *format),
        Command::Live {
            scenario,
            runtime,
            engine_args,
            seed,
            out,
            timeout,
            format,
        } => cmd::live::live(
            scenario,
            runtime,
            engine_args,
            *seed,
            out.as_ref(),
            *timeout,
            *format,
        ),
        Command::Serve {
            scenario,
            seed,
            listen,
            engine_args,
        } => cmd::live::serve(scenario, engine_args, *seed, listen),
        Command::List { dir, format } => cmd::list::run(dir.as_deref(), *format),
        Command::Guard {
            profile,
            config,
            platform,
        } => cmd::guard::run(*profile, config.as_deref(), platform.as_deref()),
        Command::Codes { format } => cmd::codes::run(*format),
        Command::Validate {
            files,
            profile,
            format,
        } => cmd::validate::run(files, *profile, *format),
        Command::Init { path, force } => cmd::init::run(path, *force),
        Command::Completions { shell } => cmd::manual::completions(*shell),
        Command::Man { out } => cmd::manual::man(out),
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { BAD_INPUT } else { 0 });
        }
    };
    out::set_quiet(cli.quiet);
    // A file-size limit (ulimit -f) is a write error like a full disk, so the outputs are
    // rolled back, instead of a signal that kills the process mid-write.
    // SAFETY: setting a signal's disposition to "ignore" before any thread starts.
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    // Ctrl-C, SIGTERM or SIGHUP: no temporary of an unfinished output stays behind.
    let _ = ctrlc::set_handler(|| {
        loopsim_live::bridge_run::kill_children();
        loopsim_world::temporaries::remove_all();
        std::process::exit(130);
    });
    let result = dispatch(&cli);
    out::flush();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // The reader closed the pipe: it has what it wanted.
        Err(e) if e.downcast_ref::<BrokenPipe>().is_some() => ExitCode::SUCCESS,
        Err(e) if e.downcast_ref::<CheckFailed>().is_some() => {
            eprintln!("loopsim: {e:#}");
            ExitCode::from(FAILED)
        }
        Err(e) => {
            eprintln!("loopsim: error: {e:#}");
            ExitCode::from(BAD_INPUT)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn every_argument_has_help() {
        fn walk(c: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for a in c.get_arguments() {
                let id = a.get_id().as_str();
                if id == "help" || id == "version" {
                    continue;
                }
                if a.get_help().is_none() && a.get_long_help().is_none() {
                    missing.push(format!("{path} {id}"));
                }
            }
            for s in c.get_subcommands() {
                if s.get_about().is_none() {
                    missing.push(format!("{path} {} (the command)", s.get_name()));
                }
                walk(s, &format!("{path} {}", s.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&Cli::command(), "loopsim", &mut missing);
        assert!(missing.is_empty(), "without help text: {missing:?}");
        Cli::command().debug_assert();
    }

    #[test]
    fn the_built_in_suite_is_the_scenarios_folder() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
        let mut on_disk: Vec<(String, String)> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .map(|p| {
                (
                    p.file_stem().unwrap().to_string_lossy().into_owned(),
                    std::fs::read_to_string(&p).unwrap(),
                )
            })
            .collect();
        on_disk.sort();
        let built_in: Vec<(String, String)> = suite::SUITE
            .iter()
            .map(|(n, t)| (n.to_string(), t.to_string()))
            .collect();
        assert_eq!(
            built_in, on_disk,
            "sim/cli/suite.rs lists every scenario file"
        );
        for (name, text) in suite::SUITE {
            let sc = Scenario::parse(text, name).unwrap();
            assert_eq!(sc.file.name, *name, "a scenario is named after its file");
        }
    }

    #[test]
    fn the_init_template_loads() {
        let sc = Scenario::parse(cmd::init::TEMPLATE, "scenario.toml").unwrap();
        assert!(sc.warnings.is_empty());
    }
}
