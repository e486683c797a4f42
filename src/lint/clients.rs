//! What `ecp lint` says about the other clients' manifests in a folder or
//! an archive: where each client would refuse its file (`client-gemini`,
//! `client-claude`, `client-mcpb`), where it breaks the profile there
//! (`client-profile`), a literal secret in it (the `secret-*` rules), and
//! where it no longer says what `qwen-extension.json` says (`client-drift`).
//! The refusals are the ones measured with each real client
//! (`docs/channels-facts.md`). Beside them: an npm package's
//! `package.json` ([`npm_package`]) and an `.mcpb` bundle (`archive::bundle`).

use serde_json::Value;

use super::{
    Finding, Report, Rule, Source,
    json::{self, Node, Span},
};
use crate::channels::{CLAUDE, CLAUDE_MCP, Client, GEMINI, MCPB};
mod claude;
mod mcpb;
mod npm;

use crate::profile::TOOL_NAME as TOOL;
use crate::text::secrets;
pub use npm::npm_package;

/// Where the files of one extension are: a folder or an archive.
pub struct Place<'a> {
    /// How a relative path is shown (`folder/x`, `archive!/root/x`).
    pub label: &'a dyn Fn(&str) -> String,
    /// The text of a relative file, when it is there (bounded by the
    /// reader).
    pub read: &'a dyn Fn(&str) -> Option<String>,
    /// Whether a relative file is there.
    pub exists: &'a dyn Fn(&str) -> bool,
    /// Whether anything (a file, or a folder with anything in it) is at a
    /// relative path.
    pub holds: &'a dyn Fn(&str) -> bool,
    /// Whether this is what is shipped (an archive, a bundle): a source
    /// folder's entry point is built later, and `entry-point-missing`
    /// already says when it is not.
    pub shipped: bool,
}

/// One client file under review: its label, text and parsed tree.
struct File<'a> {
    label: String,
    root: &'a Node,
    client: Client,
}

impl File<'_> {
    /// The fix for every finding about this file.
    fn help(&self) -> &'static str {
        match self.client {
            Client::Gemini => "`ecp package --clients gemini` writes it from qwen-extension.json",
            Client::Claude => "`ecp package --clients claude` writes it from qwen-extension.json",
            _ => "`ecp package --clients mcpb` writes it from qwen-extension.json",
        }
    }

    /// A finding of the client's own rule: the client refuses the file.
    fn refuse(&self, report: &mut Report, node: Option<&Node>, pointer: &str, message: String) {
        let message = match self.client {
            Client::Gemini => format!("Gemini CLI refuses it: {message}"),
            Client::Mcpb => format!("mcpb refuses it: {message}"),
            _ => message,
        };
        report.add(self.at(rule_of(self.client), node, pointer, message, self.help()));
    }

    fn at(
        &self,
        rule: Rule,
        node: Option<&Node>,
        pointer: &str,
        message: String,
        help: &str,
    ) -> Finding {
        match node {
            Some(node) => Finding::new(rule, &self.label, node.span, pointer, message, help),
            None => Finding::about(rule, &self.label, message, help),
        }
    }
}

