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
use crate::profile::TOOL_NAME as TOOL;
use crate::text::secrets;

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
    let Some(members) = root.as_object() else {
        return file.refuse(
            report,
            Some(root),
            "",
            "Claude Code refuses it: it is not a JSON object".into(),
        );
    };
    let name = root.get("name");
    match name.and_then(Node::as_str) {
        None => file.refuse(
            report,
            name,
            "/name",
            "Claude Code refuses it: `name` is required".into(),
        ),
        Some(text)
            if text.is_empty() || text.chars().any(|c| c.is_whitespace() || c.is_control()) =>
        {
            let message = "Claude Code refuses it: a plugin name has no spaces (kebab-case)";
            file.refuse(report, name, "/name", message.into())
        }
        Some(_) => {}
    }
    for (field, what) in [("version", "no version"), ("author", "no author")] {
        if root
            .get(field)
            .is_none_or(|n| field == "version" && n.as_str().is_none())
        {
            let message = format!("`claude plugin validate --strict` refuses it: {what}");
            file.refuse(report, None, &format!("/{field}"), message);
        }
    }
    for member in members
        .iter()
        .filter(|m| !CLAUDE_FIELDS.contains(&m.key.as_str()))
    {
        report.add(Finding::new(
            Rule::ClientClaude,
            &file.label,
            member.key_span,
            &format!("/{}", member.key),
            format!(
                "`claude plugin validate --strict` refuses the unknown field {:?} (Claude Code ignores it)",
                crate::text::outside::shown(&member.key)
            ),
            "remove it",
        ));
    }
    claude_servers(file, place, report);
    claude_components(file, place, report);
}

/// What a Claude Code plugin may bring besides its server, each loaded by
/// Claude Code from a field of `plugin.json` or from its default place at
/// the plugin root: hooks run shell commands on events (`SessionStart`,
/// `UserPromptSubmit`, ...) outside any MCP server, an LSP server is a
/// second process, and commands, agents and skills are instructions the
/// model follows. A profile plugin brings one server offering
/// `context_search` and nothing else.
const CLAUDE_COMPONENTS: &[(&str, &str, &str)] = &[
    (
        "hooks",
        "hooks/hooks.json",
        "hooks that run commands on Claude Code's events",
    ),
    ("lspServers", ".lsp.json", "an LSP server, a second process"),
    ("commands", "commands", "slash commands"),
    ("agents", "agents", "agents"),
    ("skills", "skills", "skills"),
];

fn claude_components(file: &File, place: &Place, report: &mut Report) {
    for (field, default, what) in CLAUDE_COMPONENTS {
        if let Some(member) = file.root.member(field) {
            report.add(Finding::new(
                Rule::ClientProfile,
                &file.label,
                member.key_span,
                &format!("/{field}"),
                format!("the plugin brings {what} besides its one server: the profile's one-tool guarantee does not hold in Claude Code"),
                "remove the field; a profile plugin declares its one MCP server only",
            ));
        }
        if (place.holds)(default) {
            report.add(Finding::about(
                Rule::ClientProfile,
                &(place.label)(default),
                format!("Claude Code loads {what} from `{default}` beside the plugin's one server: the profile's one-tool guarantee does not hold there"),
                format!("remove `{default}` from the extension"),
            ));
        }
    }
}

/// A Claude plugin's servers: inline, one, `${VAR:-}`.
fn claude_servers(file: &File, place: &Place, report: &mut Report) {
    let servers = match file.root.get("mcpServers") {
        Some(node) if node.as_object().is_some() => node,
        Some(node) => {
            let message = "Qwen Code reads a path or list in mcpServers as the server map itself and starts a broken server named `mcpServers`; write the server inline";
            return file.refuse(report, Some(node), "/mcpServers", message.into());
        }
        None if (place.holds)(CLAUDE_MCP) => return,
        None => {
            return report.add(file.at(
                Rule::ClientProfile,
                None,
                "",
                "the plugin declares no MCP server, so Claude Code gets no context_search".into(),
                file.help(),
            ));
        }
    };
    if let Some((key, server)) = one_server(file, servers, "/mcpServers", report) {
        claude_server_rules(&file.label, server, &format!("/mcpServers/{key}"), report);
    }
    if (place.holds)(CLAUDE_MCP) {
        report.add(file.at(
            Rule::ClientProfile,
            file.root.get("mcpServers"),
            "/mcpServers",
            "the plugin declares its server inline and has a .mcp.json beside it: Claude Code starts the servers of both".into(),
            "keep the one server inline and remove .mcp.json",
        ));
    }
}

