//! The paths code an earlier ecp generated still names: the copies of the
//! old V1 binding (ecp 0.1.0's layout and every 0.2.x `src/provider.rs`)
//! and the tests of 0.3.x. `ecp upgrade` leaves such files as their owner
//! has them and promises they still build; these keep that promise, and a
//! build that names one gets rustc's deprecation warning with the path to
//! use instead. Hidden, not part of the API (the snapshot lists them
//! apart), gone in 1.0.
//!
//! Every item here is its own deprecated alias, constant or wrapper of the
//! real one (rustc 1.95 warns for a deprecated item, but not for a path
//! through a deprecated module or `pub use`, measured 2026-12-07). ecp
//! reaches the real items through [`crate::internal`]. The one path that
//! cannot warn is `ecp_runtime::reqwest`, a crate re-exported: it exists
//! only with the `reqwest` feature, which `ecp upgrade` turns on, and says
//! so, for a mapping that names it.

#![allow(missing_docs)] // each item is documented by its deprecation note

/// Marks old paths, each with the note of what replaces it (the V1
/// binding's by default).
macro_rules! old {
    (note = $note:literal; $($item:item)*) => {
        $(
            #[deprecated(since = "0.4.0", note = $note)]
            $item
        )*
    };
    ($($item:item)*) => {
        old! { note = "a path of the old V1 binding, gone in 1.0: map the API with `ecp_runtime::http::Upstream`, as the src/provider.rs of `ecp new` does"; $($item)* }
    };
}

/// The V1 binding of runtime 0.2 and 0.3 (`crate::v1::binding`).
pub mod binding {
    use crate::{ProviderError, ProviderItem, v1::binding as real};
    use serde_json::Value;

    old! {
        pub type ConfigError = crate::client::ConfigError;
        pub const MAX_BODY_BYTES: usize = crate::client::MAX_BODY_BYTES;
        pub const DEFAULT_BASE_URL_ENV: &str = real::DEFAULT_BASE_URL_ENV;
        pub const DEFAULT_TOKEN_ENV: &str = real::DEFAULT_TOKEN_ENV;
        pub const SEARCH_PATH: &str = real::SEARCH_PATH;
        pub type HttpSearchConfig = real::HttpSearchConfig;
        pub type HttpSearchProvider = real::HttpSearchProvider;
        pub fn parse_json_like_javascript(text: &str) -> Option<Value> {
            crate::client::parse_json_like_javascript(text)
        }
        pub fn search_endpoint(base_url: &str) -> Result<url::Url, &'static str> {
            real::search_endpoint(base_url)
        }
        pub fn parse_search_response(
            body: &[u8],
            limit: usize,
        ) -> Result<Vec<ProviderItem>, ProviderError> {
            real::parse_search_response(body, limit)
        }
        pub fn parse_search_document(
            text: &str,
            limit: usize,
        ) -> Result<Vec<ProviderItem>, ProviderError> {
            real::parse_search_document(text, limit)
        }
        pub fn provider_item_from_json(item: &Value) -> ProviderItem {
            real::provider_item_from_json(item)
        }
        pub fn provider_item_from_owned_json(item: Value) -> ProviderItem {
            real::provider_item_from_owned_json(item)
        }
    }
}

/// Proxies from the environment (`crate::proxy_env`).
pub mod proxy {
    old! {
        note = "not needed: `ecp_runtime::http::Upstream` takes proxies from the environment itself";
        pub type ProxyEnv = crate::proxy_env::ProxyEnv;
    }
}

/// The typed reader of a V1 answer (`crate::v1::search_response`).
pub mod search_response {
    use crate::ProviderItem;

    old! {
        pub fn read_items(text: &str, limit: usize) -> Option<Vec<ProviderItem>> {
            crate::v1::search_response::read_items(text, limit)
        }
    }
}

/// The ECMAScript string and number rules (`crate::profile::ecma`).
pub mod ecmascript {
    use std::borrow::Cow;

    use crate::profile::ecma as real;

    old! {
        pub fn utf16_len(s: &str) -> usize {
            real::utf16_len(s)
        }
        pub fn escaped_char_utf16_len(c: char) -> usize {
            real::escaped_char_utf16_len(c)
        }
        pub fn quoted_utf16_len(s: &str) -> usize {
            real::quoted_utf16_len(s)
        }
        pub fn write_json_string(out: &mut String, s: &str) {
            real::write_json_string(out, s)
        }
        pub fn format_number(x: f64) -> String {
            real::format_number(x)
        }
        pub fn javascript_compatible(text: &str, numbers: bool) -> Cow<'_, str> {
            real::javascript_compatible(text, numbers)
        }
    }
}

old! {
    note = "use `ecp_runtime::ProviderItem`";
    pub type ProviderItem = crate::ProviderItem;
}
old! {
    note = "not needed: the runtime's HTTP client sets up TLS itself";
    pub fn install_tls_provider() {
        crate::outbound::install_tls_provider()
    }
}
old! {
    note = "use `ecp_runtime::contracts::render_vectors()`";
    pub const RENDER_VECTORS_JSON: &str = crate::contract_files::RENDER_VECTORS_JSON;
}
old! {
    note = "use `ecp_runtime::contracts::test_vectors()`";
    pub const TEST_VECTORS_JSON: &str = crate::contract_files::TEST_VECTORS_JSON;
}
