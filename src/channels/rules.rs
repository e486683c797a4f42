//! What `ecp lint` says about the other clients' manifests in a folder or
//! an archive: where each client would refuse its file (`client-gemini`,
//! `client-claude`, `client-mcpb`), where it breaks the profile there
//! (`client-profile`), a literal secret in it (the `secret-*` rules), and
//! where it no longer says what `qwen-extension.json` says (`client-drift`).
//! The refusals are the ones measured with each real client
//! (`docs/channels-facts.md`).

use serde_json::Value;

use super::{CLAUDE, CLAUDE_MCP, Client, GEMINI, MCPB};
use crate::lint::{
    Finding, Report, Rule, Source,
    json::{self, Node, Span},
    manifest::TOOL,
    secrets,
};

/// Where the files of one extension are: a folder or an archive.
pub struct Place<'a> {
    /// How a relative path is shown (`folder/x`, `archive!/root/x`).
    pub label: &'a dyn Fn(&str) -> String,
    /// The text of a relative file, when it is there (bounded by the
    /// reader).
    pub read: &'a dyn Fn(&str) -> Option<String>,
    /// Whether a relative file is there.
    pub exists: &'a dyn Fn(&str) -> bool,
    /// Whether this is what is shipped (an archive, a bundle): a source
    /// folder's entry point is built later, and `entry-point-missing`
    /// already says when it is not.
    pub shipped: bool,
}

/// One client file under review: its label, text and parsed tree.
struct File<'a> {
    label: String,
    root: &'a Node,
}

impl File<'_> {
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

/// The node at a JSON pointer of plain keys and indexes.
fn find<'n>(root: &'n Node, pointer: &str) -> Option<&'n Node> {
    let mut node = root;
    for part in pointer.split('/').skip(1) {
        node = match node.as_array() {
            Some(items) => items.get(part.parse::<usize>().ok()?)?,
            None => node.get(part)?,
        };
    }
    Some(node)
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
        let file = File { label, root: &root };
        let mut redactions = Vec::new();
        secret_rules(&file, &root, None, "", &mut redactions, report);
        match client {
            Client::Gemini => gemini_rules(&file, place, report),
            Client::Claude => claude_rules(&file, place, report),
            Client::Mcpb => mcpb_rules(&file, place, report),
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
        claude_mcp_rules(&(place.label)(CLAUDE_MCP), &text, report);
    }
}

fn rule_of(client: Client) -> Rule {
    match client {
        Client::Gemini => Rule::ClientGemini,
        Client::Claude => Rule::ClientClaude,
        Client::Mcpb | Client::Qwen => Rule::ClientMcpb,
    }
}

