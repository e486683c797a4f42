//! The Generic HTTP Search V1 binding: `POST {base}/v1/context/search` with a
//! bearer credential, the answer's `items` mapped to profile items. A
//! provider like any other, on the hardened client of [`crate::http`]; what
//! `ecp serve` runs, and what a generated extension's `src/provider.rs`
//! spells out in its own few lines.
//!
//! Decisions where a Rust client would otherwise differ from the JavaScript
//! reference (profile-v1, "Traps"), beside those of [`crate::http`]:
//! - a number literal that overflows a double (`1e400`) is `Infinity` to the
//!   reference: the literal is read as a non-number, so a score is dropped
//!   and its item kept, exactly as the reference does;
//! - a lone surrogate escape (`"\ud800"`) cannot live in a Rust string: it
//!   becomes U+FFFD (the reference would re-escape it as `\ud800`);
//! - documents nested deeper than 128 levels are malformed here (serde_json's
//!   limit); the reference accepts them.

use std::sync::Arc;

use crate::{
    Provider, ProviderError, ProviderItem,
    client::{Credential, Upstream},
};
use serde_json::Value;

pub use crate::client::{ConfigError, MAX_BODY_BYTES, parse_json_like_javascript};

/// Default name of the base URL variable.
pub const DEFAULT_BASE_URL_ENV: &str = "PROVIDER_CONTEXT_BASE_URL";
/// Default name of the credential variable.
pub const DEFAULT_TOKEN_ENV: &str = "PROVIDER_CONTEXT_TOKEN";
/// The search path under the base URL.
pub const SEARCH_PATH: &str = "v1/context/search";

/// Where to search and with which credential, validated.
#[derive(Clone)]
pub struct HttpSearchConfig {
    upstream: Arc<Upstream>,
}

impl std::fmt::Debug for HttpSearchConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HttpSearchConfig { .. }")
    }
}

/// The search endpoint for a base URL, or the rule it breaks. The binding
/// keeps the profile's rule of a base without a path (`/` or empty).
pub fn search_endpoint(base_url: &str) -> Result<url::Url, &'static str> {
    let url = crate::client::base_url(base_url)?;
    if url.path() != "/" {
        return Err("its path must be empty or /; the binding appends /v1/context/search");
    }
    url.join(SEARCH_PATH)
        .map_err(|_| "it is not an absolute URL")
}

impl HttpSearchConfig {
    /// Validates a base URL and credential; the variable names only label
    /// errors.
    pub fn new(
        base_url: &str,
        token: &str,
        base_url_var: &str,
        token_var: &str,
    ) -> Result<HttpSearchConfig, ConfigError> {
        let upstream = Upstream::new(
            base_url,
            base_url_var,
            &Credential::bearer(token_var),
            Some(token),
        )?;
        search_endpoint(base_url).map_err(|rule| ConfigError::InvalidBaseUrl {
            var: base_url_var.to_owned(),
            rule,
        })?;
        Ok(HttpSearchConfig {
            upstream: Arc::new(upstream),
        })
    }

    /// Reads the two variables from the process environment.
    pub fn from_env(base_url_var: &str, token_var: &str) -> Result<HttpSearchConfig, ConfigError> {
        let read = |var: &str| std::env::var(var).unwrap_or_default();
        HttpSearchConfig::new(
            &read(base_url_var),
            &read(token_var),
            base_url_var,
            token_var,
        )
    }
}

/// The binding as a [`Provider`].
pub struct HttpSearchProvider {
    upstream: Arc<Upstream>,
}

impl HttpSearchProvider {
    /// The binding's provider for the endpoint and credential of `config`.
    pub fn new(config: HttpSearchConfig) -> HttpSearchProvider {
        HttpSearchProvider {
            upstream: config.upstream,
        }
    }
}

impl Provider for HttpSearchProvider {
    async fn search(&self, query: &str, limit: usize) -> Result<Vec<ProviderItem>, ProviderError> {
        let body = search_request(query, limit).map_err(|_| ProviderError::Internal)?;
        let text = self
            .upstream
            .post(SEARCH_PATH)
            .json_bytes(body)
            .send_text()
            .await?;
        parse_search_text(&text, limit)
    }
}

