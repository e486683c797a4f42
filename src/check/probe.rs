//! A second channel to the target, for the protocol rules a typed MCP
//! client cannot break on purpose: raw JSON-RPC requests with the `_meta`
//! and the HTTP headers a check chooses. A process target is started once
//! more for it (the first channel owns its stdio), with the same program,
//! arguments and environment; an HTTP target gets plain POSTs. Whatever
//! the target writes is read bounded: one line or body of at most
//! [`MAX_MESSAGE`] bytes, an answer within [`ANSWER_TIME`]. A second
//! process's stderr is watched as the first one's is, for the redaction
//! check.

use std::{process::Stdio, time::Duration};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use super::{session::WatchedStderr, target::Launch};
use crate::children::Group;

/// The longest line or body read as one answer.
pub const MAX_MESSAGE: usize = 4 * 1024 * 1024;
/// How long an answer may take.
pub const ANSWER_TIME: Duration = Duration::from_secs(10);
/// The most messages read before the one answering a request.
const MAX_SKIPPED: usize = 256;

/// Why a probe got no answer to judge: the channel, not the target's
/// rules (a check reports it as its reason).
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("cannot start {program} again: {error}")]
    Start {
        program: String,
        error: std::io::Error,
    },
    #[error("no stdio pipes")]
    NoPipes,
    #[error("cannot build an HTTP client: {0}")]
    Client(reqwest::Error),
    #[error("no answer within {} ms", .0.as_millis())]
    NoAnswer(Duration),
    #[error("cannot write to the target: {0}")]
    Write(std::io::Error),
    #[error("{0}")]
    Flush(std::io::Error),
    #[error("cannot read the target's stdout: {0}")]
    Read(std::io::Error),
    #[error("a line over {MAX_MESSAGE} bytes")]
    LongLine,
    #[error("{MAX_SKIPPED} messages without the answer")]
    NoAnswerAmong,
    #[error("POST failed: {0}")]
    Post(reqwest::Error),
    #[error("{0}")]
    Body(reqwest::Error),
    #[error("a body over {MAX_MESSAGE} bytes")]
    LongBody,
    #[error("an event-stream line over {MAX_MESSAGE} bytes")]
    LongEventLine,
    #[error("an event's data over {MAX_MESSAGE} bytes")]
    LongEventData,
}

/// How to open a probe.
#[derive(Debug, Clone)]
pub enum ProbeTarget {
    /// Start the program again.
    Process(Launch),
    /// POST to the endpoint, with the run's bearer.
    Http {
        url: String,
        bearer: Option<String>,
        /// How long a `tools/call` may take (the target's MCP timeout).
        call_timeout: Duration,
    },
}

impl ProbeTarget {
    /// How long a `tools/call` may take: the target's MCP timeout, as on
    /// the first channel; every other request gets [`ANSWER_TIME`].
    fn call_timeout(&self) -> Duration {
        match self {
            ProbeTarget::Process(launch) => launch.call_timeout,
            ProbeTarget::Http { call_timeout, .. } => *call_timeout,
        }
    }
}

/// What answered one request.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    /// The HTTP status, over HTTP.
    pub status: Option<u16>,
    /// The JSON-RPC response with the request's ID, when one came.
    pub message: Option<Value>,
}

impl Answer {
    /// The response's `result`.
    pub fn result(&self) -> Option<&Value> {
        self.message.as_ref()?.get("result")
    }

    /// The response's `error.code`.
    pub fn error_code(&self) -> Option<i64> {
        self.message.as_ref()?.get("error")?.get("code")?.as_i64()
    }

