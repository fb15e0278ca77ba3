//! loopsim against the real Python packages: the guard and the engine bridge against Hermes's
//! controller, and live mode through each runtime's own loop.
//!
//! The integration tests live in one binary per area, so each area compiles and links once.

#[path = "../common/mod.rs"]
mod common;

mod bridge;
mod conformance;
mod live;
