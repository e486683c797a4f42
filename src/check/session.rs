//! A started target as `ecp check` talks to it: the MCP session, the
//! server's process (its group killed whole when the session ends), and
//! its stderr, kept bounded and watched for the texts a check gave it.

use std::{
    process::Stdio,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use rmcp::{
    RoleClient, ServiceExt,
    model::{CallToolRequestParams, CallToolResult},
    service::RunningService,
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::Value;
use tokio::io::AsyncReadExt;

use super::canary::{BODY_CANARY, QUERY_CANARY, TOKEN_CANARY};
use super::target::Launch;
use crate::{children::Group, text::outside::Tail};

/// A connected MCP session, with the server's process and stderr when it is
/// a process.
pub struct Session {
    pub client: RunningService<RoleClient, ()>,
    stderr: Option<Arc<Mutex<Stderr>>>,
    child: Option<Mutex<tokio::process::Child>>,
    /// The server's process group, killed whole when the session ends.
    _group: Option<Group>,
    pub call_timeout: Duration,
}

/// Why a target did not start or did not complete the MCP handshake, in
/// words (rmcp's own errors name its generic types); what to do about it,
/// when ecp knows, is [`StartError::help`].
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot start {program}: {}", spawn_words(.error))]
    Spawn {
        program: String,
        error: std::io::Error,
    },
    #[error("cannot start {program}: no stdio pipes")]
    NoPipes { program: String },
    /// The process exited, failed or kept silent before the handshake:
    /// the sentence, with the end of its stderr.
    #[error("{said}")]
    Handshake { said: String },
    #[error("{url} is not a URL ({error})")]
    NotAUrl { url: String, error: url::ParseError },
    #[error("{url} is not an http(s) URL")]
    NotHttp { url: String },
    #[error("{url} has no host")]
    NoHost { url: String },
    #[error("cannot resolve {host}: {why}")]
    Unresolved { host: String, why: String },
    #[error("cannot connect to {address}: {why}")]
    Unreachable { address: String, why: String },
    #[error("cannot build an HTTP client: {0}")]
    Client(reqwest::Error),
    #[error("{url} did not answer initialize within 30 s")]
    Silent { url: String },
    /// The endpoint refused or failed the handshake; `token`: it asked for
    /// an access token.
    #[error("{said}")]
    Refused { said: String, token: bool },
}

/// The help of an endpoint that wants an access token.
const TOKEN_HELP: &str = "pass an access token for it with --token-env NAME (a variable holding a token its authorization server issued for this resource, with the context.read scope)";
/// The help of a `--url` that is not an MCP endpoint's.
const URL_HELP: &str = "give the MCP endpoint, e.g. https://context.example.com/mcp";

impl StartError {
    /// What to do about it, when ecp knows.
    pub fn help(&self) -> Option<&'static str> {
        match self {
            StartError::NotAUrl { .. } | StartError::NotHttp { .. } => Some(URL_HELP),
            StartError::Unresolved { host, .. } => Some(resolve_help(host)),
            StartError::Unreachable { .. } => Some(
                "start the server, or check the URL's host and port (`ecp serve --listen 127.0.0.1:PORT` runs one locally)",
            ),
            StartError::Refused { token: true, .. } => Some(TOKEN_HELP),
            _ => None,
        }
    }

    /// The same error with `secrets` taken out of what the target wrote.
    pub fn redacted(self, secrets: &super::secret::Secrets) -> StartError {
        match self {
            StartError::Handshake { said } => StartError::Handshake {
                said: secrets.redact(&said),
            },
            other => other,
        }
    }
}

/// Why a `tools/call` got no result.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("no answer within the {} ms MCP timeout", .0.as_millis())]
    Timeout(Duration),
    #[error("the call failed at the protocol level: {0}")]
    Protocol(rmcp::ServiceError),
    /// The process ended during the call: the sentence, with the end of
    /// its stderr.
    #[error("{said}")]
    Exited { said: String },
}

/// The most of a server's stderr that is kept (its last bytes).
const STDERR_KEPT: usize = 1024 * 1024;

