//! The agent: turn loop and built-in tools.
pub mod tools;
