//! The `loopsim` command: parses the line, sets up the process and runs the command through
//! the library (`lib.rs`), which holds every command.

use std::process::ExitCode;

use clap::Parser;
use loopsim::args::Cli;

/// glibc's allocator serialises frees of memory allocated on another thread, which a sweep
/// does for every row; mimalloc does not (see the sweep bench).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                loopsim::BAD_INPUT
            } else {
                0
            });
        }
    };
    loopsim::set_quiet(cli.quiet);
    // A file-size limit (ulimit -f) is a write error like a full disk, so the outputs are
    // rolled back, instead of a signal that kills the process mid-write.
    // SAFETY: setting a signal's disposition to "ignore" before any thread starts.
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    // Ctrl-C, SIGTERM or SIGHUP: no temporary of an unfinished output stays behind.
    let _ = ctrlc::set_handler(|| {
        loopsim_live::runtime_run::kill_children();
        loopsim_world::temporaries::remove_all();
        std::process::exit(130);
    });
    let result = loopsim::dispatch(&cli);
    loopsim::flush();
    loopsim::exit_code(result)
}