    /// A few words for a reason: the status and the code or the result's
    /// keys.
    pub fn describe(&self) -> String {
        let status = self
            .status
            .map(|s| format!("HTTP {s}, "))
            .unwrap_or_default();
        match (&self.message, self.error_code()) {
            (None, _) => format!("{status}no JSON-RPC response"),
            (Some(_), Some(code)) => format!("{status}error {code}"),
            (Some(message), None) => match message.get("result").and_then(Value::as_object) {
                Some(result) => format!(
                    "{status}a result with {}",
                    result.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
                None => format!("{status}a response without a result object"),
            },
        }
    }
}

/// A process started for the probe.
struct Started {
    child: tokio::process::Child,
    stderr: Option<(WatchedStderr, tokio::task::JoinHandle<()>)>,
    stdin: tokio::process::ChildStdin,
    stdout: BufReader<tokio::process::ChildStdout>,
    _group: Option<Group>,
}

/// An open probe, and how long its `tools/call` may take.
pub struct Probe {
    channel: Channel,
    call_timeout: Duration,
}

/// What a probe leaves for the later checks.
#[derive(Default)]
pub struct Closed {
    /// The second process's stderr, when the probe started one, and
    /// whether it was read to its end.
    pub stderr: Option<(WatchedStderr, bool)>,
}

enum Channel {
    Process(Box<Started>),
    Http {
        client: reqwest::Client,
        url: String,
        bearer: Option<String>,
    },
}

impl Probe {
    pub async fn open(target: &ProbeTarget) -> Result<Probe, ProbeError> {
        Ok(Probe {
            channel: Channel::open(target).await?,
            call_timeout: target.call_timeout(),
        })
    }

    pub fn is_http(&self) -> bool {
        matches!(self.channel, Channel::Http { .. })
    }

    /// Sends `request` (its `id` is the one answered) with `headers` (HTTP
    /// only; a process probe has none) and reads its answer, within
    /// [`ANSWER_TIME`] or, for a `tools/call`, the target's MCP timeout.
    pub async fn request(
        &mut self,
        request: &Value,
        headers: &[(&str, String)],
    ) -> Result<Answer, ProbeError> {
        let limit = if request.get("method").and_then(Value::as_str) == Some("tools/call") {
            self.call_timeout
        } else {
            ANSWER_TIME
        };
        self.channel.request(request, headers, limit).await
    }

    pub async fn close(self) -> Closed {
        self.channel.close().await
    }
}

impl Channel {
    async fn open(target: &ProbeTarget) -> Result<Channel, ProbeError> {
        match target {
            ProbeTarget::Process(launch) => {
                let mut child =
                    launch
                        .command(Stdio::piped())
                        .spawn()
                        .map_err(|error| ProbeError::Start {
                            program: launch.program.clone(),
                            error,
                        })?;
                let group = child.id().map(Group::new);
                let stderr = child
                    .stderr
                    .take()
                    .map(|stderr| WatchedStderr::read(launch, stderr));
                let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                    return Err(ProbeError::NoPipes);
                };
                Ok(Channel::Process(Box::new(Started {
                    child,
                    stderr,
                    stdin,
                    stdout: BufReader::new(stdout),
                    _group: group,
                })))
            }
            ProbeTarget::Http { url, bearer, .. } => Ok(Channel::Http {
                client: reqwest::Client::builder()
                    .no_proxy()
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .map_err(ProbeError::Client)?,
                url: url.clone(),
                bearer: bearer.clone(),
            }),
        }
    }

    async fn request(
        &mut self,
        request: &Value,
        headers: &[(&str, String)],
        limit: Duration,
    ) -> Result<Answer, ProbeError> {
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        let line = request.to_string();
        let answer = match self {
            Channel::Process(started) => {
                let Started { stdin, stdout, .. } = &mut **started;
                tokio::time::timeout(limit, exchange_line(stdin, stdout, &line, &id)).await
            }
            Channel::Http {
                client,
                url,
                bearer,
            } => {
                let mut post = client
                    .post(url.as_str())
                    .header("content-type", "application/json")
                    .header("accept", "application/json, text/event-stream")
                    .body(line);
                for (name, value) in headers {
                    post = post.header(*name, value);
                }
                if let Some(bearer) = bearer {
                    post = post.bearer_auth(bearer);
                }
                tokio::time::timeout(limit, exchange_http(post, &id)).await
            }
        };
        answer.map_err(|_| ProbeError::NoAnswer(limit))?
    }

    async fn close(self) -> Closed {
        let Channel::Process(started) = self else {
            return Closed::default();
        };
        let Started {
            mut child,
            stdin,
            stderr,
            _group: group,
            ..
        } = *started;
        drop(stdin);
        if tokio::time::timeout(Duration::from_secs(2), child.wait())
            .await
            .is_err()
        {
            let _ = child.kill().await;
        }
        // Whatever it started goes too, so that no one holds the pipe open.
        drop(group);
        let stderr = match stderr {
            // Its last words may still be in the pipe.
            Some((stderr, reader)) => {
                let read_whole = tokio::time::timeout(Duration::from_secs(2), reader)
                    .await
                    .is_ok();
                Some((stderr, read_whole))
            }
            None => None,
        };
        Closed { stderr }
    }
}

