//! The HTTP side of the remote adapter: the accept loop, routing, the
//! bearer check and concurrency cap in front of the MCP endpoint
//! ([`super::mcp`]), the operational endpoints, access logs and the drain.
//! Which connections are kept is [`super::connections`]'s to decide.

use std::{
    convert::Infallible,
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    task::{Context, Poll},
    time::{Duration, Instant},
};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::{
    Method, Request, Response, StatusCode,
    body::Incoming,
    header::{
        ALLOW, AUTHORIZATION, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, HOST, HeaderValue,
        RETRY_AFTER, WWW_AUTHENTICATE,
    },
};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tokio_util::{sync::CancellationToken, task::TaskTracker};
use url::Url;

use super::{
    REQUIRED_SCOPE, RemoteConfig,
    auth::Authenticator,
    auth::Refusal,
    connections::{Connections, HEALTH_RESERVE, Limits, Link},
    mcp,
};
use crate::{
    ContextSearchServer, Provider, RuntimeConfig,
    log::{self, Level, LogFormat},
};

type Body = BoxBody<Bytes, Infallible>;

/// Marks a response of the direct path (the access log line says
/// `"direct": true`).
#[derive(Clone, Copy)]
struct Direct;

const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";
/// Slow clients get this long to send their request headers (and a
/// connection between requests waits this long for the next).
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// ...and this long to send the body, which is read before a concurrency
/// slot is taken (a client that sends headers and then nothing holds no
/// slot, only its connection).
const BODY_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How often, at most, closing idle connections to make room is logged.
const CLOSED_REPORT_EVERY: Duration = Duration::from_secs(10);

