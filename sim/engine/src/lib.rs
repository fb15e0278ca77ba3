//! # loopsim-engine
//!
//! A pure Rust port of the loop governance of Hermes Agent: the per-agent iteration budget
//! with refunds, the turn loop and its exit reasons, the tool-loop guardrails (warn, block and
//! halt decisions, stall guards, loop caps) and the delegation limits. It is the system under
//! test in loopsim's simulator.
//!
//! The engine is pure: no I/O, no clock, no randomness. It takes observations and returns
//! decisions; whoever runs it owns time, randomness and output. Decision codes, actions,
//! counts, hashes and exit reasons match Hermes exactly (proved by conformance tests against
//! the Python package); the wording of messages is loopsim's own.
//!
//! Versions of Hermes are [`profile`]s: data, not copies of the code.
//!
//! ```
//! use loopsim_engine::config::EngineConfig;
//! use loopsim_engine::guardrails::{Action, CallFacts, Controller, DecisionCode};
//! use loopsim_engine::json;
//! use loopsim_engine::profile::ProfileName;
//!
//! // Hermes main on Telegram: unattended, so hard stops are on.
//! let cfg = EngineConfig::new(ProfileName::HermesMain, Some("telegram"));
//! let mut guard = Controller::new(cfg.guardrails, cfg.rules);
//! let args = json::parse(br#"{"code": "print('waiting')"}"#).unwrap();
//! for n in 1..=5 {
//!     // Each result differs only in execute_code's volatile bookkeeping.
//!     let result = format!(r#"{{"output": "waiting\n", "duration_seconds": 0.{n}, "kernel": {{"execution_count": {n}}}}}"#);
//!     assert_eq!(guard.before_call("execute_code", &args).action, Action::Allow);
//!     let facts = CallFacts::new("execute_code", &args, Some(result.as_bytes()), guard.rules());
//!     guard.after_call_facts(&facts, false);
//!     let seen = guard.observe_call(&facts, false);
//!     assert_eq!(seen.kind.is_some(), n >= 3); // a notice from the 3rd identical call
//! }
//! let halt = guard.halt_decision().unwrap();
//! assert_eq!((halt.code, halt.count), (DecisionCode::IdenticalCallStreakHalt, 5));
//! assert_eq!(halt.code.as_str(), "identical_call_streak_halt");
//! ```

pub mod budget;
pub mod call_limits;
pub mod config;
pub mod delegation;
pub mod engine;
pub mod guard_protocol;
pub mod guardrails;
pub mod hash;
pub mod json;
pub mod observation;
pub mod platform;
pub mod profile;
pub mod retry;
pub mod stuck;
pub mod tool_name;
pub mod turn;
pub mod yaml;

pub use engine::GuardrailEngine;
