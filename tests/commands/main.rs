//! The `loopsim` commands and their inputs and outputs: exit codes, files, settings, reports,
//! check and gate, the guard's input, import, fuzzing, and the docs.
//!
//! The integration tests live in one binary per area, so each area compiles and links once.

#[path = "../common/mod.rs"]
mod common;

mod cli;
mod docs;
mod fuzz;
mod gate;
mod guard_chunks;
mod import;
mod inputs;
mod reports;
mod settings;
