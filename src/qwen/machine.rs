//! Qwen Code's configuration on this machine, read as Qwen Code 0.24.4
//! reads it for one user and one workspace (`docs/qwen-settings-facts.md`
//! holds the measured rules and where each comes from): the settings
//! layers, folder trust, the `.env` files, the project `.mcp.json`, and the
//! installed extensions with their activation here.
//!
//! Nothing here writes, runs Qwen or follows a path outside what Qwen
//! itself reads; every file is read through the bounded reader. Values of
//! variables are kept only to tell set from empty and are never shown.

mod installed;
mod settings;

use installed::extensions;
use settings::{merge, settings_files};
pub use settings::{parse_jsonc, read_jsonc};

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::env_file;

/// The largest settings, `.env`, `.mcp.json` or state file read. Qwen
/// reads each whole, whatever its size; one larger than this is not
/// judged, and doctor says so (`cannot-judge`), never passes it over.
pub const MAX_CONFIG_BYTES: u64 = 16 * 1024 * 1024;

/// Where a settings layer or a server definition comes from, lowest
/// precedence first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layer {
    SystemDefaults,
    User,
    /// The project's `.mcp.json` (between user and workspace settings).
    ProjectMcpJson,
    Workspace,
    System,
}

impl Layer {
    pub fn describe(self) -> &'static str {
        match self {
            Layer::SystemDefaults => "system defaults",
            Layer::User => "user settings",
            Layer::ProjectMcpJson => "the project's .mcp.json",
            Layer::Workspace => "workspace settings",
            Layer::System => "system settings",
        }
    }
}

/// One settings file as read.
#[derive(Debug, Clone)]
pub struct SettingsFile {
    pub layer: Layer,
    pub path: PathBuf,
    pub state: FileState,
    /// The settings (V1 keys this reads moved to their V2 places), `{}`
    /// when absent or unreadable.
    pub settings: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "state", content = "problem")]
pub enum FileState {
    Absent,
    Read,
    /// Not read for this workspace (untrusted, or the home folder).
    Ignored(String),
    /// Qwen would refuse it: for system and user files Qwen stops; a
    /// workspace file Qwen replaces with `{}`.
    Invalid(String),
    /// Qwen reads it, but doctor cannot (larger than it reads, or nested
    /// deeper): nothing it says about this machine can be trusted.
    Unjudged(String),
}

/// Why a file Qwen reads gave doctor no value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unread {
    /// Qwen refuses it too (not JSON, not a file).
    Invalid(String),
    /// Qwen reads it; doctor cannot.
    Unjudged(String),
}

impl Unread {
    fn into_state(self) -> FileState {
        match self {
            Unread::Invalid(why) => FileState::Invalid(why),
            Unread::Unjudged(why) => FileState::Unjudged(why),
        }
    }
}

