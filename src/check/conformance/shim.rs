//! A loopback Streamable HTTP front for a stdio MCP server, so that a suite
//! that speaks only HTTP (the official conformance suite) can judge it.
//!
//! - A POST without `Mcp-Session-Id` that carries `initialize` starts the
//!   server once more, as a session of its own, and the answer names the
//!   session; later requests with that ID reach that process. A request
//!   without a session that is not `initialize` (the stateless revision
//!   2026-07-28, where every request stands alone) goes to one shared
//!   process. At most [`MAX_SESSIONS`] processes run: a new session ends
//!   the oldest. `DELETE` ends a session; `GET` is 405 (no stream for
//!   unsolicited messages).
//! - A request's ID is replaced by the shim's own on the way in and put
//!   back on the way out, so that clients may reuse IDs on the shared
//!   process. The answer is an event stream when the client accepts one
//!   (whatever the server sends before its response, notifications and its
//!   own requests, travels on it), else the response as JSON.
//! - Bounded: a body or a line of the server of at most [`MAX_MESSAGE`]
//!   bytes; a `Host` that is not loopback is 403 (no DNS rebinding reaches
//!   the process through it).
//!
//! What the shim itself does at the HTTP level (headers, sessions,
//! streams) is the shim's, not the server's: the caller keeps the suite's
//! transport checks out of the server's verdict ([`super::transport`]).

use std::{
    collections::{HashMap, VecDeque},
    convert::Infallible,
    pin::Pin,
    process::Stdio,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    task::{Context, Poll},
};

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::{
    Method, Request, Response, StatusCode,
    body::{Body, Frame, Incoming},
    header::{ACCEPT, ALLOW, CONTENT_TYPE, HOST},
};
use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader},
    net::TcpListener,
    process::ChildStdin,
    sync::mpsc,
};
use tokio_util::sync::CancellationToken;

use crate::{check::target::Launch, children::Group};

/// The largest request body, and the longest line of the server, in bytes.
pub const MAX_MESSAGE: usize = 4 * 1024 * 1024;
/// Server processes running at once; a new session ends the oldest.
pub const MAX_SESSIONS: usize = 8;
/// Messages of one answer waiting to be sent to a slow client.
const QUEUED: usize = 64;
const SESSION_HEADER: &str = "mcp-session-id";

/// The shim, listening until dropped.
pub struct Shim {
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    stop: CancellationToken,
    state: Arc<State>,
}

impl Drop for Shim {
    fn drop(&mut self) {
        self.stop.cancel();
        let mut sessions = lock(&self.state.sessions);
        sessions.order.clear();
        sessions.by_id.clear();
        lock(&self.state.shared).take();
    }
}

impl Shim {
    /// Listens on 127.0.0.1 in front of the server `launch` starts.
    pub async fn start(launch: Launch) -> std::io::Result<Shim> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let stop = CancellationToken::new();
        let state = Arc::new(State {
            launch,
            port,
            sessions: Mutex::new(Sessions::default()),
            shared: Mutex::new(None),
            next_id: AtomicU64::new(1),
        });
        tokio::spawn(accept(listener, state.clone(), stop.clone()));
        Ok(Shim {
            url: format!("http://127.0.0.1:{port}/mcp"),
            stop,
            state,
        })
    }

    /// How many server processes the shim started.
    pub fn started(&self) -> u64 {
        lock(&self.state.sessions).started
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

struct State {
    launch: Launch,
    port: u16,
    sessions: Mutex<Sessions>,
    /// The process of requests without a session.
    shared: Mutex<Option<Arc<Server>>>,
    next_id: AtomicU64,
}

#[derive(Default)]
struct Sessions {
    by_id: HashMap<String, Arc<Server>>,
    /// Oldest first.
    order: VecDeque<String>,
    started: u64,
}

async fn accept(listener: TcpListener, state: Arc<State>, stop: CancellationToken) {
    loop {
        let stream = tokio::select! {
            () = stop.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => continue,
            },
        };
        let state = state.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let state = state.clone();
                async move { Ok::<_, Infallible>(answer(&state, request).await) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            tokio::select! {
                _ = connection => {}
                () = stop.cancelled() => {}
            }
        });
    }
}

