//! A scripted Generic HTTP Search V1 upstream: a real HTTP/1.1 server on
//! 127.0.0.1 that records every request and every connection close, and
//! answers each request as a script says (faults included). `ecp check`
//! points adapters at it; the tests use it too.

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
    sync::Notify,
};

/// One request as the upstream saw it.
#[derive(Debug, Clone)]
pub struct SeenRequest {
    pub method: String,
    pub path: String,
    /// Header names lower-cased, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// Which of the suite's calls sent it, as the upstream told ([`Tag`]).
    pub tag: Option<Tag>,
}

/// One of the suite's calls: a [`markers`] word and the number after it
/// (`ecpmutation 12`).
pub type Tag = (String, Option<usize>);

impl SeenRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The `query` of the JSON body.
    pub fn query(&self) -> String {
        let body: serde_json::Value = serde_json::from_str(&self.body).unwrap_or_default();
        body["query"].as_str().unwrap_or_default().to_owned()
    }

    /// Whether this request carries the call tagged `id`.
    pub fn is(&self, id: &str) -> bool {
        self.tag.as_ref().is_some_and(|(m, _)| m == id)
    }

    /// The words of the request: its target percent-decoded (`+` read as a
    /// space), then its body, split at every character that is not an
    /// ASCII letter, digit or `-`, lower-cased. Wherever a mapping puts the
    /// query (path, query string, JSON body), its words are among these.
    pub fn words(&self) -> Vec<String> {
        let target = self.path.replace('+', " ");
        let decoded = percent_decode(&target);
        decoded
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .chain(
                self.body
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')),
            )
            .filter(|w| !w.is_empty())
            .map(str::to_ascii_lowercase)
            .collect()
    }

    /// The first of the suite's [`markers`] among the request's
    /// [`words`](Self::words), with the number that follows it, if any
    /// (`ecpmutation 12`).
    pub fn marker(&self) -> Option<Tag> {
        let words = self.words();
        words.iter().enumerate().find_map(|(at, word)| {
            markers().contains(&word.as_str()).then(|| {
                let number = words.get(at + 1).and_then(|n| n.parse().ok());
                (word.clone(), number)
            })
        })
    }
}

/// `%XX` decoded (bytes that are not UTF-8 read as U+FFFD).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[at], bytes.get(at + 1), bytes.get(at + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0)) as u8);
                at += 3;
            }
            (byte, _, _) => {
                out.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What to answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Status and body, with a correct content-length.
    Body { status: u16, body: Vec<u8> },
    /// A 302 to another place on the same upstream.
    Redirect,
    /// A 302 to this absolute URL (another host).
    RedirectTo(String),
    /// Wait, then answer.
    After(Duration, Box<Reply>),
    /// Never answer; hold the connection until the client closes it.
    Hang,
    /// Headers at once, then the body one byte per `every`, without length.
    Trickle { body: Vec<u8>, every: Duration },
    /// A 200 whose body is `len` bytes of valid JSON, chunked (no length).
    ChunkedJson { len: usize },
    /// A 200 whose body is `body` padded with spaces to `len` bytes,
    /// chunked (no length): still the same JSON document.
    Padded { body: Vec<u8>, len: usize },
    /// A 200 that declares `len` bytes in content-length but sends nothing.
    DeclaredLength { len: usize },
    /// Close the connection without answering.
    Close,
    /// Status, content type and body, with a correct content-length (a
    /// recorded answer replayed).
    Raw {
        status: u16,
        content_type: Option<String>,
        body: Vec<u8>,
    },
    /// Forwarded to the real upstream at this origin (scheme, host, port),
    /// the answer passed back and kept in [`Upstream::exchanges`].
    Forward(Arc<Forward>),
    /// Status, content type and body (e.g. a `text/event-stream`), then close.
    Typed {
        status: u16,
        content_type: &'static str,
        body: Vec<u8>,
    },
}

