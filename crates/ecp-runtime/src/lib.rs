//! ecp-runtime: the External Context MCP Profile v1 for Qwen Code
//! extensions, as a library.
//!
//! An extension needs four things from it, and this is all of its API:
//!
//! - [`Adapter`]: the one entry point of a `dist/main` (and of `ecp
//!   serve`), flags and environment parsed in one place; it serves a
//!   [`Provider`] on stdio, or with `--listen` over MCP Streamable HTTP as
//!   an OAuth resource server, keeping every promise of profile-v1
//!   (canonical schemas, bounded input errors, one stable redacted failure,
//!   a [`ProviderBudget`] inside the client timeout, cancellation, no
//!   retry). [`serve`] runs the same server over any byte stream (tests);
//! - [`Provider`], [`ProviderItem`], [`ProviderError`]: the provider-owned
//!   part, the search behind the tool;
//! - [`http`]: the hardened HTTP client a provider maps its REST API with
//!   (base URL and credential rules, no redirect, no retry, proxies, the
//!   1 MiB cap, strict UTF-8, JSON as `JSON.parse` reads it, stable errors);
//! - [`profile`] and [`contracts`]: the contract as pure functions (query
//!   rules, the byte-exact envelope renderer, the profile's constants) and
//!   its language-neutral vectors, for an extension's own tests.
//!
//! Only MCP goes to stdout; the runtime's own lines go to stderr and never
//! hold a query, an endpoint, a credential, a token or an upstream body.
//! Extensions depend on this crate (vendored under `vendor/ecp-runtime`
//! until it is published); it depends on crates.io packages only and on
//! nothing of ecp's. The public API is held by a snapshot in ecp's
//! repository (`tests/it/snapshots/it__runtime_api__public_api.snap`,
//! checked by `tests/it/runtime_api.rs`); what ecp itself uses beyond it
//! lives in a hidden module that is not part of the API.

#![deny(clippy::print_stdout)]
#![warn(clippy::too_many_lines)]
#![warn(missing_docs)]

mod adapter;
mod client;
mod contract_files;
pub mod contracts;
mod hook;
#[doc(hidden)]
pub mod internal;
mod log;
mod old_paths;
mod outbound;
pub mod profile;
mod proxy_env;
mod releases;
mod remote;
mod server;
mod stdio;
mod tool;
mod v1;

pub use adapter::{Adapter, AdapterError};
pub use profile::render::ProviderItem;
/// The JSON and URL crates a provider builds on, at the versions the
/// runtime uses (so an extension needs no dependency of its own for them).
pub use {serde_json, url};

pub mod http {
    //! The hardened HTTP client a provider maps its REST API with.
    //!
    //! An [`Upstream`] is a validated base URL (a path is allowed; request
    //! paths stay under it, `%2e` dot segments are refused) and an optional
    //! [`Credential`] read from the environment; [`Upstream::get`] and
    //! [`Upstream::post`] build a [`Request`] (query parameters, a JSON body,
    //! extra headers except the credential, accept and framing ones) whose
    //! answer is read with every rule of the profile: no redirect, no retry,
    //! proxies from the environment, at most 1 MiB, strict UTF-8, JSON as
    //! JavaScript's `JSON.parse` reads it, each failure a stable
    //! [`ProviderError`](crate::ProviderError) that holds no query, endpoint,
    //! credential or answer. [`string`] reads a string field of a mapped item.

    pub use crate::client::{ConfigError, Credential, Request, Upstream, string};
}

// Paths that code an earlier ecp generated still names, each deprecated
// with the path to use instead; hidden, not part of the API (the snapshot
// lists them apart), gone in 1.0 (see `old_paths`).
#[doc(hidden)]
#[allow(deprecated)]
pub use old_paths::{binding, install_tls_provider, proxy, search_response};
#[cfg(feature = "reqwest")]
#[doc(hidden)]
pub use reqwest;

use server::ContextSearchServer;
use stdio::serve_lines;
use tool::context_search_tool;

use std::{future::Future, sync::Arc, time::Duration};

use rmcp::ServiceExt;
use tokio::io::{AsyncRead, AsyncWrite};

/// A search backend: the provider-owned part of an extension.
///
/// `search` receives the normalized query and the fixed limit (5) and returns
/// items in provider order. It is called at most once per tool call, never
/// retried, and its future is dropped when the budget runs out or the client
/// cancels, so an in-flight HTTP request is aborted with it.
pub trait Provider: Send + Sync + 'static {
    /// Up to `limit` items for `query`, or the category of failure (never
    /// the query, endpoint, credential or answer).
    fn search(
        &self,
        query: &str,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<ProviderItem>, ProviderError>> + Send;
}