type Reply = Response<Answer>;

fn status(code: StatusCode, message: &str) -> Reply {
    let mut response = Response::new(Answer::Whole(Some(Bytes::from(message.to_owned()))));
    *response.status_mut() = code;
    response
}

fn json_reply(code: StatusCode, value: &Value) -> Reply {
    let mut response = Response::new(Answer::Whole(Some(Bytes::from(value.to_string()))));
    *response.status_mut() = code;
    response.headers_mut().insert(
        CONTENT_TYPE,
        "application/json".parse().expect("a header value"),
    );
    response
}

/// Whether `host` (a `Host` header) names this loopback listener.
fn loopback_host(host: &str, port: u16) -> bool {
    ["127.0.0.1", "localhost", "[::1]"]
        .iter()
        .any(|name| host == format!("{name}:{port}") || host == *name)
}

async fn answer(state: &Arc<State>, request: Request<Incoming>) -> Reply {
    let host = request.headers().get(HOST).and_then(|h| h.to_str().ok());
    if !host.is_some_and(|host| loopback_host(host, state.port)) {
        return status(StatusCode::FORBIDDEN, "not a loopback Host");
    }
    if request.uri().path() != "/mcp" {
        return status(StatusCode::NOT_FOUND, "not found");
    }
    let session = (request.headers().get(SESSION_HEADER))
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    match *request.method() {
        Method::POST => post(state, session, request).await,
        Method::DELETE => match session {
            Some(id) => {
                let mut sessions = lock(&state.sessions);
                sessions.order.retain(|s| *s != id);
                match sessions.by_id.remove(&id) {
                    Some(_) => status(StatusCode::OK, ""),
                    None => status(StatusCode::NOT_FOUND, "no such session"),
                }
            }
            None => status(StatusCode::BAD_REQUEST, "no Mcp-Session-Id"),
        },
        _ => {
            let mut response = status(StatusCode::METHOD_NOT_ALLOWED, "");
            let allow = "POST, DELETE".parse().expect("a header value");
            response.headers_mut().insert(ALLOW, allow);
            response
        }
    }
}

async fn post(state: &Arc<State>, session: Option<String>, request: Request<Incoming>) -> Reply {
    let accepts_events = (request.headers().get_all(ACCEPT).iter())
        .filter_map(|value| value.to_str().ok())
        .any(|value| value.contains("text/event-stream"));
    let body = match Limited::new(request.into_body(), MAX_MESSAGE)
        .collect()
        .await
    {
        Ok(body) => body.to_bytes(),
        Err(_) => return status(StatusCode::PAYLOAD_TOO_LARGE, "body too large"),
    };
    let Ok(Value::Object(mut message)) = serde_json::from_slice::<Value>(&body) else {
        let error = json!({"jsonrpc": "2.0", "id": null,
            "error": {"code": -32700, "message": "Parse error: one JSON-RPC message per POST"}});
        return json_reply(StatusCode::BAD_REQUEST, &error);
    };
    let is_initialize = message.get("method").and_then(Value::as_str) == Some("initialize");
    let (server, new_session) = match (session, is_initialize) {
        (Some(id), _) => match lock(&state.sessions).by_id.get(&id) {
            Some(server) => (server.clone(), None),
            None => return status(StatusCode::NOT_FOUND, "no such session"),
        },
        (None, true) => match state.open_session() {
            Ok((id, server)) => (server, Some(id)),
            Err(error) => return status(StatusCode::BAD_GATEWAY, &error.to_string()),
        },
        (None, false) => match state.shared() {
            Ok(server) => (server, None),
            Err(error) => return status(StatusCode::BAD_GATEWAY, &error.to_string()),
        },
    };
    let is_request = message.contains_key("method") && message.contains_key("id");
    let mut reply = if is_request {
        let original = message.remove("id").unwrap_or(Value::Null);
        let own = state.next_id.fetch_add(1, Ordering::Relaxed);
        message.insert("id".into(), Value::from(own));
        let (sender, receiver) = mpsc::channel(QUEUED);
        server.expect(own, original, sender);
        if server.send(&Value::Object(message)).await.is_err() {
            server.forget(own);
            return status(StatusCode::BAD_GATEWAY, "the server's stdin is closed");
        }
        let guard = Forget { server, id: own };
        if accepts_events {
            events(receiver, guard)
        } else {
            whole(receiver, guard).await
        }
    } else {
        if server.send(&Value::Object(message)).await.is_err() {
            return status(StatusCode::BAD_GATEWAY, "the server's stdin is closed");
        }
        status(StatusCode::ACCEPTED, "")
    };
    if let Some(id) = new_session
        && let Ok(value) = id.parse()
    {
        reply.headers_mut().insert(SESSION_HEADER, value);
    }
    reply
}

