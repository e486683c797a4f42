//! The HTTP side of the remote adapter: the accept loop, routing, the
//! bearer check and concurrency cap in front of rmcp's Streamable HTTP
//! service, the operational endpoints, access logs and the drain.

use std::{
    convert::Infallible,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::{
    Method, Request, Response, StatusCode,
    body::Incoming,
    header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue, RETRY_AFTER, WWW_AUTHENTICATE},
};
use hyper_util::{rt::TokioIo, server::graceful::GracefulShutdown};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::never::NeverSessionManager,
};
use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use url::Url;

use super::{REQUIRED_SCOPE, RemoteConfig, auth::Authenticator, auth::Refusal};
use crate::runtime::{
    ContextSearchServer, Provider, RuntimeConfig,
    log::{self, Level, LogFormat},
};

type Body = BoxBody<Bytes, Infallible>;

const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";
/// Slow clients get this long to send their request headers.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Everything a request needs, shared by all connections.
pub(super) struct App<P: Provider> {
    name: String,
    mcp: StreamableHttpService<ContextSearchServer<P>, NeverSessionManager>,
    /// The path the MCP endpoint is served on (the resource URL's path).
    mcp_path: String,
    resource: Url,
    metadata_url: String,
    /// The RFC 9728 document, rendered once.
    metadata: Option<Bytes>,
    authenticator: Option<Authenticator>,
    slots: Arc<Semaphore>,
    max_concurrent: usize,
    draining: AtomicBool,
    /// Cancels rmcp's in-flight handlers when the drain runs out of time.
    cancel: CancellationToken,
}

impl<P: Provider> App<P> {
    pub(super) fn new(
        provider: P,
        config: RuntimeConfig,
        remote: &RemoteConfig,
        resource: Url,
        authenticator: Option<Authenticator>,
    ) -> Arc<Self> {
        let name = config.name.clone();
        let server =
            ContextSearchServer::new(Arc::new(provider), config).with_log_format(LogFormat::Json);
        let cancel = CancellationToken::new();
        let mcp_config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_sse_keep_alive(None)
            .with_sse_retry(None)
            .with_max_request_body_bytes(remote.max_body_bytes)
            .with_cancellation_token(cancel.child_token());
        // `Host` validation guards servers without authentication against
        // DNS rebinding, so `--no-auth` (loopback only) keeps rmcp's
        // loopback list. With OAuth a rebinding page has no token to send,
        // and proxies rewrite `Host` freely (nginx sends the upstream
        // name), so any host is accepted.
        let mcp_config = if remote.auth.is_some() {
            mcp_config.disable_allowed_hosts()
        } else {
            mcp_config
        };
        let mcp = StreamableHttpService::new(
            move || Ok(server.clone()),
            Arc::new(NeverSessionManager::default()),
            mcp_config,
        );
        let mcp_path = resource.path().to_owned();
        let metadata_url = format!(
            "{}{METADATA_PATH}{}",
            resource.origin().ascii_serialization(),
            if mcp_path == "/" { "" } else { &mcp_path }
        );
        let metadata = remote.auth.as_ref().map(|auth| {
            let document = json!({
                "resource": resource.as_str(),
                "authorization_servers": auth.authorization_servers,
                "scopes_supported": [REQUIRED_SCOPE],
                "bearer_methods_supported": ["header"],
                "resource_name": name,
            });
            Bytes::from(document.to_string())
        });
        Arc::new(App {
            name,
            mcp,
            mcp_path,
            resource,
            metadata_url,
            metadata,
            authenticator,
            slots: Arc::new(Semaphore::new(remote.max_concurrent)),
            max_concurrent: remote.max_concurrent,
            draining: AtomicBool::new(false),
            cancel,
        })
    }

    pub(super) fn resource(&self) -> &Url {
        &self.resource
    }

    pub(super) fn log(
        &self,
        level: Level,
        event: &str,
        message: std::fmt::Arguments<'_>,
        fields: &[(&str, Value)],
    ) {
        log::event(LogFormat::Json, &self.name, level, event, message, fields);
    }