/// Lints every client manifest present at `place`; `qwen` is the text of
/// its `qwen-extension.json` (for `client-drift`), when there is one.
pub fn lint(
    place: &Place,
    qwen: Option<&str>,
    project: &crate::extension::Project,
    report: &mut Report,
) {
    let qwen: Option<Value> = qwen.and_then(|t| serde_json::from_str(t).ok());
    for (file, client) in [
        (GEMINI, Client::Gemini),
        (CLAUDE, Client::Claude),
        (MCPB, Client::Mcpb),
    ] {
        let Some(text) = (place.read)(file) else {
            continue;
        };
        // A `manifest.json` that is no bundle manifest is someone else's file.
        if client == Client::Mcpb
            && !text.contains("manifest_version")
            && !text.contains("dxt_version")
        {
            continue;
        }
        let label = (place.label)(file);
        let root = match json::parse(&text) {
            Ok(root) => root,
            Err(error) => {
                report.add(Finding::about(
                    rule_of(client),
                    &label,
                    format!(
                        "{} refuses it: it is not JSON ({})",
                        client.title(),
                        error.message
                    ),
                    "write it again with `ecp package --clients` from qwen-extension.json",
                ));
                continue;
            }
        };
        let file = File {
            label,
            root: &root,
            client,
        };
        let mut redactions = Vec::new();
        let help = "remove and rotate it; every client reads secrets from the environment or its own store (`${VAR}`, `${VAR:-}`, `${user_config.x}`)";
        secret_findings(
            &file.label,
            &root,
            "the client manifest",
            help,
            &mut redactions,
            report,
        );
        match client {
            Client::Gemini => gemini_rules(&file, place, report),
            Client::Claude => claude::claude_rules(&file, place, report),
            Client::Mcpb => mcpb::mcpb_rules(&file, place, report),
            Client::Qwen => {}
        }
        if let Some(qwen) = &qwen {
            drift_rules(&file, client, qwen, project, report);
        }
        report.sources.push(Source {
            file: file.label.clone(),
            text,
            redactions,
        });
    }
    if (place.exists)(CLAUDE_MCP) && !(place.exists)(CLAUDE) {
        // A lone `.mcp.json` is a project file of Claude Code, no plugin.
        return;
    }
    if let Some(text) = (place.read)(CLAUDE_MCP) {
        claude::claude_mcp_rules(&(place.label)(CLAUDE_MCP), &text, report);
    }
}

fn rule_of(client: Client) -> Rule {
    match client {
        Client::Gemini => Rule::ClientGemini,
        Client::Claude => Rule::ClientClaude,
        Client::Mcpb | Client::Qwen => Rule::ClientMcpb,
    }
}

/// Every literal secret under `node` of the file shown as `label`, said
/// to be written into `place`; each masked wherever lint shows the file.
pub(crate) fn secret_findings(
    label: &str,
    node: &Node,
    place: &str,
    help: &str,
    redactions: &mut Vec<Span>,
    report: &mut Report,
) {
    fn walk(
        node: &Node,
        key: Option<&str>,
        pointer: &str,
        found: &mut dyn FnMut(&Node, &str, secrets::Detection),
    ) {
        match &node.value {
            json::Value::String(value) => {
                for detection in secrets::detect(key, value) {
                    found(node, pointer, detection);
                }
            }
            json::Value::Array(items) => {
                for (n, item) in items.iter().enumerate() {
                    walk(item, key, &format!("{pointer}/{n}"), found);
                }
            }
            json::Value::Object(members) => {
                for m in members {
                    walk(
                        &m.node,
                        Some(&m.key),
                        &format!("{pointer}/{}", m.key),
                        found,
                    );
                }
            }
            _ => {}
        }
    }
    walk(node, None, "", &mut |node, pointer, found| {
        redactions.push(node.span);
        let message = format!("{} ({}) is written into {place}", found.what, found.preview);
        report.add(Finding::new(
            found.kind.into(),
            label,
            node.span,
            pointer,
            message,
            help,
        ));
    });
}

/// The one server of an `mcpServers` node, or a `client-profile` finding.
fn one_server<'n>(
    file: &File,
    servers: &'n Node,
    pointer: &str,
    report: &mut Report,
) -> Option<(&'n str, &'n Node)> {
    let members = servers.as_object()?;
    if members.len() != 1 {
        report.add(file.at(
            Rule::ClientProfile,
            Some(servers),
            pointer,
            format!(
                "it declares {} MCP servers; a context provider declares exactly one",
                members.len()
            ),
            "keep the one server qwen-extension.json declares",
        ));
        return None;
    }
    Some((members[0].key.as_str(), &members[0].node))
}

fn is_string(node: Option<&Node>) -> bool {
    node.and_then(Node::as_str).is_some()
}