/// Why a provider call failed. Every variant reaches the client as the same
/// stable text; `Display` is a redacted category for the stderr log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The provider budget ran out.
    #[error("provider budget exceeded")]
    Timeout,
    /// The upstream answered with a 3xx (redirects are never followed).
    #[error("upstream redirected (HTTP {0})")]
    Redirect(u16),
    /// The upstream answered 429.
    #[error("upstream rate limited (HTTP 429)")]
    RateLimited,
    /// Any other non-2xx status.
    #[error("upstream failed (HTTP {0})")]
    Status(u16),
    /// The body, or its declared length, exceeds the cap.
    #[error("upstream response too large")]
    Oversized,
    /// The body is not strict UTF-8.
    #[error("upstream response is not UTF-8")]
    InvalidUtf8,
    /// The body is not JSON with an `items` array.
    #[error("upstream response is malformed")]
    Malformed,
    /// Connecting, sending or receiving failed.
    #[error("upstream transport failed")]
    Transport,
    /// The adapter itself failed (a bug, a panic in provider code).
    #[error("internal adapter failure")]
    Internal,
}

/// The provider's share of the client's MCP call timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderBudget(Duration);

impl ProviderBudget {
    /// The reference budget: 5000 ms inside the manifest's 8000 ms timeout.
    pub const DEFAULT: ProviderBudget = ProviderBudget(Duration::from_millis(5000));
    /// The largest budget accepted: Qwen's own default call timeout.
    pub const MAX: ProviderBudget = ProviderBudget(Duration::from_secs(600));

    /// A budget of `millis` milliseconds; `None` unless 1..=600000.
    pub fn from_millis(millis: u64) -> Option<ProviderBudget> {
        let budget = ProviderBudget(Duration::from_millis(millis));
        (millis > 0 && budget <= ProviderBudget::MAX).then_some(budget)
    }

    /// The budget as a duration.
    pub fn duration(self) -> Duration {
        self.0
    }
}

impl PartialOrd for ProviderBudget {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ProviderBudget {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

impl Default for ProviderBudget {
    fn default() -> Self {
        ProviderBudget::DEFAULT
    }
}

/// How the server presents itself and how long the provider may take.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// `serverInfo.name`, and the prefix of every stderr line.
    pub name: String,
    /// `serverInfo.version`.
    pub version: String,
    /// How long one provider call may take.
    pub budget: ProviderBudget,
}

/// Why the server stopped abnormally.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RuntimeError(String);

/// Serves `context_search` over any byte stream pair until the peer closes
/// it. Tests drive this in-process over `tokio::io::duplex`.
pub async fn serve<P, R, W>(
    provider: P,
    config: RuntimeConfig,
    reader: R,
    writer: W,
) -> Result<(), RuntimeError>
where
    P: Provider,
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let server = ContextSearchServer::new(Arc::new(provider), config);
    let running = match server.serve((reader, writer)).await {
        Ok(running) => running,
        // Input ended before a client said anything: nothing to serve.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(error) => return Err(RuntimeError(format!("MCP handshake failed: {error}"))),
    };
    running
        .waiting()
        .await
        .map_err(|_| RuntimeError("MCP service task failed".to_owned()))?;
    Ok(())
}

/// Serves `context_search` on stdin/stdout until stdin reaches EOF.
///
/// Installs a panic hook that prints one redacted line instead of the panic
/// payload (which could hold provider data), so a bug in provider code
/// surfaces as the stable failure text plus an anonymous stderr line.
pub async fn serve_stdio<P: Provider>(
    provider: P,
    config: RuntimeConfig,
) -> Result<(), RuntimeError> {
    install_panic_hook(&config.name, log::LogFormat::Plain);
    let (stdin, stdout) = rmcp::transport::io::stdio_pipes();
    serve_lines(provider, config, stdin, stdout).await
}

/// Replaces the panic message (which could hold provider data) with one
/// anonymous line naming the place.
pub(crate) fn install_panic_hook(name: &str, format: log::LogFormat) {
    let name = name.to_owned();
    std::panic::set_hook(Box::new(move |info| {
        let place = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        log::event(
            format,
            &name,
            log::Level::Error,
            "panic",
            format_args!("internal error (panic{place})"),
            &[],
        );
    }));
}
