//! Not part of the API: what ecp itself (its commands, tests, fuzz targets
//! and benchmarks) uses of the runtime beyond what an extension needs. It
//! may change in any release; an extension that reaches in here is on its
//! own.

/// The adapter's flag parsing on its own.
pub mod adapter {
    pub use crate::adapter::*;
}
/// The contract files as embedded text.
pub mod contracts {
    pub use crate::contract_files::*;
    pub use crate::contracts::*;
}
/// The whole HTTP client module, its rules included.
pub mod http {
    pub use crate::client::*;
}
/// Auto Recall: the `UserPromptSubmit` hook and its query rules.
pub mod hook {
    pub use crate::hook::query::*;
    pub use crate::hook::*;
}
/// The runtime's stderr lines.
pub mod log {
    pub use crate::log::*;
}
/// The whole profile module: bounds, compaction, serialization, the
/// ECMAScript string rules.
pub mod profile {
    pub use crate::profile::query::*;
    pub use crate::profile::render::*;
    pub use crate::profile::*;
}
/// This crate's releases and security fixes (`ecp upgrade`, `ecp lint`).
pub mod releases {
    pub use crate::releases::*;
}
/// The remote adapter: MCP Streamable HTTP, OAuth, limits.
pub mod remote {
    pub use crate::remote::*;
}

pub use crate::framing::{MAX_LINE_BYTES, serve_lines};
pub use crate::server::ContextSearchServer;
pub use crate::tool::{INPUT_SCHEMA_JSON, OUTPUT_SCHEMA_JSON, context_search_tool};
/// Also at the crate root, hidden, for code an earlier ecp generated: the
/// V1 binding (what `ecp serve` runs), proxies from the environment, the
/// streaming reader of a V1 answer, and the TLS set-up.
pub use crate::{binding, install_tls_provider, proxy, search_response};