impl Reply {
    pub fn json(body: impl Into<String>) -> Reply {
        Reply::Body {
            status: 200,
            body: body.into().into_bytes(),
        }
    }

    pub fn status(status: u16, body: &str) -> Reply {
        Reply::Body {
            status,
            body: body.as_bytes().to_vec(),
        }
    }
}

type Script = dyn Fn(&SeenRequest) -> Reply + Send + Sync;

/// Where [`Reply::Forward`] sends a request, and with which client.
pub struct Forward {
    pub origin: reqwest::Url,
    pub client: reqwest::Client,
}

impl std::fmt::Debug for Forward {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Forward { .. }")
    }
}

/// A request forwarded to the real upstream and what it answered.
#[derive(Debug, Clone)]
pub struct Exchange {
    pub request: SeenRequest,
    /// `None` when the upstream could not be reached or answered past the
    /// bounds; the reason.
    pub response: Result<Recorded, ForwardError>,
}

/// An upstream's answer as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
}

/// The most a recorded answer may hold (the adapter reads at most 1 MiB).
pub const MAX_RECORDED_BODY: usize = 4 * 1024 * 1024;
/// The most a request from the target may hold: head, then body.
const MAX_REQUEST_HEAD: usize = 64 * 1024;
const MAX_REQUEST_BODY: usize = 8 * 1024 * 1024;

#[derive(Default)]
struct Log {
    requests: Vec<SeenRequest>,
    /// When each connection closed, in closing order.
    closed: Vec<Instant>,
    /// The queries (and markers) each closed connection carried, parallel
    /// to `closed`.
    closed_queries: Vec<Vec<String>>,
    /// What [`Reply::Forward`] sent and got.
    exchanges: Vec<Exchange>,
}

/// A running upstream; it stops when dropped.
pub struct Upstream {
    pub base_url: String,
    /// The tag of the call the suite makes next, for requests that carry no
    /// marker word ([`Upstream::arm`]).
    armed: Arc<Mutex<Option<Tag>>>,
    /// The upstream on another host that [`Reply::RedirectTo`] sends a
    /// client to, when one runs beside this one.
    pub elsewhere: Option<Box<Upstream>>,
    log: Arc<Mutex<Log>>,
    changed: Arc<Notify>,
    /// The accept loop, aborted with the upstream.
    _task: tokio_util::task::AbortOnDropHandle<()>,
}

impl Upstream {
    /// Starts the server on an ephemeral loopback port.
    ///
    /// # Panics
    /// When no loopback port can be bound (tests rely on this); use
    /// [`Upstream::try_start`] to handle it.
    pub async fn start(script: impl Fn(&SeenRequest) -> Reply + Send + Sync + 'static) -> Upstream {
        Upstream::try_start(script)
            .await
            .expect("bind a loopback port")
    }

    pub async fn try_start(
        script: impl Fn(&SeenRequest) -> Reply + Send + Sync + 'static,
    ) -> std::io::Result<Upstream> {
        Upstream::try_start_on("127.0.0.1", script).await
    }

