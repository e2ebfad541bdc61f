use super::*;

pub struct Anthropic;

impl Anthropic {
    pub fn new(_s: &Settings) -> Result<Self, ProviderError> {
        Err(ProviderError::Config("anthropic: not implemented".into()))
    }
}

impl Provider for Anthropic {
    fn name(&self) -> &str {
        "anthropic"
    }
    fn model(&self) -> &str {
        ""
    }
    fn complete(
        &mut self,
        _r: &Request<'_>,
        _e: &mut dyn FnMut(StreamEvent<'_>),
        _c: &CancelToken,
    ) -> Result<Response, ProviderError> {
        Err(ProviderError::Config("anthropic: not implemented".into()))
    }
}