/// Removes a request's entry when its answer is gone (sent, or the client
/// went away).
struct Forget {
    server: Arc<Server>,
    id: u64,
}

impl Drop for Forget {
    fn drop(&mut self) {
        self.server.forget(self.id);
    }
}

/// The response as one JSON body; whatever came before it is dropped.
async fn whole(mut receiver: mpsc::Receiver<Value>, _guard: Forget) -> Reply {
    while let Some(message) = receiver.recv().await {
        if is_response(&message) {
            return json_reply(StatusCode::OK, &message);
        }
    }
    status(
        StatusCode::BAD_GATEWAY,
        "the server ended without an answer",
    )
}

fn events(receiver: mpsc::Receiver<Value>, guard: Forget) -> Reply {
    let mut response = Response::new(Answer::Events {
        receiver,
        done: false,
        _guard: guard,
    });
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        "text/event-stream".parse().expect("a header value"),
    );
    headers.insert("cache-control", "no-cache".parse().expect("a header value"));
    response
}

fn is_response(message: &Value) -> bool {
    message.get("method").is_none()
        && (message.get("result").is_some() || message.get("error").is_some())
}

/// A reply's body: whole, or the messages of one request as events, ending
/// after its response.
enum Answer {
    Whole(Option<Bytes>),
    Events {
        receiver: mpsc::Receiver<Value>,
        done: bool,
        _guard: Forget,
    },
}

impl Body for Answer {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Answer::Whole(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Answer::Events { receiver, done, .. } => {
                if *done {
                    return Poll::Ready(None);
                }
                match receiver.poll_recv(context) {
                    Poll::Pending => Poll::Pending,
                    Poll::Ready(None) => Poll::Ready(None),
                    Poll::Ready(Some(message)) => {
                        *done = is_response(&message);
                        let event = format!("event: message\ndata: {message}\n\n");
                        Poll::Ready(Some(Ok(Frame::data(Bytes::from(event)))))
                    }
                }
            }
        }
    }
}

impl State {
    fn start(&self) -> std::io::Result<Arc<Server>> {
        let server = Server::start(&self.launch)?;
        lock(&self.sessions).started += 1;
        Ok(server)
    }

    /// A new session and its process; the oldest ends past the limit.
    fn open_session(&self) -> std::io::Result<(String, Arc<Server>)> {
        let server = self.start()?;
        let id = session_id();
        let mut sessions = lock(&self.sessions);
        while sessions.order.len() >= MAX_SESSIONS {
            if let Some(oldest) = sessions.order.pop_front() {
                sessions.by_id.remove(&oldest);
            }
        }
        sessions.order.push_back(id.clone());
        sessions.by_id.insert(id.clone(), server.clone());
        Ok((id, server))
    }

    /// The process of requests without a session, started once (again
    /// when it ended).
    fn shared(&self) -> std::io::Result<Arc<Server>> {
        let mut shared = lock(&self.shared);
        if let Some(server) = shared.as_ref().filter(|s| s.alive()) {
            return Ok(server.clone());
        }
        let server = self.start()?;
        *shared = Some(server.clone());
        Ok(server)
    }
}