/// What a server wrote to stderr: the last [`STDERR_KEPT`] bytes, and
/// whether any of the watched texts (the check's canaries, the values it
/// gave the server) appeared anywhere in all of it, so that a leak cannot
/// hide behind a flood.
struct Stderr {
    tail: Tail,
    watched: Vec<(Vec<u8>, bool)>,
    /// The end of what came before, long enough to hold all but the last
    /// byte of the longest watched text.
    carry: Vec<u8>,
}

/// The stderr of a second process of the same target (the protocol
/// group's probe), watched for the same texts as the session's.
#[derive(Clone)]
pub struct WatchedStderr(Arc<Mutex<Stderr>>);

impl WatchedStderr {
    /// Starts reading `stderr` of a process started from `launch`; the
    /// task ends when the pipe closes.
    pub fn read(
        launch: &Launch,
        stderr: tokio::process::ChildStderr,
    ) -> (WatchedStderr, tokio::task::JoinHandle<()>) {
        let buffer = Arc::new(Mutex::new(Stderr::for_launch(launch)));
        let reader = read_stderr(stderr, buffer.clone());
        (WatchedStderr(buffer), reader)
    }

    /// Whether the process wrote `text` to stderr at any point (as
    /// [`Session::stderr_holds`]).
    pub fn holds(&self, text: &str) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .holds(text)
    }

    /// Whether it wrote anything.
    pub fn is_empty(&self) -> bool {
        let stderr = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        stderr.tail.dropped() == 0 && stderr.tail.text().is_empty()
    }
}

impl Stderr {
    /// Watched in all of stderr: the check's canaries and every value
    /// handed to the server (a base URL is watched without its scheme).
    fn for_launch(launch: &Launch) -> Stderr {
        Stderr::new(
            [QUERY_CANARY, TOKEN_CANARY, BODY_CANARY]
                .map(str::to_owned)
                .into_iter()
                .chain(
                    launch
                        .env
                        .values()
                        .flat_map(|v| [v.clone(), v.trim_start_matches("http://").to_owned()]),
                ),
        )
    }

    fn new(watched: impl IntoIterator<Item = String>) -> Stderr {
        Stderr {
            tail: Tail::new(STDERR_KEPT),
            watched: watched
                .into_iter()
                .filter(|w| !w.is_empty())
                .map(|w| (w.into_bytes(), false))
                .collect(),
            carry: Vec::new(),
        }
    }

    fn push(&mut self, chunk: &[u8]) {
        let longest = self.watched.iter().map(|(w, _)| w.len()).max().unwrap_or(0);
        if longest > 0 {
            let mut window = std::mem::take(&mut self.carry);
            window.extend_from_slice(chunk);
            for (needle, seen) in &mut self.watched {
                *seen = *seen || memchr::memmem::find(&window, needle).is_some();
            }
            let keep = longest - 1;
            self.carry = window[window.len().saturating_sub(keep)..].to_vec();
        }
        self.tail.push(chunk);
    }

    fn holds(&self, text: &str) -> bool {
        self.watched
            .iter()
            .any(|(needle, seen)| *seen && needle.as_slice() == text.as_bytes())
            || self.tail.text().contains(text)
    }
}

/// Why a program did not start, in words, not an OS error code.
fn spawn_words(error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::NotFound => "it does not exist".to_owned(),
        std::io::ErrorKind::PermissionDenied => {
            "it is not executable (permission denied)".to_owned()
        }
        _ => error.to_string(),
    }
}

/// "exited with status 1", "was killed by signal 9".
fn exit_words(status: std::process::ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exited with status {code}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("was killed by signal {signal}");
        }
    }
    format!("exited ({status})")
}

/// `message`, then the end of what the server wrote to stderr, indented:
/// escaped, masked and bounded ([`crate::text::outside`]), since the server may be
/// hostile.
fn with_stderr(message: String, stderr: &Tail) -> String {
    if stderr.dropped() == 0 && stderr.text().trim().is_empty() {
        return format!("{message}; it wrote nothing to stderr");
    }
    let mut text = format!("{message}; its stderr said:");
    for line in stderr.render().lines() {
        text.push_str("\n    ");
        text.push_str(line);
    }
    text
}

