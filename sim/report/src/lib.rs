//! # loopsim-report
//!
//! What loopsim writes: the run summary a person reads and output files written atomically.
//! (Cost reports, plots and sweeps come with their issue.)

pub mod check;
pub mod explore;
pub mod markdown;
pub mod metrics;
pub mod output;
pub mod plot;
pub mod plots;
pub mod range;
pub mod report_files;
pub mod runtimes;
pub mod shell;
pub mod summary;
pub mod sweep;
