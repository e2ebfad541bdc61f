use super::*;

pub struct Script;

impl Script {
    pub fn new(_s: &Settings) -> Result<Self, ProviderError> {
        Err(ProviderError::Config("script: not implemented".into()))
    }
}

impl Provider for Script {
    fn name(&self) -> &str {
        "script"
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
        Err(ProviderError::Config("script: not implemented".into()))
    }
}