async fn exchange_line(
    stdin: &mut tokio::process::ChildStdin,
    stdout: &mut BufReader<tokio::process::ChildStdout>,
    line: &str,
    id: &Value,
) -> Result<Answer, ProbeError> {
    stdin
        .write_all(format!("{line}\n").as_bytes())
        .await
        .map_err(ProbeError::Write)?;
    stdin.flush().await.map_err(ProbeError::Flush)?;
    for _ in 0..MAX_SKIPPED {
        let mut buffer = Vec::new();
        let read = (&mut *stdout)
            .take(MAX_MESSAGE as u64)
            .read_until(b'\n', &mut buffer)
            .await
            .map_err(ProbeError::Read)?;
        if read == 0 {
            return Ok(Answer::default());
        }
        if !buffer.ends_with(b"\n") && buffer.len() >= MAX_MESSAGE {
            return Err(ProbeError::LongLine);
        }
        if let Some(message) = parse(&buffer).filter(|m| answers(m, id)) {
            return Ok(Answer {
                status: None,
                message: Some(message),
            });
        }
    }
    Err(ProbeError::NoAnswerAmong)
}

async fn exchange_http(post: reqwest::RequestBuilder, id: &Value) -> Result<Answer, ProbeError> {
    let mut response = post.send().await.map_err(ProbeError::Post)?;
    let status = response.status().as_u16();
    let event_stream = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("text/event-stream"));
    let mut body = Vec::new();
    let mut events = EventStream::default();
    while let Some(chunk) = response.chunk().await.map_err(ProbeError::Body)? {
        if event_stream {
            // A stream may stay open after the answer (the server SHOULD
            // close it, and need not): the answer's event ends the read.
            // What it holds at once is bounded, not what it sends in all
            // (notifications may come first, within the answer's time).
            match events.push(&chunk, id) {
                Ok(Some(message)) => {
                    return Ok(Answer {
                        status: Some(status),
                        message: Some(message),
                    });
                }
                Ok(None) => continue,
                Err(too_long) => return Err(too_long),
            }
        }
        body.extend_from_slice(&chunk);
        if body.len() > MAX_MESSAGE {
            return Err(ProbeError::LongBody);
        }
    }
    // The stream's end dispatches nothing half-received (the SSE rules).
    let message = (!event_stream)
        .then(|| parse(&body).filter(|m| answers(m, id)))
        .flatten();
    Ok(Answer {
        status: Some(status),
        message,
    })
}

/// An SSE stream read as the HTML standard's event-stream rules read it:
/// a leading byte order mark dropped; lines end at CRLF, LF or CR; an
/// event's `data:` lines are joined with LF (one space after the colon
/// dropped; a line without a colon is a field with an empty value); a
/// blank line dispatches it, decoded as UTF-8 with U+FFFD for what is not;
/// an event cut off by the end of the stream is never dispatched. A line
/// or an event's data over [`MAX_MESSAGE`] bytes ends the read.
#[derive(Default)]
struct EventStream {
    /// How many bytes of the stream's start were the byte order mark's
    /// (until a byte says otherwise), and whether the start is past.
    bom_seen: usize,
    started: bool,
    /// The unfinished line.
    line: Vec<u8>,
    /// The event's data so far, and whether it has a data line.
    data: Vec<u8>,
    has_data: bool,
    /// The last byte was a CR: an LF right after it ends nothing more.
    after_cr: bool,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

impl EventStream {
    /// Reads `chunk`; the first dispatched message answering `id`.
    fn push(&mut self, chunk: &[u8], id: &Value) -> Result<Option<Value>, ProbeError> {
        for &byte in chunk {
            if !self.started {
                if BOM.get(self.bom_seen) == Some(&byte) {
                    self.bom_seen += 1;
                    self.started = self.bom_seen == BOM.len();
                    continue;
                }
                // Not the mark after all: what was taken for it is text.
                self.started = true;
                self.line.extend_from_slice(&BOM[..self.bom_seen]);
            }
            let after_cr = std::mem::replace(&mut self.after_cr, byte == b'\r');
            if byte == b'\n' && after_cr {
                continue;
            }
            if byte != b'\n' && byte != b'\r' {
                self.line.push(byte);
                if self.line.len() > MAX_MESSAGE {
                    return Err(ProbeError::LongEventLine);
                }
                continue;
            }
            if let Some(message) = self.end_line(id)? {
                return Ok(Some(message));
            }
        }
        Ok(None)
    }

