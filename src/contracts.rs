//! The canonical contract files of `contracts/v1`, embedded in the binary:
//! the schemas the tool declares and the language-neutral vectors that
//! `ecp check` replays against any implementation.

pub use crate::runtime::{INPUT_SCHEMA_JSON, OUTPUT_SCHEMA_JSON};

/// `contracts/v1/test-vectors.json`: valid and invalid inputs and outputs.
pub const TEST_VECTORS_JSON: &str = include_str!("../contracts/v1/test-vectors.json");
/// `contracts/v1/render-vectors.json`: provider items and the exact text.
pub const RENDER_VECTORS_JSON: &str = include_str!("../contracts/v1/render-vectors.json");

/// Qwen Code's published contract files (`contracts/qwen-v1`, copied
/// unchanged; see its README): draft-07 schemas and their vectors.
pub const QWEN_INPUT_SCHEMA_JSON: &str =
    include_str!("../contracts/qwen-v1/context-search-input.schema.json");
pub const QWEN_OUTPUT_SCHEMA_JSON: &str =
    include_str!("../contracts/qwen-v1/context-search-output.schema.json");
pub const QWEN_TEST_VECTORS_JSON: &str = include_str!("../contracts/qwen-v1/test-vectors.json");
