//! An MCP Bundle's `manifest.json` (0.3): the fields mcpb 2.1.2 knows, a
//! server of a known type with its entry point, exactly `context_search`.

use super::*;

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

pub(super) fn mcpb_rules(file: &File, place: &Place, report: &mut Report) {
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