    /// [`Upstream::try_start`] on the loopback address `host`.
    pub async fn try_start_on(
        host: &str,
        script: impl Fn(&SeenRequest) -> Reply + Send + Sync + 'static,
    ) -> std::io::Result<Upstream> {
        let listener = TcpListener::bind((host, 0)).await?;
        let base_url = format!("http://{}", listener.local_addr()?);
        let log = Arc::new(Mutex::new(Log::default()));
        let changed = Arc::new(Notify::new());
        let armed = Arc::new(Mutex::new(None));
        let script: Arc<Script> = Arc::new(script);
        let task = {
            let log = log.clone();
            let changed = changed.clone();
            let armed = armed.clone();
            tokio::spawn(async move {
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        return;
                    };
                    tokio::spawn(connection(
                        stream,
                        Shared {
                            script: script.clone(),
                            log: log.clone(),
                            changed: changed.clone(),
                            armed: armed.clone(),
                        },
                    ));
                }
            })
        };
        Ok(Upstream {
            base_url,
            armed,
            elsewhere: None,
            log,
            changed,
            _task: tokio_util::task::AbortOnDropHandle::new(task),
        })
    }

    fn log(&self) -> std::sync::MutexGuard<'_, Log> {
        self.log
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Tags the requests that arrive from now on and carry no marker word
    /// as the call `tag` (`None`: leaves them untagged). A mapping may
    /// rewrite the query's words (a query language wants plain words, so
    /// `fault-timeout` becomes `fault timeout`); the suite then makes its
    /// calls one at a time, arming each before it is sent, and tells them
    /// apart by their order.
    pub fn arm(&self, tag: Option<Tag>) {
        *self
            .armed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = tag;
    }

    pub fn requests(&self) -> Vec<SeenRequest> {
        self.log().requests.clone()
    }

    /// The forwarded exchanges, in the order they ended.
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.log().exchanges.clone()
    }

    pub fn closed_connections(&self) -> Vec<Instant> {
        self.log().closed.clone()
    }

    /// Waits until `ready` holds for the log; `false` if `limit` passes first.
    pub async fn wait_until(
        &self,
        limit: Duration,
        ready: impl Fn(&[SeenRequest], &[Instant]) -> bool,
    ) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            let notified = self.changed.notified();
            {
                let log = self.log();
                if ready(&log.requests, &log.closed) {
                    return true;
                }
            }
            if tokio::time::timeout_at(deadline.into(), notified)
                .await
                .is_err()
            {
                return false;
            }
        }
    }

    /// Waits until the connection that carried the call tagged `tag` (or
    /// a request whose query is `tag`) has closed; `false` if `limit`
    /// passes first.
    pub async fn wait_for_close_of(&self, tag: &str, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            let notified = self.changed.notified();
            if self
                .log()
                .closed_queries
                .iter()
                .any(|queries| queries.iter().any(|q| q == tag))
            {
                return true;
            }
            if tokio::time::timeout_at(deadline.into(), notified)
                .await
                .is_err()
            {
                return false;
            }
        }
    }

    /// [`Upstream::wait_until`], panicking with `what` on timeout (tests).
    pub async fn wait_for(
        &self,
        limit: Duration,
        what: &str,
        ready: impl Fn(&[SeenRequest], &[Instant]) -> bool,
    ) {
        assert!(
            self.wait_until(limit, ready).await,
            "upstream: timed out after {limit:?} waiting for {what}"
        );
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        302 => "Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        _ => "Status",
    }
}

async fn read_request(stream: &mut TcpStream) -> Option<SeenRequest> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        if buffer.len() > MAX_REQUEST_HEAD {
            return None;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_owned();
    let path = request_line.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    if length > MAX_REQUEST_BODY {
        return None;
    }
    let mut body = buffer[head_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(SeenRequest {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
        tag: None,
    })
}

async fn write_reply(stream: &mut TcpStream, reply: Reply) -> std::io::Result<()> {
    match reply {
        Reply::Body { status, body } => {
            write_sized(stream, status, Some("application/json"), &body, "").await
        }
        Reply::Raw {
            status,
            content_type,
            body,
        } => write_sized(stream, status, content_type.as_deref(), &body, "").await,
        Reply::Forward(_) => {
            // Resolved into Raw by `connection` before it gets here.
            Err(std::io::ErrorKind::Unsupported.into())
        }
        Reply::Redirect => {
            // To a place on this upstream that answers with a success, so
            // that a client that follows redirects gets one.
            let head = format!(
                "HTTP/1.1 302 Found\r\nlocation: {REDIRECTED}\r\ncontent-length: 0\r\n\r\n"
            );
            stream.write_all(head.as_bytes()).await
        }
        Reply::RedirectTo(location) => {
            let head =
                format!("HTTP/1.1 302 Found\r\nlocation: {location}\r\ncontent-length: 0\r\n\r\n");
            stream.write_all(head.as_bytes()).await
        }
        Reply::After(delay, reply) => {
            tokio::time::sleep(delay).await;
            Box::pin(write_reply(stream, *reply)).await
        }
        Reply::Hang => drain(stream).await,
        Reply::Trickle { body, every } => {
            let head =
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n";
            stream.write_all(head.as_bytes()).await?;
            for byte in body {
                tokio::time::sleep(every).await;
                stream.write_all(&[byte]).await?;
            }
            Ok(())
        }
        Reply::ChunkedJson { len } => write_chunked(stream, br#"{"items":[]}"#.to_vec(), len).await,
        Reply::Padded { body, len } => write_chunked(stream, body, len).await,
        Reply::Close => Err(std::io::ErrorKind::ConnectionAborted.into()),
        Reply::Typed {
            status,
            content_type,
            body,
        } => {
            write_sized(
                stream,
                status,
                Some(content_type),
                &body,
                "connection: close\r\n",
            )
            .await?;
            // One answer per connection: the peer reads to the end.
            Err(std::io::ErrorKind::ConnectionAborted.into())
        }
        Reply::DeclaredLength { len } => {
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len}\r\n\r\n"
            );
            stream.write_all(head.as_bytes()).await?;
            drain(stream).await
        }
    }
}

