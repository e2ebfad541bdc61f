//! MCP servers as zut participants.
//!
//! - [`config`]: which servers to start (`.mcp.json`, `$ZUT_HOME/mcp.json`,
//!   `--mcp-config`), with `${VAR}` expansion and zut's per-server keys;
//! - [`naming`]: the `mcp__<server>__<tool>` names the model sees;
//! - [`result`]: a `tools/call` result as zut content blocks.

pub mod client;
pub mod config;
pub mod hub;
pub mod naming;
pub mod result;
pub mod serve;
