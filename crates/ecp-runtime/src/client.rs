//! The hardened HTTP client every provider mapping builds on: the provider
//! says which request to send and how the answer maps to items; this module
//! keeps the profile's rules around it.
//!
//! - The base URL comes from the environment: `https`, or `http` only for
//!   `localhost`, `127.0.0.1` and `[::1]`; no user info, no query, no
//!   fragment. A path is allowed (`https://api.example.com/search/v2`): a
//!   request path is joined under it, as under a folder, and may not leave
//!   it (no `..`, no absolute path or URL).
//! - The credential comes from the environment too, sent as a bearer
//!   `authorization` or under another header name; it is a sensitive header
//!   value and never part of an error.
//! - No redirect is followed (a 3xx is [`ProviderError::Redirect`]), nothing
//!   is retried, `HTTP_PROXY`/`HTTPS_PROXY`/`NO_PROXY` are honoured as the
//!   reference honours them ([`crate::proxy_env`]); TLS, TCP and the connection
//!   pool are the runtime's one outbound client's (`outbound.rs`).
//! - The body is read up to [`MAX_BODY_BYTES`] (a larger declared length or a
//!   longer body is [`ProviderError::Oversized`]; exactly the cap is fine),
//!   must be strict UTF-8 after a leading BOM is dropped, and is parsed the
//!   way JavaScript's `JSON.parse` reads it ([`parse_json_like_javascript`]).
//! - Statuses map to the stable [`ProviderError`]s: 3xx redirect, 429 rate
//!   limited, any other non-2xx a failed status.
//! - The budget and cancellation need nothing here: the runtime drops the
//!   provider's future, which aborts the request and closes its connection.
//!
//! Errors carry a category and a status at most: never the query, the
//! endpoint, the credential or a byte of the body.

use std::{fmt::Display, sync::OnceLock};

use bytes::Bytes;
use http_body_util::Full;
use hyper::{
    Method, StatusCode,
    header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderName, HeaderValue, USER_AGENT},
};
use serde_json::Value;
use url::Url;

use crate::{
    ProviderError,
    outbound::{BodyError, HttpClient, read_body},
    profile::ecma::javascript_compatible,
    proxy_env::ProxyEnv,
};

/// Largest accepted response body (exactly this many bytes is fine).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Why a provider cannot start. `Display` names the variable and the rule,
/// never the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// Unset, empty, or still a literal `${NAME}` placeholder.
    #[error(
        "{var} is not set; export it before starting (an empty value or a literal ${{{var}}} counts as unset)"
    )]
    Missing {
        /// The variable's name.
        var: String,
    },
    /// The base URL breaks a rule.
    #[error("{var} is invalid: {rule}")]
    InvalidBaseUrl {
        /// The variable's name.
        var: String,
        /// The rule it breaks, in words.
        rule: &'static str,
    },
    /// The credential cannot be sent as a header value.
    #[error("{var} is invalid: a credential must be visible ASCII without spaces or line breaks")]
    InvalidToken {
        /// The variable's name.
        var: String,
    },
}

/// How the upstream wants its credential, and which environment variable
/// holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// `authorization: Bearer <value of var>`.
    Bearer {
        /// The variable holding the token.
        var: String,
    },
    /// `<name>: <value of var>`, e.g. `x-api-key`.
    Header {
        /// The header's name.
        name: String,
        /// The variable holding its value.
        var: String,
    },
    /// The upstream needs none.
    None,
}

impl Credential {
    /// A bearer token from the variable `var`.
    pub fn bearer(var: &str) -> Credential {
        Credential::Bearer {
            var: var.to_owned(),
        }
    }

    /// The value of `var` under the header `name`.
    pub fn header(name: &str, var: &str) -> Credential {
        Credential::Header {
            name: name.to_owned(),
            var: var.to_owned(),
        }
    }
}

/// An unresolved manifest variable stays literal in Qwen (`${NAME}`), so it
/// counts as missing, like an empty value.
pub fn is_unset(value: &str) -> bool {
    let value = value.trim();
    value.is_empty() || (value.starts_with("${") && value.ends_with('}'))
}