/// Everything a request needs, shared by all connections.
pub(super) struct App<P: Provider> {
    name: String,
    /// The handler behind the MCP endpoint ([`super::mcp`]).
    server: ContextSearchServer<P>,
    /// The path the MCP endpoint is served on (the resource URL's path).
    mcp_path: String,
    resource: Url,
    metadata_url: String,
    /// The RFC 9728 document, rendered once.
    metadata: Option<Bytes>,
    authenticator: Option<Authenticator>,
    slots: Arc<Semaphore>,
    max_concurrent: usize,
    /// Open connections, and which to close first.
    connections: Arc<Connections>,
    max_body_bytes: usize,
    draining: AtomicBool,
    /// Cancels the calls in flight when the drain runs out of time.
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
            server,
            mcp_path,
            resource,
            metadata_url,
            metadata,
            authenticator,
            slots: Arc::new(Semaphore::new(remote.max_concurrent)),
            max_concurrent: remote.max_concurrent,
            connections: Connections::new(Limits {
                max_connections: remote.max_connections,
                health_reserve: HEALTH_RESERVE,
                max_idle_per_peer: remote.max_idle_per_peer,
            }),
            max_body_bytes: remote.max_body_bytes,
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
        let tasks = TaskTracker::new();
        let drain = CancellationToken::new();
        let mut http = hyper::server::conn::http1::Builder::new();
        http.timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(HEADER_READ_TIMEOUT);
        let mut closed = ClosedReport::default();
        tokio::pin!(shutdown);
        loop {
            let (stream, peer) = tokio::select! {
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
            let admission = self.connections.admit(peer.ip());
            closed.add(&self, admission.closed_for_peer, admission.closed_for_room);
            let Some(link) = admission.link else {
                tokio::spawn(refuse_connection(stream));
                continue;
            };
            let app = self.clone();
            let service_link = link.clone();
            let service = hyper::service::service_fn(move |request| {
                let app = app.clone();
                // A whole head has arrived: in flight until answered.
                let busy = service_link.begin();
                async move {
                    let response = app.respond(request, busy.link()).await;
                    drop(busy);
                    Ok::<_, Infallible>(response)
                }
            });
            let io = Watched {
                io: TokioIo::new(stream),
                link: link.clone(),
            };
            let connection = http.serve_connection(io, service);
            tasks.spawn(serve_connection(connection, link, drain.clone()));
        }
        drop(listener);
        self.draining.store(true, Ordering::SeqCst);
        drain.cancel();
        tasks.close();
        let in_flight = self.max_concurrent - self.slots.available_permits();
        self.log(
            Level::Info,
            "draining",
            format_args!("shutting down: no new connections, {in_flight} call(s) in flight"),
            &[("in_flight", in_flight.into())],
        );
        if tokio::time::timeout(drain_limit, tasks.wait())
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

    async fn respond(&self, request: Request<Incoming>, link: &Link) -> Response<Body> {
        let started = Instant::now();
        let method = request.method().clone();
        let (route, response, note) = if request.headers().get_all(HOST).iter().count() > 1 {
            let body =
                json!({"error": "bad_request", "error_description": "more than one Host header"});
            (
                "other",
                json_response(StatusCode::BAD_REQUEST, body.to_string().into()),
                Some("duplicate Host".to_owned()),
            )
        } else if link.health_only && request.uri().path() != "/healthz" {
            let response = closing(busy(format!(
                "{} connections are open, the most this server takes; retry shortly",
                self.connections.limits().max_connections
            )));
            ("other", response, Some("connection limit".to_owned()))
        } else {
            self.route(request, link).await
        };
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
        if response.extensions().get::<Direct>().is_some() {
            fields.push(("direct", Value::from(true)));
        }
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
        link: &Link,
    ) -> (&'static str, Response<Body>, Option<String>) {
        let path = request.uri().path();
        if path == self.mcp_path {
            let (response, note) = self.mcp(request, link).await;
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

    async fn mcp(
        &self,
        request: Request<Incoming>,
        link: &Link,
    ) -> (Response<Body>, Option<String>) {
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
        link.authorized();
        let (parts, body) = match self.read_body(request).await {
            Ok(read) => read,
            Err(refused) => return refused,
        };
        let Ok(_slot) = self.slots.clone().try_acquire_owned() else {
            let response = busy(format!(
                "{} requests are in flight, the most this server takes at once; retry shortly",
                self.max_concurrent
            ));
            return (response, Some("concurrency limit".to_owned()));
        };
        // `Host` validation guards servers without authentication against
        // DNS rebinding, so `--no-auth` (loopback only) keeps rmcp's
        // loopback list. With OAuth a rebinding page has no token to send,
        // and proxies rewrite `Host` freely (nginx sends the upstream
        // name), so any host is accepted.
        let loopback_only = self.authenticator.is_none();
        let reply = mcp::respond(
            &self.server,
            &parts.method,
            &parts.uri,
            &parts.headers,
            &body,
            loopback_only,
            &self.cancel,
        )
        .await;
        (into_response(reply), None)
    }

    /// The request's head and body, the body read bounded and with a
    /// deadline (before a slot is taken), or the refusal to send: a
    /// declared body over the cap is refused before it is read.
    async fn read_body(
        &self,
        request: Request<Incoming>,
    ) -> Result<(hyper::http::request::Parts, Bytes), (Response<Body>, Option<String>)> {
        let declared = request
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        if declared.is_some_and(|n| n > self.max_body_bytes as u64) {
            return Err((self.too_large(), Some("body over the cap".to_owned())));
        }
        let (parts, body) = request.into_parts();
        let limited = http_body_util::Limited::new(body, self.max_body_bytes);
        match tokio::time::timeout(BODY_READ_TIMEOUT, limited.collect()).await {
            Err(_) => {
                let body = json!({"error": "request_timeout", "error_description": "the request body did not arrive in time"});
                let response = json_response(StatusCode::REQUEST_TIMEOUT, body.to_string().into());
                Err((closing(response), Some("body timeout".to_owned())))
            }
            Ok(Err(error)) if error.is::<http_body_util::LengthLimitError>() => {
                Err((self.too_large(), Some("body over the cap".to_owned())))
            }
            Ok(Err(_)) => {
                let body =
                    json!({"error": "bad_request", "error_description": "malformed request body"});
                let response = json_response(StatusCode::BAD_REQUEST, body.to_string().into());
                Err((closing(response), Some("malformed body".to_owned())))
            }
            Ok(Ok(collected)) => Ok((parts, collected.to_bytes())),
        }
    }

    fn too_large(&self) -> Response<Body> {
        let body = json!({
            "error": "payload_too_large",
            "error_description": format!("the request body is larger than {} bytes", self.max_body_bytes),
        });
        closing(json_response(
            StatusCode::PAYLOAD_TOO_LARGE,
            body.to_string().into(),
        ))
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

/// Serves one connection until it ends. On the drain it finishes the
/// request in flight and closes, as hyper's graceful shutdown does. Told to
/// make room ([`Connections`]), it first reads what has already arrived (a
/// request whose head is there is answered, then the connection closes);
/// an idle one is dropped at once, also one in the middle of a head.
async fn serve_connection<S>(
    connection: hyper::server::conn::http1::Connection<Watched, S>,
    link: Arc<Link>,
    drain: CancellationToken,
) where
    S: hyper::service::HttpService<Incoming, ResBody = Body>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    tokio::pin!(connection);
    let (mut draining, mut closing) = (false, false);
    loop {
        tokio::select! {
            _ = connection.as_mut() => break,
            () = drain.cancelled(), if !draining => {
                draining = true;
                connection.as_mut().graceful_shutdown();
            }
            () = link.closed_for_room(), if !closing => {
                closing = true;
                let polled =
                    std::future::poll_fn(|cx| Poll::Ready(connection.as_mut().poll(cx))).await;
                if polled.is_ready() || link.is_idle() {
                    break;
                }
                connection.as_mut().graceful_shutdown();
            }
        }
    }
}

/// The socket of a connection, noting for its [`Link`] whether an answer
/// is still waiting to be written.
struct Watched {
    io: TokioIo<tokio::net::TcpStream>,
    link: Arc<Link>,
}

impl Watched {
    fn noted<T>(&self, poll: Poll<std::io::Result<T>>) -> Poll<std::io::Result<T>> {
        self.link.set_write_blocked(poll.is_pending());
        poll
    }
}

impl hyper::rt::Read for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let poll = Pin::new(&mut self.io).poll_write(cx, buf);
        self.noted(poll)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let poll = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.noted(poll)
    }

    fn is_write_vectored(&self) -> bool {
        hyper::rt::Write::is_write_vectored(&self.io)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// Idle connections closed to make room, logged at most every
/// [`CLOSED_REPORT_EVERY`] (a flood would otherwise write a line per
/// connection).
#[derive(Default)]
struct ClosedReport {
    for_peer: usize,
    for_room: usize,
    last: Option<Instant>,
}

impl ClosedReport {
    fn add<P: Provider>(&mut self, app: &App<P>, for_peer: usize, for_room: usize) {
        if for_peer + for_room == 0 {
            return;
        }
        self.for_peer += for_peer;
        self.for_room += for_room;
        if self
            .last
            .is_some_and(|last| last.elapsed() < CLOSED_REPORT_EVERY)
        {
            return;
        }
        let (for_peer, for_room) = (self.for_peer, self.for_room);
        app.log(
            Level::Warn,
            "connections_closed",
            format_args!(
                "closed {} idle connection(s) to make room: {for_peer} over a peer's idle cap, {for_room} for new connections",
                for_peer + for_room
            ),
            &[
                ("over_peer_cap", for_peer.into()),
                ("for_room", for_room.into()),
            ],
        );
        *self = ClosedReport {
            last: Some(Instant::now()),
            ..ClosedReport::default()
        };
    }
}

/// `response` with `Connection: close`: the rest of what the client sends
/// on this connection is not read.
fn closing(mut response: Response<Body>) -> Response<Body> {
    response
        .headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    response
}

/// `503` with `Retry-After: 1`.
fn busy(description: String) -> Response<Body> {
    let body = json!({"error": "busy", "error_description": description});
    let mut response = json_response(StatusCode::SERVICE_UNAVAILABLE, body.to_string().into());
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// Past every connection permit: a fixed `503` written at once, then the
/// connection closed, without reading the request.
async fn refuse_connection(mut stream: tokio::net::TcpStream) {
    use tokio::io::AsyncWriteExt;
    let body =
        br#"{"error":"busy","error_description":"too many open connections; retry shortly"}"#;
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        let _ = stream.write_all(head.as_bytes()).await;
        let _ = stream.write_all(body).await;
        let _ = stream.shutdown().await;
    })
    .await;
}

fn json_response(status: StatusCode, body: Bytes) -> Response<Body> {
    let mut response = Response::new(Full::new(body).boxed());
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// The HTTP response of an MCP reply.
fn into_response(reply: mcp::Reply) -> Response<Body> {
    let mut response = Response::new(Full::new(reply.body).boxed());
    *response.status_mut() = reply.status;
    if let Some(kind) = reply.content_type {
        response
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static(kind));
    }
    if reply.allow_post {
        response
            .headers_mut()
            .insert(ALLOW, HeaderValue::from_static("POST"));
    }
    if reply.direct {
        response.extensions_mut().insert(Direct);
    }
    response
}
