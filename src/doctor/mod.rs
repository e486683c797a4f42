//! `ecp doctor`: what Qwen Code will really run for an External Context
//! extension, for this user and one workspace. It reads the machine as
//! Qwen 0.24.4 does (`crate::qwen::machine`) and judges each extension's
//! server as it ends up: which definition wins a name, the tool lists,
//! `trust`, the timeout, where each `${VAR}` comes from, OAuth token
//! storage, the entry point, and the install record. A finding is
//! something that makes Qwen run other than the profile intends, or a
//! credential or endpoint a repository controls. Values of variables are
//! never read out, only where they come from.

pub mod codes;
pub mod hooks;
pub mod probe;
mod render;

pub use render::{human, json};

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::extension::manifest::{Lenient as Manifest, offers_the_tool};
/// The tool the profile exposes.
pub(crate) use crate::profile::TOOL_NAME as TOOL;
use crate::qwen::machine::{InstalledExtension, Layer, Machine, VariableSource};
pub use codes::Code;

/// The profile's provider budget inside the manifest's `timeout` (profile
/// v1: 5000 ms inside 8000 ms).
pub const PROVIDER_BUDGET_MS: u64 = 5000;

/// One thing that makes Qwen run other than the profile intends.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub id: Code,
    pub message: String,
    pub fix: String,
}