/// A failed Streamable HTTP handshake in plain words, from what rmcp
/// reports (its own message names its generic types).
fn http_handshake_error(url: &str, error: &rmcp::service::ClientInitializeError) -> StartError {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    let refused = |said: String| StartError::Refused { said, token: false };
    let rmcp::service::ClientInitializeError::TransportError { error: inner, .. } = error else {
        return refused(format!("{url} did not complete the MCP handshake: {error}"));
    };
    let Some(http) = inner
        .error
        .downcast_ref::<StreamableHttpError<reqwest::Error>>()
    else {
        return refused(format!(
            "{url} did not complete the MCP handshake: {}",
            inner.error
        ));
    };
    match http {
        StreamableHttpError::AuthRequired(_) => StartError::Refused {
            said: format!("{url} answered 401 Unauthorized: it needs a bearer token"),
            token: true,
        },
        StreamableHttpError::InsufficientScope(scope) => StartError::Refused {
            said: format!(
                "{url} answered 403: the token lacks the scope {}",
                scope.required_scope.as_deref().unwrap_or("it needs")
            ),
            token: true,
        },
        StreamableHttpError::HttpStatus(status) => refused(format!(
            "{url} answered HTTP {} to initialize",
            status.status
        )),
        StreamableHttpError::UnexpectedContentType(kind) => refused(format!(
            "{url} is not an MCP endpoint: it answered initialize with content type {}",
            kind.as_deref().unwrap_or("(none)")
        )),
        StreamableHttpError::Client(client) if client.is_timeout() => {
            refused(format!("{url} did not answer initialize in time"))
        }
        StreamableHttpError::Client(client) => refused(match client.status() {
            Some(status) => format!("{url} answered HTTP {status} to initialize"),
            None => format!(
                "{url} could not be reached: {}",
                crate::text::outside::innermost(client)
            ),
        }),
        other => refused(format!("{url} did not complete the MCP handshake: {other}")),
    }
}

/// Resolves and connects to the endpoint's host once before MCP starts, so
/// that an unreachable endpoint is told in words (rmcp's transport error
/// names its own types instead).
async fn preflight(url: &str) -> Result<(), StartError> {
    let parsed = url::Url::parse(url).map_err(|error| StartError::NotAUrl {
        url: url.to_owned(),
        error,
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(StartError::NotHttp {
            url: url.to_owned(),
        });
    }
    let (Some(host), Some(port)) = (parsed.host_str(), parsed.port_or_known_default()) else {
        return Err(StartError::NoHost {
            url: url.to_owned(),
        });
    };
    let address = format!("{host}:{port}");
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let addresses: Vec<std::net::SocketAddr> = match tokio::time::timeout(
        Duration::from_secs(10),
        tokio::net::lookup_host((host, port)),
    )
    .await
    {
        Err(_) => {
            return Err(StartError::Unresolved {
                host: host.to_owned(),
                why: "no answer in 10 s".to_owned(),
            });
        }
        Ok(Err(error)) => {
            return Err(StartError::Unresolved {
                host: host.to_owned(),
                why: error.to_string(),
            });
        }
        Ok(Ok(found)) => found.collect(),
    };
    let mut last = None;
    for candidate in addresses {
        match tokio::time::timeout(
            Duration::from_secs(10),
            tokio::net::TcpStream::connect(candidate),
        )
        .await
        {
            Ok(Ok(_)) => return Ok(()),
            Ok(Err(error)) => last = Some(error),
            Err(_) => last = Some(std::io::ErrorKind::TimedOut.into()),
        }
    }
    let why = match last {
        None => "it resolves to no address".to_owned(),
        Some(error) => match error.kind() {
            std::io::ErrorKind::ConnectionRefused => {
                "connection refused (is the server running on that port?)".to_owned()
            }
            std::io::ErrorKind::TimedOut => "no answer in 10 s".to_owned(),
            _ => error.to_string(),
        },
    };
    Err(StartError::Unreachable { address, why })
}

/// What to do about a host name that does not resolve.
fn resolve_help(host: &str) -> &'static str {
    let reserved = [".example", ".test", ".invalid", ".localhost"]
        .iter()
        .any(|tld| host.to_ascii_lowercase().ends_with(tld));
    if reserved {
        "that is a reserved placeholder name, not a real endpoint: pass the provider's own URL (`ecp new --template remote --endpoint URL` writes it into the manifest)"
    } else {
        "check the host name and this machine's DNS; to try the remote adapter locally, run `ecp serve --listen 127.0.0.1:PORT` and check http://127.0.0.1:PORT/mcp"
    }
}