/// A literal secret anywhere in the file.
fn secret_rules(
    file: &File,
    node: &Node,
    key: Option<&str>,
    pointer: &str,
    redactions: &mut Vec<Span>,
    report: &mut Report,
) {
    match &node.value {
        json::Value::String(value) => {
            for found in secrets::detect(key, value) {
                redactions.push(node.span);
                report.add(Finding::new(
                    found.rule,
                    &file.label,
                    node.span,
                    pointer,
                    format!("{} ({}) is written into the client manifest", found.what, found.preview),
                    "remove and rotate it; every client reads secrets from the environment or its own store (`${VAR}`, `${VAR:-}`, `${user_config.x}`)",
                ));
            }
        }
        json::Value::Array(items) => {
            for (n, item) in items.iter().enumerate() {
                secret_rules(
                    file,
                    item,
                    key,
                    &format!("{pointer}/{n}"),
                    redactions,
                    report,
                );
            }
        }
        json::Value::Object(members) => {
            for m in members {
                secret_rules(
                    file,
                    &m.node,
                    Some(&m.key),
                    &format!("{pointer}/{}", m.key),
                    redactions,
                    report,
                );
            }
        }
        _ => {}
    }
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
    let refuse = |report: &mut Report, node: Option<&Node>, pointer: &str, message: String| {
        report.add(file.at(
            Rule::ClientGemini,
            node,
            pointer,
            format!("Gemini CLI refuses it: {message}"),
            "`ecp package --clients gemini` writes it from qwen-extension.json",
        ))
    };
    if root.as_object().is_none() {
        return refuse(report, Some(root), "", "it is not a JSON object".into());
    }
    match root.get("name").and_then(Node::as_str) {
        None => refuse(report, root.get("name"), "/name", "missing \"name\"".into()),
        Some(name)
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') =>
        {
            refuse(
                report,
                root.get("name"),
                "/name",
                format!(
                    "invalid extension name {:?}: only letters, digits and dashes are allowed",
                    secrets::shown(name)
                ),
            )
        }
        Some(_) => {}
    }
    if !is_string(root.get("version")) {
        refuse(
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
        if name.split(['/', '\\']).any(|part| part == "..") {
            refuse(
                report,
                Some(node),
                "/contextFileName",
                format!("the context file {name:?} leaves the extension (\"..\")"),
            );
        } else if !(place.exists)(name) {
            refuse(
                report,
                Some(node),
                "/contextFileName",
                format!("the context file {name:?} is missing"),
            );
        }
    }
    let Some(servers) = root.get("mcpServers") else {
        return report.add(file.at(
            Rule::ClientProfile,
            None,
            "",
            "it declares no MCP server, so Gemini CLI gets no context_search".into(),
            "`ecp package --clients gemini` writes it from qwen-extension.json",
        ));
    };
    let Some((key, server)) = one_server(file, servers, "/mcpServers", report) else {
        return;
    };
    let pointer = format!("/mcpServers/{key}");
    let tools = server.get("includeTools");
    let only_tool = tools
        .and_then(Node::as_array)
        .is_some_and(|t| t.len() == 1 && t[0].as_str() == Some(TOOL));
    if !only_tool {
        report.add(file.at(
            Rule::ClientProfile,
            tools.or(Some(server)),
            &format!("{pointer}/includeTools"),
            format!(
                "Gemini CLI exposes whatever the server lists unless includeTools is [\"{TOOL}\"]"
            ),
            "set \"includeTools\": [\"context_search\"]",
        ));
    }
}

/// The fields Claude Code 2.1.332's plugin schema knows (others fail
/// `plugin validate --strict`).
const CLAUDE_FIELDS: &[&str] = &[
    "$schema",
    "name",
    "version",
    "description",
    "author",
    "homepage",
    "repository",
    "license",
    "keywords",
    "defaultEnabled",
    "dependencies",
    "optionalDependencies",
    "engines",
    "network",
    "userConfig",
    "channels",
    "commands",
    "agents",
    "skills",
    "hooks",
    "outputStyles",
    "themes",
    "workflows",
    "lspServers",
    "mcpServers",
];

fn claude_rules(file: &File, place: &Place, report: &mut Report) {
    let root = file.root;
    let refuse = |report: &mut Report, node: Option<&Node>, pointer: &str, message: String| {
        report.add(file.at(
            Rule::ClientClaude,
            node,
            pointer,
            message,
            "`ecp package --clients claude` writes it from qwen-extension.json",
        ))
    };
    let Some(members) = root.as_object() else {
        return refuse(
            report,
            Some(root),
            "",
            "Claude Code refuses it: it is not a JSON object".into(),
        );
    };
    match root.get("name").and_then(Node::as_str) {
        None => refuse(
            report,
            root.get("name"),
            "/name",
            "Claude Code refuses it: `name` is required".into(),
        ),
        Some(name)
            if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c.is_control()) =>
        {
            refuse(
                report,
                root.get("name"),
                "/name",
                "Claude Code refuses it: a plugin name has no spaces (kebab-case)".into(),
            )
        }
        Some(_) => {}
    }
    if !is_string(root.get("version")) {
        refuse(
            report,
            None,
            "/version",
            "`claude plugin validate --strict` refuses it: no version".into(),
        );
    }
    if root.get("author").is_none() {
        refuse(
            report,
            None,
            "/author",
            "`claude plugin validate --strict` refuses it: no author".into(),
        );
    }
    for member in members {
        if !CLAUDE_FIELDS.contains(&member.key.as_str()) {
            report.add(Finding::new(
                Rule::ClientClaude,
                &file.label,
                member.key_span,
                &format!("/{}", member.key),
                format!(
                    "`claude plugin validate --strict` refuses the unknown field {:?} (Claude Code ignores it)",
                    secrets::shown(&member.key)
                ),
                "remove it",
            ));
        }
    }
    let servers = match root.get("mcpServers") {
        Some(node) if node.as_object().is_some() => node,
        Some(node) => {
            return refuse(
                report,
                Some(node),
                "/mcpServers",
                "Qwen Code reads a path or list in mcpServers as the server map itself and starts a broken server named `mcpServers`; write the server inline".into(),
            );
        }
        None if (place.exists)(CLAUDE_MCP) => return,
        None => {
            return report.add(file.at(
                Rule::ClientProfile,
                None,
                "",
                "the plugin declares no MCP server, so Claude Code gets no context_search".into(),
                "`ecp package --clients claude` writes it from qwen-extension.json",
            ));
        }
    };
    if let Some((key, server)) = one_server(file, servers, "/mcpServers", report) {
        claude_server_rules(
            &file.label,
            key,
            server,
            &format!("/mcpServers/{key}"),
            report,
        );
    }
}

