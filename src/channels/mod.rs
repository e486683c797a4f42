//! One extension, every channel and every client. `qwen-extension.json` is
//! the one source; from it ecp derives:
//!
//! - `gemini-extension.json` for Gemini CLI (the same server keys Qwen
//!   reads: Qwen is a Gemini CLI fork);
//! - `.claude-plugin/plugin.json` for Claude Code, with the server inline
//!   (Qwen's converter reads an inline map or a wrapped `.mcp.json`, never a
//!   flat one or a path: `docs/channels-facts.md` §5);
//! - `manifest.json` for an MCP Bundle (`.mcpb`, desktop clients);
//! - [`npm`]: a scoped npm package tarball Qwen installs from a registry;
//! - [`registry`]: a `server.json` for the MCP registry.
//!
//! Every rule here comes from a measured run of the real client
//! (`docs/channels-facts.md`, which names its versions) and is proven against
//! it in `tests/e2e/channels.rs`. [`rules`] is what `ecp lint` says about
//! each client's manifest: where the client would refuse it, where it would
//! break the profile, and where it no longer says what `qwen-extension.json`
//! says.

pub mod mcpb;
pub mod npm;
pub mod registry;
pub mod try_in;

use serde_json::{Map, Value, json};

/// A client an extension can be published to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum)]
pub enum Client {
    /// Qwen Code (`qwen-extension.json`, always written).
    Qwen,
    /// Gemini CLI (`gemini-extension.json`).
    Gemini,
    /// Claude Code (`.claude-plugin/plugin.json`).
    Claude,
    /// An MCP Bundle for desktop clients (`manifest.json`, packed into
    /// `NAME.mcpb` by `ecp package`).
    Mcpb,
}

pub use crate::extension::{CLAUDE, CLAUDE_MCP, CLIENT_FILES, GEMINI, MCPB};

impl Client {
    /// The file this client reads, relative to the extension root.
    pub fn file(self) -> &'static str {
        match self {
            Client::Qwen => crate::input::MANIFEST,
            Client::Gemini => GEMINI,
            Client::Claude => CLAUDE,
            Client::Mcpb => MCPB,
        }
    }

    /// The client's name in messages.
    pub fn title(self) -> &'static str {
        match self {
            Client::Qwen => "Qwen Code",
            Client::Gemini => "Gemini CLI",
            Client::Claude => "Claude Code",
            Client::Mcpb => "an MCP Bundle client (mcpb)",
        }
    }

    /// The clients other than Qwen whose manifest is in `present` (a test of
    /// whether a relative file exists).
    pub fn present(present: &dyn Fn(&str) -> bool) -> Vec<Client> {
        [Client::Gemini, Client::Claude, Client::Mcpb]
            .into_iter()
            .filter(|c| present(c.file()))
            .collect()
    }
}

/// Why a client's manifest cannot be derived.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DeriveError(pub String);

/// The one server of a Qwen manifest and how it starts.
#[derive(Debug, Clone)]
pub struct Server<'a> {
    pub key: &'a str,
    pub body: &'a Map<String, Value>,
    pub kind: ServerKind,
}

impl Server<'_> {
    /// A remote server's URL (`httpUrl`, else `url`), as written.
    pub fn url(&self) -> Value {
        let url = self.body.get("httpUrl").or_else(|| self.body.get("url"));
        url.cloned().unwrap_or_default()
    }
}

/// What the server is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerKind {
    /// `node ${extensionPath}${/}dist${/}main.js`.
    Node,
    /// A native `${extensionPath}${/}dist${/}main`.
    Binary,
    /// A remote server (`httpUrl`).
    Remote,
}

