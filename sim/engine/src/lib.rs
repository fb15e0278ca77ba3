//! placeholder
pub mod budget;
pub mod delegation;
pub mod guardrails;
pub mod hash;
pub mod json;
pub mod turn;