impl Session {
    /// Starts `launch` and completes the MCP handshake.
    pub async fn spawn(launch: &Launch) -> Result<Session, StartError> {
        let mut child =
            launch
                .command(Stdio::piped())
                .spawn()
                .map_err(|error| StartError::Spawn {
                    program: launch.program.clone(),
                    error,
                })?;
        let group = child.id().map(Group::new);
        let buffer = Arc::new(Mutex::new(Stderr::for_launch(launch)));
        let reader = child
            .stderr
            .take()
            .map(|stderr| read_stderr(stderr, buffer.clone()));
        let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
            return Err(StartError::NoPipes {
                program: launch.program.clone(),
            });
        };
        // The handshake, or the server's exit: a server that dies may leave
        // children holding its pipes open, and its exit is the story.
        // Its lines as `JSON.parse` reads them ([`super::lines`]).
        let stdout = super::lines::json_parse_lines(stdout);
        let serve = tokio::time::timeout(Duration::from_secs(30), ().serve((stdout, stdin)));
        tokio::pin!(serve);
        let (handshake, early_exit) = tokio::select! {
            handshake = &mut serve => (Some(handshake), None),
            status = child.wait() => (None, Some(status)),
        };
        let failure = match handshake {
            Some(Ok(Ok(client))) => {
                return Ok(Session {
                    client,
                    stderr: Some(buffer),
                    child: Some(Mutex::new(child)),
                    _group: group,
                    call_timeout: launch.call_timeout,
                });
            }
            Some(Ok(Err(error))) => Some(error.to_string()),
            _ => None,
        };
        let said = why_not_started(launch, child, early_exit, failure, reader, &buffer).await;
        drop(group);
        Err(StartError::Handshake { said })
    }
}

/// Reads a target's stderr into `buffer` until it closes.
fn read_stderr(
    mut stderr: tokio::process::ChildStderr,
    buffer: Arc<Mutex<Stderr>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut chunk = [0u8; 16384];
        while let Ok(n) = stderr.read(&mut chunk).await {
            if n == 0 {
                break;
            }
            buffer
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(&chunk[..n]);
        }
    })
}

/// Why a server did not complete the handshake, with its last stderr
/// lines: its exit when it exited (then its stderr is read to the end, so
/// the message is the same every run), else the handshake's error or the
/// timeout.
async fn why_not_started(
    launch: &Launch,
    mut child: tokio::process::Child,
    early_exit: Option<std::io::Result<std::process::ExitStatus>>,
    failure: Option<String>,
    reader: Option<tokio::task::JoinHandle<()>>,
    buffer: &Arc<Mutex<Stderr>>,
) -> String {
    // Did it exit? Then that is the story, not the pipe it broke.
    let exited = match early_exit {
        Some(status) => status,
        None => tokio::time::timeout(Duration::from_secs(2), child.wait())
            .await
            .unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into())),
    };
    // Its last words may still be in the pipe: read it to the end when
    // it has exited (so the message is the same every run), else briefly.
    match (&exited, reader) {
        (Ok(_), Some(reader)) => {
            let _ = tokio::time::timeout(Duration::from_secs(2), reader).await;
        }
        _ => tokio::time::sleep(Duration::from_millis(100)).await,
    }
    let message = match (exited, failure) {
        (Ok(status), _) => format!(
            "the server {} {} before the MCP handshake",
            launch.program,
            exit_words(status)
        ),
        (_, Some(error)) => format!(
            "the server {} did not complete the MCP handshake ({error})",
            launch.program
        ),
        (_, None) => format!(
            "the server {} did not answer initialize within 30 s",
            launch.program
        ),
    };
    with_stderr(
        message,
        &buffer.lock().unwrap_or_else(PoisonError::into_inner).tail,
    )
}

