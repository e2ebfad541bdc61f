//! The application core, between the front ends ([`crate::modes`]) and the
//! parts that do the work (agent, host, MCP hub, hooks, sessions).
//!
//! - [`frontend`]: the contract every front end talks through ([`frontend::Core`]);
//! - [`engine`]: its one implementation, the worker that owns the agent;
//! - [`boot`]: the one start of every mode (session, host, MCP, announcement).
//!
//! Layers, top to bottom: `app`/`cli` → `modes` → `core` → `agent`, `host`,
//! `mcp`, `hooks`, `skills`, `session`, `provider`. Nothing here names a
//! front end; nothing below names the core.

pub mod boot;
pub mod engine;
pub mod frontend;

/// Exit statuses (zut(1), EXIT STATUS).
pub const EXIT_OK: i32 = 0;
pub const EXIT_FAILURE: i32 = 1;
pub const EXIT_USAGE: i32 = 2;
pub const EXIT_INTERRUPTED: i32 = 130;
