//! The extension host.
