//! The checks of one extension's server, as Qwen ends up running it.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{
    Code, EntryPoint, ExtensionReport, Finding, Manifest, PROVIDER_BUDGET_MS, Server, TOOL,
    Variable, offers_the_tool, winner,
};
use crate::qwen::{
    machine::{InstalledExtension, Layer, Machine, VariableSource, string_list},
    vars::{Environment, Filler, Places},
};

fn finding(id: Code, message: String, fix: impl Into<String>) -> Finding {
    Finding {
        id,
        message,
        fix: fix.into(),
    }
}

/// The server of an extension (its own, or the one that wins its name).
pub(super) fn extension(
    machine: &Machine,
    extension: &InstalledExtension,
    manifest: &Manifest,
    report: &mut ExtensionReport,
) {
    let Some(name) = manifest
        .servers
        .iter()
        .find(|(_, s)| offers_the_tool(s))
        .or_else(|| manifest.servers.iter().next())
        .map(|(name, _)| name.clone())
    else {
        report.findings.push(finding(
            Code::NoServer,
            "the manifest declares no MCP server".to_owned(),
            "an External Context extension declares one server offering context_search",
        ));
        return;
    };
    if !extension.active {
        report.findings.push(finding(
            Code::DisabledHere,
            format!(
                "the extension is {} in {}",
                extension.activation,
                machine.workspace.display()
            ),
            format!(
                "qwen extensions enable {} (or --scope workspace)",
                extension.dir_name
            ),
        ));
    }
    if machine.execution_sandbox() {
        report.findings.push(finding(
            Code::ExtensionsOff,
            "tools.executionSandbox is set: Qwen loads no extension's MCP server".to_owned(),
            "define the server in the system settings instead (`ecp managed`)",
        ));
    }
    server(machine, Some(extension), &name, report);
}

/// The definition Qwen uses for the server `name`, judged.
pub(super) fn server(
    machine: &Machine,
    extension: Option<&InstalledExtension>,
    name: &str,
    report: &mut ExtensionReport,
) {
    where_it_runs(machine, name, report);
    let Some((defined_by, file, entry)) = winner(machine, name) else {
        return;
    };
    let own = extension.is_some_and(|e| defined_by == format!("extension:{}", e.dir_name));
    if extension.is_some() && !own {
        report
            .findings
            .push(shadowed(name, &defined_by, file.as_deref()));
    }
    let repository = [Layer::Workspace, Layer::ProjectMcpJson]
        .iter()
        .any(|l| defined_by == l.describe());
    if extension.is_none() && repository {
        report.findings.push(finding(
            Code::RepositoryDefinition,
            format!(
                "the definition of `{name}` Qwen uses is in {defined_by} ({}), a file of the workspace: the repository chooses what runs, once someone approves it (`qwen mcp approve`)",
                file.as_deref().unwrap_or(Path::new("")).display()
            ),
            "pin the server in the system settings (`ecp managed`), which win over the workspace",
        ));
    }
    let server = server_of(name, &defined_by, file, &entry, own);
    server_rules(machine, &server, report);
    if defined_by != Layer::ProjectMcpJson.describe() {
        // A manifest's strings get Qwen's own variables; a settings file's
        // only the environment (`crate::qwen::vars`).
        let places = defined_by
            .starts_with("extension:")
            .then_some(Places::STAND_IN);
        variables(machine, extension, places, &entry, report);
    }
    match extension {
        Some(extension) if own => entry_point(Some(&extension.path), &entry, report),
        None => entry_point(None, &entry, report),
        Some(_) => {}
    }
    if server.transport != "stdio" {
        tokens(machine, name, report);
    }
    if let Some(tag) = &report.release_tag
        && let Some(why) = crate::lint::release::tag_disagrees(tag, report.version.as_deref())
    {
        report.findings.push(finding(
            Code::VersionTag,
            format!("installed from a release: {why}"),
            "install the release whose tag names the manifest's version",
        ));
    }
    report.server = Some(server);
}