/// The text of a file Qwen reads whole: `Ok(None)` when absent.
fn read_whole(path: &Path) -> Result<Option<String>, Unread> {
    match crate::files::read_text(path, None, MAX_CONFIG_BYTES) {
        Ok(text) => Ok(Some(text)),
        Err(crate::files::FileProblem::Io { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            Ok(None)
        }
        Err(problem @ crate::files::FileProblem::TooLarge { .. }) => {
            Err(Unread::Unjudged(format!(
                "{}; Qwen reads it whole",
                crate::text::outside::innermost(&problem)
            )))
        }
        Err(problem) => Err(Unread::Invalid(crate::text::outside::innermost(&problem))),
    }
}

/// Where a variable's value comes from when Qwen starts a server.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "from", content = "file")]
pub enum VariableSource {
    /// The environment Qwen is started with.
    Process,
    /// A project `.env` (a repository file) Qwen loads in a trusted workspace.
    ProjectEnv(PathBuf),
    /// A home `.env` (`~/.qwen/.env`, `~/.env`).
    HomeEnv(PathBuf),
    /// The `env` object of a settings file (the last fallback); a
    /// workspace settings file is a repository file.
    SettingsEnv(PathBuf),
    /// Nowhere: Qwen leaves `${NAME}` as it is.
    Unset,
}

/// A `.env` file Qwen loads.
#[derive(Debug, Clone)]
pub struct EnvFile {
    pub path: PathBuf,
    /// A project file (a repository's), not a home one.
    pub project: bool,
    pub vars: Vec<(String, String)>,
}

impl EnvFile {
    fn source(&self) -> VariableSource {
        if self.project {
            VariableSource::ProjectEnv(self.path.clone())
        } else {
            VariableSource::HomeEnv(self.path.clone())
        }
    }
}

/// An installed extension as Qwen finds it.
#[derive(Debug, Clone)]
pub struct InstalledExtension {
    /// The install folder's name (the manifest's `name` at install time).
    pub dir_name: String,
    /// Where `${extensionPath}` points: the install folder, or a linked
    /// install's source.
    pub path: PathBuf,
    pub manifest_path: PathBuf,
    /// The manifest text, when it could be read (bounded, a regular file,
    /// not through a link out of the install).
    pub manifest: Option<String>,
    /// `.qwen-extension-install.json`, when present and JSON.
    pub install: Option<Map<String, Value>>,
    /// Active in this workspace (Qwen's extension store), and why.
    pub active: bool,
    pub activation: String,
}

/// Everything `ecp doctor` reads, for one user and one workspace.
#[derive(Debug, Clone)]
pub struct Machine {
    pub home: PathBuf,
    /// `$QWEN_HOME`, else `~/.qwen`.
    pub qwen_home: PathBuf,
    pub workspace: PathBuf,
    pub settings: Vec<SettingsFile>,
    /// `security.folderTrust.enabled` from the system and user layers.
    pub folder_trust: bool,
    /// Whether Qwen trusts the workspace, and the rule that decided.
    pub trusted: bool,
    pub trust_rule: String,
    /// Project `.env` files Qwen loads here (at most one), then home ones.
    pub env_files: Vec<EnvFile>,
    /// The project `.mcp.json` servers (read even when untrusted).
    pub mcp_json: Option<(PathBuf, Map<String, Value>)>,
    /// Files Qwen reads here that doctor could not (`.env` files, the
    /// `.mcp.json`), each with why.
    pub unjudged: Vec<(PathBuf, String)>,
    pub extensions: Vec<InstalledExtension>,
    /// The process environment's non-empty names (values never kept).
    pub process_env: Vec<String>,
    /// Settings merged as Qwen merges them (workspace only when trusted).
    pub merged: Map<String, Value>,
    /// Where `QWEN_CODE_FORCE_ENCRYPTED_FILE_STORAGE=true` comes from, if
    /// anywhere (Qwen compares with `true` exactly).
    pub encrypted_tokens: Option<VariableSource>,
    /// `QWEN_CODE_SAFE_MODE` or `QWEN_CODE_SIMPLE` set on: Qwen then loads
    /// no extension (safe mode) or no settings at all (bare).
    pub quiet_modes: Vec<String>,
}

/// What to read.
#[derive(Debug, Clone)]
pub struct Scope {
    pub home: PathBuf,
    pub workspace: PathBuf,
    /// The environment Qwen would be started with.
    pub env: Vec<(String, String)>,
}

impl Scope {
    /// This process's home, the given workspace and this environment.
    pub fn current(workspace: PathBuf) -> Option<Scope> {
        let home = std::env::var_os(if cfg!(windows) { "USERPROFILE" } else { "HOME" })?;
        Some(Scope {
            home: PathBuf::from(home),
            workspace,
            env: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
        })
    }

    fn var(&self, name: &str) -> Option<&str> {
        self.env
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    }
}

impl Machine {
    pub fn read(scope: &Scope) -> Machine {
        let qwen_home = qwen_home(scope);
        let settings = settings_files(scope, &qwen_home);
        let layered = |layers: &[Layer]| {
            let mut merged = Map::new();
            for file in settings.iter().filter(|f| layers.contains(&f.layer)) {
                merge(&mut merged, &file.settings);
            }
            merged
        };
        let operator = layered(&[Layer::SystemDefaults, Layer::User, Layer::System]);
        let folder_trust =
            pointer_bool(&operator, "/security/folderTrust/enabled").unwrap_or(false);
        let (trusted, trust_rule) = if folder_trust {
            trust(scope, &qwen_home)
        } else {
            (
                true,
                "folder trust is off (Qwen's default): every folder is trusted".to_owned(),
            )
        };
        let at_home = same_path(&scope.workspace, &scope.home);
        let settings = workspace_layer_as_counted(settings, at_home, trusted);
        let mut merged = Map::new();
        for layer in [
            Layer::SystemDefaults,
            Layer::User,
            Layer::Workspace,
            Layer::System,
        ] {
            for file in settings.iter().filter(|f| f.layer == layer) {
                merge(&mut merged, &file.settings);
            }
        }
        let mut unjudged = Vec::new();
        let env_files = env_files(scope, &qwen_home, trusted && !at_home, &mut unjudged);
        let mcp_json = read_mcp_json(&scope.workspace, &mut unjudged);
        let extensions = extensions(scope, &qwen_home);
        let mut machine = Machine {
            home: scope.home.clone(),
            qwen_home,
            workspace: scope.workspace.clone(),
            settings,
            folder_trust,
            trusted,
            trust_rule,
            env_files,
            mcp_json,
            unjudged,
            extensions,
            process_env: scope
                .env
                .iter()
                .filter(|(_, v)| !v.is_empty())
                .map(|(k, _)| k.clone())
                .collect(),
            merged,
            encrypted_tokens: None,
            quiet_modes: quiet_modes(scope),
        };
        machine.encrypted_tokens = match scope.var(FORCE_ENCRYPTED) {
            Some(value) => (value == "true").then_some(VariableSource::Process),
            None => machine.found_in_files(FORCE_ENCRYPTED, |v| v == "true"),
        };
        machine
    }

    /// The servers switched off per extension in Qwen's
    /// `extensions/extension-preferences.json` (`disabledMcpServers`).
    pub fn disabled_servers(&self) -> Vec<String> {
        let path = self
            .qwen_home
            .join("extensions")
            .join("extension-preferences.json");
        let Ok(Some(value)) = read_jsonc(&path) else {
            return Vec::new();
        };
        value
            .get("disabledMcpServers")
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(|m| m.values())
            .filter_map(Value::as_array)
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect()
    }

    /// `tools.executionSandbox` set: Qwen loads no extension server.
    pub fn execution_sandbox(&self) -> bool {
        self.merged
            .get_pointer("/tools/executionSandbox")
            .is_some_and(|v| !matches!(v, Value::Null | Value::Bool(false)))
    }

    /// Where `name` gets its value when Qwen resolves `${name}`: the
    /// process environment, then the `.env` files in Qwen's order (a file
    /// sets a name only when it is still unset or empty).
    pub fn variable(&self, name: &str) -> VariableSource {
        if self.process_env.iter().any(|k| k == name) {
            return VariableSource::Process;
        }
        self.found_in_files(name, |v| !v.is_empty())
            .unwrap_or(VariableSource::Unset)
    }

    /// The first `.env` file, in Qwen's order, then the settings `env`
    /// (system first), whose non-empty value for `name` passes `accept`.
    /// `advanced.excludedEnvVars` keeps a name out of every `.env` file
    /// whose folder is not named `.qwen`.
    fn found_in_files(&self, name: &str, accept: impl Fn(&str) -> bool) -> Option<VariableSource> {
        let excluded = self.excluded_env_vars();
        for file in &self.env_files {
            let in_dot_qwen = file
                .path
                .parent()
                .and_then(Path::file_name)
                .is_some_and(|n| n == ".qwen");
            if !in_dot_qwen && excluded.iter().any(|e| e == name) {
                continue;
            }
            if let Some((_, value)) = file.vars.iter().find(|(k, v)| k == name && !v.is_empty()) {
                return accept(value).then(|| file.source());
            }
        }
        for layer in [
            Layer::System,
            Layer::Workspace,
            Layer::User,
            Layer::SystemDefaults,
        ] {
            let Some(file) = self.settings_file(layer) else {
                continue;
            };
            if let Some(value) = file
                .settings
                .get("env")
                .and_then(|e| e.get(name))
                .and_then(Value::as_str)
                .filter(|v| !v.is_empty())
            {
                return accept(value).then(|| VariableSource::SettingsEnv(file.path.clone()));
            }
        }
        None
    }

    /// Whether a `VariableSource::SettingsEnv` file is the workspace's.
    pub fn is_workspace_settings(&self, path: &Path) -> bool {
        self.settings_file(Layer::Workspace)
            .is_some_and(|f| f.path == path)
    }

    /// `advanced.excludedEnvVars` (default `DEBUG`, `DEBUG_MODE`).
    fn excluded_env_vars(&self) -> Vec<String> {
        self.merged
            .get_pointer("/advanced/excludedEnvVars")
            .and_then(string_list)
            .unwrap_or_else(|| vec!["DEBUG".to_owned(), "DEBUG_MODE".to_owned()])
    }

    /// A list setting at `pointer` of the merged settings (strings only).
    pub fn strings(&self, pointer: &str) -> Vec<String> {
        self.merged
            .get_pointer(pointer)
            .and_then(string_list)
            .unwrap_or_default()
    }

    /// The settings file of `layer`.
    pub fn settings_file(&self, layer: Layer) -> Option<&SettingsFile> {
        self.settings.iter().find(|f| f.layer == layer)
    }
}

const FORCE_ENCRYPTED: &str = "QWEN_CODE_FORCE_ENCRYPTED_FILE_STORAGE";

/// `QWEN_CODE_SAFE_MODE` and `QWEN_CODE_SIMPLE` when on (`1`, `true`,
/// `yes`, `on`).
fn quiet_modes(scope: &Scope) -> Vec<String> {
    ["QWEN_CODE_SAFE_MODE", "QWEN_CODE_SIMPLE"]
        .into_iter()
        .filter(|n| {
            scope.var(n).is_some_and(|v| {
                matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on")
            })
        })
        .map(str::to_owned)
        .collect()
}

/// The workspace settings as Qwen counts them: not read in the home
/// folder, dropped when untrusted, never `tools.executionSandbox`.
fn workspace_layer_as_counted(
    settings: Vec<SettingsFile>,
    at_home: bool,
    trusted: bool,
) -> Vec<SettingsFile> {
    settings
        .into_iter()
        .map(|mut file| {
            if file.layer == Layer::Workspace && file.state == FileState::Read {
                let why = if at_home {
                    Some("the workspace is the home folder")
                } else if !trusted {
                    Some("the workspace is not trusted")
                } else {
                    None
                };
                if let Some(why) = why {
                    file.state = FileState::Ignored(why.to_owned());
                    file.settings = Map::new();
                }
                if let Some(Value::Object(tools)) = file.settings.get_mut("tools") {
                    tools.remove("executionSandbox");
                }
            }
            file
        })
        .collect()
}

trait Pointer {
    fn get_pointer(&self, pointer: &str) -> Option<&Value>;
}

impl Pointer for Map<String, Value> {
    fn get_pointer(&self, pointer: &str) -> Option<&Value> {
        let mut parts = pointer.trim_start_matches('/').split('/');
        let first = self.get(parts.next()?)?;
        parts.try_fold(first, |node, key| node.get(key))
    }
}

fn pointer_bool(map: &Map<String, Value>, pointer: &str) -> Option<bool> {
    map.get_pointer(pointer).and_then(Value::as_bool)
}

/// One of Qwen's bootstrap variables (`QWEN_HOME`, the trusted-folders
/// path): the environment's, else the first a home `.env` names
/// (`<qwen home>/.env`, then `~/.env`).
fn bootstrap(scope: &Scope, qwen_home: &Path, name: &str) -> Option<String> {
    scope.var(name).map(str::to_owned).or_else(|| {
        [qwen_home.join(".env"), scope.home.join(".env")]
            .iter()
            .find_map(|file| {
                let text = read_whole(file).ok()??;
                env_file::parse(&text)
                    .into_iter()
                    .find(|(k, v)| k == name && !v.is_empty())
                    .map(|(_, v)| v)
            })
    })
}

/// `$QWEN_HOME` (a leading `~` expanded, a relative one taken from the
/// workspace), else the one a home `.env` names, else `~/.qwen`.
fn qwen_home(scope: &Scope) -> PathBuf {
    let default = scope.home.join(".qwen");
    let named = bootstrap(scope, &default, "QWEN_HOME");
    match named {
        Some(path) => {
            let path = match path.strip_prefix('~') {
                Some(rest) => scope.home.join(rest.trim_start_matches(['/', '\\'])),
                None => PathBuf::from(path),
            };
            if path.is_absolute() {
                path
            } else {
                scope.workspace.join(path)
            }
        }
        None => default,
    }
}

fn same_path(a: &Path, b: &Path) -> bool {
    a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(a), Ok(b)) if a == b)
}