/// `${VAR}` reaches a Claude Code server as the literal text when `VAR` is
/// unset (measured): `${VAR:-}` is the spelling that gives "".
fn claude_server_rules(label: &str, _key: &str, server: &Node, pointer: &str, report: &mut Report) {
    for member in server
        .get("env")
        .and_then(Node::as_object)
        .unwrap_or_default()
    {
        if let Some(value) = member.node.as_str()
            && let Some(var) = super::reference(value)
        {
            report.add(Finding::new(
                Rule::ClientClaude,
                label,
                member.node.span,
                &format!("{pointer}/env/{}", member.key),
                format!("Claude Code passes `{value}` on as that literal text when {var} is unset"),
                format!("write \"${{{var}:-}}\""),
            ));
        }
    }
}

/// A `.mcp.json` beside a Claude plugin: Qwen reads only the wrapped form.
fn claude_mcp_rules(label: &str, text: &str, report: &mut Report) {
    let Ok(root) = json::parse(text) else {
        report.add(Finding::about(
            Rule::ClientClaude,
            label,
            "Claude Code and Qwen Code refuse it: it is not JSON".into(),
            "write the server inline in .claude-plugin/plugin.json instead",
        ));
        return;
    };
    match root.get("mcpServers") {
        Some(servers) if servers.as_object().is_some() => {
            let file = File { label: label.to_owned(), root: &root };
            if let Some((key, server)) = one_server(&file, servers, "/mcpServers", report) {
                claude_server_rules(label, key, server, &format!("/mcpServers/{key}"), report);
            }
        }
        _ => report.add(Finding::about(
            Rule::ClientClaude,
            label,
            "Qwen Code drops a flat .mcp.json without a word: it reads only {\"mcpServers\": {...}}".into(),
            "wrap the servers in \"mcpServers\", or write them inline in .claude-plugin/plugin.json",
        )),
    }
}

/// The top-level fields of an MCP Bundle manifest 0.3 (mcpb 2.1.2 refuses
/// others).
const MCPB_FIELDS: &[&str] = &[
    "$schema",
    "manifest_version",
    "dxt_version",
    "name",
    "display_name",
    "version",
    "description",
    "long_description",
    "author",
    "repository",
    "homepage",
    "documentation",
    "support",
    "icon",
    "icons",
    "screenshots",
    "server",
    "tools",
    "tools_generated",
    "prompts",
    "prompts_generated",
    "keywords",
    "license",
    "privacy_policies",
    "compatibility",
    "user_config",
    "localization",
    "_meta",
];