/// Whether Qwen starts the server here: folder trust, the server lists,
/// the deny rules.
fn where_it_runs(machine: &Machine, name: &str, report: &mut ExtensionReport) {
    for mode in &machine.quiet_modes {
        let effect = if mode == "QWEN_CODE_SAFE_MODE" {
            "safe mode: Qwen loads no extension and takes MCP servers only from --mcp-config"
        } else {
            "bare mode: Qwen reads no settings and no .env file"
        };
        report.findings.push(finding(
            Code::QuietMode,
            format!("{mode} is on in the environment Qwen starts with: {effect}"),
            format!("unset {mode}"),
        ));
    }
    if machine.disabled_servers().iter().any(|s| s == name) {
        report.findings.push(finding(
            Code::ServerDisabled,
            format!(
                "`{name}` is switched off in {}",
                machine
                    .qwen_home
                    .join("extensions/extension-preferences.json")
                    .display()
            ),
            "switch it on again in Qwen's /mcp dialog",
        ));
    }
    if !machine.trusted {
        report.findings.push(finding(
            Code::WorkspaceUntrusted,
            format!(
                "Qwen starts no MCP server in an untrusted workspace ({}); `qwen mcp list` still shows it connected",
                machine.trust_rule
            ),
            "trust the folder in Qwen (trustedFolders.json), or work in a trusted one",
        ));
    }
    let allowed = machine.strings("/mcp/allowed");
    if !allowed.is_empty() && !allowed.iter().any(|p| glob(p, name)) {
        report.findings.push(finding(
            Code::ServerNotAllowed,
            format!(
                "mcp.allowed ({}) does not list `{name}`: Qwen drops the server",
                allowed.join(", ")
            ),
            format!("add `{name}` to mcp.allowed in the settings that set the list"),
        ));
    }
    if let Some(pattern) = machine
        .strings("/mcp/excluded")
        .iter()
        .find(|p| glob(p, name))
    {
        report.findings.push(finding(
            Code::ServerExcluded,
            format!("mcp.excluded has `{pattern}`: Qwen skips the server"),
            "remove the entry from mcp.excluded",
        ));
    }
    let tool = format!("mcp__{name}__{TOOL}");
    let mut deny = machine.strings("/permissions/deny");
    deny.extend(machine.strings("/tools/exclude"));
    if let Some(rule) = deny.iter().find(|rule| {
        *rule == &format!("mcp__{name}")
            || *rule == &tool
            || rule
                .strip_suffix('*')
                .is_some_and(|prefix| tool.starts_with(prefix) && prefix.starts_with("mcp__"))
    }) {
        report.findings.push(finding(
            Code::ToolDenied,
            format!("the deny rule `{rule}` (permissions.deny or tools.exclude) hides {tool}"),
            "remove the rule",
        ));
    }
}

