//! What a manifest says, the one model every command reads it through:
//!
//! - [`ManifestFacts`]: the facts `ecp lint` establishes while it judges a
//!   manifest (spans kept), which package, check, try and managed build on;
//! - [`Lenient`]: the same manifest read leniently, as Qwen Code reads an
//!   installed one (doctor: a manifest lint would refuse still runs);
//! - [`offers_the_tool`]: whether a server entry exposes the profile's tool.
//!
//! Qwen's variables in these values are filled by one filler,
//! [`crate::qwen::vars::Filler`].

use serde_json::{Map, Value as Json};

use crate::json::{Node, Span, Value};
use crate::profile::TOOL_NAME;

/// How the local server starts what the extension ships.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// `command` is the executable itself (`${extensionPath}${/}dist${/}main`).
    Native,
    /// `command` is `node` and the first argument the bundle
    /// (`${extensionPath}${/}dist${/}main.js`), as in Qwen's own starter.
    Script,
}

/// The file the local server starts, relative to the extension root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryPoint {
    /// Normalized, `/`-separated (`dist/main`, `dist/main.js`).
    pub path: String,
    /// Where the manifest names it (`command`, or the `args` element).
    pub span: Span,
    pub pointer: String,
    pub kind: EntryKind,
}

/// What the later checks need from a manifest.
#[derive(Debug, Clone, Default)]
pub struct ManifestFacts {
    pub name: Option<String>,
    pub version: Option<String>,
    /// Files named by `contextFileName`, normalized relative to the
    /// extension root, with their spans.
    pub context_files: Vec<(String, Span)>,
    /// The local server's entry point, when it is inside the extension.
    pub entry_point: Option<EntryPoint>,
    /// The span of `version`, for findings about it.
    pub version_span: Option<Span>,
    /// The one MCP server, as written, when the manifest declares exactly
    /// one: what `ecp check` starts and `ecp package` ships.
    pub server: Option<ServerFacts>,
}

/// The one MCP server as the manifest declares it, before Qwen's
/// substitutions (`${extensionPath}`, `${/}`, `${VAR}`); values of the
/// wrong type are left out (lint reports them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerFacts {
    pub key: String,
    pub command: Option<String>,
    /// The string items of `args`.
    pub args: Vec<String>,
    /// The string members of `env`, in order.
    pub env: Vec<(String, String)>,
    pub cwd: Option<String>,
    /// `timeout` when it is a whole number of milliseconds.
    pub timeout_ms: Option<u64>,
    pub include_tools: Option<Vec<String>>,
    pub http_url: Option<String>,
}

impl ServerFacts {
    /// The server `key` as its JSON node `node` declares it.
    pub fn read(key: &str, node: &Node) -> ServerFacts {
        let string = |name: &str| node.get(name).and_then(Node::as_str).map(str::to_owned);
        let strings = |name: &str| {
            node.get(name).and_then(Node::as_array).map(|items| {
                items
                    .iter()
                    .filter_map(|n| n.as_str().map(str::to_owned))
                    .collect::<Vec<_>>()
            })
        };
        ServerFacts {
            key: key.to_owned(),
            command: string("command"),
            args: strings("args").unwrap_or_default(),
            env: node
                .get("env")
                .and_then(Node::as_object)
                .unwrap_or_default()
                .iter()
                .filter_map(|m| m.node.as_str().map(|v| (m.key.clone(), v.to_owned())))
                .collect(),
            cwd: string("cwd"),
            timeout_ms: match node.get("timeout").map(|n| &n.value) {
                Some(Value::Number(ms)) => ms.parse().ok(),
                _ => None,
            },
            include_tools: strings("includeTools"),
            http_url: string("httpUrl"),
        }
    }
}

/// An installed extension's manifest, read leniently: what Qwen Code reads
/// of it whatever lint would say (a name, else the folder's; a version;
/// the servers as written).
#[derive(Debug, Clone)]
pub struct Lenient {
    pub name: String,
    pub version: Option<String>,
    pub servers: Map<String, Json>,
}

impl Lenient {
    /// `text` read as JSON (as `JSON.parse` reads); `None` when it is not
    /// a JSON object. `folder` names an extension whose manifest has no
    /// string `name`.
    pub fn read(text: &str, folder: &str) -> Option<Lenient> {
        let value: Json = crate::json::parse_value(text).ok()?;
        let string = |key: &str| value.get(key).and_then(Json::as_str).map(str::to_owned);
        Some(Lenient {
            name: string("name").unwrap_or_else(|| folder.to_owned()),
            version: string("version"),
            servers: value
                .get("mcpServers")
                .and_then(Json::as_object)
                .cloned()
                .unwrap_or_default(),
        })
    }

    /// Whether one of its servers offers the profile's tool: an External
    /// Context extension.
    pub fn is_external_context(&self) -> bool {
        self.servers.values().any(offers_the_tool)
    }
}

/// Whether a server entry's `includeTools` names the profile's tool.
pub fn offers_the_tool(server: &Json) -> bool {
    server
        .get("includeTools")
        .and_then(Json::as_array)
        .is_some_and(|tools| tools.iter().any(|t| t == TOOL_NAME))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Doctor reads what Qwen reads: a manifest lint would refuse still
    /// names its servers, and a missing name is the folder's.
    #[test]
    fn a_lenient_reading_keeps_what_qwen_keeps() {
        let text = r#"{"version": 3, "mcpServers": {"a": {"command": "x", "includeTools": ["context_search"]}, "b": {}}}"#;
        let manifest = Lenient::read(text, "acme-context").unwrap();
        assert_eq!(manifest.name, "acme-context");
        assert_eq!(manifest.version, None);
        assert_eq!(manifest.servers.len(), 2);
        assert!(manifest.is_external_context());
        let other = Lenient::read(
            r#"{"name": "x", "mcpServers": {"a": {"includeTools": ["other"]}}}"#,
            "f",
        )
        .unwrap();
        assert_eq!(other.name, "x");
        assert!(!other.is_external_context());
        assert!(Lenient::read("not json", "f").is_none());
    }
}