fn gemini_rules(file: &File, place: &Place, report: &mut Report) {
    let root = file.root;
    if root.as_object().is_none() {
        return file.refuse(report, Some(root), "", "it is not a JSON object".into());
    }
    let name = root.get("name");
    match name.and_then(Node::as_str) {
        None => file.refuse(report, name, "/name", "missing \"name\"".into()),
        Some(text)
            if text.is_empty() || !text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') =>
        {
            let message = format!(
                "invalid extension name {:?}: only letters, digits and dashes are allowed",
                crate::text::outside::shown(text)
            );
            file.refuse(report, name, "/name", message)
        }
        Some(_) => {}
    }
    if !is_string(root.get("version")) {
        file.refuse(
            report,
            root.get("version"),
            "/version",
            "missing \"version\"".into(),
        );
    }
    let context: Vec<&Node> = match root.get("contextFileName") {
        Some(node) if node.as_str().is_some() => vec![node],
        Some(node) => node
            .as_array()
            .map(|a| a.iter().collect())
            .unwrap_or_default(),
        None => Vec::new(),
    };
    for node in context {
        let Some(name) = node.as_str() else { continue };
        let problem = if name.split(['/', '\\']).any(|part| part == "..") {
            format!("the context file {name:?} leaves the extension (\"..\")")
        } else if !(place.exists)(name) {
            format!("the context file {name:?} is missing")
        } else {
            continue;
        };
        file.refuse(report, Some(node), "/contextFileName", problem);
    }
    gemini_server(file, report);
}

/// Gemini's one server names `context_search` alone in `includeTools`.
fn gemini_server(file: &File, report: &mut Report) {
    let Some(servers) = file.root.get("mcpServers") else {
        return report.add(file.at(
            Rule::ClientProfile,
            None,
            "",
            "it declares no MCP server, so Gemini CLI gets no context_search".into(),
            file.help(),
        ));
    };
    let Some((key, server)) = one_server(file, servers, "/mcpServers", report) else {
        return;
    };
    let tools = server.get("includeTools");
    let only_tool = tools
        .and_then(Node::as_array)
        .is_some_and(|t| t.len() == 1 && t[0].as_str() == Some(TOOL));
    if !only_tool {
        report.add(file.at(
            Rule::ClientProfile,
            tools.or(Some(server)),
            &format!("/mcpServers/{key}/includeTools"),
            format!(
                "Gemini CLI exposes whatever the server lists unless includeTools is [\"{TOOL}\"]"
            ),
            "set \"includeTools\": [\"context_search\"]",
        ));
    }
}

/// The parts a client manifest repeats from `qwen-extension.json`.
fn drift_rules(
    file: &File,
    client: Client,
    qwen: &Value,
    project: &crate::extension::Project,
    report: &mut Report,
) {
    let Ok(expected) = crate::channels::derive(client, qwen, project) else {
        return;
    };
    let Ok(found) = serde_json::from_str::<Value>(&json_text(file.root)) else {
        return;
    };
    let parts: &[&str] = match client {
        Client::Mcpb => &["/name", "/version", "/server", "/tools/0/name"],
        _ => &["/name", "/version", "/mcpServers"],
    };
    // The bundle's description, author and platform are its own.
    for part in parts {
        let want = expected.pointer(part);
        if want == found.pointer(part) {
            continue;
        }
        let shown = want.map_or_else(|| "nothing".into(), |v| secrets_masked(&v.to_string()));
        report.add(file.at(
            Rule::ClientDrift,
            file.root.pointer(part),
            part,
            format!(
                "{part} is not what qwen-extension.json says for {}: expected {shown}",
                client.title()
            ),
            file.help(),
        ));
    }
}

/// A value for a message: any secret in it masked.
fn secrets_masked(text: &str) -> String {
    let shown = crate::text::outside::mask_secrets(text);
    if shown.chars().count() > 200 {
        format!("{}…", shown.chars().take(200).collect::<String>())
    } else {
        shown
    }
}

/// A parsed node back to JSON text (for comparing values).
fn json_text(node: &Node) -> String {
    match &node.value {
        json::Value::Null => "null".into(),
        json::Value::Bool(b) => b.to_string(),
        json::Value::Number(n) => n.clone(),
        json::Value::String(s) => serde_json::to_string(s).unwrap_or_default(),
        json::Value::Array(items) => format!(
            "[{}]",
            items.iter().map(json_text).collect::<Vec<_>>().join(",")
        ),
        json::Value::Object(members) => format!(
            "{{{}}}",
            members
                .iter()
                .map(|m| format!(
                    "{}:{}",
                    serde_json::to_string(&m.key).unwrap_or_default(),
                    json_text(&m.node)
                ))
                .collect::<Vec<_>>()
                .join(",")
        ),
    }
}