fn is_loopback_host(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip == std::net::Ipv4Addr::LOCALHOST,
        Some(url::Host::Ipv6(ip)) => ip == std::net::Ipv6Addr::LOCALHOST,
        None => false,
    }
}

/// A base URL under the rules, its path ending in `/` so that request paths
/// join under it; or the rule it breaks.
pub fn base_url(text: &str) -> Result<Url, &'static str> {
    let mut url = Url::parse(text.trim()).map_err(|error| match error {
        // A name no Unicode table maps, or any non-ASCII name where url's
        // tables are left out (an extension that pins `idna_adapter` 1.0,
        // the opt-in in its Cargo.toml).
        url::ParseError::IdnaError => {
            "its host name cannot be mapped to ASCII; write it in its xn-- (punycode) form"
        }
        _ => "it is not an absolute URL",
    })?;
    match url.scheme() {
        "https" => {}
        "http" if is_loopback_host(&url) => {}
        "http" => return Err("http is allowed only for localhost, 127.0.0.1 and [::1]; use https"),
        _ => return Err("the scheme must be https"),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("it must not contain user info; pass the credential in the token variable");
    }
    if url.query().is_some() {
        return Err("it must not have a query string");
    }
    if url.fragment().is_some() {
        return Err("it must not have a fragment");
    }
    if !url.path().ends_with('/') {
        let path = format!("{}/", url.path());
        url.set_path(&path);
    }
    Ok(url)
}

/// Whether `path` stays under the base when joined: relative, no `.` or
/// `..` segment, no query, fragment or backslash (the query goes through
/// [`Request::query`]).
fn is_relative_path(path: &str) -> bool {
    // `%2e` is a dot to the URL parser: `%2e%2e` leaves the base as `..` does.
    // Read without allocating: this runs on every request.
    let dot_segment = |segment: &str| {
        let (mut rest, mut dots) = (segment.as_bytes(), 0);
        while !rest.is_empty() {
            if rest[0] == b'.' {
                rest = &rest[1..];
            } else if rest.len() >= 3 && rest[..3].eq_ignore_ascii_case(b"%2e") {
                rest = &rest[3..];
            } else {
                return false;
            }
            dots += 1;
        }
        dots == 1 || dots == 2
    };
    !path.starts_with('/')
        && !path.contains([':', '?', '#', '\\'])
        && !path.chars().any(char::is_control)
        && !path.split('/').any(dot_segment)
}

/// A search service: its base URL, its credential, and one HTTP client
/// (connections are reused between calls).
pub struct Upstream {
    base: Url,
    credential: Option<(HeaderName, HeaderValue)>,
    /// Built on the first request: loading the TLS roots is most of an
    /// adapter's start-up time, and `initialize` should not wait for it.
    client: OnceLock<Option<HttpClient>>,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Upstream { .. }")
    }
}

impl Upstream {
    /// Reads the base URL from `base_url_var` and the credential from the
    /// process environment.
    pub fn from_env(base_url_var: &str, credential: Credential) -> Result<Upstream, ConfigError> {
        let read = |var: &str| std::env::var(var).unwrap_or_default();
        let secret = match &credential {
            Credential::Bearer { var } | Credential::Header { var, .. } => Some(read(var)),
            Credential::None => None,
        };
        Upstream::new(
            &read(base_url_var),
            base_url_var,
            &credential,
            secret.as_deref(),
        )
    }

    /// Validates a base URL and a credential value; the variable names only
    /// label errors.
    pub fn new(
        base_url_text: &str,
        base_url_var: &str,
        credential: &Credential,
        secret: Option<&str>,
    ) -> Result<Upstream, ConfigError> {
        if is_unset(base_url_text) {
            return Err(ConfigError::Missing {
                var: base_url_var.to_owned(),
            });
        }
        let header = match credential {
            Credential::None => None,
            Credential::Bearer { var } => {
                Some(credential_header(AUTHORIZATION, "Bearer ", var, secret)?)
            }
            Credential::Header { name, var } => {
                let name = HeaderName::try_from(name.as_str())
                    .map_err(|_| ConfigError::InvalidToken { var: var.clone() })?;
                Some(credential_header(name, "", var, secret)?)
            }
        };
        let base = base_url(base_url_text).map_err(|rule| ConfigError::InvalidBaseUrl {
            var: base_url_var.to_owned(),
            rule,
        })?;
        Ok(Upstream {
            base,
            credential: header,
            client: OnceLock::new(),
        })
    }