fn session_id() -> String {
    let mut bytes = [0u8; 16];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes)
        .expect("the system's random source");
    crate::digest::hex(&bytes)
}

/// One server process: its stdin, and where each of its answers goes.
struct Server {
    stdin: tokio::sync::Mutex<ChildStdin>,
    /// The shim's request ID → the client's, and the answer's channel.
    pending: Mutex<Vec<(u64, Value, mpsc::Sender<Value>)>>,
    ended: CancellationToken,
    _child: Mutex<tokio::process::Child>,
    _group: Option<Group>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.ended.cancel();
    }
}

impl Server {
    fn start(launch: &Launch) -> std::io::Result<Arc<Server>> {
        let mut child = launch.command(Stdio::null()).spawn()?;
        let group = child.id().map(Group::new);
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(std::io::Error::other("no stdio pipes"));
        };
        let server = Arc::new(Server {
            stdin: tokio::sync::Mutex::new(stdin),
            pending: Mutex::new(Vec::new()),
            ended: CancellationToken::new(),
            _child: Mutex::new(child),
            _group: group,
        });
        tokio::spawn(read(Arc::downgrade(&server), stdout, server.ended.clone()));
        Ok(server)
    }

    fn alive(&self) -> bool {
        !self.ended.is_cancelled()
    }

    fn expect(&self, own: u64, original: Value, sender: mpsc::Sender<Value>) {
        lock(&self.pending).push((own, original, sender));
    }

    fn forget(&self, own: u64) {
        lock(&self.pending).retain(|(id, _, _)| *id != own);
    }

    async fn send(&self, message: &Value) -> std::io::Result<()> {
        let mut line = message.to_string();
        line.push('\n');
        let mut stdin = self.stdin.lock().await;
        stdin.write_all(line.as_bytes()).await?;
        stdin.flush().await
    }

    /// Sends one message of the server to the client it is for: a
    /// response to its request's answer, anything else to the answer of
    /// the newest request still open (none open: dropped).
    async fn route(&self, mut message: Value) {
        let own = is_response(&message)
            .then(|| message.get("id").and_then(Value::as_u64))
            .flatten();
        let sender = {
            let mut pending = lock(&self.pending);
            match own {
                Some(own) => match pending.iter().position(|(id, _, _)| *id == own) {
                    Some(at) => {
                        let (_, original, sender) = pending.remove(at);
                        message["id"] = original;
                        Some(sender)
                    }
                    None => None,
                },
                None => pending.last().map(|(_, _, sender)| sender.clone()),
            }
        };
        if let Some(sender) = sender {
            let _ = sender.send(message).await;
        }
    }
}

/// Reads the server's stdout, one message a line, until it ends, a line
/// is too long, or the server is dropped.
async fn read(
    server: std::sync::Weak<Server>,
    stdout: tokio::process::ChildStdout,
    ended: CancellationToken,
) {
    let mut stdout = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        let mut bounded = (&mut stdout).take(MAX_MESSAGE as u64 + 1);
        let read = tokio::select! {
            () = ended.cancelled() => return,
            read = bounded.read_until(b'\n', &mut line) => read,
        };
        if !matches!(read, Ok(n) if n > 0 && line.len() <= MAX_MESSAGE) {
            break;
        }
        let Ok(message) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        let Some(server) = server.upgrade() else {
            return;
        };
        server.route(message).await;
    }
    ended.cancel();
    if let Some(server) = server.upgrade() {
        // Every open answer ends with the process.
        lock(&server.pending).clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_loopback_host_of_this_port_is_served() {
        assert!(loopback_host("127.0.0.1:4000", 4000));
        assert!(loopback_host("localhost:4000", 4000));
        assert!(loopback_host("[::1]:4000", 4000));
        assert!(!loopback_host("127.0.0.1:4001", 4000));
        assert!(!loopback_host("evil.example:4000", 4000));
        assert!(!loopback_host("127.0.0.1.evil.example:4000", 4000));
    }
}