/// Qwen's server-name patterns: `*` and `?` over the whole name. Linear
/// backtracking over at most 1024 characters of each (patterns and names
/// may come from a repository's settings).
fn glob(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().take(1024).collect();
    let n: Vec<char> = name.chars().take(1024).collect();
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ni));
            pi += 1;
        } else if let Some((star_p, star_n)) = star {
            pi = star_p + 1;
            ni = star_n + 1;
            star = Some((star_p, star_n + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

fn shadowed(name: &str, defined_by: &str, file: Option<&Path>) -> Finding {
    let place = file.map_or(String::new(), |f| format!(" ({})", f.display()));
    match defined_by.strip_prefix("extension:") {
        Some(other) => finding(
            Code::Shadowed,
            format!(
                "the extension `{other}` also declares the server `{name}` and comes first in Qwen's load order (folder names, byte order): Qwen runs its definition"
            ),
            format!("uninstall or disable `{other}`, or rename one of the servers"),
        ),
        None => finding(
            Code::Shadowed,
            format!(
                "a server named `{name}` in {defined_by}{place} replaces the extension's definition whole: Qwen runs that one{}",
                if defined_by.contains(".mcp.json") {
                    ", even while it waits for approval"
                } else {
                    ""
                }
            ),
            format!(
                "remove `{name}` from that file, unless it is the deployment's pinned definition"
            ),
        ),
    }
}

fn strings(entry: &Value, key: &str) -> Option<Vec<String>> {
    entry.get(key).and_then(string_list)
}

fn server_of(
    name: &str,
    defined_by: &str,
    file: Option<PathBuf>,
    entry: &Value,
    own: bool,
) -> Server {
    let text = |key: &str| entry.get(key).and_then(Value::as_str).map(str::to_owned);
    let (transport, runs) = if let Some(url) = text("httpUrl") {
        ("http", url)
    } else if let Some(url) = text("url") {
        ("sse", url)
    } else {
        let mut runs = text("command").unwrap_or_default();
        for arg in strings(entry, "args").unwrap_or_default() {
            runs.push(' ');
            runs.push_str(&arg);
        }
        ("stdio", runs)
    };
    let runs = crate::text::outside::mask_secrets(&runs);
    Server {
        name: name.to_owned(),
        defined_by: if own {
            "the extension".to_owned()
        } else {
            defined_by.to_owned()
        },
        file,
        transport,
        runs,
        include_tools: strings(entry, "includeTools"),
        exclude_tools: strings(entry, "excludeTools").unwrap_or_default(),
        trust: entry.get("trust").and_then(Value::as_bool) == Some(true),
        timeout_ms: entry.get("timeout").and_then(Value::as_u64),
    }
}

/// The tool lists, `trust` and the timeout of the definition Qwen uses.
fn server_rules(machine: &Machine, server: &Server, report: &mut ExtensionReport) {
    let exposes_only_the_tool = server.include_tools.as_deref() == Some(&[TOOL.to_owned()][..]);
    if server.exclude_tools.iter().any(|t| t == TOOL) {
        report.findings.push(finding(
            Code::ToolExcluded,
            format!("excludeTools names {TOOL} (excludeTools wins): the model never sees it"),
            "remove it from excludeTools",
        ));
    } else if !exposes_only_the_tool {
        let now = match &server.include_tools {
            None => "no includeTools: every tool the server lists".to_owned(),
            Some(tools) => format!("includeTools is [{}]", tools.join(", ")),
        };
        report.findings.push(finding(
            Code::ToolsExposed,
            format!("{now}; the profile exposes {TOOL} only"),
            format!("\"includeTools\": [\"{TOOL}\"] in the definition Qwen uses"),
        ));
    }
    if server.trust {
        let effect = if machine.trusted {
            "Qwen calls the tool without asking"
        } else {
            "Qwen would call the tool without asking in a trusted workspace"
        };
        report.findings.push(finding(
            Code::Trust,
            format!(
                "`trust: true` in {}: {effect}; the profile never needs it",
                server.defined_by
            ),
            "remove `trust`",
        ));
    }
    match server.timeout_ms {
        None => report.findings.push(finding(
            Code::Timeout,
            "no `timeout`: Qwen waits up to 10 minutes for a call".to_owned(),
            "\"timeout\": 8000 (the profile's, around its 5000 ms provider budget)",
        )),
        Some(ms) if ms <= PROVIDER_BUDGET_MS => report.findings.push(finding(
            Code::Timeout,
            format!(
                "`timeout` is {ms} ms, not above the adapter's {PROVIDER_BUDGET_MS} ms provider budget: Qwen gives up before the adapter's own timeout error"
            ),
            "\"timeout\": 8000",
        )),
        Some(_) => {}
    }
}

/// Every `${VAR}` of the definition, and where Qwen gets it from.
fn variables(
    machine: &Machine,
    extension: Option<&InstalledExtension>,
    places: Option<Places>,
    entry: &Value,
    report: &mut ExtensionReport,
) {
    let mut texts = Vec::new();
    collect_strings(entry, &mut texts);
    // Names only: doctor keeps the values to itself.
    let filler = Filler {
        places,
        environment: Environment::Kept,
    };
    let mut names: Vec<String> = Vec::new();
    for text in &texts {
        for name in filler.names(text) {
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    // A user-scope extension setting lands in the extension's own `.env`,
    // which Qwen never loads.
    let setting_file = extension.map(|e| e.path.join(".env"));
    let settings = extension
        .zip(setting_file.as_ref())
        .and_then(|(e, file)| crate::files::read_text(file, Some(&e.path), 64 * 1024).ok())
        .map(|t| crate::qwen::env_file::parse(&t))
        .unwrap_or_default();
    for name in names {
        let source = machine.variable(&name);
        match &source {
            VariableSource::Unset => {
                let setting = settings.iter().any(|(k, _)| *k == name);
                report.findings.push(finding(
                    Code::VariableUnset,
                    format!(
                        "`{name}` is set nowhere Qwen looks, so the server gets the literal `${{{name}}}`{}",
                        if setting {
                            format!(
                                "; it is a user-scope extension setting in {}, which Qwen 0.24.4 does not pass to the server",
                                setting_file.as_deref().unwrap_or(Path::new("")).display()
                            )
                        } else {
                            String::new()
                        }
                    ),
                    format!("export {name} in the environment Qwen starts from (a managed launcher does: `ecp managed`)"),
                ));
            }
            VariableSource::SettingsEnv(file) if machine.is_workspace_settings(file) => {
                report.findings.push(finding(
                    Code::VariableFromRepository,
                    format!(
                        "`{name}` comes from the env of {}, the workspace's settings: whoever controls the repository chooses the endpoint or the credential",
                        file.display()
                    ),
                    format!("set {name} in the environment Qwen starts from (it wins over settings env)"),
                ));
            }
            VariableSource::ProjectEnv(file) => report.findings.push(finding(
                Code::VariableFromRepository,
                format!(
                    "`{name}` comes from {}, a file of the workspace: whoever controls the repository chooses the endpoint or the credential",
                    file.display()
                ),
                format!("set {name} in the environment Qwen starts from (it wins over .env files), or in ~/.qwen/.env"),
            )),
            VariableSource::Process
            | VariableSource::HomeEnv(_)
            | VariableSource::SettingsEnv(_) => {}
        }
        report.variables.push(Variable { name, source });
    }
}

fn collect_strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_strings(v, out)),
        _ => {}
    }
}

/// The stdio entry point (inside the extension, or any absolute path of a
/// settings definition): present, executable, for this machine; `node` on
/// `PATH` for a bundle.
fn entry_point(folder: Option<&Path>, entry: &Value, report: &mut ExtensionReport) {
    let Some(command) = entry.get("command").and_then(Value::as_str) else {
        return;
    };
    // Qwen's own variables filled (a settings definition gets none), the
    // environment's left as written: doctor keeps values to itself.
    let folder_text = folder.map(|f| f.to_string_lossy());
    let filler = Filler {
        places: folder_text.as_deref().map(|extension| Places {
            extension,
            workspace: None,
            separator: std::path::MAIN_SEPARATOR_STR,
        }),
        environment: Environment::Kept,
    };
    let resolve = |text: &str| filler.fill(text);
    let args = strings(entry, "args").unwrap_or_default();
    let (path, script) = if command == "node" || command == "node.exe" {
        match args.first() {
            Some(bundle) => (PathBuf::from(resolve(bundle)), true),
            None => return,
        }
    } else {
        (PathBuf::from(resolve(command)), false)
    };
    let inside = match folder {
        Some(folder) => path.starts_with(folder),
        None => path.is_absolute(),
    };
    if !inside {
        return;
    }
    let state = entry_state(&path, script);
    if let Err(problem) = &state {
        report.findings.push(finding(
            Code::EntryPoint,
            format!("{}: {problem}", path.display()),
            "reinstall the release archive built for this machine",
        ));
    }
    report.entry_point = Some(EntryPoint {
        path,
        state: state.unwrap_or_else(|problem| problem),
    });
}

fn entry_state(path: &Path, script: bool) -> Result<String, String> {
    let meta =
        std::fs::metadata(path).map_err(|_| "missing: Qwen cannot start the server".to_owned())?;
    if !meta.is_file() {
        return Err("not a file".to_owned());
    }
    if script {
        return match crate::qwen::program_named("node") {
            Some(node) => Ok(format!("a bundle for node ({})", node.display())),
            None => {
                Err("a bundle for node, but node is not on PATH: Qwen cannot start it".to_owned())
            }
        };
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o111 == 0 {
            return Err("not executable".to_owned());
        }
    }
    let mut head = vec![0; 4096];
    let (mut file, _) = crate::files::open_regular(path, None, u64::MAX)
        .map_err(|e| format!("cannot be read: {}", crate::text::outside::innermost(&e)))?;
    let read =
        std::io::Read::read(&mut file, &mut head).map_err(|e| format!("cannot be read: {e}"))?;
    head.truncate(read);
    if let Some(line) = head.strip_prefix(b"#!") {
        let line = line.split(|b| *b == b'\n').next().unwrap_or_default();
        return Ok(format!(
            "a script for {}",
            String::from_utf8_lossy(line).trim()
        ));
    }
    let (platform, arch) = crate::qwen::host();
    match crate::release::Binary::read(&head) {
        Some(binary) if binary.runs_on(platform, arch) => {
            Ok(format!("an executable for {}", binary.describe()))
        }
        Some(binary) => Err(format!(
            "built for {}, and this machine is {platform} {arch}",
            binary.describe()
        )),
        None => Err("not an executable this machine runs (no ELF, Mach-O or PE header)".to_owned()),
    }
}

/// OAuth tokens of a remote server: encrypted storage, the plain file's
/// mode and whether it holds this server's tokens.
fn tokens(machine: &Machine, name: &str, report: &mut ExtensionReport) {
    if machine.encrypted_tokens.is_none() {
        report.findings.push(finding(
            Code::TokensPlainText,
            format!(
                "QWEN_CODE_FORCE_ENCRYPTED_FILE_STORAGE is not `true`: Qwen keeps this server's OAuth tokens in plain text in {}",
                machine.qwen_home.join("mcp-oauth-tokens.json").display()
            ),
            "export QWEN_CODE_FORCE_ENCRYPTED_FILE_STORAGE=true where Qwen starts (a managed launcher does: `ecp managed`)",
        ));
    }
    let plain = machine.qwen_home.join("mcp-oauth-tokens.json");
    if let Some(mode) = super::file_mode(&plain)
        && u32::from_str_radix(&mode, 8).is_ok_and(|m| m & 0o077 != 0)
    {
        report.findings.push(finding(
            Code::TokenFileMode,
            format!(
                "{} is mode {mode}: other users can read OAuth tokens",
                plain.display()
            ),
            format!("chmod 600 {}", plain.display()),
        ));
    }
    let stored = crate::qwen::machine::read_jsonc(&plain)
        .ok()
        .flatten()
        .and_then(|v| v.as_array().cloned())
        .is_some_and(|tokens| {
            tokens
                .iter()
                .any(|t| t.get("serverName").and_then(Value::as_str) == Some(name))
        });
    if stored {
        report.findings.push(finding(
            Code::TokensStoredPlain,
            format!("{} holds OAuth tokens of `{name}` in plain text", plain.display()),
            "remove them (`qwen mcp` logout, or delete the file) and sign in again with encrypted storage",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::glob;

    #[test]
    fn server_patterns_match_whole_names_in_linear_time() {
        assert!(glob("acme-*", "acme-context"));
        assert!(glob("a?me*", "acme"));
        assert!(!glob("acme", "acme-context"));
        assert!(!glob("*-x", "acme-context"));
        // A pathological pattern against a long name returns at once.
        let name = "a".repeat(100_000);
        let pattern = format!("{}b", "*a".repeat(500));
        assert!(!glob(&pattern, &name));
        assert!(glob("*", &name));
    }
}
