//! @NAME@: a zut extension.
//!
//! - `/@NAME@ [who]` shows "hello, <who> from @NAME@" (no model call);
//! - `@TOOL@` is a tool the model can call; it returns its arguments as text.
//!
//! The SDK (`zut-ext/`, vendored by `zut ext new`) does the handshake,
//! registration, concurrency and shutdown, so this file is only handlers.
//! stdout carries protocol frames; write diagnostics to stderr, which zut
//! keeps in `$ZUT_HOME/logs/ext-@NAME@.log`.

use serde_json::json;
use zut_ext::{display, text_result, Extension};

fn main() -> Result<(), zut_ext::Error> {
    // The name must match extension.json.
    Extension::new("@NAME@", env!("CARGO_PKG_VERSION"))
        .command("@NAME@", "say hello: /@NAME@ [who]", |args| {
            let who = if args.is_empty() { "you" } else { args };
            display(format!("hello, {who} from @NAME@"))
        })
        .tool(
            "@TOOL@",
            "Return the arguments of the call as JSON text.",
            json!({"type": "object"}),
            |args| text_result(args.to_string()),
        )
        .run()
}
