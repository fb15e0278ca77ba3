//! # loopsim
//!
//! The `loopsim` command as a library: its command line ([`args`]), each command
//! (`cmd/`, one module each), and [`dispatch`], which runs the command a line asks for. The
//! binary (`main.rs`) parses, sets up the process (signals, the allocator) and maps the
//! result to an exit code with [`exit_code`].
//!
//! ```
//! use clap::Parser;
//!
//! let cli = loopsim::args::Cli::try_parse_from(["loopsim", "codes", "--format", "json"]).unwrap();
//! loopsim::dispatch(&cli).unwrap();
//! loopsim::flush();
//! // Bad input is refused before anything runs.
//! assert!(loopsim::args::Cli::try_parse_from(["loopsim", "sweep", "--seeds", "5..1"]).is_err());
//! ```

use std::process::ExitCode;

use anyhow::Result;
use loopsim_world::scenario::Scenario;
use loopsim_world::sim::{RunOptions, RunSummary, run};
use loopsim_world::trace::{SharedBuf, TraceWriter};

pub mod args;
mod cmd;
mod inputs;
mod out;
mod suite;

use args::{Cli, Command};
pub use out::{BrokenPipe, CheckFailed, flush, set_quiet};

/// Exit code for bad input or usage.
pub const BAD_INPUT: u8 = 2;
/// Exit code for a failed expectation or check.
pub const FAILED: u8 = 1;

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

/// Runs the command the line asked for.
pub fn dispatch(cli: &Cli) -> Result<()> {
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
            output,
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
            format: output.format,
            compare_profiles,
            compare_configs,
            guard_engine,
        }),
        Command::Replay {
            trace,
            engine,
            output,
            out,
        } => cmd::replay::run(trace, engine, output.format, out.as_ref()),
        Command::Import {
            database,
            session,
            list,
            agent_log,
            prices,
            profile,
            out,
            output,
        } => cmd::import::run(
            database,
            session.as_deref(),
            *list,
            agent_log.as_deref(),
            prices.as_deref(),
            *profile,
            out.as_ref(),
            output.format,
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
            output,
        } => cmd::sweep::run(cmd::sweep::Args {
            paths: scenarios,
            grid,
            seeds,
            profiles,
            platform: platform.as_deref(),
            config: config.as_deref(),
            out: out.as_ref(),
            shard: *shard,
            suite: suite.dir.as_deref(),
            format: output.format,
        }),
        Command::Merge {
            shards,
            out,
            output,
        } => cmd::sweep::merge(shards, out, output.format),
        Command::Compare {
            paths,
            profiles,
            out,
            suite,
            output,
        } => cmd::compare::run(cmd::compare::Args {
            paths,
            profiles,
            out: out.as_deref(),
            suite: suite.dir.as_deref(),
            format: output.format,
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
            output,
        } => cmd::explore::run(cmd::explore::Args {
            paths,
            seeds,
            expectations: *expectations,
            faults: *faults,
            shrink: *shrink,
            config: config.as_deref(),
            profile: *profile,
            suite: suite.dir.as_deref(),
            format: output.format,
        }),
        Command::Check {
            paths,
            junit,
            coverage,
            save_baseline,
            config,
            suite,
            output,
        } => cmd::check::run_check(cmd::check::CheckArgs {
            paths,
            coverage: *coverage,
            junit: junit.as_ref(),
            save: save_baseline.as_ref(),
            config: config.as_deref(),
            suite: suite.dir.as_deref(),
            format: output.format,
        }),
        Command::Gate {
            baseline,
            max_increase,
            fail_on_any_change,
            update,
            bmf,
            config,
            suite,
            output,
        } => cmd::check::run_gate(cmd::check::GateArgs {
            baseline,
            max_increase: *max_increase,
            any: *fail_on_any_change,
            update: *update,
            bmf: bmf.as_ref(),
            config: config.as_deref(),
            suite: suite.as_deref(),
            format: output.format,
        }),
        Command::Diff {
            scenario,
            live: Some(runtime),
            engine_args,
            seed,
            timeout,
            output,
            ..
        } => cmd::live::diff(
            scenario,
            runtime,
            engine_args,
            *seed,
            *timeout,
            output.format,
        ),
        Command::Diff {
            scenario,
            engines,
            engine_args,
            seed,
            output,
            ..
        } => cmd::diff::run(scenario, engines, engine_args, *seed, output.format),
        Command::Live {
            scenario,
            runtime,
            engine_args,
            seed,
            out,
            timeout,
            output,
        } => cmd::live::live(
            scenario,
            runtime,
            engine_args,
            *seed,
            out.as_ref(),
            *timeout,
            output.format,
        ),
        Command::Serve {
            scenario,
            seed,
            listen,
            engine_args,
        } => cmd::live::serve(scenario, engine_args, *seed, listen),
        Command::List { dir, output } => cmd::list::run(dir.as_deref(), output.format),
        Command::Guard {
            profile,
            config,
            platform,
        } => cmd::guard::run(*profile, config.as_deref(), platform.as_deref()),
        Command::Codes { output } => cmd::codes::run(output.format),
        Command::Validate {
            files,
            profile,
            output,
        } => cmd::validate::run(files, *profile, output.format),
        Command::Init { path, force } => cmd::init::run(path, *force),
        Command::Completions { shell } => cmd::manual::completions(*shell),
        Command::Man { out } => cmd::manual::man(out),
    }
}

/// The process's exit code for a command's result, its error printed: 0 done (also when the
/// reader closed stdout), 1 a check or expectation failed, 2 bad input or usage.
pub fn exit_code(result: Result<()>) -> ExitCode {
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