    /// Accepts connections until `shutdown`, then drains for at most
    /// `drain_limit`.
    pub(super) async fn run(
        self: Arc<Self>,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()>,
        drain_limit: Duration,
    ) {
        let graceful = GracefulShutdown::new();
        let mut http = hyper::server::conn::http1::Builder::new();
        http.timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(HEADER_READ_TIMEOUT);
        tokio::pin!(shutdown);
        loop {
            let (stream, _peer) = tokio::select! {
                () = &mut shutdown => break,
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        // Out of file descriptors and the like: back off.
                        self.log(Level::Error, "accept_failed",
                            format_args!("cannot accept a connection: {error}"), &[]);
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
            };
            let _ = stream.set_nodelay(true);
            let app = self.clone();
            let service = hyper::service::service_fn(move |request| {
                let app = app.clone();
                async move { Ok::<_, Infallible>(app.respond(request).await) }
            });
            let connection = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
            tokio::spawn(connection);
        }
        drop(listener);
        self.draining.store(true, Ordering::SeqCst);
        let in_flight = self.max_concurrent - self.slots.available_permits();
        self.log(
            Level::Info,
            "draining",
            format_args!("shutting down: no new connections, {in_flight} call(s) in flight"),
            &[("in_flight", in_flight.into())],
        );
        if tokio::time::timeout(drain_limit, graceful.shutdown())
            .await
            .is_err()
        {
            let left = self.max_concurrent - self.slots.available_permits();
            self.cancel.cancel();
            self.log(
                Level::Warn,
                "drain_timeout",
                format_args!("cancelled {left} call(s) still running after {drain_limit:?}"),
                &[("cancelled", left.into())],
            );
            // Let the cancelled calls answer before the runtime goes away.
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        self.log(Level::Info, "stopped", format_args!("stopped"), &[]);
    }

    async fn respond(&self, request: Request<Incoming>) -> Response<Body> {
        let started = Instant::now();
        let method = request.method().clone();
        let (route, response, note) = self.route(request).await;
        let status = response.status().as_u16();
        let mut fields = vec![
            ("method", Value::from(method.as_str())),
            ("route", Value::from(route)),
            ("status", Value::from(status)),
            (
                "ms",
                Value::from((started.elapsed().as_secs_f64() * 1e4).round() / 10.0),
            ),
        ];
        if let Some(note) = note {
            fields.push(("reason", Value::from(note)));
        }
        let level = if status >= 500 {
            Level::Warn
        } else {
            Level::Info
        };
        self.log(
            level,
            "request",
            format_args!("{method} {route} {status}"),
            &fields,
        );
        response
    }

    /// The response, the route name for the log (never the raw path), and
    /// why the request was refused, if it was.
    async fn route(
        &self,
        request: Request<Incoming>,
    ) -> (&'static str, Response<Body>, Option<String>) {
        let path = request.uri().path();
        if path == self.mcp_path {
            let (response, note) = self.mcp(request).await;
            return ("mcp", response, note);
        }
        let get = request.method() == Method::GET || request.method() == Method::HEAD;
        if path == "/healthz" && get {
            return ("healthz", self.health(), None);
        }
        if let Some(metadata) = &self.metadata
            && get
            && (path == METADATA_PATH
                || path.strip_prefix(METADATA_PATH) == Some(self.mcp_path.as_str()))
        {
            return (
                "metadata",
                json_response(StatusCode::OK, metadata.clone()),
                None,
            );
        }
        let body = json!({"error": "not_found", "error_description": "no such endpoint"});
        (
            "other",
            json_response(StatusCode::NOT_FOUND, body.to_string().into()),
            None,
        )
    }

    fn health(&self) -> Response<Body> {
        if self.draining.load(Ordering::SeqCst) {
            json_response(
                StatusCode::SERVICE_UNAVAILABLE,
                Bytes::from_static(br#"{"status":"draining"}"#),
            )
        } else {
            json_response(StatusCode::OK, Bytes::from_static(br#"{"status":"ok"}"#))
        }
    }

    async fn mcp(&self, request: Request<Incoming>) -> (Response<Body>, Option<String>) {
        if self.draining.load(Ordering::SeqCst) {
            let body = json!({"error": "shutting_down", "error_description": "the server is shutting down; retry"});
            let mut response =
                json_response(StatusCode::SERVICE_UNAVAILABLE, body.to_string().into());
            response
                .headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from_static("1"));
            return (response, Some("draining".to_owned()));
        }
        if let Some(authenticator) = &self.authenticator {
            let header = request
                .headers()
                .get(AUTHORIZATION)
                .map(HeaderValue::as_bytes);
            if let Err(refusal) = authenticator.authorize(header).await {
                return (self.refuse(refusal), Some(refusal.to_string()));
            }
        }
        let Ok(_slot) = self.slots.clone().try_acquire_owned() else {
            let body = json!({
                "error": "busy",
                "error_description": format!(
                    "{} requests are in flight, the most this server takes at once; retry shortly",
                    self.max_concurrent
                ),
            });
            let mut response =
                json_response(StatusCode::SERVICE_UNAVAILABLE, body.to_string().into());
            response
                .headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from_static("1"));
            return (response, Some("concurrency limit".to_owned()));
        };
        (self.mcp.handle(request).await, None)
    }

    /// 401 or 403 with the `WWW-Authenticate` challenge of RFC 6750 and
    /// RFC 9728 5.1 (the metadata URL lets clients discover the
    /// authorization server).
    fn refuse(&self, refusal: Refusal) -> Response<Body> {
        let metadata = &self.metadata_url;
        let (status, challenge, body) = match refusal {
            Refusal::Missing => (
                StatusCode::UNAUTHORIZED,
                format!(r#"Bearer resource_metadata="{metadata}", scope="{REQUIRED_SCOPE}""#),
                json!({"error": "unauthorized", "error_description": "a bearer token is required"}),
            ),
            Refusal::Invalid(why) => (
                StatusCode::UNAUTHORIZED,
                format!(
                    r#"Bearer resource_metadata="{metadata}", error="invalid_token", error_description="{why}""#
                ),
                json!({"error": "invalid_token", "error_description": why}),
            ),
            Refusal::InsufficientScope => (
                StatusCode::FORBIDDEN,
                format!(
                    r#"Bearer resource_metadata="{metadata}", error="insufficient_scope", scope="{REQUIRED_SCOPE}""#
                ),
                json!({"error": "insufficient_scope", "error_description": refusal.to_string()}),
            ),
        };
        let mut response = json_response(status, body.to_string().into());
        if let Ok(challenge) = HeaderValue::from_str(&challenge) {
            response.headers_mut().insert(WWW_AUTHENTICATE, challenge);
        }
        response
    }
}

fn json_response(status: StatusCode, body: Bytes) -> Response<Body> {
    let mut response = Response::new(Full::new(body).boxed());
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}
