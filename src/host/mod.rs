//! The extension host: manifests, discovery, processes, transport, registry.

pub mod discovery;
pub mod manifest;
