//! One model call with no tools, collecting the streamed text deltas; the
//! provider tests' common way to ask.

use zut::cancel::CancelToken;
use zut::provider::{Message, Provider, ProviderError, Request, Response, StreamEvent};

/// Runs `p` on `messages` with system prompt `system`.
pub fn ask(
    p: &mut dyn Provider,
    system: &str,
    messages: &[Message],
    cancel: &CancelToken,
) -> (Result<Response, ProviderError>, Vec<String>) {
    let req = Request {
        step: 1,
        system,
        messages,
        tools: &[],
        hidden_context: &[],
    };
    let mut deltas = Vec::new();
    let result = p.complete(
        &req,
        &mut |e| {
            if let StreamEvent::TextDelta(d) = e {
                deltas.push(d.to_string())
            }
        },
        cancel,
    );
    (result, deltas)
}
