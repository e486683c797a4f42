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
        StreamableHttpClientTransport, TokioChildProcess,
        streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::Value;
use tokio::io::AsyncReadExt;

use crate::lint::{MANIFEST, json};

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

/// How the adapter learns about the scripted upstream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindingEnv {
    pub base_url: String,
    pub token: String,
}

/// A resolved stdio launch.
#[derive(Debug, Clone)]
pub struct Launch {
    pub program: String,
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

/// Resolves a manifest string as Qwen does: `${extensionPath}`, `${/}`,
/// `${pathSeparator}`, then `${VAR}`/`$VAR` from `env`; anything unresolved
/// stays literal.
fn substitute(value: &str, extension_path: &str, env: &BTreeMap<String, String>) -> String {
    let text = value
        .replace("${extensionPath}", extension_path)
        .replace("${/}", "/")
        .replace("${pathSeparator}", "/");
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, length) = match after.strip_prefix('{') {
            Some(inner) => match inner.find('}') {
                Some(end) => (&inner[..end], end + 2),
                None => ("", 0),
            },
            None => {
                let end = after
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(after.len());
                (&after[..end], end)
            }
        };
        match env.get(name).filter(|_| !name.is_empty()) {
            Some(value) => out.push_str(value),
            None => out.push_str(&rest[at..at + 1 + length]),
        }
        rest = &after[length..];
    }
    out.push_str(rest);
    out
}

fn extract(archive: &Path) -> Result<tempfile::TempDir, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let file = std::fs::File::open(archive).map_err(|e| format!("{}: {e}", archive.display()))?;
    let name = archive.to_string_lossy();
    if name.ends_with(".zip") {
        zip::ZipArchive::new(file)
            .and_then(|mut zip| zip.extract(dir.path()))
            .map_err(|e| format!("{}: {e}", archive.display()))?;
    } else {
        tar::Archive::new(flate2::read::GzDecoder::new(file))
            .unpack(dir.path())
            .map_err(|e| format!("{}: {e}", archive.display()))?;
    }
    Ok(dir)
}

/// The folder holding the manifest: `root`, or its single subfolder.
fn manifest_folder(root: &Path) -> PathBuf {
    if root.join(MANIFEST).is_file() {
        return root.to_owned();
    }
    let subfolders: Vec<PathBuf> = std::fs::read_dir(root)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    match subfolders.as_slice() {
        [only] if only.join(MANIFEST).is_file() => only.clone(),
        _ => root.to_owned(),
    }
}

fn strings(node: Option<&json::Node>) -> Option<Vec<String>> {
    node.and_then(json::Node::as_array).map(|items| {
        items
            .iter()
            .filter_map(|n| n.as_str().map(str::to_owned))
            .collect()
    })
}

/// Reads an extension's manifest and resolves its one server as Qwen
/// would. `upstream` (base URL, token) fills the variables the manifest
/// passes to the adapter for its endpoint and credential.
pub fn from_extension(
    path: &Path,
    upstream: Option<(&str, &str)>,
) -> Result<ManifestServer, String> {
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
    let text = std::fs::read_to_string(folder.join(MANIFEST))
        .map_err(|e| format!("{}: {e}", folder.join(MANIFEST).display()))?;
    let manifest = json::parse(&text).map_err(|e| format!("{MANIFEST} is not JSON: {e}"))?;
    let servers = manifest
        .get("mcpServers")
        .and_then(json::Node::as_object)
        .unwrap_or_default();
    let [server] = servers else {
        return Err(format!(
            "{MANIFEST} must declare exactly one MCP server; run `ecp lint`"
        ));
    };
    let server = &server.node;
    let call_timeout = match server.get("timeout").map(|n| &n.value) {
        Some(json::Value::Number(ms)) => ms
            .parse()
            .map(Duration::from_millis)
            .unwrap_or(DEFAULT_CALL_TIMEOUT),
        _ => Duration::from_secs(600),
    };
    let include_tools = strings(server.get("includeTools"));
    if let Some(url) = server.get("httpUrl").and_then(json::Node::as_str) {
        return Ok(ManifestServer::Remote {
            url: url.to_owned(),
            call_timeout,
            include_tools,
        });
    }
    let Some(command) = server.get("command").and_then(json::Node::as_str) else {
        return Err("the server has neither `command` nor `httpUrl`; run `ecp lint`".into());
    };
    let mut process_env: BTreeMap<String, String> = std::env::vars().collect();
    let extension_path = folder.to_string_lossy().into_owned();
    // The manifest's env, with the upstream in the endpoint/credential slots.
    let mut env = BTreeMap::new();
    let mut binding = (None, None);
    for member in server
        .get("env")
        .and_then(json::Node::as_object)
        .unwrap_or_default()
    {
        let Some(value) = member.node.as_str() else {
            continue;
        };
        let upper = member.key.to_ascii_uppercase();
        if let Some((base_url, token)) = upstream {
            if upper.ends_with("BASE_URL") {
                process_env.insert(member.key.clone(), base_url.to_owned());
                env.insert(member.key.clone(), base_url.to_owned());
                binding.0 = Some(member.key.clone());
                continue;
            }
            if upper.ends_with("TOKEN") {
                env.insert(member.key.clone(), token.to_owned());
                binding.1 = Some(member.key.clone());
                continue;
            }
        }
        env.insert(
            member.key.clone(),
            substitute(value, &extension_path, &process_env),
        );
    }
    let args = strings(server.get("args"))
        .unwrap_or_default()
        .iter()
        .map(|a| substitute(a, &extension_path, &process_env))
        .collect();
    let cwd = server
        .get("cwd")
        .and_then(json::Node::as_str)
        .map(|c| PathBuf::from(substitute(c, &extension_path, &process_env)));
    Ok(ManifestServer::Local(Launch {
        program: substitute(command, &extension_path, &process_env),
        args,
        cwd,
        env,
        call_timeout,
        include_tools,
        binding: match binding {
            (Some(base_url), Some(token)) => Some(BindingEnv { base_url, token }),
            _ => None,
        },
        _extracted: extracted,
    }))
}

