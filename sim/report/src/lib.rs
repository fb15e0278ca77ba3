//! # loopsim-report
//!
//! What loopsim's results are and how they read: a run's metrics and summary, Markdown
//! reports, plots, a sweep's definition and aggregates, check cases with their text and JUnit
//! reports, baselines and the gate, and output files written all or nothing. Nothing here
//! runs the simulator in bulk: `loopsim-runner` does, and hands its results here.

pub mod chart;
pub mod check;
pub mod comparison;
pub mod markdown;
pub mod metrics;
pub mod output;
pub mod plots;
pub mod range;
pub mod report_files;
pub mod shell;
pub mod sweep;
pub mod terminal;
