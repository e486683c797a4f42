//! What `ecp check` talks to, and how it is started: an extension folder or
//! archive (started as Qwen starts it, from its manifest), any stdio command,
//! or a Streamable HTTP URL.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
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
use crate::{
    children::{self, Group},
    extension::archive,
    input::InputError,
    lint::{self, MANIFEST},
    qwen::vars::{Filler, Places},
    text::outside::Tail,
};

/// Qwen's default MCP call timeout is 10 minutes; a profile manifest sets
/// 8000 ms, which is what a command target is held to.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_millis(8000);

/// What to check.
#[derive(Debug, Clone)]
pub enum Target {
    /// An extension folder or a `.tar.gz`/`.zip` archive.
    Extension(PathBuf),
    /// A stdio server: program and arguments.
    Command(Vec<String>),
    /// A Streamable HTTP endpoint.
    Url(String),
}

/// How the adapter learns about the scripted upstream: the variable of its
/// endpoint, and of its credential when it takes one (a service without
/// authentication passes none: `ecp new --auth none`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindingEnv {
    pub base_url: String,
    pub token: Option<String>,
}

/// A resolved stdio launch.
#[derive(Debug, Clone)]
pub struct Launch {
    pub program: String,
    /// Said on stderr before the run: how the program was found.
    pub note: Option<String>,
    pub args: Vec<String>,
    pub cwd: Option<PathBuf>,
    /// Variables set on top of ecp's own environment.
    pub env: BTreeMap<String, String>,
    pub call_timeout: Duration,
    /// `includeTools` of the manifest, when there is one.
    pub include_tools: Option<Vec<String>>,
    /// The manifest's variables for the V1 binding, when it has them.
    pub binding: Option<BindingEnv>,
    /// Keeps an extracted archive alive for the run.
    pub _extracted: Option<Arc<tempfile::TempDir>>,
    /// Keeps the copy of a configuration file pointed at ecp's upstream
    /// ([`super::config_file`]) alive for the run.
    pub scratch: Option<Arc<tempfile::TempDir>>,
}

impl Launch {
    /// The command that starts the server: its program, arguments,
    /// environment and folder, stdin and stdout piped, `stderr` as asked,
    /// in a process group of its own, killed when dropped.
    pub fn command(&self, stderr: Stdio) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(&self.program);
        command
            .args(&self.args)
            .envs(&self.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true);
        children::own_group(&mut command);
        if let Some(cwd) = &self.cwd {
            command.current_dir(cwd);
        }
        command
    }
}

/// What a manifest-started server looks like.
#[derive(Debug, Clone)]
pub enum ManifestServer {
    Local(Launch),
    Remote {
        url: String,
        call_timeout: Duration,
        include_tools: Option<Vec<String>>,
    },
}

/// Fills a manifest string as Qwen does ([`crate::qwen::vars`]): its own
/// variables with the extension's folder, the current folder as the
/// workspace and this platform's separator, then `${VAR}`/`$VAR` from
/// `env`; anything unresolved stays literal.
fn substitute(value: &str, extension_path: &str, env: &BTreeMap<String, String>) -> String {
    let workspace = std::env::current_dir()
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_default();
    let places = Places {
        extension: extension_path,
        workspace: Some(&workspace),
        separator: std::path::MAIN_SEPARATOR_STR,
    };
    let lookup = |name: &str| env.get(name).cloned();
    Filler::manifest(places, &lookup).fill(value)
}

/// Unpacks an archive into a new temporary folder through the bounded
/// reader of `ecp lint` ([`archive::unpack`]).
fn extract(file: &Path) -> Result<tempfile::TempDir, String> {
    let dir = tempfile::tempdir().map_err(|e| format!("cannot make a temporary folder: {e}"))?;
    archive::unpack(file, dir.path()).map_err(|e| {
        let problem = match e {
            archive::ArchiveError::File(_) => e.to_string(),
            other => format!("{}: not a readable archive: {other}", file.display()),
        };
        format!(
            "{}\n  = help: ecp lint {} says what is wrong with it; package it again with ecp package",
            crate::text::outside::value(&problem),
            file.display()
        )
    })?;
    Ok(dir)
}

/// The folder holding the manifest in an extracted archive, by the same
/// rule `ecp lint` applies to the archive's entries
/// ([`archive::manifest_root_of`]).
fn manifest_folder(root: &Path) -> PathBuf {
    let files = crate::scaffold::vendor::tree_paths(root).unwrap_or_default();
    match archive::manifest_root_of(files.iter().map(String::as_str)) {
        Some(prefix) if !prefix.is_empty() => root.join(prefix.trim_end_matches('/')),
        _ => root.to_owned(),
    }
}