/// Which definition of the server Qwen uses.
#[derive(Debug, Clone, Serialize)]
pub struct Server {
    pub name: String,
    /// `the extension`, a settings layer, `.mcp.json`, another extension.
    pub defined_by: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    pub transport: &'static str,
    /// The command and arguments, or the URL, before variables are filled.
    pub runs: String,
    pub include_tools: Option<Vec<String>>,
    pub exclude_tools: Vec<String>,
    pub trust: bool,
    pub timeout_ms: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Variable {
    pub name: String,
    #[serde(flatten)]
    pub source: VariableSource,
}

#[derive(Debug, Clone, Serialize)]
pub struct EntryPoint {
    pub path: PathBuf,
    pub state: String,
}

/// One extension as Qwen will run it here.
#[derive(Debug, Clone, Serialize)]
pub struct ExtensionReport {
    pub name: String,
    pub version: Option<String>,
    pub folder: PathBuf,
    pub install_type: Option<String>,
    pub install_source: Option<String>,
    pub release_tag: Option<String>,
    pub active: bool,
    pub activation: String,
    pub server: Option<Server>,
    pub variables: Vec<Variable>,
    pub entry_point: Option<EntryPoint>,
    pub findings: Vec<Finding>,
    pub verdict: String,
}

/// Where OAuth tokens go for remote servers.
#[derive(Debug, Clone, Serialize)]
pub struct TokenStorage {
    pub encrypted: bool,
    /// Where `QWEN_CODE_FORCE_ENCRYPTED_FILE_STORAGE=true` comes from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub set_by: Option<VariableSource>,
    pub file: PathBuf,
    /// The plain-text file's mode, when it exists (Unix).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_mode: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Settings {
    pub layer: Layer,
    pub path: PathBuf,
    #[serde(flatten)]
    pub state: crate::qwen::machine::FileState,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub workspace: PathBuf,
    pub qwen_home: PathBuf,
    pub folder_trust: bool,
    pub trusted: bool,
    pub trust_rule: String,
    pub settings: Vec<Settings>,
    pub env_files: Vec<PathBuf>,
    pub token_storage: TokenStorage,
    pub extensions: Vec<ExtensionReport>,
    /// The Auto Recall hooks Qwen runs here ([`hooks`]).
    pub auto_recall: Vec<hooks::AutoRecall>,
    /// Findings about the machine rather than one extension.
    pub findings: Vec<Finding>,
}

impl Report {
    /// Whether anything was found.
    pub fn has_findings(&self) -> bool {
        !self.findings.is_empty() || self.extensions.iter().any(|e| !e.findings.is_empty())
    }
}

fn manifest_of(extension: &InstalledExtension) -> Option<Manifest> {
    Manifest::read(extension.manifest.as_deref()?, &extension.dir_name)
}

/// Judges the extensions of `machine`: every External Context one, or the
/// one installed as `name`; and the servers the settings define that offer
/// `context_search` (a managed deployment's).
pub fn examine(machine: &Machine, name: Option<&str>) -> Report {
    let mut extensions = examine_servers(machine, name);
    let tokens = token_storage(machine);
    let mut findings = machine_findings(machine, name, &extensions, &tokens);
    let (auto_recall, hook_findings) = hooks::examine(machine, &extensions);
    findings.extend(hook_findings);
    // A machine finding that stops Qwen, or every server, is every
    // extension's verdict too.
    let stopping: Vec<&str> = findings
        .iter()
        .filter(|f| {
            f.id == Code::EncryptedTokenFileMissing || f.message.ends_with("Qwen stops at start")
        })
        .map(|f| f.id.id())
        .collect();
    if !stopping.is_empty() {
        for extension in &mut extensions {
            extension.verdict = format!(
                "{}: Qwen starts no MCP server on this machine ({})",
                extension.name,
                stopping.join(", ")
            );
        }
    }
    if findings.iter().any(|f| f.id == Code::CannotJudge) {
        for extension in &mut extensions {
            extension.verdict = format!(
                "{}: not judged: a file Qwen reads here could not be read (cannot-judge)",
                extension.name
            );
        }
    }
    Report {
        workspace: machine.workspace.clone(),
        qwen_home: machine.qwen_home.clone(),
        folder_trust: machine.folder_trust,
        trusted: machine.trusted,
        trust_rule: machine.trust_rule.clone(),
        settings: machine
            .settings
            .iter()
            .map(|f| Settings {
                layer: f.layer,
                path: f.path.clone(),
                state: f.state.clone(),
            })
            .collect(),
        env_files: machine.env_files.iter().map(|f| f.path.clone()).collect(),
        token_storage: tokens,
        extensions,
        auto_recall,
        findings,
    }
}

fn examine_servers(machine: &Machine, name: Option<&str>) -> Vec<ExtensionReport> {
    let mut extensions = Vec::new();
    for extension in &machine.extensions {
        let manifest = manifest_of(extension);
        let wanted = match (name, &manifest) {
            (Some(name), Some(m)) => m.name == name || extension.dir_name == name,
            (Some(name), None) => extension.dir_name == name,
            (None, Some(m)) => m.is_external_context(),
            (None, None) => false,
        };
        if wanted {
            extensions.push(examine_one(machine, extension, manifest.as_ref()));
        }
    }
    let covered: Vec<String> = extensions
        .iter()
        .filter_map(|e: &ExtensionReport| e.server.as_ref().map(|s| s.name.clone()))
        .collect();
    if let Some(servers) = machine.merged.get("mcpServers").and_then(Value::as_object) {
        for (server, entry) in servers {
            let named = name.is_none_or(|n| n == server);
            if offers_the_tool(entry) && named && !covered.contains(server) {
                extensions.push(examine_settings_server(machine, server));
            }
        }
    }
    extensions
}

/// Findings about the machine rather than one server.
fn machine_findings(
    machine: &Machine,
    name: Option<&str>,
    extensions: &[ExtensionReport],
    tokens: &TokenStorage,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    if let Some(name) = name
        && extensions.is_empty()
    {
        findings.push(Finding {
            id: Code::NotInstalled,
            message: format!(
                "no extension named `{}` is installed in {}",
                crate::text::outside::value(name),
                machine.qwen_home.join("extensions").display()
            ),
            fix: "install it (`qwen extensions install SOURCE`), or check HOME and QWEN_HOME"
                .to_owned(),
        });
    }
    if tokens.encrypted && !tokens.file.exists() {
        findings.push(Finding {
            id: Code::EncryptedTokenFileMissing,
            message: format!(
                "encrypted token storage is forced and {} does not exist: Qwen 0.24.4 then fails to start every MCP server, stdio ones too (\"Token file does not exist\")",
                tokens.file.display()
            ),
            fix: "start Qwen through an `ecp managed` launcher, which creates the file holding no token".to_owned(),
        });
    }
    if machine.trust_rule.ends_with("Qwen stops on it") {
        findings.push(Finding {
            id: Code::SettingsInvalid,
            message: format!("folder trust: {}; Qwen stops at start", machine.trust_rule),
            fix: "correct the trusted-folders file".to_owned(),
        });
    }
    for file in &machine.settings {
        if let crate::qwen::machine::FileState::Invalid(problem) = &file.state {
            let stops = file.layer != Layer::Workspace;
            findings.push(Finding {
                id: Code::SettingsInvalid,
                message: format!(
                    "{} ({}) {problem}: {}",
                    file.layer.describe(),
                    file.path.display(),
                    if stops {
                        "Qwen stops at start"
                    } else {
                        "Qwen moves it to settings.json.corrupted and starts with none"
                    }
                ),
                fix: "correct the file (JSON with comments)".to_owned(),
            });
        }
    }
    let unjudged = machine.settings.iter().filter_map(|f| match &f.state {
        crate::qwen::machine::FileState::Unjudged(why) => Some((&f.path, why)),
        _ => None,
    });
    for (path, why) in unjudged.chain(machine.unjudged.iter().map(|(p, w)| (p, w))) {
        findings.push(Finding {
            id: Code::CannotJudge,
            message: format!(
                "{} {why}: doctor cannot say what Qwen takes from it, so no answer here is proven",
                path.display()
            ),
            fix: "look at the file yourself; a settings, .env or .mcp.json file this large or this deep is no configuration a person wrote".to_owned(),
        });
    }
    findings
}

fn token_storage(machine: &Machine) -> TokenStorage {
    let set_by = machine.encrypted_tokens.clone();
    let encrypted = set_by.is_some();
    let file = machine.qwen_home.join(if encrypted {
        "mcp-oauth-tokens-v2.json"
    } else {
        "mcp-oauth-tokens.json"
    });
    let plain = machine.qwen_home.join("mcp-oauth-tokens.json");
    TokenStorage {
        encrypted,
        set_by,
        file_mode: file_mode(&plain),
        file,
    }
}

#[cfg(unix)]
fn file_mode(path: &Path) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::symlink_metadata(path).ok()?;
    Some(format!("{:04o}", meta.permissions().mode() & 0o7777))
}