/// Qwen's trusted-folders rules for the workspace: the deepest matching
/// rule wins, `DO_NOT_TRUST` on a tie; no rule is untrusted.
fn trust(scope: &Scope, qwen_home: &Path) -> (bool, String) {
    let file = bootstrap(scope, qwen_home, "QWEN_CODE_TRUSTED_FOLDERS_PATH")
        .map(PathBuf::from)
        .unwrap_or_else(|| qwen_home.join("trustedFolders.json"));
    let rules = match read_jsonc(&file) {
        Ok(Some(Value::Object(rules))) => rules,
        Ok(None) => Map::new(),
        Ok(Some(_)) | Err(_) => {
            return (
                false,
                format!("{} cannot be read: Qwen stops on it", file.display()),
            );
        }
    };
    let places: Vec<PathBuf> = [
        Some(scope.workspace.clone()),
        scope.workspace.canonicalize().ok(),
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut best: Option<(usize, bool, String)> = None;
    for (path, rule) in &rules {
        let rule = rule.as_str().unwrap_or_default();
        if !matches!(rule, "TRUST_FOLDER" | "TRUST_PARENT" | "DO_NOT_TRUST") {
            return (
                false,
                format!(
                    "{} gives `{path}` the rule `{rule}`, which is none of Qwen's: Qwen stops on it",
                    file.display()
                ),
            );
        }
        let (folder, trusts) = match rule {
            "TRUST_FOLDER" => (PathBuf::from(path), true),
            "TRUST_PARENT" => (
                Path::new(path)
                    .parent()
                    .unwrap_or(Path::new("/"))
                    .to_owned(),
                true,
            ),
            "DO_NOT_TRUST" => (PathBuf::from(path), false),
            _ => continue,
        };
        if !places.iter().any(|p| p.starts_with(&folder)) {
            continue;
        }
        let depth = folder.components().count();
        let wins = match &best {
            None => true,
            Some((d, t, _)) => depth > *d || (depth == *d && *t && !trusts),
        };
        if wins {
            best = Some((
                depth,
                trusts,
                format!("{path}: {rule} in {}", file.display()),
            ));
        }
    }
    match best {
        Some((_, trusts, why)) => (trusts, why),
        None => (
            false,
            format!(
                "folder trust is on and no rule of {} covers the workspace",
                file.display()
            ),
        ),
    }
}

/// The `.env` files Qwen loads here, in its order: the first project file
/// found walking up from the workspace (`.qwen/.env`, then `.env`, in each
/// folder; not the home folder's), when the workspace is trusted; then the
/// home files. Each with whether it is a project file, and its variables.
fn env_files(
    scope: &Scope,
    qwen_home: &Path,
    project: bool,
    unjudged: &mut Vec<(PathBuf, String)>,
) -> Vec<EnvFile> {
    let mut files = Vec::new();
    if project {
        let start = scope
            .workspace
            .canonicalize()
            .unwrap_or_else(|_| scope.workspace.clone());
        let home = scope
            .home
            .canonicalize()
            .unwrap_or_else(|_| scope.home.clone());
        'walk: for dir in start.ancestors() {
            if dir == home {
                break;
            }
            for candidate in [dir.join(".qwen").join(".env"), dir.join(".env")] {
                if candidate.is_file() {
                    files.push((candidate, true));
                    break 'walk;
                }
            }
        }
    }
    files.push((qwen_home.join(".env"), false));
    let default_home = scope.home.join(".qwen");
    if qwen_home != default_home {
        files.push((default_home.join(".env"), false));
    }
    files.push((scope.home.join(".env"), false));
    files
        .into_iter()
        .filter_map(|(path, project)| {
            let text = match read_whole(&path) {
                Ok(text) => text?,
                Err(Unread::Unjudged(why)) => {
                    unjudged.push((path, why));
                    return None;
                }
                Err(Unread::Invalid(_)) => return None,
            };
            Some(EnvFile {
                path,
                project,
                vars: env_file::parse(&text),
            })
        })
        .collect()
}

