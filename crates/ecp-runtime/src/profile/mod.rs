//! The External Context MCP Profile v1, as pure functions: query
//! validation and normalization, item compaction and the byte-exact envelope
//! renderer.
//!
//! This module is self-contained (std, serde_json and its own files only):
//! `ecp new` copies it verbatim into every generated extension, and a test
//! fails if the copies drift. Keep it free of I/O and of other ecp modules.

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod ecmascript;
pub mod query;
pub mod render;

pub use query::{MAX_QUERY_CODE_POINTS, QueryError, normalize_query, query_from_arguments};
pub use render::{
    ContextItem, Envelope, MAX_CONTENT, MAX_ID, MAX_ITEMS, MAX_TEXT_UTF16, MAX_TITLE,
    MAX_UPDATED_AT, MAX_URI, NOTICE, ProviderItem, Rendered, render, serialize,
};

/// The one tool a profile server offers.
pub const TOOL_NAME: &str = "context_search";
/// The stable text of every failed search that is not an input error.
pub const SEARCH_FAILED: &str = "External context search failed.";
/// The limit the provider receives with every query.
pub const PROVIDER_LIMIT: usize = MAX_ITEMS;

/// Drops the items without an id or content, as the runtime does with what
/// a provider returns before the renderer keeps the first five (the V1
/// binding's "invalid items are dropped before the limit").
pub fn retain_valid(items: &mut Vec<ProviderItem>) {
    items.retain(|item| !item.id.is_empty() && !item.content.is_empty());
}
