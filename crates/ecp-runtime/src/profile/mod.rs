//! The External Context MCP Profile v1, as pure functions: query
//! validation ([`query_from_arguments`]), and the byte-exact envelope
//! renderer ([`render`]) with its bounds and escaping, as the reference
//! implementation renders (profile-v1). The runtime's server calls these;
//! an extension's tests can too.
//!
//! This module is self-contained (std, serde_json and its own files only):
//! keep it free of I/O and of the rest of the crate.

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub(crate) mod query;
pub(crate) mod render;

pub use query::{QueryError, query_from_arguments};
pub use render::{ContextItem, Envelope, render};
pub(crate) use render::{MAX_ITEMS, Rendered};

// Paths the copies of the old V1 binding name (see the crate root).
#[doc(hidden)]
pub mod ecmascript;
#[doc(hidden)]
pub use render::ProviderItem;

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
