//! Benchmark extension: tool `echo` returning its args as compact JSON
//! text, written with the Rust SDK. `raw_echo.rs` is the same by hand.

fn main() -> Result<(), zut_ext::Error> {
    zut_ext::Extension::new("sdk-echo", "0.1.0")
        .tool(
            "echo",
            "Return the args as JSON text.",
            serde_json::json!({"type": "object"}),
            |args| zut_ext::text_result(args.to_string()),
        )
        .run()
}
