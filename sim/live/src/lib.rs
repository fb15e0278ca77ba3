//! # loopsim-live
//!
//! Live mode: a scenario's scripted model and tools served to a real agent runtime, so the
//! runtime's own loop (its budgets, guardrails, refunds and exit reasons) runs the scenario.
//! The model speaks OpenAI's Chat Completions (`/v1/chat/completions`, streaming or not);
//! the runtime's tool handlers are fakes that ask `/loopsim/v1/tool` for the scripted
//! result, and report what the runtime decided to `/loopsim/v1/event`. See `docs/live.md`.
//!
//! ```
//! use loopsim_live::openai::ChatRequest;
//! use loopsim_live::live_world::LiveWorld;
//! use loopsim_engine::profile::ProfileName;
//! use loopsim_world::scenario::Scenario;
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
//! let sc: &'static Scenario = Box::leak(Box::new(sc));
//! let rules = loopsim_engine::profile::Profile::get(ProfileName::HermesMain).guardrails;
//! let mut world = LiveWorld::new(sc, 1, &rules);
//! let req = ChatRequest::parse(br#"{"model": "m", "tools": [{}],
//!     "messages": [{"role": "user", "content": "go"}]}"#).unwrap();
//! let reply = world.chat(&req).unwrap();
//! assert_eq!(reply.tool_calls[0].name, "read_file");
//! assert_eq!(reply.prompt_tokens, 1000);
//! ```

pub mod compare;
pub mod estimate;
pub mod hermes;
pub mod live_world;
pub mod openai;
pub mod openai_agents;
pub mod openhands;
pub mod pydantic_ai;
pub mod runtime_run;
pub mod server;
pub mod smolagents;