#[cfg(not(unix))]
fn file_mode(_: &Path) -> Option<String> {
    None
}

/// The definition of `server` Qwen uses, with who defines it: the
/// settings layers in Qwen's assembly order (user and defaults, then the
/// project `.mcp.json`, then workspace and system; the last wins), else
/// the first active extension in load order that declares it.
fn winner<'a>(machine: &'a Machine, server: &str) -> Option<(String, Option<PathBuf>, Value)> {
    let mut found = None;
    let layer_entry = |layer: Layer| {
        let file = machine.settings_file(layer)?;
        let entry = file.settings.get("mcpServers")?.get(server)?;
        Some((
            layer.describe().to_owned(),
            Some(file.path.clone()),
            entry.clone(),
        ))
    };
    for layer in [Layer::SystemDefaults, Layer::User] {
        found = layer_entry(layer).or(found);
    }
    if let Some((path, servers)) = &machine.mcp_json
        && let Some(entry) = servers.get(server)
    {
        found = Some((
            Layer::ProjectMcpJson.describe().to_owned(),
            Some(path.clone()),
            entry.clone(),
        ));
    }
    for layer in [Layer::Workspace, Layer::System] {
        found = layer_entry(layer).or(found);
    }
    if found.is_some() || machine.execution_sandbox() {
        return found;
    }
    machine
        .extensions
        .iter()
        .filter(|e| e.active)
        .find_map(|e: &'a InstalledExtension| {
            let manifest = manifest_of(e)?;
            let entry = manifest.servers.get(server)?.clone();
            Some((
                format!("extension:{}", e.dir_name),
                Some(e.manifest_path.clone()),
                entry,
            ))
        })
}

fn examine_one(
    machine: &Machine,
    extension: &InstalledExtension,
    manifest: Option<&Manifest>,
) -> ExtensionReport {
    let field = |key: &str| {
        extension
            .install
            .as_ref()
            .and_then(|m| m.get(key)?.as_str().map(str::to_owned))
    };
    let mut report = ExtensionReport {
        name: manifest.map_or_else(|| extension.dir_name.clone(), |m| m.name.clone()),
        version: manifest.and_then(|m| m.version.clone()),
        folder: extension.path.clone(),
        install_type: field("type"),
        install_source: field("source").map(|s| crate::text::outside::mask_secrets(&s)),
        release_tag: field("releaseTag"),
        active: extension.active,
        activation: extension.activation.clone(),
        server: None,
        variables: Vec::new(),
        entry_point: None,
        findings: Vec::new(),
        verdict: String::new(),
    };
    match manifest {
        None => report.findings.push(Finding {
            id: Code::ManifestUnreadable,
            message: format!(
                "{} cannot be read as JSON: Qwen skips the extension",
                extension.manifest_path.display()
            ),
            fix: "reinstall the extension".to_owned(),
        }),
        Some(manifest) => checks::extension(machine, extension, manifest, &mut report),
    }
    verdict(&mut report);
    report
}

fn verdict(report: &mut ExtensionReport) {
    report.verdict = match report.findings.len() {
        0 => format!("{}: Qwen runs it as the profile intends", report.name),
        1 => format!("{}: 1 finding", report.name),
        n => format!("{}: {n} findings", report.name),
    };
}

/// A server the settings define (a managed deployment's) that offers
/// `context_search`, judged like an extension's.
fn examine_settings_server(machine: &Machine, name: &str) -> ExtensionReport {
    let mut report = ExtensionReport {
        name: name.to_owned(),
        version: None,
        folder: PathBuf::new(),
        install_type: None,
        install_source: None,
        release_tag: None,
        active: true,
        activation: "a server of the settings, not an extension".to_owned(),
        server: None,
        variables: Vec::new(),
        entry_point: None,
        findings: Vec::new(),
        verdict: String::new(),
    };
    checks::server(machine, None, name, &mut report);
    if let Some(file) = report.server.as_ref().and_then(|s| s.file.clone()) {
        report.folder = file;
    }
    verdict(&mut report);
    report
}

mod checks;