    /// The base URL, its path ending in `/`.
    pub fn base(&self) -> &Url {
        &self.base
    }

    /// A GET of `path` under the base URL.
    pub fn get(&self, path: &str) -> Request<'_> {
        self.request(Method::GET, path)
    }

    /// A POST to `path` under the base URL.
    pub fn post(&self, path: &str) -> Request<'_> {
        self.request(Method::POST, path)
    }

    fn request(&self, method: Method, path: &str) -> Request<'_> {
        let url = is_relative_path(path)
            .then(|| self.base.join(path).ok())
            .flatten();
        Request {
            upstream: self,
            method,
            url,
            headers: Vec::new(),
            body: None,
        }
    }

    /// The client, through the proxy the environment names for the base
    /// URL (every request goes under it, so one decision holds for all).
    fn client(&self) -> Result<&HttpClient, ProviderError> {
        self.client
            .get_or_init(|| HttpClient::new(ProxyEnv::from_env().proxy_for(&self.base), None).ok())
            .as_ref()
            .ok_or(ProviderError::Internal)
    }
}

/// The credential's header, checked before the URL so that a missing
/// credential is said first.
fn credential_header(
    name: HeaderName,
    prefix: &str,
    var: &str,
    secret: Option<&str>,
) -> Result<(HeaderName, HeaderValue), ConfigError> {
    let secret = secret.filter(|s| !is_unset(s)).map(str::trim);
    let secret = secret.ok_or_else(|| ConfigError::Missing {
        var: var.to_owned(),
    })?;
    let invalid = || ConfigError::InvalidToken {
        var: var.to_owned(),
    };
    if !secret.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(invalid());
    }
    let mut value = HeaderValue::from_str(&format!("{prefix}{secret}")).map_err(|_| invalid())?;
    value.set_sensitive(true);
    remember_credential(secret);
    Ok((name, value))
}

/// The credentials this process's upstreams were configured with: an Auto
/// Recall query never carries one ([`crate::hook`]).
static CREDENTIALS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

fn remember_credential(secret: &str) {
    let mut known = CREDENTIALS.lock().unwrap_or_else(|e| e.into_inner());
    if !known.iter().any(|k| k == secret) {
        known.push(secret.to_owned());
    }
}

/// Every credential an [`Upstream`] of this process was configured with.
pub fn configured_credentials() -> Vec<String> {
    CREDENTIALS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}

/// One request being built; nothing is sent before [`Request::send`].
#[must_use = "a request does nothing until it is sent"]
pub struct Request<'a> {
    upstream: &'a Upstream,
    method: Method,
    /// `None` when the path would leave the base URL: sending it is
    /// [`ProviderError::Internal`] (a defect of the mapping).
    url: Option<Url>,
    headers: Vec<(HeaderName, HeaderValue)>,
    body: Option<Vec<u8>>,
}

