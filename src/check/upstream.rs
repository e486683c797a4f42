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
}

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
}

/// What to answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Status and body, with a correct content-length.
    Body { status: u16, body: Vec<u8> },
    /// A 302 to another place.
    Redirect,
    /// Wait, then answer.
    After(Duration, Box<Reply>),
    /// Never answer; hold the connection until the client closes it.
    Hang,
    /// Headers at once, then the body one byte per `every`, without length.
    Trickle { body: Vec<u8>, every: Duration },
    /// A 200 whose body is `len` bytes of valid JSON, chunked (no length).
    ChunkedJson { len: usize },
    /// A 200 that declares `len` bytes in content-length but sends nothing.
    DeclaredLength { len: usize },
    /// Close the connection without answering.
    Close,
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

#[derive(Default)]
struct Log {
    requests: Vec<SeenRequest>,
    /// When each connection closed, in closing order.
    closed: Vec<Instant>,
    /// The queries each closed connection carried, parallel to `closed`.
    closed_queries: Vec<Vec<String>>,
}

/// A running upstream; it stops when dropped.
pub struct Upstream {
    pub base_url: String,
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
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let base_url = format!("http://{}", listener.local_addr()?);
        let log = Arc::new(Mutex::new(Log::default()));
        let changed = Arc::new(Notify::new());
        let script: Arc<Script> = Arc::new(script);
        let task = {
            let log = log.clone();
            let changed = changed.clone();
            tokio::spawn(async move {
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        return;
                    };
                    tokio::spawn(connection(
                        stream,
                        script.clone(),
                        log.clone(),
                        changed.clone(),
                    ));
                }
            })
        };
        Ok(Upstream {
            base_url,
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

    pub fn requests(&self) -> Vec<SeenRequest> {
        self.log().requests.clone()
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

    /// Waits until the connection that carried `query` has closed; `false`
    /// if `limit` passes first.
    pub async fn wait_for_close_of(&self, query: &str, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            let notified = self.changed.notified();
            if self
                .log()
                .closed_queries
                .iter()
                .any(|queries| queries.iter().any(|q| q == query))
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
    })
}

async fn write_reply(stream: &mut TcpStream, reply: Reply) -> std::io::Result<()> {
    match reply {
        Reply::Body { status, body } => {
            let head = format!(
                "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                reason(status),
                body.len()
            );
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(&body).await
        }
        Reply::Redirect => {
            let head = "HTTP/1.1 302 Found\r\nlocation: http://127.0.0.1:9/elsewhere\r\ncontent-length: 0\r\n\r\n";
            stream.write_all(head.as_bytes()).await
        }
        Reply::After(delay, reply) => {
            tokio::time::sleep(delay).await;
            Box::pin(write_reply(stream, *reply)).await
        }
        Reply::Hang => {
            // Wait for the peer to close; its EOF ends the connection.
            let mut sink = [0u8; 64];
            while stream.read(&mut sink).await.map(|n| n > 0).unwrap_or(false) {}
            Ok(())
        }
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
        Reply::ChunkedJson { len } => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
            stream.write_all(head.as_bytes()).await?;
            let prefix = br#"{"items":[]}"#;
            let mut body = prefix.to_vec();
            body.resize(len, b' ');
            for piece in body.chunks(64 * 1024) {
                stream
                    .write_all(format!("{:x}\r\n", piece.len()).as_bytes())
                    .await?;
                stream.write_all(piece).await?;
                stream.write_all(b"\r\n").await?;
            }
            stream.write_all(b"0\r\n\r\n").await
        }
        Reply::Close => Err(std::io::ErrorKind::ConnectionAborted.into()),
        Reply::Typed {
            status,
            content_type,
            body,
        } => {
            let head = format!(
                "HTTP/1.1 {status} {}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                reason(status),
                body.len()
            );
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(&body).await?;
            // One answer per connection: the peer reads to the end.
            Err(std::io::ErrorKind::ConnectionAborted.into())
        }
        Reply::DeclaredLength { len } => {
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len}\r\n\r\n"
            );
            stream.write_all(head.as_bytes()).await?;
            let mut sink = [0u8; 64];
            while stream.read(&mut sink).await.map(|n| n > 0).unwrap_or(false) {}
            Ok(())
        }
    }
}

async fn connection(
    mut stream: TcpStream,
    script: Arc<Script>,
    log: Arc<Mutex<Log>>,
    changed: Arc<Notify>,
) {
    // Answers go out in several writes; without TCP_NODELAY the second one
    // waits for the peer's delayed ACK (about 40 ms a request).
    let _ = stream.set_nodelay(true);
    let mut queries = Vec::new();
    while let Some(request) = read_request(&mut stream).await {
        let reply = script(&request);
        queries.push(request.query());
        log.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .requests
            .push(request);
        changed.notify_waiters();
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
