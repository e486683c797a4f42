//! The canonical contract files of `contracts/v1`, embedded as text: the
//! language-neutral vectors that every implementation is held to (ecp
//! replays them with `ecp check`); the schemas the tool declares are
//! `tool.rs`'s.

/// `contracts/v1/test-vectors.json`: valid and invalid inputs and outputs.
pub const TEST_VECTORS_JSON: &str = include_str!("../contracts/v1/test-vectors.json");
/// `contracts/v1/render-vectors.json`: provider items and the exact text.
pub const RENDER_VECTORS_JSON: &str = include_str!("../contracts/v1/render-vectors.json");