/// The one server of `manifest`, or why there is not exactly one.
pub fn server(manifest: &Value) -> Result<Server<'_>, DeriveError> {
    let servers = manifest
        .get("mcpServers")
        .and_then(Value::as_object)
        .ok_or_else(|| DeriveError("qwen-extension.json declares no mcpServers".into()))?;
    let mut all = servers.iter();
    let (Some((key, body)), None) = (all.next(), all.next()) else {
        return Err(DeriveError(format!(
            "qwen-extension.json declares {} servers; a context provider declares exactly one",
            servers.len()
        )));
    };
    let body = body
        .as_object()
        .ok_or_else(|| DeriveError(format!("mcpServers.{key} is not an object")))?;
    let kind = if body.contains_key("httpUrl") || body.contains_key("url") {
        ServerKind::Remote
    } else if body.get("command").and_then(Value::as_str) == Some("node") {
        ServerKind::Node
    } else if body.contains_key("command") {
        ServerKind::Binary
    } else {
        return Err(DeriveError(format!(
            "mcpServers.{key} has neither a command nor an httpUrl"
        )));
    };
    Ok(Server { key, body, kind })
}

fn text(manifest: &Value, key: &str) -> Option<String> {
    manifest.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// The name, version and description every client manifest repeats.
fn identity(manifest: &Value) -> Result<(String, String, Option<String>), DeriveError> {
    let name = text(manifest, "name")
        .ok_or_else(|| DeriveError("qwen-extension.json has no string name".into()))?;
    let version = text(manifest, "version")
        .ok_or_else(|| DeriveError("qwen-extension.json has no string version".into()))?;
    Ok((name, version, text(manifest, "description")))
}

/// Qwen's path variables in the spelling of another client:
/// `${extensionPath}` becomes `root`, `${/}` and `${pathSeparator}` a `/`
/// (which every client's platform accepts in a path).
fn paths_for(value: &str, root: &str) -> String {
    value
        .replace("${extensionPath}", root)
        .replace("${/}", "/")
        .replace("${pathSeparator}", "/")
}

/// A server's string `args`, with the path variables for `root`.
fn args_for(body: &Map<String, Value>, root: &str) -> Vec<Value> {
    let args = body.get("args").and_then(Value::as_array);
    args.into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|a| json!(paths_for(a, root)))
        .collect()
}

/// `${NAME}` when `value` is exactly one whole reference to an environment
/// variable, with its name.
pub fn reference(value: &str) -> Option<&str> {
    let name = value.strip_prefix("${")?.strip_suffix('}')?;
    let valid = !name.is_empty()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !name.as_bytes()[0].is_ascii_digit();
    valid.then_some(name)
}

/// The keys of a Qwen server that Gemini CLI reads the same way.
const GEMINI_SERVER_KEYS: &[&str] = &[
    "command",
    "args",
    "env",
    "cwd",
    "timeout",
    "includeTools",
    "excludeTools",
    "httpUrl",
    "url",
    "headers",
    "oauth",
    "description",
];

/// `gemini-extension.json`: Gemini CLI reads the same server keys and path
/// variables as Qwen, and passes a variable whose name looks like a secret
/// (`*TOKEN*`, `*KEY*`) to the server only when `env` names it (measured), so
/// `env` is kept as is.
pub fn gemini(manifest: &Value) -> Result<Value, DeriveError> {
    let (name, version, description) = identity(manifest)?;
    let server = server(manifest)?;
    let body: Map<String, Value> = GEMINI_SERVER_KEYS
        .iter()
        .filter_map(|k| server.body.get(*k).map(|v| ((*k).to_owned(), v.clone())))
        .collect();
    let mut out = Map::new();
    out.insert("name".into(), json!(name));
    out.insert("version".into(), json!(version));
    if let Some(description) = description {
        out.insert("description".into(), json!(description));
    }
    out.insert("mcpServers".into(), json!({ server.key: body }));
    for key in ["contextFileName", "settings"] {
        if let Some(value) = manifest.get(key) {
            out.insert(key.into(), value.clone());
        }
    }
    Ok(Value::Object(out))
}

/// Claude Code's plugin root variable.
pub const CLAUDE_ROOT: &str = "${CLAUDE_PLUGIN_ROOT}";