fn mcpb_rules(file: &File, place: &Place, report: &mut Report) {
    let root = file.root;
    let refuse = |report: &mut Report, node: Option<&Node>, pointer: &str, message: String| {
        report.add(file.at(
            Rule::ClientMcpb,
            node,
            pointer,
            format!("mcpb refuses it: {message}"),
            "`ecp package --clients mcpb` writes it from qwen-extension.json",
        ))
    };
    let Some(members) = root.as_object() else {
        return refuse(report, Some(root), "", "it is not a JSON object".into());
    };
    match root.get("manifest_version").and_then(Node::as_str) {
        Some("0.1" | "0.2" | "0.3") => {}
        _ => refuse(
            report,
            root.get("manifest_version"),
            "/manifest_version",
            "unrecognized or unsupported manifest version (0.3 is current)".into(),
        ),
    }
    for field in ["name", "version", "description"] {
        if !is_string(root.get(field)) {
            refuse(
                report,
                root.get(field),
                &format!("/{field}"),
                format!("{field}: Required"),
            );
        }
    }
    if !is_string(root.get("author").and_then(|a| a.get("name"))) {
        refuse(
            report,
            root.get("author"),
            "/author",
            "author.name: Required".into(),
        );
    }
    for member in members {
        if !MCPB_FIELDS.contains(&member.key.as_str()) {
            refuse(
                report,
                Some(&member.node),
                &format!("/{}", member.key),
                format!("unrecognized key {:?}", secrets::shown(&member.key)),
            );
        }
    }
    let server = root.get("server");
    match server.and_then(|s| s.get("type")).and_then(Node::as_str) {
        Some("node" | "python" | "binary") => {}
        _ => refuse(
            report,
            server,
            "/server/type",
            "server.type must be node, python or binary".into(),
        ),
    }
    match server.and_then(|s| s.get("entry_point")).and_then(Node::as_str) {
        None => refuse(report, server, "/server/entry_point", "server.entry_point: Required".into()),
        Some(entry) if place.shipped && !(place.exists)(entry) => report.add(file.at(
            Rule::ClientMcpb,
            find(root, "/server/entry_point"),
            "/server/entry_point",
            format!("the bundle's entry point {entry:?} is not there: the bundle cannot start (mcpb does not check this)"),
            "build it first; `ecp package` packs the built entry point",
        )),
        Some(_) => {}
    }
    if !is_string(find(root, "/server/mcp_config/command")) {
        refuse(
            report,
            server,
            "/server/mcp_config/command",
            "server.mcp_config.command: Required".into(),
        );
    }
    for member in root
        .get("user_config")
        .and_then(Node::as_object)
        .unwrap_or_default()
    {
        for field in ["type", "title"] {
            if !is_string(member.node.get(field)) {
                refuse(
                    report,
                    Some(&member.node),
                    &format!("/user_config/{}", member.key),
                    format!(
                        "user_config.{}.{field}: Required",
                        secrets::shown(&member.key)
                    ),
                );
            }
        }
    }
    let tools = root.get("tools");
    let names: Vec<Option<&str>> = tools
        .and_then(Node::as_array)
        .unwrap_or_default()
        .iter()
        .map(|t| t.get("name").and_then(Node::as_str))
        .collect();
    if names != [Some(TOOL)] {
        report.add(file.at(
            Rule::ClientProfile,
            tools,
            "/tools",
            format!("the bundle must declare exactly the one tool {TOOL}"),
            "set \"tools\": [{\"name\": \"context_search\", \"description\": ...}]",
        ));
    }
    for (n, tool) in tools
        .and_then(Node::as_array)
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        if tool.get("inputSchema").is_some() {
            refuse(
                report,
                Some(tool),
                &format!("/tools/{n}"),
                format!("tools.{n}: unrecognized key 'inputSchema'"),
            );
        }
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
    let Ok(expected) = super::derive(client, qwen, project) else {
        return;
    };
    let Ok(found) = serde_json::from_str::<Value>(&json_text(file.root)) else {
        return;
    };
    let parts: &[&str] = match client {
        Client::Mcpb => &["/name", "/version", "/server", "/tools/0/name"],
        _ => &["/name", "/version", "/mcpServers"],
    };
    for part in parts {
        let (want, have) = (expected.pointer(part), found.pointer(part));
        // The bundle's platform and description are its own.
        let differs = match (*part, want, have) {
            ("/server", Some(want), Some(have)) => want != have,
            (_, want, have) => want != have,
        };
        if differs {
            report.add(file.at(
                Rule::ClientDrift,
                find(file.root, part),
                part,
                format!(
                    "{part} is not what qwen-extension.json says for {}: expected {}",
                    client.title(),
                    want.map(|v| secrets_masked(&v.to_string())).unwrap_or_else(|| "nothing".into())
                ),
                match client {
                    Client::Gemini => "run `ecp package --clients gemini` to write it again",
                    Client::Claude => "run `ecp package --clients claude` to write it again",
                    _ => "run `ecp package --clients mcpb` to write it again",
                },
            ));
        }
    }
}

/// A value for a message: any secret in it masked.
fn secrets_masked(text: &str) -> String {
    let shown = crate::outside::mask_secrets(text);
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
