//! Printing: reports go to stdout unless `--quiet`; a reader that closes the pipe
//! (`loopsim list | head -1`) ends the command quietly; warnings go to stderr.

use std::fmt;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static QUIET: AtomicBool = AtomicBool::new(false);

pub fn set_quiet(q: bool) {
    QUIET.store(q, Ordering::Relaxed);
}

/// Stdout was closed by its reader while a stream (`guard`) was answering: nothing more to
/// say, and not an error.
#[derive(Debug)]
pub struct BrokenPipe;

impl fmt::Display for BrokenPipe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("stdout closed")
    }
}

impl std::error::Error for BrokenPipe {}

/// A check or expectation failed (exit 1), as opposed to bad input (exit 2).
#[derive(Debug)]
pub struct CheckFailed(pub String);

impl fmt::Display for CheckFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CheckFailed {}

/// Stdout's reader has gone: later output is dropped, and the command finishes (its files,
/// its exit code) as if it had been read.
static CLOSED: AtomicBool = AtomicBool::new(false);

fn write(args: fmt::Arguments<'_>) -> anyhow::Result<()> {
    if CLOSED.load(Ordering::Relaxed) {
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    match out.write_fmt(args) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            CLOSED.store(true, Ordering::Relaxed);
            Ok(())
        }
        Err(e) => Err(anyhow::Error::new(e).context("writing to stdout")),
        Ok(()) => Ok(()),
    }
}

/// A report line: printed unless `--quiet`.
pub fn text(args: fmt::Arguments<'_>) -> anyhow::Result<()> {
    if QUIET.load(Ordering::Relaxed) {
        return Ok(());
    }
    write(args)
}

/// Output the user asked for in a format (JSON): always printed.
pub fn data(args: fmt::Arguments<'_>) -> anyhow::Result<()> {
    write(args)
}

/// Flushes stdout, ignoring a closed pipe.
pub fn flush() {
    let _ = std::io::stdout().lock().flush();
}

/// A warning on stderr.
pub fn warn(message: impl fmt::Display) {
    let _ = writeln!(std::io::stderr().lock(), "loopsim: warning: {message}");
}

/// Prints a report line (unless `--quiet`); `?` ends the command on a closed pipe.
macro_rules! say {
    () => { $crate::out::text(format_args!("\n"))? };
    ($($t:tt)*) => { $crate::out::text(format_args!("{}\n", format_args!($($t)*)))? };
}

/// Prints without a newline (unless `--quiet`).
macro_rules! say_raw {
    ($($t:tt)*) => { $crate::out::text(format_args!($($t)*))? };
}

/// Prints JSON the user asked for (even with `--quiet`).
macro_rules! emit {
    ($($t:tt)*) => { $crate::out::data(format_args!("{}\n", format_args!($($t)*)))? };
}

pub(crate) use {emit, say, say_raw};
