//! `zut-ext`: the zut extension protocol in Rust.
//!
//! - [`wire`]: every frame in both directions as serde types; the one
//!   definition the zut host and this SDK share;
//! - [`additions`]: the frames and fields of the protocol additions
//!   (tool progress, unregistration, the newer intercepts) as the SDK
//!   writes and reads them;
//! - [`lines`]: splitting a byte stream into bounded protocol lines;
//! - [`testing`]: driving a built extension over its pipes, as zut does,
//!   from the extension's own tests;
//! - the SDK (re-exported here): an [`Extension`] collects handlers for
//!   commands, tools, events, interceptors and panels, and
//!   [`Extension::run`] speaks the protocol on stdin/stdout; a [`Handle`]
//!   sends one-way frames from any thread.
//!
//! ```no_run
//! use zut_ext::{display, text_result, Extension};
//!
//! fn main() -> Result<(), zut_ext::Error> {
//!     Extension::new("hello", "1.0.0")
//!         .command("hello", "say hi", |args| display(format!("hi {args}")))
//!         .tool("echo", "Echo the args.", serde_json::json!({"type": "object"}), |args| {
//!             text_result(args.to_string())
//!         })
//!         .run()
//! }
//! ```
#![warn(missing_docs)]

pub mod additions;
mod args;
pub mod lines;
mod results;
mod sdk;
#[doc(hidden)]
pub mod source;
pub mod testing;
pub mod wire;

pub use args::check_args;
pub use results::{
    display, error, error_result, image, image_bytes, insert, noop, open_panel_response, prompt,
    text, text_result, Action, AgentEndDecision, Approval, AssistantMessageDecision, Response,
    ToolCallDecision, ToolResult, ToolResultDecision, TurnStartDecision, UserMessageDecision,
};
pub use sdk::{
    AgentEnd, BranchState, CancelToken, Error, Event, Extension, Handle, HostInfo, Level, ToolCall,
    ToolResultEvent, ALERT_BELL, CAPABILITIES, WIDGET_ABOVE_INPUT,
};
