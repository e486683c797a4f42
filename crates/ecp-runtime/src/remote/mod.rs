//! The remote adapter: the same `context_search` server over MCP Streamable
//! HTTP, as a provider-operated OAuth resource server.
//!
//! - Stateless, JSON responses ([`mcp`], a port of rmcp's Streamable HTTP
//!   rules for that mode, held to rmcp's service by ecp's tests): no
//!   session affinity, so any load balancer may spread requests across
//!   replicas. The plain `tools/call` of `context_search` takes a direct
//!   path to the same handler, with the same bytes ([`direct`]).
//! - Every request to the MCP path carries a bearer JWT, checked by
//!   [`auth::Authenticator`] before any provider work; the protected
//!   resource metadata (RFC 9728) is served at
//!   `/.well-known/oauth-protected-resource[/path]`.
//! - `/healthz`; at most `max_concurrent` MCP requests at once (then 503
//!   with `Retry-After`), a slot being taken only once the body has arrived
//!   (headers within 10 s, the body within 10 s more); request bodies capped
//!   (413, at once for a declared `Content-Length`); malformed framing and
//!   two `Host` headers are 400; SIGTERM stops accepting, lets in-flight
//!   calls finish within their provider budget and exits; a client that
//!   disconnects cancels its call, which aborts the upstream request.
//! - Connections ([`connections`]): one waiting for a request (idle) holds
//!   no request permit and may be closed to make room, one with a request
//!   in flight never is. A peer keeps at most `max_idle_per_peer` (64)
//!   idle connections that never carried an authorized request; past
//!   `max_connections` (1024) open ones, a new connection closes the oldest
//!   idle one of the peer holding the most (unauthorized ones first); when
//!   every one has a request in flight, 16 more may only ask `/healthz`,
//!   and past those a connection gets a 503 and is closed unread. A flood
//!   of silent connections thus closes its own and cannot fail a probe.
//! - JSON log lines on stderr; never a token, a query or a body.
//!
//! Configuration comes from flags or the environment only
//! ([`RemoteSettings`]), never from a request. Serve it behind TLS: the
//! adapter speaks plain HTTP and expects a proxy or load balancer in front.

pub mod auth;
mod connections;
mod direct;
mod http;
mod mcp;
mod settings;

use std::{future::Future, net::SocketAddr, time::Duration};

use url::Url;

pub use auth::{Authenticator, JwksSource, KeySet, REQUIRED_SCOPE, Refusal, TokenRules};
pub use settings::{
    DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CONCURRENT, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_IDLE_PER_PEER, FLAGS_USAGE, RemoteSettings, SettingsError, env_names, split_list,
};

use super::{
    Provider, RuntimeConfig, RuntimeError,
    log::{Level, LogFormat},
};

/// Validated configuration of the remote adapter.
#[derive(Debug, Clone)]
pub struct RemoteConfig {
    /// The address to bind.
    pub listen: SocketAddr,
    /// The public URL of the MCP endpoint (the OAuth resource and token
    /// audience); `None` on loopback means `http://{bound address}/mcp`.
    pub resource: Option<Url>,
    /// `None` only for a loopback listener started with `--no-auth`.
    pub auth: Option<AuthConfig>,
    /// Calls served at once; more are answered `503`.
    pub max_concurrent: usize,
    /// The largest request body taken; a larger one is answered `413`.
    pub max_body_bytes: usize,
    /// Open connections before a new one closes an idle one.
    pub max_connections: usize,
    /// Idle connections of one peer that never carried an authorized
    /// request.
    pub max_idle_per_peer: usize,
}

/// Who issues tokens and where their keys are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthConfig {
    /// The accepted token issuers.
    pub authorization_servers: Vec<String>,
    /// Where the issuers' signing keys come from.
    pub jwks: JwksSource,
}

/// Serves until SIGTERM or Ctrl-C, then drains.
pub async fn serve_http_until_signal<P: Provider>(
    provider: P,
    config: RuntimeConfig,
    remote: RemoteConfig,
) -> Result<(), RuntimeError> {
    super::install_panic_hook(&config.name, LogFormat::Json);
    serve_http(provider, config, remote, shutdown_signal()).await
}

/// Serves until `shutdown` completes, then stops accepting connections,
/// waits for in-flight requests (at most the provider budget and a second),
/// and returns.
pub async fn serve_http<P: Provider>(
    provider: P,
    config: RuntimeConfig,
    remote: RemoteConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<(), RuntimeError> {
    let listener = tokio::net::TcpListener::bind(remote.listen)
        .await
        .map_err(|error| RuntimeError(format!("cannot listen on {}: {error}", remote.listen)))?;
    let bound = listener
        .local_addr()
        .map_err(|error| RuntimeError(format!("cannot read the bound address: {error}")))?;
    let resource = match &remote.resource {
        Some(resource) => resource.clone(),
        None => Url::parse(&format!("http://{bound}/mcp"))
            .map_err(|error| RuntimeError(format!("cannot form the resource URL: {error}")))?,
    };
    let authenticator = match &remote.auth {
        None => None,
        Some(auth) => {
            let rules = TokenRules {
                resource: resource.to_string(),
                issuers: auth.authorization_servers.clone(),
            };
            Some(
                Authenticator::load(rules, &auth.jwks)
                    .await
                    .map_err(|error| RuntimeError(error.to_string()))?,
            )
        }
    };
    let drain_limit = config.budget.duration() + Duration::from_secs(1);
    let app = http::App::new(provider, config, &remote, resource, authenticator);
    app.log(
        Level::Info,
        "listening",
        format_args!("listening on http://{bound}, serving {}", app.resource()),
        &[
            ("address", bound.to_string().into()),
            ("resource", app.resource().to_string().into()),
            (
                "auth",
                if remote.auth.is_some() {
                    "oauth"
                } else {
                    "none"
                }
                .into(),
            ),
        ],
    );
    // One request line per request: written in batches (log::batch) while
    // this serves, and written out however the serving ends.
    let _batching = super::log::batch_info_lines();
    app.run(listener, shutdown, drain_limit).await;
    Ok(())
}

/// What the MCP endpoint answered, for [`answer_mcp`].
#[doc(hidden)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpAnswer {
    pub status: u16,
    pub content_type: Option<&'static str>,
    pub allow: Option<&'static str>,
    pub body: bytes::Bytes,
}

/// What the MCP endpoint answers to one request that has passed the checks
/// around it (bearer token, body cap, concurrency), in this process: for
/// the fuzz target that holds it to rmcp's Streamable HTTP service.
#[doc(hidden)]
pub async fn answer_mcp<P: Provider>(
    server: &super::ContextSearchServer<P>,
    method: &hyper::Method,
    uri: &hyper::Uri,
    headers: &hyper::HeaderMap,
    body: &[u8],
    oauth: bool,
) -> McpAnswer {
    let cancel = tokio_util::sync::CancellationToken::new();
    let reply = mcp::respond(server, method, uri, headers, body, !oauth, &cancel).await;
    McpAnswer {
        status: reply.status.as_u16(),
        content_type: reply.content_type,
        allow: reply.allow_post.then_some("POST"),
        body: reply.body,
    }
}

/// SIGTERM (on Unix) or Ctrl-C.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = terminate.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
