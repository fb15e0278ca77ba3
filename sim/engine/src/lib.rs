//! placeholder
pub mod budget;
pub mod config;
pub mod delegation;
pub mod guard;
pub mod guardrails;
pub mod hash;
pub mod json;
pub mod profile;
pub mod turn;
pub mod yaml;
