//! # loopsim-world
//!
//! The deterministic world the engine runs in: virtual time, a seeded discrete-event
//! scheduler, named random streams, scenario files, the fake model and tools, agents and their
//! children, the human, and JSONL traces. A scenario and a seed give the same trace, byte for
//! byte, every time.
//!
//! ```
//! use loopsim_world::scenario::Scenario;
//! use loopsim_world::sim::{run, RunOptions};
//! use loopsim_world::trace::TraceWriter;
//!
//! let sc = Scenario::parse(r#"
//! name = "demo"
//! description = "one read, then an answer"
//! provenance = "doc example"
//! profile = "hermes-main"
//! [models.m]
//! latency_s = 2.0
//! output_tokens = 50
//! [tools.read_file]
//! latency_s = 0.5
//! [agents.parent]
//! model = "m"
//! context_tokens = 1000
//! script = [{ calls = [{ tool = "read_file" }] }, { answer = "done" }]
//! "#, "demo.toml").unwrap();
//! let s = run(&sc, &RunOptions::default(), TraceWriter::hash_only()).unwrap();
//! assert_eq!(s.total.model_calls, 2);
//! assert_eq!(s.parent_exit_reason, "text_response(finish_reason=stop)");
//! ```

pub mod clock;
pub mod coverage;
pub mod engine_bridge;
pub mod faults;
pub mod guard_log;
pub mod input;
pub mod model;
pub mod recorded;
pub mod rng;
pub mod scenario;
pub mod scheduler;
pub mod script;
pub mod settings;
pub mod sim;
pub mod temporaries;
pub mod trace;
pub mod user_config;
pub mod verdict;
