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
pub use render::{ContextItem, Envelope, render, retain_valid};
pub(crate) use render::{MAX_ITEMS, Rendered};

pub(crate) mod ecma;
// Paths the copies of the old V1 binding name, deprecated (see
// `crate::old_paths`).
#[doc(hidden)]
#[allow(deprecated)]
pub use crate::old_paths::{ProviderItem, ecmascript};

/// The one tool a profile server offers.
pub const TOOL_NAME: &str = "context_search";
/// The stable text of every failed search that is not an input error.
pub const SEARCH_FAILED: &str = "External context search failed.";
/// The limit the provider receives with every query.
pub const PROVIDER_LIMIT: usize = MAX_ITEMS;