/// An answer with `content-length`: the status, the content type when
/// there is one, `extra` header lines, then the body.
async fn write_sized(
    stream: &mut TcpStream,
    status: u16,
    content_type: Option<&str>,
    body: &[u8],
    extra: &str,
) -> std::io::Result<()> {
    let content_type = content_type
        .map(|t| format!("content-type: {t}\r\n"))
        .unwrap_or_default();
    let head = format!(
        "HTTP/1.1 {status} {}\r\n{content_type}content-length: {}\r\n{extra}\r\n",
        reason(status),
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body).await
}

/// A chunked 200 JSON answer: `body` padded with spaces to `len` bytes.
async fn write_chunked(
    stream: &mut TcpStream,
    mut body: Vec<u8>,
    len: usize,
) -> std::io::Result<()> {
    let head =
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
    stream.write_all(head.as_bytes()).await?;
    body.resize(len.max(body.len()), b' ');
    for piece in body.chunks(64 * 1024) {
        stream
            .write_all(format!("{:x}\r\n", piece.len()).as_bytes())
            .await?;
        stream.write_all(piece).await?;
        stream.write_all(b"\r\n").await?;
    }
    stream.write_all(b"0\r\n\r\n").await
}

/// Waits for the peer to close; its EOF ends the connection.
async fn drain(stream: &mut TcpStream) -> std::io::Result<()> {
    let mut sink = [0u8; 64];
    while stream.read(&mut sink).await.map(|n| n > 0).unwrap_or(false) {}
    Ok(())
}

/// The host of the upstream a redirect fault sends a client to: another
/// loopback address, so another origin by host as well as by port (where
/// it cannot be bound, as on a macOS without the alias, 127.0.0.1 on a
/// port of its own).
pub const ELSEWHERE_HOST: &str = "127.0.0.2";

/// Where [`Reply::Redirect`] points, and the path of [`Reply::RedirectTo`].
pub const REDIRECTED: &str = "/ecp-redirected";

/// The query word by which the suite learns whether its marker words
/// survive the mapping: a word with a hyphen, as the fault IDs have.
pub const TAGGING_PROBE: &str = "ecp-probe";

/// The words of the suite's own calls besides the fault IDs.
const SUITE_WORDS: &[&str] = &[
    TAGGING_PROBE,
    "ecphang",
    "ecpvector",
    "ecpconcurrent",
    "ecpmutation",
];

