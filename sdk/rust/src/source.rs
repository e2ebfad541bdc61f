//! This crate's own source files, as text: what `zut ext new --lang rust`
//! writes into a new extension as its vendored copy of the SDK. They live
//! here, inside the crate, so that the published `zut` (which depends on
//! the published `zut-ext`) carries the very SDK it was built with.

/// Every file under `src/`, by its name there, with its contents.
pub const FILES: &[(&str, &str)] = &[
    ("additions.rs", include_str!("additions.rs")),
    ("args.rs", include_str!("args.rs")),
    ("lib.rs", include_str!("lib.rs")),
    ("lines.rs", include_str!("lines.rs")),
    ("results.rs", include_str!("results.rs")),
    ("sdk.rs", include_str!("sdk.rs")),
    ("source.rs", include_str!("source.rs")),
    ("testing.rs", include_str!("testing.rs")),
    ("wire.rs", include_str!("wire.rs")),
];

/// The crate's manifest as built: the workspace's own in this repository,
/// the normalised one cargo writes into a published package. Its
/// `dependencies` tables are what a vendored copy needs.
pub const MANIFEST: &str = include_str!("../Cargo.toml");