impl Request<'_> {
    /// Appends `name=value` to the query string, percent-encoded.
    pub fn query(mut self, name: &str, value: impl Display) -> Self {
        if let Some(url) = &mut self.url {
            url.query_pairs_mut().append_pair(name, &value.to_string());
        }
        self
    }

    /// A JSON body (and `content-type: application/json`).
    pub fn json(mut self, body: &impl serde::Serialize) -> Self {
        match serde_json::to_vec(body) {
            Ok(bytes) => self.json_bytes(bytes),
            Err(_) => {
                self.url = None;
                self
            }
        }
    }

    /// A body that is already JSON text.
    pub fn json_bytes(mut self, body: Vec<u8>) -> Self {
        self.body = Some(body);
        self.headers
            .push((CONTENT_TYPE, HeaderValue::from_static("application/json")));
        self
    }

    /// Another header. The credential is the upstream's, and `accept`,
    /// `content-type` and the framing headers are the client's: naming one
    /// of those, or a name or value HTTP cannot carry, makes sending fail
    /// with [`ProviderError::Internal`] (a defect of the mapping).
    pub fn header(mut self, name: &str, value: &str) -> Self {
        let owned = |name: &HeaderName| {
            [
                "authorization",
                "proxy-authorization",
                "cookie",
                "accept",
                "content-type",
                "content-length",
                "transfer-encoding",
                "host",
                "connection",
            ]
            .contains(&name.as_str())
                || self
                    .upstream
                    .credential
                    .as_ref()
                    .is_some_and(|(credential, _)| credential == name)
        };
        match (HeaderName::try_from(name), HeaderValue::from_str(value)) {
            (Ok(name), Ok(value)) if !owned(&name) => self.headers.push((name, value)),
            _ => self.url = None,
        }
        self
    }

    /// Sends the request and reads the answer as JSON, the way `JSON.parse`
    /// reads it.
    pub async fn send(self) -> Result<Value, ProviderError> {
        let text = self.send_text().await?;
        parse_json_like_javascript(&text).ok_or(ProviderError::Malformed)
    }

    /// Sends the request and reads the answer as text: a 2xx status, at
    /// most 1 MiB, strict UTF-8 without its BOM.
    pub async fn send_text(self) -> Result<String, ProviderError> {
        let body = self.send_bytes().await?;
        // A leading BOM is dropped, as JavaScript's TextDecoder does.
        let body = match body.strip_prefix(b"\xEF\xBB\xBF") {
            Some(rest) => rest.to_vec(),
            None => body,
        };
        String::from_utf8(body).map_err(|_| ProviderError::InvalidUtf8)
    }

    async fn send_bytes(self) -> Result<Vec<u8>, ProviderError> {
        let url = self.url.ok_or(ProviderError::Internal)?;
        let uri: hyper::Uri = url.as_str().parse().map_err(|_| ProviderError::Internal)?;
        let mut request =
            hyper::Request::new(Full::new(self.body.map(Bytes::from).unwrap_or_default()));
        *request.method_mut() = self.method;
        *request.uri_mut() = uri;
        let headers = request.headers_mut();
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        headers.insert(
            USER_AGENT,
            HeaderValue::from_static(concat!(
                env!("CARGO_PKG_NAME"),
                "/",
                env!("CARGO_PKG_VERSION")
            )),
        );
        if let Some((name, value)) = &self.upstream.credential {
            headers.insert(name.clone(), value.clone());
        }
        for (name, value) in self.headers {
            headers.append(name, value);
        }
        let response = self
            .upstream
            .client()?
            .send(request)
            .await
            .map_err(|_| ProviderError::Transport)?;
        read_response(response).await
    }
}

/// The status rules, then the body up to the cap.
async fn read_response(
    response: hyper::Response<hyper::body::Incoming>,
) -> Result<Vec<u8>, ProviderError> {
    let status = response.status();
    if status.is_redirection() {
        return Err(ProviderError::Redirect(status.as_u16()));
    }
    if status == StatusCode::TOO_MANY_REQUESTS {
        return Err(ProviderError::RateLimited);
    }
    if !status.is_success() {
        return Err(ProviderError::Status(status.as_u16()));
    }
    read_body(response, MAX_BODY_BYTES)
        .await
        .map_err(|error| match error {
            BodyError::TooLarge => ProviderError::Oversized,
            BodyError::Transport => ProviderError::Transport,
        })
}

/// `JSON.parse` for the documents serde_json refuses but JavaScript reads:
/// a number literal that overflows a double (`1e400`) is read as a
/// non-number (`Infinity` has no JSON value), and a lone surrogate escape
/// (`"\ud800"`) becomes U+FFFD. Documents nested deeper than 128 levels
/// are refused (serde_json's limit). Plain documents take the fast path.
pub fn parse_json_like_javascript(text: &str) -> Option<Value> {
    serde_json::from_str(text)
        .ok()
        .or_else(|| serde_json::from_str(&javascript_compatible(text, true)).ok())
}