/// The words the suite's queries start with, which the scripted upstream
/// answers by (see [`SeenRequest::marker`]): every fault's check ID (from
/// the catalogue, so that a new fault is served as soon as it is listed),
/// then the suite's own words.
pub fn markers() -> &'static [&'static str] {
    static MARKERS: std::sync::LazyLock<Vec<&'static str>> = std::sync::LazyLock::new(|| {
        (crate::check::catalogue::FAULTS.iter())
            .map(|(check, _)| check.id())
            .chain(SUITE_WORDS.iter().copied())
            .collect()
    });
    &MARKERS
}
/// Why a request the recording proxy took was not answered by the real
/// upstream.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ForwardError {
    #[error("the request target is not a path")]
    NotAPath,
    #[error("the request target leaves the upstream")]
    LeavesUpstream,
    #[error("the method is not HTTP")]
    NotHttp,
    /// The innermost cause, in words.
    #[error("the upstream could not be reached: {0}")]
    Unreachable(String),
    #[error("the upstream's answer broke off")]
    BrokeOff,
    #[error("the upstream's answer is over {} MiB", MAX_RECORDED_BODY >> 20)]
    TooLarge,
}

/// Sends `request` to the real upstream (same method, target, body and
/// headers but those of the hop) and reads its answer within bounds.
async fn forward_request(
    forward: &Forward,
    request: &SeenRequest,
) -> Result<Recorded, ForwardError> {
    let url = forward
        .origin
        .join(&request.path)
        .map_err(|_| ForwardError::NotAPath)?;
    if url.origin() != forward.origin.origin() {
        return Err(ForwardError::LeavesUpstream);
    }
    let method = reqwest::Method::from_bytes(request.method.as_bytes())
        .map_err(|_| ForwardError::NotHttp)?;
    let mut builder = forward.client.request(method, url);
    for (name, value) in &request.headers {
        if !matches!(
            name.as_str(),
            "host" | "content-length" | "connection" | "transfer-encoding" | "accept-encoding"
        ) {
            builder = builder.header(name.as_str(), value.as_str());
        }
    }
    if !request.body.is_empty() {
        builder = builder.body(request.body.clone());
    }
    let mut response = builder
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .map_err(|e| ForwardError::Unreachable(crate::text::outside::innermost(&e)))?;
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|_| ForwardError::BrokeOff)? {
        if body.len() + chunk.len() > MAX_RECORDED_BODY {
            return Err(ForwardError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Recorded {
        status,
        content_type,
        body,
    })
}

/// What every connection of one upstream shares.
struct Shared {
    script: Arc<Script>,
    log: Arc<Mutex<Log>>,
    changed: Arc<Notify>,
    armed: Arc<Mutex<Option<Tag>>>,
}

async fn connection(mut stream: TcpStream, shared: Shared) {
    let Shared {
        script,
        log,
        changed,
        armed,
    } = shared;
    // Answers go out in several writes; without TCP_NODELAY the second one
    // waits for the peer's delayed ACK (about 40 ms a request).
    let _ = stream.set_nodelay(true);
    let mut queries = Vec::new();
    while let Some(mut request) = read_request(&mut stream).await {
        request.tag = request.marker().or_else(|| {
            armed
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone()
        });
        let mut reply = script(&request);
        queries.push(request.query());
        queries.extend(request.tag.as_ref().map(|(word, _)| word.clone()));
        log.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .requests
            .push(request.clone());
        changed.notify_waiters();
        if let Reply::Forward(forward) = &reply {
            let response = forward_request(forward, &request).await;
            reply = match &response {
                Ok(recorded) => Reply::Raw {
                    status: recorded.status,
                    content_type: recorded.content_type.clone(),
                    body: recorded.body.clone(),
                },
                Err(_) => Reply::status(502, "{}"),
            };
            log.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .exchanges
                .push(Exchange { request, response });
            changed.notify_waiters();
        }
        if write_reply(&mut stream, reply).await.is_err() {
            break;
        }
    }
    {
        let mut log = log
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        log.closed.push(Instant::now());
        log.closed_queries.push(queries);
    }
    changed.notify_waiters();
}
