//! Not part of the API: what ecp itself (its commands, tests, fuzz targets
//! and benchmarks) uses of the runtime beyond what an extension needs. It
//! may change in any release; an extension that reaches in here is on its
//! own.

/// The adapter's flag parsing on its own.
pub mod adapter {
    pub use crate::adapter::{Adapter, AdapterError, remote_config};
}
/// The contract files as embedded text.
pub mod contracts {
    pub use crate::contract_files::{RENDER_VECTORS_JSON, TEST_VECTORS_JSON};
    pub use crate::contracts::{render_vectors, test_vectors};
    pub use crate::tool::{INPUT_SCHEMA_JSON, OUTPUT_SCHEMA_JSON};
}
/// The whole HTTP client module, its rules included.
pub mod http {
    pub use crate::client::{
        ConfigError, Credential, MAX_BODY_BYTES, Request, Upstream, base_url,
        configured_credentials, is_unset, parse_json_like_javascript, string,
    };
}
/// Auto Recall: the `UserPromptSubmit` hook and its query rules.
pub mod hook {
    pub use crate::hook::query::{
        MAX_AUTO_RECALL_QUERY_CODE_POINTS, MAX_SANITIZED_CODE_POINTS, auto_recall_query,
    };
    pub use crate::hook::{
        DEFAULT_HOOK_TIMEOUT_MS, HOOK_EVENT, HOOK_NAME, HOOK_TIMEOUT_MS, HOOK_WALL_CLOCK,
        HookInput, HookSettings, MAX_HOOK_INPUT_BYTES, NOTHING, is_within, query,
    };
}
/// The runtime's stderr lines.
pub mod log {
    pub use crate::log::{Batching, Level, LogFormat, batch_info_lines, event};
}
/// The whole profile module: bounds, compaction, serialization, the
/// ECMAScript string rules.
pub mod profile {
    pub use crate::profile::query::{
        MAX_QUERY_CODE_POINTS, QueryError, is_ecmascript_whitespace, normalize_query,
        query_from_arguments,
    };
    pub use crate::profile::render::{
        ContextItem, Envelope, MAX_CONTENT, MAX_ID, MAX_ITEMS, MAX_TEXT_UTF16, MAX_TITLE,
        MAX_UPDATED_AT, MAX_URI, NOTICE, ProviderItem, Rendered, render, serialize,
    };
    /// The ECMAScript string and number rules.
    pub mod ecmascript {
        pub use crate::profile::ecma::{
            escaped_char_utf16_len, format_number, javascript_compatible, quoted_utf16_len,
            utf16_len, write_json_string,
        };
    }
    pub use crate::profile::{PROVIDER_LIMIT, SEARCH_FAILED, TOOL_NAME, retain_valid};
}
/// This crate's releases and security fixes (`ecp upgrade`, `ecp lint`).
pub mod releases {
    pub use crate::releases::{RELEASES, Release, VERSION, newer_in, newer_than, parse_version};
}
/// The remote adapter: MCP Streamable HTTP, OAuth, limits.
pub mod remote {
    pub use crate::remote::{
        AuthConfig, Authenticator, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CONCURRENT,
        DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_IDLE_PER_PEER, FLAGS_USAGE, JwksSource, KeySet,
        McpAnswer, REQUIRED_SCOPE, Refusal, RemoteConfig, RemoteSettings, SettingsError,
        TokenRules, answer_mcp, auth, env_names, serve_http, serve_http_until_signal,
        shutdown_signal, split_list,
    };
}

/// The V1 binding (what `ecp serve` runs), proxies from the environment,
/// the streaming reader of a V1 answer, and the TLS set-up: the real items
/// behind the deprecated old paths of the crate root.
pub use crate::outbound::install_tls_provider;
pub use crate::server::ContextSearchServer;
pub use crate::stdio::{MAX_LINE_BYTES, serve_lines};
pub use crate::tool::{INPUT_SCHEMA_JSON, OUTPUT_SCHEMA_JSON, context_search_tool};
pub use crate::v1::{binding, search_response};
/// Proxies from the environment.
pub mod proxy {
    pub use crate::proxy_env::ProxyEnv;
}
