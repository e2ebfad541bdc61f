//! What the HTTP providers share: one model at one endpoint, a client and
//! the prices of the model; and the [`Api`] trait for what each says its
//! own way (headers, the body, the model list's URL, the stream parser).
//! Every [`Api`] is a [`Provider`]: naming, model info, the model list and
//! the streamed call are written once, here.

use super::http::{EventParser, HttpClient, Post};
use super::{usage, Message, Provider, ProviderError, Request, Response, Settings, StreamEvent};
use crate::cancel::CancelToken;
use serde_json::Value;

/// One model at one URL, with the client that reaches it.
pub(crate) struct Endpoint {
    pub model: String,
    /// Where requests are POSTed.
    pub url: String,
    pub http: HttpClient,
    pub pricing: usage::Pricing,
}

impl Endpoint {
    /// The model of `settings` (unless blank, then `default_model`) at
    /// `url`, with a client for the server at `base`.
    pub fn new(
        settings: &Settings,
        default_model: &str,
        base: &str,
        url: String,
    ) -> Result<Endpoint, ProviderError> {
        Ok(Endpoint {
            model: settings
                .model
                .clone()
                .filter(|m| !m.trim().is_empty())
                .unwrap_or_else(|| default_model.to_string()),
            url,
            http: HttpClient::for_url(base, settings.timeouts)?,
            pricing: settings.pricing.clone(),
        })
    }
}

/// What one HTTP API says its own way.
pub(crate) trait Api: Send {
    /// The provider's name (`anthropic`, `openai`).
    const NAME: &'static str;
    /// The parser of one streamed answer.
    type Parser<'m>: EventParser;
    fn endpoint(&self) -> &Endpoint;
    /// The headers every request carries (the key, a version).
    fn headers(&self) -> Vec<(&'static str, String)>;
    /// Where `GET` lists the models.
    fn models_url(&self) -> String;
    /// The JSON body of one request.
    fn body(&self, req: &Request<'_>) -> Value;
    /// A fresh parser for an answer to a request holding `messages`.
    fn parser(messages: &[Message]) -> Self::Parser<'_>;
}

impl<A: Api> Provider for A {
    fn name(&self) -> &str {
        A::NAME
    }

    fn model(&self) -> &str {
        &self.endpoint().model
    }

    fn model_info(&self) -> Option<usage::ModelInfo> {
        let at = self.endpoint();
        at.pricing.info(&at.model)
    }

    fn list_models(&mut self) -> Result<Vec<String>, ProviderError> {
        let list = (self.endpoint().http).get_json(&self.models_url(), &self.headers())?;
        Ok(super::models::ids(&list))
    }

    fn complete(
        &mut self,
        req: &Request<'_>,
        on_event: &mut dyn FnMut(StreamEvent<'_>),
        cancel: &CancelToken,
    ) -> Result<Response, ProviderError> {
        let at = self.endpoint();
        let post = Post::json(at.url.clone(), self.headers(), &self.body(req));
        (at.http).stream_events(&post, cancel, on_event, || A::parser(req.messages))
    }
}
