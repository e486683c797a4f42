//! Claude Code's plugin (`.claude-plugin/plugin.json`) and the `.mcp.json`
//! beside it: the fields its schema knows, one inline server offering
//! `context_search`, no other component, `${VAR:-}` for a variable.

use super::*;

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

pub(super) fn claude_rules(file: &File, place: &Place, report: &mut Report) {
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
pub(super) fn claude_mcp_rules(label: &str, text: &str, report: &mut Report) {
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
