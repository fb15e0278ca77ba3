//! # loopsim-runner
//!
//! What organises many runs of the simulator: sweeps over engine settings ([`sweep`]),
//! regression checks of every scenario's expectations ([`check`]), and exploration of many
//! seeds with the simulator's invariants on, with shrinking of what it finds ([`explore`]).
//! Runs go in parallel on rayon's pool and come back in a fixed order, so nothing depends on
//! the thread count. What the results are and how they read (metrics, summaries, Markdown,
//! JUnit, plots) is `loopsim-report`'s; the command line wires the two.
//!
//! ```
//! use loopsim_world::scenario::Scenario;
//!
//! let sc = Scenario::parse(
//!     r#"name = "tiny"
//! description = "one search, then an answer"
//! provenance = "doc example"
//! profile = "hermes-main"
//! label = "healthy"
//! [models.m]
//! latency_s = 2
//! output_tokens = 50
//! [tools.web_search]
//! latency_s = 1
//! result = '{"hits": ["{counter}"]}'
//! [agents.parent]
//! model = "m"
//! script = [{ calls = [{ tool = "web_search", args = { q = "x" } }] }, { answer = "done" }]
//! "#,
//!     "tiny.toml",
//! )
//! .unwrap();
//! let cases = loopsim_runner::check::run_checks(std::slice::from_ref(&sc), None).unwrap();
//! // One run (the scenario's own seed and profile); a healthy scenario must not be stopped.
//! assert_eq!(cases.len(), 1);
//! assert!(cases[0].passed());
//! ```

pub mod check;
pub mod explore;
pub mod sweep;
