//! # loopsim-world
//!
//! The deterministic world the engine runs in: virtual time, a seeded discrete-event
//! scheduler and named random streams. (Agents, the fake model and tools, scenarios and traces
//! are being built on these.)

pub mod bridge;
pub mod clock;
pub mod expect;
pub mod model;
pub mod recorded;
pub mod rng;
pub mod scenario;
pub mod scheduler;
pub mod sim;
pub mod trace;