/// The project's `.mcp.json` servers (`{"mcpServers": {...}}`).
fn read_mcp_json(
    workspace: &Path,
    unjudged: &mut Vec<(PathBuf, String)>,
) -> Option<(PathBuf, Map<String, Value>)> {
    let path = workspace.join(".mcp.json");
    let value = match read_jsonc(&path) {
        Ok(value) => value?,
        Err(Unread::Unjudged(why)) => {
            unjudged.push((path, why));
            return None;
        }
        Err(Unread::Invalid(_)) => return None,
    };
    let servers = value.get("mcpServers")?.as_object()?.clone();
    Some((path, servers))
}

/// The strings of a JSON list (other items left out); `None` when it is
/// not a list.
pub fn string_list(value: &Value) -> Option<Vec<String>> {
    value.as_array().map(|items| {
        items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::installed::github_repository;
    use super::settings::strip_comments;
    use super::*;

    #[test]
    fn comments_are_blanked_outside_strings() {
        let text = "{\n // a\n \"a\": \"x//y\", /* b */ \"c\": \"/*\"\n}";
        let value: Value = serde_json::from_str(&strip_comments(text)).unwrap();
        assert_eq!(value, serde_json::json!({"a": "x//y", "c": "/*"}));
    }

    #[test]
    fn merge_replaces_servers_whole_and_joins_lists() {
        let mut merged = Map::new();
        let low = serde_json::json!({"mcpServers": {"a": {"command": "x", "trust": true}}, "mcp": {"excluded": ["p"]}});
        let high =
            serde_json::json!({"mcpServers": {"a": {"command": "y"}}, "mcp": {"excluded": ["q"]}});
        merge(&mut merged, low.as_object().unwrap());
        merge(&mut merged, high.as_object().unwrap());
        assert_eq!(
            Value::Object(merged),
            serde_json::json!({"mcpServers": {"a": {"command": "y"}}, "mcp": {"excluded": ["p", "q"]}})
        );
    }

    #[test]
    fn github_sources_become_the_repository_url() {
        for source in [
            "acme/acme-context",
            "https://github.com/acme/acme-context",
            "https://github.com/acme/acme-context.git",
            "git@github.com:acme/acme-context.git",
        ] {
            assert_eq!(
                github_repository(source).as_deref(),
                Some("https://github.com/acme/acme-context"),
                "{source}"
            );
        }
    }
}