/// `.claude-plugin/plugin.json` with the server inline. Claude Code has no
/// `cwd` and no tool list for a server (the one-tool server is the
/// guarantee there), knows `${CLAUDE_PLUGIN_ROOT}` for the plugin folder,
/// and passes an unset `${VAR}` on as the literal text: `${VAR:-}` gives
/// the empty string instead (measured with 2.1.332).
pub fn claude(manifest: &Value, author: &str) -> Result<Value, DeriveError> {
    let (name, version, description) = identity(manifest)?;
    let server = server(manifest)?;
    let mut body = Map::new();
    match server.kind {
        ServerKind::Remote => {
            let url = server.url();
            body.insert("type".into(), json!("http"));
            body.insert("url".into(), url);
        }
        ServerKind::Node | ServerKind::Binary => {
            let command = server.body.get("command").and_then(Value::as_str);
            body.insert(
                "command".into(),
                json!(paths_for(command.unwrap_or_default(), CLAUDE_ROOT)),
            );
            let args = args_for(server.body, CLAUDE_ROOT);
            if !args.is_empty() {
                body.insert("args".into(), Value::Array(args));
            }
            let env: Map<String, Value> = env_of(server.body)
                .map(|(k, v)| {
                    let value = match reference(v) {
                        Some(var) => format!("${{{var}:-}}"),
                        None => v.to_owned(),
                    };
                    (k.to_owned(), json!(value))
                })
                .collect();
            if !env.is_empty() {
                body.insert("env".into(), Value::Object(env));
            }
        }
    }
    if let Some(timeout) = server.body.get("timeout") {
        body.insert("timeout".into(), timeout.clone());
    }
    let mut out = Map::new();
    out.insert("name".into(), json!(name));
    out.insert("version".into(), json!(version));
    if let Some(description) = description {
        out.insert("description".into(), json!(description));
    }
    // `plugin validate --strict` warns, so refuses, without an author.
    out.insert("author".into(), json!({ "name": author }));
    out.insert("mcpServers".into(), json!({ server.key: body }));
    Ok(Value::Object(out))
}

/// The string members of a server's `env`.
fn env_of(body: &Map<String, Value>) -> impl Iterator<Item = (&str, &str)> {
    body.get("env")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.as_str(), v.as_str()?)))
}

/// The MCP Bundle manifest version ecp writes (the newest `mcpb` 2.1.2
/// validates).
pub const MCPB_MANIFEST_VERSION: &str = "0.3";

/// The `user_config` key for an environment variable (`ACME_TOKEN` ->
/// `acme_token`), a name Claude and mcpb both accept.
pub fn user_config_key(var: &str) -> String {
    var.to_ascii_lowercase()
}

/// `manifest.json` of an MCP Bundle: the local server started from the
/// bundle folder (`${__dirname}`), each `${VAR}` of `env` asked of the user
/// (`user_config`, sensitive when its name looks like a secret), the one
/// tool declared. `author` is required by the format; `platform` (Node's
/// name) is set for a native binary, which runs on one platform only.
pub fn mcpb(manifest: &Value, author: &str, platform: Option<&str>) -> Result<Value, DeriveError> {
    let (name, version, description) = identity(manifest)?;
    let server = server(manifest)?;
    let (kind, entry) = match server.kind {
        ServerKind::Remote => {
            return Err(DeriveError(
                "an MCP Bundle carries a local server; a remote extension is published through server.json (`ecp package --registry`)".into(),
            ));
        }
        ServerKind::Node => ("node", "dist/main.js"),
        // Qwen and the bundle's client both start `main.exe` on Windows.
        ServerKind::Binary if platform == Some("win32") => ("binary", "dist/main.exe"),
        ServerKind::Binary => ("binary", "dist/main"),
    };
    let command = server.body.get("command").and_then(Value::as_str);
    let args = args_for(server.body, "${__dirname}");
    let mut env = Map::new();
    let mut user_config = Map::new();
    for (var, value) in env_of(server.body) {
        match reference(value) {
            Some(from) => {
                let key = user_config_key(from);
                env.insert(var.to_owned(), json!(format!("${{user_config.{key}}}")));
                user_config.insert(
                    key,
                    json!({
                        "type": "string",
                        "title": from,
                        "description": format!("The value of {from}"),
                        "sensitive": crate::text::secrets::is_secret_key(from),
                        "required": true,
                    }),
                );
            }
            None => {
                env.insert(var.to_owned(), json!(value));
            }
        }
    }
    let mut mcp_config = Map::new();
    let command = match server.kind {
        ServerKind::Binary => format!("${{__dirname}}/{entry}"),
        _ => paths_for(command.unwrap_or_default(), "${__dirname}"),
    };
    mcp_config.insert("command".into(), json!(command));
    mcp_config.insert("args".into(), Value::Array(args));
    if !env.is_empty() {
        mcp_config.insert("env".into(), Value::Object(env));
    }
    let description = description.unwrap_or_else(|| format!("{name} context search"));
    let mut out = Map::new();
    out.insert("manifest_version".into(), json!(MCPB_MANIFEST_VERSION));
    out.insert("name".into(), json!(name));
    out.insert("version".into(), json!(version));
    out.insert("description".into(), json!(description));
    out.insert("author".into(), json!({ "name": author }));
    out.insert(
        "server".into(),
        json!({ "type": kind, "entry_point": entry, "mcp_config": mcp_config }),
    );
    out.insert(
        "tools".into(),
        json!([{ "name": crate::profile::TOOL_NAME, "description": description }]),
    );
    if !user_config.is_empty() {
        out.insert("user_config".into(), Value::Object(user_config));
    }
    if let Some(platform) = platform {
        out.insert("compatibility".into(), json!({ "platforms": [platform] }));
    }
    Ok(Value::Object(out))
}

