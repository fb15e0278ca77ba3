//! The simulator's behaviour end to end: scenarios, incidents, each runtime's governance, provider
//! and tool faults, Hermes's compaction and compression, exploration and coverage.
//!
//! The integration tests live in one binary per area, so each area compiles and links once.

#[path = "../common/mod.rs"]
mod common;

mod compaction;
mod compression;
mod coverage;
mod edge_cases;
mod explore;
mod faults;
mod incidents;
mod invalid_calls;
mod react_loop;
mod runtimes;
mod simulator;
mod transport;
