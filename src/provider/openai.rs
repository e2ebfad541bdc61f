use super::*;

pub struct OpenAi;

impl OpenAi {
    pub fn new(_s: &Settings) -> Result<Self, ProviderError> {
        Err(ProviderError::Config("openai: not implemented".into()))
    }
}

impl Provider for OpenAi {
    fn name(&self) -> &str {
        "openai"
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
        Err(ProviderError::Config("openai: not implemented".into()))
    }
}
