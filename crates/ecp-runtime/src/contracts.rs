//! The profile's language-neutral vectors (`contracts/v1` of this crate),
//! for an extension's own tests: every implementation of the profile, in
//! any language, is held to the same files.

use serde_json::Value;

// Paths the tests of 0.3.x name, deprecated (see `crate::old_paths`).
#[doc(hidden)]
#[allow(deprecated)]
pub use crate::old_paths::{RENDER_VECTORS_JSON, TEST_VECTORS_JSON};

/// `render-vectors.json`: an array of `{name, providerItems, text,
/// httpText?}`, where [`crate::profile::render`] of the items (each read
/// with [`crate::ProviderItem::from_json`]) gives `text` byte for byte, and
/// the same items as an upstream answer through a mapping and
/// [`crate::profile::retain_valid`] give `httpText` when there is one.
/// Read as JavaScript reads it: the vectors hold a `1e400`, which is a
/// non-number there and here.
pub fn render_vectors() -> Value {
    crate::client::parse_json_like_javascript(crate::contract_files::RENDER_VECTORS_JSON)
        .unwrap_or_else(|| unreachable!("render-vectors.json is embedded and parses"))
}

/// `test-vectors.json`: `validInputs` and `invalidInputs` (each `{name,
/// value}`, the `value` a tool call's arguments), and outputs.
pub fn test_vectors() -> Value {
    serde_json::from_str(crate::contract_files::TEST_VECTORS_JSON)
        .unwrap_or_else(|_| unreachable!("test-vectors.json is embedded and parses"))
}