    /// The line just ended: a field, or the blank line that dispatches.
    fn end_line(&mut self, id: &Value) -> Result<Option<Value>, ProbeError> {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            let data = std::mem::take(&mut self.data);
            if !std::mem::take(&mut self.has_data) {
                return Ok(None);
            }
            let data = String::from_utf8_lossy(&data);
            return Ok(parse(data.as_bytes()).filter(|m| answers(m, id)));
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line.as_slice(), &[][..]),
        };
        if field == b"data" {
            if self.has_data {
                self.data.push(b'\n');
            }
            self.data.extend_from_slice(value);
            self.has_data = true;
            if self.data.len() > MAX_MESSAGE {
                return Err(ProbeError::LongEventData);
            }
        }
        Ok(None)
    }
}

/// A JSON object as `JSON.parse` reads it (lone surrogates included).
fn parse(bytes: &[u8]) -> Option<Value> {
    let rewritten = super::lines::as_json_parse_reads(bytes);
    let bytes = rewritten.as_deref().unwrap_or(bytes);
    serde_json::from_slice::<Value>(bytes)
        .ok()
        .filter(Value::is_object)
}

/// Whether `message` is the response to the request with `id`.
fn answers(message: &Value, id: &Value) -> bool {
    message.get("id") == Some(id)
        && (message.get("result").is_some() || message.get("error").is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read_bytes(chunks: &[&[u8]]) -> Option<Value> {
        let mut stream = EventStream::default();
        chunks
            .iter()
            .find_map(|chunk| stream.push(chunk, &json!(7)).unwrap())
    }

    fn read(chunks: &[&str]) -> Option<Value> {
        read_bytes(&chunks.iter().map(|c| c.as_bytes()).collect::<Vec<_>>())
    }

    #[test]
    fn events_are_read_as_the_sse_rules_read_them() {
        let answer = json!({"jsonrpc": "2.0", "id": 7, "result": {"a": 1}});
        // One data line, with and without the space; CRLF and CR endings.
        for stream in [
            "data: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"a\":1}}\n\n",
            "event: message\r\ndata:{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"a\":1}}\r\n\r\n",
            "id: 1\rdata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"a\":1}}\r\r",
        ] {
            assert_eq!(read(&[stream]), Some(answer.clone()), "{stream:?}");
        }
        // A message split over data lines, and over chunks (a CRLF too).
        let split = [
            ": a comment\r",
            "\ndata: {\"jsonrpc\":\"2.0\",\r\ndata: \"id\":7,",
            "\"result\":\ndata: {\"a\":1}}\n",
            "\n",
        ];
        assert_eq!(read(&split), Some(answer.clone()));
        // Another request's answer and a notification are passed over.
        let others = "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n\
            data: {\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{}}\n\n\
            data: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"a\":1}}\n\n";
        assert_eq!(read(&[others]), Some(answer.clone()));
        // A byte order mark at the start, whole or split; a CR ending one
        // chunk and another starting the next; a bare `data` line.
        let answer_line = br#"data: {"jsonrpc":"2.0","id":7,"result":{"a":1}}"#;
        let with_bom = [b"\xEF\xBB\xBF".as_slice(), answer_line, b"\n\n"].concat();
        assert_eq!(read_bytes(&[&with_bom]), Some(answer.clone()));
        assert_eq!(
            read_bytes(&[b"\xEF", b"\xBB\xBF", answer_line, b"\r", b"\r"]),
            Some(answer.clone())
        );
        let bare = "data\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"a\":1}}\n\n";
        // The bare line's empty value and an LF come first: still JSON.
        assert_eq!(read(&[bare]), Some(answer.clone()));
        // A mark anywhere else is text: the field is not `data`.
        let late = [b"\n".as_slice(), b"\xEF\xBB\xBF", answer_line, b"\n\n"].concat();
        assert_eq!(read_bytes(&[&late]), None);
        // A line past the cap ends the read.
        let mut stream = EventStream::default();
        let long = vec![b'x'; MAX_MESSAGE + 1];
        assert!(stream.push(&long, &json!(7)).is_err());
        // An event the stream's end cuts off is never dispatched.
        assert_eq!(
            read(&["data: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n"]),
            None
        );
    }
}