impl Session {
    /// Connects to a Streamable HTTP endpoint, with an optional bearer.
    pub async fn connect(
        url: &str,
        bearer: Option<String>,
        call_timeout: Duration,
    ) -> Result<Session, StartError> {
        crate::runtime::install_tls_provider();
        let mut config = StreamableHttpClientTransportConfig::with_uri(url);
        if let Some(bearer) = bearer {
            config = config.auth_header(bearer);
        }
        let client = reqwest::Client::builder()
            .no_proxy()
            .build()
            .map_err(StartError::Client)?;
        preflight(url).await?;
        let transport = StreamableHttpClientTransport::with_client(client, config);
        let client = tokio::time::timeout(Duration::from_secs(30), ().serve(transport))
            .await
            .map_err(|_| StartError::Silent {
                url: url.to_owned(),
            })?
            .map_err(|error| http_handshake_error(url, &error))?;
        Ok(Session {
            client,
            stderr: None,
            child: None,
            _group: None,
            call_timeout,
        })
    }

    /// One `context_search` call with raw arguments, bounded by the MCP
    /// call timeout.
    pub async fn call(&self, arguments: Value) -> Result<CallToolResult, CallError> {
        let mut params = CallToolRequestParams::new(crate::profile::TOOL_NAME);
        params.arguments = match arguments {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => Some(serde_json::Map::from_iter([("query".to_owned(), other)])),
        };
        match tokio::time::timeout(self.call_timeout, self.client.call_tool(params)).await {
            Err(_) => Err(CallError::Timeout(self.call_timeout)),
            Ok(Err(error)) => Err(self.exited().map_or(CallError::Protocol(error), |exit| {
                let said = self.stderr.as_ref().map(|b| {
                    with_stderr(
                        format!("the server {exit} during the call"),
                        &b.lock().unwrap_or_else(PoisonError::into_inner).tail,
                    )
                });
                CallError::Exited {
                    said: said.unwrap_or_else(|| format!("the server {exit} during the call")),
                }
            })),
            Ok(Ok(result)) => Ok(result),
        }
    }

    /// "exited with status 1" when the server process has ended.
    fn exited(&self) -> Option<String> {
        let child = self.child.as_ref()?;
        let mut child = child.lock().unwrap_or_else(PoisonError::into_inner);
        child.try_wait().ok().flatten().map(exit_words)
    }

    /// Whether the server is a process started here (with a stderr).
    pub fn is_process(&self) -> bool {
        self.child.is_some()
    }

    /// The end of what the server wrote to stderr so far (its last MiB),
    /// as it wrote it: render it with [`crate::text::outside`] before showing it.
    pub fn stderr(&self) -> String {
        self.stderr
            .as_ref()
            .map(|b| b.lock().unwrap_or_else(PoisonError::into_inner).tail.text())
            .unwrap_or_default()
    }

    /// Whether the server wrote `text` to stderr at any point; exact for
    /// the check's canaries and the values it handed the server, else
    /// within the last MiB.
    pub fn stderr_holds(&self, text: &str) -> bool {
        self.stderr
            .as_ref()
            .is_some_and(|b| b.lock().unwrap_or_else(PoisonError::into_inner).holds(text))
    }

    /// Ends the session: stdin closes, and a server that does not exit on
    /// its own within a second is killed.
    pub async fn close(self) {
        let _ = self.client.cancel().await;
        if let Some(child) = self.child {
            let mut child = child.into_inner().unwrap_or_else(PoisonError::into_inner);
            if tokio::time::timeout(Duration::from_secs(1), child.wait())
                .await
                .is_err()
            {
                let _ = child.kill().await;
            }
        }
    }
}
