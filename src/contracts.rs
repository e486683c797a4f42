//! The contract files ecp holds implementations to: the runtime's canonical
//! `contracts/v1` (in `crates/ecp-runtime`) and Qwen Code's published
//! files (`contracts/qwen-v1`, copied unchanged; see its README).

pub use crate::runtime::contracts::{
    INPUT_SCHEMA_JSON, OUTPUT_SCHEMA_JSON, RENDER_VECTORS_JSON, TEST_VECTORS_JSON,
};

/// Qwen Code's draft-07 schemas and their vectors.
pub const QWEN_INPUT_SCHEMA_JSON: &str =
    include_str!("../contracts/qwen-v1/context-search-input.schema.json");
pub const QWEN_OUTPUT_SCHEMA_JSON: &str =
    include_str!("../contracts/qwen-v1/context-search-output.schema.json");
pub const QWEN_TEST_VECTORS_JSON: &str = include_str!("../contracts/qwen-v1/test-vectors.json");