/// Reads an extension's manifest and resolves its one server as Qwen
/// would. `upstream` (base URL, token) fills the variables the manifest
/// passes to the adapter for its endpoint and credential; without a token,
/// the credential comes from ecp's own environment, as Qwen would pass it.
pub fn from_extension(
    path: &Path,
    upstream: Option<(&str, Option<&str>)>,
) -> Result<ManifestServer, String> {
    InputError::check_exists(path).map_err(|e| input_message(&e))?;
    let extracted = if path.is_file() {
        Some(Arc::new(extract(path)?))
    } else {
        None
    };
    let root = extracted
        .as_ref()
        .map_or_else(|| path.to_owned(), |dir| dir.path().to_owned());
    let folder = manifest_folder(&root);
    let folder = folder.canonicalize().unwrap_or(folder);
    // Bounded, a regular file only, not through a link out of the folder.
    let text = match crate::extension::read_manifest(&folder) {
        Ok(Some(text)) => text,
        Ok(None) => {
            return Err(input_message(&InputError::NoManifest {
                path: path.to_owned(),
            }));
        }
        Err(problem) => return Err(format!("cannot read {problem}")),
    };
    // The manifest as `ecp lint` reads it: one parser, one model.
    let facts = lint::manifest::check(MANIFEST, &text)
        .map_err(|e| format!("{MANIFEST} is not JSON: {}; run `ecp lint`", e.message))?
        .facts;
    let Some(server) = facts.server else {
        return Err(format!(
            "{MANIFEST} must declare exactly one MCP server; run `ecp lint`"
        ));
    };
    // Without a `timeout`, Qwen's default MCP call timeout: 10 minutes.
    let call_timeout = server
        .timeout_ms
        .map_or(Duration::from_secs(600), Duration::from_millis);
    let include_tools = server.include_tools.clone();
    let mut process_env: BTreeMap<String, String> = std::env::vars().collect();
    let extension_path = folder.to_string_lossy().into_owned();
    if let Some(url) = &server.http_url {
        return Ok(ManifestServer::Remote {
            url: substitute(url, &extension_path, &process_env),
            call_timeout,
            include_tools,
        });
    }
    let Some(command) = &server.command else {
        return Err("the server has neither `command` nor `httpUrl`; run `ecp lint`".into());
    };
    let (env, binding) = server_env(&server.env, upstream, &extension_path, &mut process_env);
    let args: Vec<String> = server
        .args
        .iter()
        .map(|a| substitute(a, &extension_path, &process_env))
        .collect();
    let cwd = server
        .cwd
        .as_deref()
        .map(|c| PathBuf::from(substitute(c, &extension_path, &process_env)));
    let mut program = substitute(command, &extension_path, &process_env);
    let mut note = None;
    if extracted.is_none() {
        let name = facts.name.as_deref().unwrap_or("");
        (program, note) = entry_in_source_folder(&folder, program, &args, name)?;
    }
    Ok(ManifestServer::Local(Launch {
        program,
        note,
        args,
        cwd,
        env,
        call_timeout,
        include_tools,
        binding,
        _extracted: extracted,
        scratch: None,
    }))
}

/// The manifest's `env` as Qwen resolves it, with the upstream in the
/// endpoint and credential slots (`*BASE_URL`, `*TOKEN`); and those slots'
/// names when the manifest has both. The base URL given is also what later
/// substitutions see as that variable.
fn server_env(
    declared: &[(String, String)],
    upstream: Option<(&str, Option<&str>)>,
    extension_path: &str,
    process_env: &mut BTreeMap<String, String>,
) -> (BTreeMap<String, String>, Option<BindingEnv>) {
    let mut env = BTreeMap::new();
    let mut binding = (None, None);
    for (key, value) in declared {
        let upper = key.to_ascii_uppercase();
        if upper.ends_with("BASE_URL") {
            binding.0 = Some(key.clone());
            if let Some((base_url, _)) = upstream {
                process_env.insert(key.clone(), base_url.to_owned());
                env.insert(key.clone(), base_url.to_owned());
                continue;
            }
        } else if upper.ends_with("TOKEN") {
            binding.1 = Some(key.clone());
            if let Some((_, Some(token))) = upstream {
                env.insert(key.clone(), token.to_owned());
                continue;
            }
        }
        env.insert(key.clone(), substitute(value, extension_path, process_env));
    }
    let binding = binding.0.map(|base_url| BindingEnv {
        base_url,
        token: binding.1,
    });
    (env, binding)
}