/// `${VAR}` reaches a Claude Code server as the literal text when `VAR` is
/// unset (measured): `${VAR:-}` is the spelling that gives "".
fn claude_server_rules(label: &str, server: &Node, pointer: &str, report: &mut Report) {
    for member in server
        .get("env")
        .and_then(Node::as_object)
        .unwrap_or_default()
    {
        if let Some(value) = member.node.as_str()
            && let Some(var) = crate::channels::reference(value)
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
    let mut redactions = Vec::new();
    if let Ok(root) = json::parse(text) {
        let help = "remove and rotate it; Claude Code reads `${VAR:-}` from the environment";
        secret_findings(
            label,
            &root,
            "the plugin's .mcp.json",
            help,
            &mut redactions,
            report,
        );
    }
    report.sources.push(Source {
        file: label.to_owned(),
        text: text.to_owned(),
        redactions,
    });
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
            let file = File { label: label.to_owned(), root: &root, client: Client::Claude };
            if let Some((key, server)) = one_server(&file, servers, "/mcpServers", report) {
                claude_server_rules(label, server, &format!("/mcpServers/{key}"), report);
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
    let Some(members) = root.as_object() else {
        return file.refuse(report, Some(root), "", "it is not a JSON object".into());
    };
    let version = root.get("manifest_version");
    let legacy = root.get("dxt_version").and_then(Node::as_str).is_some();
    let known = matches!(
        version.and_then(Node::as_str),
        Some("0.1" | "0.2" | "0.3" | "0.4")
    );
    if !(known || (version.is_none() && legacy)) {
        let message = "unrecognized or unsupported manifest version (0.1 to 0.4)";
        file.refuse(report, version, "/manifest_version", message.into());
    }
    for field in ["name", "version", "description"] {
        if !is_string(root.get(field)) {
            file.refuse(
                report,
                root.get(field),
                &format!("/{field}"),
                format!("{field}: Required"),
            );
        }
    }
    if !is_string(root.get("author").and_then(|a| a.get("name"))) {
        file.refuse(
            report,
            root.get("author"),
            "/author",
            "author.name: Required".into(),
        );
    }
    for member in members
        .iter()
        .filter(|m| !MCPB_FIELDS.contains(&m.key.as_str()))
    {
        let message = format!(
            "unrecognized key {:?}",
            crate::text::outside::shown(&member.key)
        );
        file.refuse(
            report,
            Some(&member.node),
            &format!("/{}", member.key),
            message,
        );
    }
    mcpb_server(file, place, report);
    mcpb_tools(file, report);
}

/// A bundle's server: a known type, its entry point, a command, and a
/// `type` and `title` for every `user_config` entry.
fn mcpb_server(file: &File, place: &Place, report: &mut Report) {
    let root = file.root;
    let server = root.get("server");
    if !matches!(
        server.and_then(|s| s.get("type")).and_then(Node::as_str),
        Some("node" | "python" | "binary")
    ) {
        file.refuse(
            report,
            server,
            "/server/type",
            "server.type must be node, python or binary".into(),
        );
    }
    match root.pointer("/server/entry_point").and_then(Node::as_str) {
        None => file.refuse(
            report,
            server,
            "/server/entry_point",
            "server.entry_point: Required".into(),
        ),
        // A Windows build ships `dist/main.exe` for `dist/main`.
        Some(entry)
            if place.shipped
                && !(place.exists)(entry)
                && !(place.exists)(&format!("{entry}.exe")) =>
        {
            report.add(file.at(
            Rule::ClientMcpb,
            root.pointer("/server/entry_point"),
            "/server/entry_point",
            format!("the bundle's entry point {entry:?} is not there: the bundle cannot start (mcpb does not check this)"),
            "build it first; `ecp package` packs the built entry point",
        ));
        }
        Some(_) => {}
    }
    if !is_string(root.pointer("/server/mcp_config/command")) {
        let message = "server.mcp_config.command: Required";
        file.refuse(report, server, "/server/mcp_config/command", message.into());
    }
    for member in root
        .get("user_config")
        .and_then(Node::as_object)
        .unwrap_or_default()
    {
        for field in ["type", "title"]
            .into_iter()
            .filter(|f| !is_string(member.node.get(f)))
        {
            let message = format!(
                "user_config.{}.{field}: Required",
                crate::text::outside::shown(&member.key)
            );
            file.refuse(
                report,
                Some(&member.node),
                &format!("/user_config/{}", member.key),
                message,
            );
        }
    }
}

/// A bundle declares exactly `context_search`, without the schema fields
/// mcpb refuses.
fn mcpb_tools(file: &File, report: &mut Report) {
    let tools = file.root.get("tools");
    let listed = tools.and_then(Node::as_array).unwrap_or_default();
    let names: Vec<Option<&str>> = listed
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
    for (n, tool) in listed
        .iter()
        .enumerate()
        .filter(|(_, t)| t.get("inputSchema").is_some())
    {
        let message = format!("tools.{n}: unrecognized key 'inputSchema'");
        file.refuse(report, Some(tool), &format!("/tools/{n}"), message);
    }
}

/// The npm rules over a package's `package.json` (shown as `label`):
/// scoped, no dependencies Qwen would not install, no install scripts, the
/// manifest's version.
pub fn npm_package(label: &str, text: &str, manifest_version: Option<&str>, report: &mut Report) {
    let mut refuse = |message: String, help: &str| {
        report.add(Finding::about(Rule::NpmPackage, label, message, help));
    };
    let Ok(package) = serde_json::from_str::<Value>(text) else {
        return refuse(
            "package.json is not JSON: npm and Qwen Code refuse the package".into(),
            "`ecp package --npm` writes it",
        );
    };
    match package.get("name").and_then(Value::as_str) {
        Some(name) if crate::channels::npm::is_scoped(name) => {}
        found => refuse(
            format!(
                "Qwen Code installs only scoped packages (@scope/name); this one is named {}",
                found
                    .map(|n| format!("{:?}", crate::text::outside::shown(n)))
                    .unwrap_or_else(|| "nothing".into())
            ),
            "publish it as @scope/name (`ecp package --npm --npm-name @scope/name`)",
        ),
    }
    for key in [
        "dependencies",
        "optionalDependencies",
        "peerDependencies",
        "bundleDependencies",
        "bundledDependencies",
    ] {
        if package
            .get(key)
            .is_some_and(|d| d.as_object().is_none_or(|o| !o.is_empty()) && !d.is_null())
        {
            refuse(
                format!(
                    "package.json lists {key}: Qwen Code installs none of them, so the extension must not need them"
                ),
                "bundle every dependency into dist/main.js and drop the list (`ecp package --npm` does)",
            );
        }
    }
    let scripts = package.get("scripts").and_then(Value::as_object);
    for script in crate::channels::npm::INSTALL_SCRIPTS {
        if scripts.is_some_and(|s| s.contains_key(*script)) {
            refuse(
                format!(
                    "package.json has a `{script}` script: npm runs it on the machine of whoever installs the package"
                ),
                "remove it; the package is the built extension and needs no install step",
            );
        }
    }
    let version = package.get("version").and_then(Value::as_str);
    if let (Some(manifest), Some(version)) = (manifest_version, version)
        && manifest != version
    {
        refuse(
            format!(
                "package.json says version {version} but qwen-extension.json says {manifest}: Qwen records the npm version and compares the manifest's"
            ),
            "package it again with `ecp package --npm`",
        );
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{channels::npm::package_json, extension::Project};

    /// The `package.json` ecp writes passes the npm rules; one that lists
    /// dependencies, an install script, another version and no scope
    /// breaks one rule each.
    #[test]
    fn the_package_json_ecp_writes_passes_the_npm_rules() {
        let project = Project {
            package_json: Some(json!({"name": "x", "type": "module", "license": "MIT",
                "dependencies": {"a": "1"}, "scripts": {"postinstall": "x"}})),
            ..Project::default()
        };
        let manifest = json!({"version": "1.2.3", "description": "d"});
        let package = package_json("@acme/x", &manifest, &project, Some("io.github.acme/x"));
        let mut report = Report::default();
        npm_package("p", &package.to_string(), Some("1.2.3"), &mut report);
        assert!(report.findings.is_empty(), "{:?}", report.findings);
        let bad = json!({"name": "x", "version": "1.0.0", "dependencies": {"a": "1"}, "scripts": {"postinstall": "curl"}});
        npm_package("p", &bad.to_string(), Some("1.2.3"), &mut report);
        assert_eq!(report.findings.len(), 4, "{:?}", report.findings);
    }
}
