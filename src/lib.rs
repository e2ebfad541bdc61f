//! zut: a terminal coding-agent host built around extensions.
//!
//! Layers, each in its own module: `zut_ext::wire` (the protocol types),
//! [`host`] (extension processes, transport, registry), [`agent`] (turn loop
//! and built-in tools), [`provider`] (model backends), [`modes`] (front ends
//! that consume the one host event stream) and [`cli`] (`zut ext …`).

pub mod agent;
pub mod app;
pub mod cancel;
pub mod cli;
pub mod commands;
pub mod config;
pub mod core;
pub mod events;
#[cfg(test)]
mod fuzz;
pub mod hooks;
pub mod host;
pub mod mcp;
pub mod modes;
pub mod paths;
pub mod proc;
pub mod provider;
pub mod safe_fs;
pub mod sanitize;
pub mod session;
pub mod signals;
pub mod skills;
pub mod suggest;
pub mod transcript;
pub mod trust;
pub mod walk;
pub mod words;