fn input_message(error: &InputError) -> String {
    format!("{error}\n  = help: {}", error.help())
}

/// An extension's source folder has no `dist/main` until it is staged into
/// an archive, so `ecp check .` (and `ecp call .`) build the crate's binary
/// with cargo's dev profile, `cargo build --bin BIN` (a no-op when nothing
/// changed, and the dependencies are the ones `cargo test` built), and run
/// it, saying which: the check always meets the current code, seconds after
/// a one-line edit. A build failure stops the command with the compiler's
/// last lines. A TypeScript extension's bundle is built by `npm run build`
/// when it is older than the sources, or refused when it cannot be
/// ([`crate::extension::build::bundle_for_check`]): a check never judges a
/// stale bundle.
fn entry_in_source_folder(
    folder: &Path,
    program: String,
    args: &[String],
    name: &str,
) -> Result<(String, Option<String>), String> {
    use crate::extension::build;
    let native = folder.join("dist").join("main");
    if Path::new(&program) == native && !native.exists() {
        if !folder.join("Cargo.toml").is_file() {
            return Err(format!(
                "{} does not exist\n  = help: put the extension's executable there, or pass its release archive (dist/<platform>.{name}.tar.gz)",
                native.display()
            ));
        }
        let (bin, _) = build::binary_target(folder, name)
            .map_err(|e| format!("{e}\n  = help: pass the release archive instead"))?;
        let progress = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let built = build::build_for_check(folder, &bin, progress).map_err(|e| {
            format!(
                "{e}\n  = help: fix the code and run this again (`cargo build` shows every error), or pass a release archive (dist/<platform>.{name}.tar.gz)"
            )
        })?;
        let note = format!(
            "note: running {}, cargo's dev build of the current code (`ecp package` builds the release one)",
            built.display()
        );
        return Ok((built.display().to_string(), Some(note)));
    }
    if let Some(script) = args.first()
        && Path::new(script).starts_with(folder)
        && ["js", "mjs", "cjs"]
            .iter()
            .any(|ext| script.ends_with(&format!(".{ext}")))
    {
        let built = build::bundle_for_check(folder, Path::new(script))?;
        if !Path::new(script).exists() {
            return Err(format!(
                "the bundle {script} does not exist\n  = help: build it first (for example `npm run build`), or pass the release archive"
            ));
        }
        let note = match built {
            Some(why) => format!(
                "note: running {script}, built now by `npm run build` ({why}; `ecp package` builds the release one)"
            ),
            None => format!("note: running {script}, the bundle of the current code"),
        };
        return Ok((program, Some(note)));
    }
    Ok((program, None))
}

/// Points `launch` at `endpoint` through a copy of `config`: the copy is
/// written into a scratch folder the launch keeps, the file's variable
/// names the copy, the credential variable gets the token when one is
/// given, and those two variables become the launch's binding.
pub fn point_config(
    launch: &mut Launch,
    config: &super::config_file::ConfigFile,
    endpoint: (&str, Option<&str>),
) -> Result<(), String> {
    let scratch = tempfile::Builder::new()
        .prefix("ecp-config-")
        .tempdir()
        .map_err(|e| format!("cannot make a temporary folder: {e}"))?;
    let copy = config.write_copy(scratch.path(), endpoint.0)?;
    launch
        .env
        .insert(config.var.clone(), copy.to_string_lossy().into_owned());
    if let Some(token) = endpoint.1 {
        launch
            .env
            .insert(config.credential_env.clone(), token.to_owned());
    }
    launch.binding = Some(BindingEnv {
        base_url: config.var.clone(),
        token: Some(config.credential_env.clone()),
    });
    launch.scratch = Some(Arc::new(scratch));
    Ok(())
}

/// The Qwen InstanceConfig a manifest-started server reads: the one its
/// manifest's `env` names in `QWEN_EXTERNAL_CONTEXT_MEM0_CONFIG`, or, for
/// a server with no endpoint variable of its own (Qwen's own provider
/// passes none; it inherits Qwen's environment), the one ecp's own
/// environment names.
pub fn qwen_config_of(launch: &Launch) -> Result<Option<super::config_file::ConfigFile>, String> {
    use super::config_file::{ConfigFile, QWEN_MEM0_CONFIG_ENV};
    let path = match launch.env.get(QWEN_MEM0_CONFIG_ENV) {
        Some(path) => Some(path.clone()),
        None if launch.binding.is_none() => std::env::var(QWEN_MEM0_CONFIG_ENV).ok(),
        None => None,
    };
    match path {
        Some(path) if !path.trim().is_empty() && !path.starts_with("${") => {
            ConfigFile::read(QWEN_MEM0_CONFIG_ENV, Path::new(&path), None, None).map(Some)
        }
        _ => Ok(None),
    }
}