/// The string at `key` of an object, if it is one: what a mapping reads
/// for `id`, `content`, `title`, `uri`, `updated_at`.
pub fn string(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_may_have_a_path_and_join_under_it() {
        let join = |base: &str, path: &str| {
            let upstream = Upstream::new(base, "B", &Credential::None, None).unwrap();
            upstream.get(path).url.map(|u| u.to_string())
        };
        for fine in ["😀/x", "a..b/...", "%2e%2e%2e", "%2ex", "v1/.well-known"] {
            assert!(join("https://x.example/api", fine).is_some(), "{fine}");
        }
        assert_eq!(
            join("https://x.example", "db/docs.json").as_deref(),
            Some("https://x.example/db/docs.json")
        );
        for base in ["https://x.example/api", "https://x.example/api/"] {
            assert_eq!(
                join(base, "v1/search").as_deref(),
                Some("https://x.example/api/v1/search")
            );
        }
        for bad in [
            "/etc",
            "../up",
            "a/../../b",
            "./a",
            "https://other.example/",
            "//other.example/x",
            "a?b=1",
            "a#b",
            "a\\b",
            "a/%2e%2e/%2E%2E/b",
            "%2e/x",
            ".%2E/x",
            "a\nb",
            "%2E%2e",
            "x/.%2e",
        ] {
            assert_eq!(join("https://x.example/api", bad), None, "{bad}");
        }
        let upstream =
            Upstream::new("http://127.0.0.1:1/api", "B", &Credential::None, None).unwrap();
        let url = upstream
            .get("search")
            .query("q", "a b&c=d é")
            .query("size", 5)
            .url
            .unwrap();
        assert_eq!(
            url.as_str(),
            "http://127.0.0.1:1/api/search?q=a+b%26c%3Dd+%C3%A9&size=5"
        );
    }

    #[test]
    fn a_mapping_cannot_replace_the_clients_headers() {
        let upstream = Upstream::new(
            "https://x.example",
            "B",
            &Credential::header("x-api-key", "K"),
            Some("k"),
        )
        .unwrap();
        for name in [
            "Authorization",
            "x-api-key",
            "accept",
            "content-type",
            "host",
        ] {
            assert!(upstream.get("s").header(name, "v").url.is_none(), "{name}");
        }
        assert!(upstream.get("s").header("x-tenant", "acme").url.is_some());
        assert!(upstream.get("s").header("x-tenant", "a\nb").url.is_none());
    }

    #[test]
    fn base_url_rules() {
        for good in [
            "https://ctx.example.com",
            "http://127.0.0.1:8080/x",
            "http://[::1]:9/",
            "http://LOCALHOST:1",
        ] {
            assert!(base_url(good).is_ok(), "{good}");
        }
        for bad in [
            "http://ctx.example.com",
            "http://127.0.0.2",
            "ftp://ctx.example.com",
            "https://user:pw@ctx.example.com",
            "https://ctx.example.com/?q=1",
            "https://ctx.example.com/?",
            "https://ctx.example.com/#x",
            "ctx.example.com",
        ] {
            assert!(base_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn credentials_are_checked_and_never_shown() {
        let make = |credential: Credential, secret: Option<&str>| {
            Upstream::new("https://x.example", "B", &credential, secret).map(|_| ())
        };
        assert_eq!(
            make(Credential::bearer("T"), Some("${T}")),
            Err(ConfigError::Missing { var: "T".into() })
        );
        assert_eq!(
            make(Credential::header("x-api-key", "K"), None),
            Err(ConfigError::Missing { var: "K".into() })
        );
        assert_eq!(
            make(Credential::bearer("T"), Some("a b")),
            Err(ConfigError::InvalidToken { var: "T".into() })
        );
        assert_eq!(
            make(Credential::header("bad name", "K"), Some("k")),
            Err(ConfigError::InvalidToken { var: "K".into() })
        );
        assert!(make(Credential::header("x-api-key", "K"), Some("k-1")).is_ok());
        assert!(make(Credential::None, None).is_ok());
        let shown = Upstream::new(
            "https://user:hunter2@x.example",
            "B",
            &Credential::bearer("T"),
            Some("t"),
        )
        .unwrap_err()
        .to_string();
        assert!(!shown.contains("hunter2"), "{shown}");
    }
}