/// The author an MCP Bundle names: `author` of `package.json` (a string or
/// `{name}`), else the first of `Cargo.toml`'s `authors` (its name part),
/// else the extension's own name.
pub fn author(project: &crate::extension::Project, name: &str) -> String {
    let from_package = project
        .package_json
        .as_ref()
        .and_then(|p| p.get("author"))
        .and_then(|a| a.as_str().or_else(|| a.get("name")?.as_str()))
        .map(str::to_owned);
    let from_cargo = || {
        let authors = project.cargo.as_ref()?.get("package")?.get("authors")?;
        let first = authors.as_array()?.first()?.as_str()?;
        Some(first.split('<').next().unwrap_or(first).trim().to_owned())
    };
    from_package
        .or_else(from_cargo)
        .filter(|a| !a.trim().is_empty())
        .unwrap_or_else(|| name.to_owned())
}

/// A client manifest's text as ecp writes it: two-space JSON and a newline.
pub fn render(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

/// The manifest `client` would read, derived from the Qwen manifest
/// `manifest` of an extension whose project is `project`.
pub fn derive(
    client: Client,
    manifest: &Value,
    project: &crate::extension::Project,
) -> Result<Value, DeriveError> {
    let name = text(manifest, "name").unwrap_or_default();
    match client {
        Client::Qwen => Ok(manifest.clone()),
        Client::Gemini => gemini(manifest),
        Client::Claude => claude(manifest, &author(project, &name)),
        Client::Mcpb => mcpb(manifest, &author(project, &name), None),
    }
}

/// Why the client manifests were not written.
#[derive(Debug, thiserror::Error)]
pub enum ClientsError {
    #[error(transparent)]
    Derive(#[from] DeriveError),
    /// The one write rule refused a place, or a write failed.
    #[error(transparent)]
    Write(#[from] crate::writes::WriteProblem),
}

/// Where the manifest of `client` goes in `folder`, under the one write
/// rule ([`crate::writes`]): `.claude-plugin/` must be a real folder.
pub fn client_place(folder: &std::path::Path, client: Client) -> crate::writes::Place {
    crate::writes::Place::within(folder, &folder.join(client.file()))
}

/// Writes the manifests of `clients` into `folder` from its
/// `qwen-extension.json`; the relative paths written, in order. Nothing is
/// written unless every manifest can be derived and every place passes
/// the write rule.
pub fn write_clients(
    folder: &std::path::Path,
    clients: &[Client],
) -> Result<Vec<&'static str>, ClientsError> {
    let extension = crate::extension::Extension::read(folder)
        .map_err(|problem| DeriveError(problem.to_string()))?;
    let text = extension
        .manifest_text
        .ok_or_else(|| DeriveError(format!("{} has no qwen-extension.json", folder.display())))?;
    let manifest: Value = serde_json::from_str(&text)
        .map_err(|e| DeriveError(format!("qwen-extension.json is not JSON: {e}")))?;
    let mut derived = Vec::new();
    for &client in clients {
        if client == Client::Qwen {
            continue;
        }
        derived.push((
            client.file(),
            render(&derive(client, &manifest, &extension.project)?),
        ));
    }
    let places: Vec<(Client, crate::writes::Place)> = clients
        .iter()
        .filter(|c| **c != Client::Qwen)
        .map(|c| (*c, client_place(folder, *c)))
        .collect();
    for (_, place) in &places {
        place.check_file()?;
    }
    let mut written = Vec::new();
    for ((client, place), (file, text)) in places.iter().zip(derived) {
        debug_assert_eq!(client.file(), file);
        place.write(text.as_bytes())?;
        written.push(file);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local() -> Value {
        json!({
            "name": "acme-context", "version": "0.1.0", "description": "ACME search",
            "mcpServers": {"acme-context": {
                "command": "node", "args": ["${extensionPath}${/}dist${/}main.js"],
                "cwd": "${extensionPath}",
                "env": {"ACME_CONTEXT_BASE_URL": "${ACME_CONTEXT_BASE_URL}", "ACME_CONTEXT_TOKEN": "${ACME_CONTEXT_TOKEN}", "MODE": "fast"},
                "timeout": 8000, "includeTools": ["context_search"], "trust": true
            }}
        })
    }

    #[test]
    fn each_client_gets_the_same_server_in_its_own_spelling() {
        let gemini = gemini(&local()).unwrap();
        let server = &gemini["mcpServers"]["acme-context"];
        assert_eq!(server["args"][0], "${extensionPath}${/}dist${/}main.js");
        assert_eq!(server["includeTools"], json!(["context_search"]));
        assert!(server.get("trust").is_none(), "{server}");

        let claude = claude(&local(), "ACME").unwrap();
        assert_eq!(claude["author"]["name"], "ACME");
        let server = &claude["mcpServers"]["acme-context"];
        assert_eq!(server["args"][0], "${CLAUDE_PLUGIN_ROOT}/dist/main.js");
        assert_eq!(
            server["env"]["ACME_CONTEXT_TOKEN"],
            "${ACME_CONTEXT_TOKEN:-}"
        );
        assert_eq!(server["env"]["MODE"], "fast");
        assert!(server.get("cwd").is_none() && server.get("includeTools").is_none());

        let bundle = mcpb(&local(), "ACME", None).unwrap();
        assert_eq!(bundle["server"]["type"], "node");
        assert_eq!(
            bundle["server"]["mcp_config"]["args"][0],
            "${__dirname}/dist/main.js"
        );
        assert_eq!(
            bundle["server"]["mcp_config"]["env"]["ACME_CONTEXT_TOKEN"],
            "${user_config.acme_context_token}"
        );
        assert_eq!(
            bundle["user_config"]["acme_context_token"]["sensitive"],
            true
        );
        assert_eq!(
            bundle["user_config"]["acme_context_base_url"]["sensitive"],
            false
        );
        assert_eq!(bundle["tools"][0]["name"], "context_search");
    }

    #[test]
    fn a_remote_server_has_no_bundle_and_claude_gets_an_http_server() {
        let remote = json!({"name": "r", "version": "1.0.0", "mcpServers": {"r": {"httpUrl": "https://ctx.acme.dev/mcp", "oauth": {"enabled": true}}}});
        assert!(mcpb(&remote, "a", None).is_err());
        let claude = claude(&remote, "a").unwrap();
        assert_eq!(
            claude["mcpServers"]["r"],
            json!({"type": "http", "url": "https://ctx.acme.dev/mcp"})
        );
        assert_eq!(
            gemini(&remote).unwrap()["mcpServers"]["r"]["oauth"]["enabled"],
            true
        );
    }

    #[test]
    fn only_a_whole_reference_is_a_variable() {
        assert_eq!(reference("${ACME_TOKEN}"), Some("ACME_TOKEN"));
        for not in ["${}", "x${A}", "${A}x", "${A-B}", "${1A}", "$A", "${A:-}"] {
            assert_eq!(reference(not), None, "{not}");
        }
    }
}