/// The loopback names the scripted upstream is reached by.
/// Loopback, with the other host the redirect fault sends a client to
/// ([`super::upstream::ELSEWHERE_HOST`]).
const LOOPBACK: &[&str] = &["127.0.0.1", "localhost", "::1", "127.0.0.2"];

/// Adds loopback to the target's `NO_PROXY` and `no_proxy` (keeping what
/// the caller's environment or the manifest put there), so that a caller's
/// `HTTP_PROXY` does not send the target's calls to the scripted upstream
/// through a proxy. The reference honours `NO_PROXY`, and so does every
/// common HTTP stack (undici, reqwest, Python's urllib, curl, Go).
pub fn reach_loopback_directly(env: &mut BTreeMap<String, String>) {
    for name in ["NO_PROXY", "no_proxy"] {
        let existing = env
            .get(name)
            .cloned()
            .or_else(|| std::env::var(name).ok())
            .unwrap_or_default();
        let mut entries: Vec<&str> = existing
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .collect();
        for host in LOOPBACK {
            if !entries.contains(host) {
                entries.push(host);
            }
        }
        env.insert(name.to_owned(), entries.join(","));
    }
}

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

/// "cannot start PROGRAM: ..." in words, not an OS error code.
fn spawn_error(program: &str, error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::NotFound => format!("cannot start {program}: it does not exist"),
        std::io::ErrorKind::PermissionDenied => {
            format!("cannot start {program}: it is not executable (permission denied)")
        }
        _ => format!("cannot start {program}: {error}"),
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

/// A plain sentence for a failed Streamable HTTP handshake, from what rmcp
/// reports (its own message names its generic types).
fn http_handshake_error(url: &str, error: &rmcp::service::ClientInitializeError) -> String {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    let token_help = "pass an access token for it with --token-env NAME (a variable holding a token its authorization server issued for this resource, with the context.read scope)";
    let rmcp::service::ClientInitializeError::TransportError { error: inner, .. } = error else {
        return format!("{url} did not complete the MCP handshake: {error}");
    };
    let Some(http) = inner
        .error
        .downcast_ref::<StreamableHttpError<reqwest::Error>>()
    else {
        return format!("{url} did not complete the MCP handshake: {}", inner.error);
    };
    match http {
        StreamableHttpError::AuthRequired(_) => {
            format!(
                "{url} answered 401 Unauthorized: it needs a bearer token\n  = help: {token_help}"
            )
        }
        StreamableHttpError::InsufficientScope(scope) => format!(
            "{url} answered 403: the token lacks the scope {}\n  = help: {token_help}",
            scope.required_scope.as_deref().unwrap_or("it needs")
        ),
        StreamableHttpError::HttpStatus(status) => {
            format!("{url} answered HTTP {} to initialize", status.status)
        }
        StreamableHttpError::UnexpectedContentType(kind) => format!(
            "{url} is not an MCP endpoint: it answered initialize with content type {}",
            kind.as_deref().unwrap_or("(none)")
        ),
        StreamableHttpError::Client(client) if client.is_timeout() => {
            format!("{url} did not answer initialize in time")
        }
        StreamableHttpError::Client(client) => match client.status() {
            Some(status) => format!("{url} answered HTTP {status} to initialize"),
            None => format!(
                "{url} could not be reached: {}",
                crate::text::outside::innermost(client)
            ),
        },
        other => format!("{url} did not complete the MCP handshake: {other}"),
    }
}

/// Resolves and connects to the endpoint's host once before MCP starts, so
/// that an unreachable endpoint is told in words (rmcp's transport error
/// names its own types instead).
async fn preflight(url: &str) -> Result<(), String> {
    let parsed = url::Url::parse(url).map_err(|e| {
        format!("{url} is not a URL ({e})\n  = help: give the MCP endpoint, e.g. https://context.example.com/mcp")
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!(
            "{url} is not an http(s) URL\n  = help: give the MCP endpoint, e.g. https://context.example.com/mcp"
        ));
    }
    let (Some(host), Some(port)) = (parsed.host_str(), parsed.port_or_known_default()) else {
        return Err(format!("{url} has no host"));
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
            return Err(format!(
                "cannot resolve {host}: no answer in 10 s\n  = help: {}",
                resolve_help(host)
            ));
        }
        Ok(Err(error)) => {
            return Err(format!(
                "cannot resolve {host}: {error}\n  = help: {}",
                resolve_help(host)
            ));
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
    Err(format!(
        "cannot connect to {address}: {why}\n  = help: start the server, or check the URL's host and port (`ecp serve --listen 127.0.0.1:PORT` runs one locally)"
    ))
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
    pub async fn spawn(launch: &Launch) -> Result<Session, String> {
        let mut child = launch
            .command(Stdio::piped())
            .spawn()
            .map_err(|e| spawn_error(&launch.program, &e))?;
        let group = child.id().map(Group::new);
        let buffer = Arc::new(Mutex::new(Stderr::for_launch(launch)));
        let reader = child
            .stderr
            .take()
            .map(|stderr| read_stderr(stderr, buffer.clone()));
        let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
            return Err(format!("cannot start {}: no stdio pipes", launch.program));
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
        Err(said)
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
    ) -> Result<Session, String> {
        crate::runtime::install_tls_provider();
        let mut config = StreamableHttpClientTransportConfig::with_uri(url);
        if let Some(bearer) = bearer {
            config = config.auth_header(bearer);
        }
        let client = reqwest::Client::builder()
            .no_proxy()
            .build()
            .map_err(|e| format!("cannot build an HTTP client: {e}"))?;
        preflight(url).await?;
        let transport = StreamableHttpClientTransport::with_client(client, config);
        let client = tokio::time::timeout(Duration::from_secs(30), ().serve(transport))
            .await
            .map_err(|_| format!("{url} did not answer initialize within 30 s"))?
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
    pub async fn call(&self, arguments: Value) -> Result<CallToolResult, String> {
        let mut params = CallToolRequestParams::new(crate::profile::TOOL_NAME);
        params.arguments = match arguments {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => Some(serde_json::Map::from_iter([("query".to_owned(), other)])),
        };
        match tokio::time::timeout(self.call_timeout, self.client.call_tool(params)).await {
            Err(_) => Err(format!(
                "no answer within the {} ms MCP timeout",
                self.call_timeout.as_millis()
            )),
            Ok(Err(error)) => Err(self.exited().map_or_else(
                || format!("the call failed at the protocol level: {error}"),
                |exit| {
                    let stderr = self.stderr.as_ref().map(|b| {
                        with_stderr(
                            format!("the server {exit} during the call"),
                            &b.lock().unwrap_or_else(PoisonError::into_inner).tail,
                        )
                    });
                    stderr.unwrap_or_else(|| format!("the server {exit} during the call"))
                },
            )),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Qwen fills `${CLAUDE_PLUGIN_ROOT}` with the extension's folder, as
    /// `${extensionPath}`, in every field of the server it starts.
    #[test]
    fn starts_claude_plugin_root_filled() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().canonicalize().unwrap();
        std::fs::create_dir(folder.join("dist")).unwrap();
        std::fs::write(folder.join("dist/main.js"), "").unwrap();
        let manifest = serde_json::json!({"name": "acme-context", "version": "1.0.0",
            "mcpServers": {"acme-context": {"command": "node",
                "args": ["${CLAUDE_PLUGIN_ROOT}${/}dist${/}main.js"],
                "cwd": "${CLAUDE_PLUGIN_ROOT}",
                "env": {"ACME_ROOT": "${CLAUDE_PLUGIN_ROOT}"}, "timeout": 8000}}});
        std::fs::write(folder.join(MANIFEST), manifest.to_string()).unwrap();
        let Ok(ManifestServer::Local(launch)) = from_extension(&folder, None) else {
            panic!("not a local server");
        };
        let main = folder.join("dist").join("main.js");
        assert_eq!(launch.args, [main.to_string_lossy()]);
        assert_eq!(launch.cwd.as_deref(), Some(folder.as_path()));
        assert_eq!(launch.env["ACME_ROOT"], folder.to_string_lossy());
    }

    #[test]
    fn substitutes_like_qwen() {
        let env = BTreeMap::from([("HOME".to_owned(), "/home/a".to_owned())]);
        assert_eq!(
            substitute("${extensionPath}${/}dist${/}main", "/x", &env),
            "/x/dist/main"
        );
        assert_eq!(
            substitute("$HOME/a ${HOME}/b", "/x", &env),
            "/home/a/a /home/a/b"
        );
        assert_eq!(
            substitute("${MISSING} $ $MISSING ${", "/x", &env),
            "${MISSING} $ $MISSING ${"
        );
    }
}