/// The request body, `{"query":…,"limit":…}`, written without a map.
fn search_request(query: &str, limit: usize) -> Result<Vec<u8>, serde_json::Error> {
    let mut body = Vec::with_capacity(query.len() + 32);
    body.extend_from_slice(br#"{"query":"#);
    serde_json::to_writer(&mut body, query)?;
    body.extend_from_slice(format!(r#","limit":{limit}}}"#).as_bytes());
    Ok(body)
}

/// Maps a response body to the first `limit` valid items.
pub fn parse_search_response(
    body: &[u8],
    limit: usize,
) -> Result<Vec<ProviderItem>, ProviderError> {
    // A leading BOM is dropped, as JavaScript's TextDecoder does.
    let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    let text = std::str::from_utf8(body).map_err(|_| ProviderError::InvalidUtf8)?;
    parse_search_text(text, limit)
}

/// [`parse_search_response`] for a body already read as text.
fn parse_search_text(text: &str, limit: usize) -> Result<Vec<ProviderItem>, ProviderError> {
    // The typed reader answers the documents it can decide alone.
    if let Some(items) = crate::v1::search_response::read_items(text, limit) {
        return Ok(items);
    }
    parse_search_document(text, limit)
}

/// The binding's reading of a response document by value, the reference of
/// [`crate::v1::search_response::read_items`] (they agree wherever that
/// one answers; the fuzz target `http_body` holds them to it).
pub fn parse_search_document(text: &str, limit: usize) -> Result<Vec<ProviderItem>, ProviderError> {
    let document = parse_json_like_javascript(text).ok_or(ProviderError::Malformed)?;
    let Value::Object(mut document) = document else {
        return Err(ProviderError::Malformed);
    };
    let Some(Value::Array(items)) = document.remove("items") else {
        return Err(ProviderError::Malformed);
    };
    Ok(items
        .into_iter()
        .map(provider_item_from_owned_json)
        .filter(|item| !item.id.is_empty() && !item.content.is_empty())
        .take(limit)
        .collect())
}

impl ProviderItem {
    /// Reads one item of a V1 answer (or of the render vectors'
    /// `providerItems`) the way the binding does, without dropping it: a
    /// non-string or missing `id`/`content` becomes empty (the runtime then
    /// drops the item), non-string optional fields and non-finite scores are
    /// absent, and `updated_at` wins over `updatedAt` when present and not
    /// null.
    pub fn from_json(item: &Value) -> ProviderItem {
        provider_item_from_owned_json(item.clone())
    }
}

/// [`ProviderItem::from_json`] (the tests of 0.3.x name this path).
pub fn provider_item_from_json(item: &Value) -> ProviderItem {
    ProviderItem::from_json(item)
}

/// [`ProviderItem::from_json`] for an item the caller owns: its strings are
/// moved, not copied.
pub fn provider_item_from_owned_json(item: Value) -> ProviderItem {
    let Value::Object(mut item) = item else {
        return ProviderItem::default();
    };
    let score = item
        .get("score")
        .and_then(Value::as_f64)
        .filter(|score| score.is_finite());
    // `updated_at` wins when present and not null, even when it is not a
    // string (then there is none).
    let snake_case = item.get("updated_at").is_some_and(|value| !value.is_null());
    let mut string = |key: &str| match item.remove(key) {
        Some(Value::String(text)) => Some(text),
        _ => None,
    };
    ProviderItem {
        id: string("id").unwrap_or_default(),
        content: string("content").unwrap_or_default(),
        title: string("title"),
        uri: string("uri"),
        score,
        updated_at: string(if snake_case {
            "updated_at"
        } else {
            "updatedAt"
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(body: &str) -> Result<Vec<ProviderItem>, ProviderError> {
        parse_search_response(body.as_bytes(), 5)
    }

    #[test]
    fn base_url_rules() {
        let ok = |url: &str| search_endpoint(url).map(|u| u.to_string());
        assert_eq!(
            ok("https://ctx.example.com").unwrap(),
            "https://ctx.example.com/v1/context/search"
        );
        assert_eq!(
            ok("https://ctx.example.com/").unwrap(),
            "https://ctx.example.com/v1/context/search"
        );
        assert_eq!(
            ok("http://127.0.0.1:8080").unwrap(),
            "http://127.0.0.1:8080/v1/context/search"
        );
        assert_eq!(
            ok("http://[::1]:9/").unwrap(),
            "http://[::1]:9/v1/context/search"
        );
        assert_eq!(
            ok("http://LOCALHOST:1").unwrap(),
            "http://localhost:1/v1/context/search"
        );
        for bad in [
            "http://ctx.example.com",
            "http://127.0.0.2",
            "ftp://ctx.example.com",
            "https://user:pw@ctx.example.com",
            "https://ctx.example.com/?q=1",
            "https://ctx.example.com/?",
            "https://ctx.example.com/#x",
            "https://ctx.example.com/api",
            "ctx.example.com",
        ] {
            assert!(search_endpoint(bad).is_err(), "{bad}");
        }
        // A host no Unicode table maps (U+FFFF is a noncharacter): the same
        // answer with url's tables and without them (the generated crate).
        assert_eq!(
            search_endpoint("https://a\u{ffff}b.example"),
            Err("its host name cannot be mapped to ASCII; write it in its xn-- (punycode) form")
        );
    }

    #[test]
    fn placeholders_and_bad_tokens_are_configuration_errors() {
        let config =
            |url: &str, token: &str| HttpSearchConfig::new(url, token, "B", "T").map(|_| ());
        assert_eq!(
            config("", "t"),
            Err(ConfigError::Missing { var: "B".into() })
        );
        assert_eq!(
            config("${B}", "t"),
            Err(ConfigError::Missing { var: "B".into() })
        );
        assert_eq!(
            config("https://x.example", "${T}"),
            Err(ConfigError::Missing { var: "T".into() })
        );
        assert_eq!(
            config("https://x.example", "a b"),
            Err(ConfigError::InvalidToken { var: "T".into() })
        );
        assert!(config("https://x.example", "secret-123").is_ok());
        let shown = config("https://user:hunter2@x.example", "t")
            .unwrap_err()
            .to_string();
        assert!(!shown.contains("hunter2"), "{shown}");
    }

    #[test]
    fn the_request_body_is_what_json_writes() {
        for (query, limit) in [("deployment policy", 5), ("\"<é>\\\u{1}😀", 0)] {
            assert_eq!(
                search_request(query, limit).unwrap(),
                serde_json::to_vec(&serde_json::json!({"query": query, "limit": limit})).unwrap()
            );
        }
    }

    #[test]
    fn response_items_follow_the_binding() {
        let body = r#"{"items":[
            {"id":"a","content":"x","updated_at":"u1","updatedAt":"u2","score":1},
            {"id":"b","content":"y","updated_at":null,"updatedAt":"u2"},
            {"id":"c","content":"z","updated_at":7,"updatedAt":"u2","title":3,"uri":"https://u"},
            {"id":"","content":"dropped"},
            {"id":1,"content":"dropped"},
            "dropped"
        ]}"#;
        let got = items(body).unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].updated_at.as_deref(), Some("u1"));
        assert_eq!(got[0].score, Some(1.0));
        assert_eq!(got[1].updated_at.as_deref(), Some("u2"));
        assert_eq!(got[2].updated_at, None);
        assert_eq!(got[2].title, None);
        assert_eq!(got[2].uri.as_deref(), Some("https://u"));
    }

    #[test]
    fn invalid_items_are_dropped_before_the_limit() {
        let mut body = String::from(r#"{"items":[{"id":"","content":"x"}"#);
        for i in 0..6 {
            body.push_str(&format!(r#",{{"id":"{i}","content":"c"}}"#));
        }
        body.push_str("]}");
        let ids: Vec<_> = items(&body).unwrap().into_iter().map(|i| i.id).collect();
        assert_eq!(ids, ["0", "1", "2", "3", "4"]);
    }

    #[test]
    fn malformed_and_non_utf8_bodies_fail() {
        assert_eq!(items("not json"), Err(ProviderError::Malformed));
        assert_eq!(items(r#"{"items":{}}"#), Err(ProviderError::Malformed));
        assert_eq!(items("[]"), Err(ProviderError::Malformed));
        assert_eq!(items(""), Err(ProviderError::Malformed));
        assert_eq!(
            parse_search_response(b"{\"items\":[\xff]}", 5),
            Err(ProviderError::InvalidUtf8)
        );
        assert_eq!(items("\u{feff}{\"items\":[]}"), Ok(vec![]));
    }

    #[test]
    fn overflowing_numbers_read_as_infinity() {
        let got = items(r#"{"items":[{"id":"a","content":"b","score":1e400},{"id":"c","content":"d","score":-1E+999,"updated_at":1e999,"updatedAt":"kept?"}, 1e400]}"#).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].score, None);
        assert_eq!(got[1].score, None);
        // Present, not null and not a string: no updatedAt at all.
        assert_eq!(got[1].updated_at, None);
        assert_eq!(
            items(r#"{"items":[{"id":"a","content":"b","score":1e-400}]}"#).unwrap()[0].score,
            Some(0.0)
        );
        // Only valid literals are rewritten: a leading zero stays an error.
        assert_eq!(
            items(r#"{"items":[{"id":"a","content":"b","score":01e400}]}"#),
            Err(ProviderError::Malformed)
        );
        // Inside strings nothing is rewritten.
        assert_eq!(
            items(r#"{"items":[{"id":"1e400","content":"b","score":1e400}]}"#).unwrap()[0].id,
            "1e400"
        );
    }

    #[test]
    fn lone_surrogates_become_replacement_characters() {
        let got = items(r#"{"items":[{"id":"a\ud800b","content":"\udc00 \\ud800 \ud83d\ude00"}]}"#)
            .unwrap();
        assert_eq!(got[0].id, "a\u{fffd}b");
        assert_eq!(got[0].content, "\u{fffd} \\ud800 😀");
    }
}