/// The loopback names the scripted upstream is reached by.
const LOOPBACK: &[&str] = &["127.0.0.1", "localhost", "::1"];

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

/// A connected MCP session, with the server's stderr when it is a process.
pub struct Session {
    pub client: RunningService<RoleClient, ()>,
    stderr: Option<Arc<Mutex<Vec<u8>>>>,
    pub call_timeout: Duration,
}

impl Session {
    /// Starts `launch` and completes the MCP handshake.
    pub async fn spawn(launch: &Launch) -> Result<Session, String> {
        let mut command = tokio::process::Command::new(&launch.program);
        command
            .args(&launch.args)
            .envs(&launch.env)
            .kill_on_drop(true);
        if let Some(cwd) = &launch.cwd {
            command.current_dir(cwd);
        }
        let (transport, stderr) = TokioChildProcess::builder(command)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", launch.program))?;
        let buffer = Arc::new(Mutex::new(Vec::new()));
        if let Some(mut stderr) = stderr {
            let buffer = buffer.clone();
            tokio::spawn(async move {
                let mut chunk = [0u8; 4096];
                while let Ok(n) = stderr.read(&mut chunk).await {
                    if n == 0 {
                        break;
                    }
                    buffer
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .extend_from_slice(&chunk[..n]);
                }
            });
        }
        let handshake = tokio::time::timeout(Duration::from_secs(30), ().serve(transport)).await;
        let failure = match handshake {
            Ok(Ok(client)) => {
                return Ok(Session {
                    client,
                    stderr: Some(buffer),
                    call_timeout: launch.call_timeout,
                });
            }
            Ok(Err(error)) => format!("the MCP handshake failed: {error}"),
            Err(_) => "no answer to initialize within 30 s".to_owned(),
        };
        // Give the server a moment to finish its last words.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let stderr =
            String::from_utf8_lossy(&buffer.lock().unwrap_or_else(PoisonError::into_inner))
                .into_owned();
        Err(if stderr.trim().is_empty() {
            failure
        } else {
            format!("{failure}\nthe server's stderr:\n{}", stderr.trim_end())
        })
    }

    /// Connects to a Streamable HTTP endpoint, with an optional bearer.
    pub async fn connect(
        url: &str,
        bearer: Option<String>,
        call_timeout: Duration,
    ) -> Result<Session, String> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut config = StreamableHttpClientTransportConfig::with_uri(url);
        if let Some(bearer) = bearer {
            config = config.auth_header(bearer);
        }
        let client = reqwest::Client::builder()
            .no_proxy()
            .build()
            .map_err(|e| format!("cannot build an HTTP client: {e}"))?;
        let transport = StreamableHttpClientTransport::with_client(client, config);
        let client = tokio::time::timeout(Duration::from_secs(30), ().serve(transport))
            .await
            .map_err(|_| "no answer to initialize within 30 s".to_owned())?
            .map_err(|e| format!("the MCP handshake failed: {e}"))?;
        Ok(Session {
            client,
            stderr: None,
            call_timeout,
        })
    }

    /// One `context_search` call with raw arguments, bounded by the MCP
    /// call timeout.
    pub async fn call(&self, arguments: Value) -> Result<CallToolResult, String> {
        let mut params = CallToolRequestParams::new("context_search");
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
            Ok(Err(error)) => Err(format!("the call failed at the protocol level: {error}")),
            Ok(Ok(result)) => Ok(result),
        }
    }

    /// Everything the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr
            .as_ref()
            .map(|b| {
                String::from_utf8_lossy(&b.lock().unwrap_or_else(PoisonError::into_inner))
                    .into_owned()
            })
            .unwrap_or_default()
    }

    pub async fn close(self) {
        let _ = self.client.cancel().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
