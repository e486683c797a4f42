//! Qwen Code's settings files as it reads them: the four layers in
//! precedence order, JSON with comments, the version 1 layout migrated,
//! and the layers merged (servers replaced whole, lists joined).

use super::*;

/// The four settings files, in precedence order.
pub(super) fn settings_files(scope: &Scope, qwen_home: &Path) -> Vec<SettingsFile> {
    let system = scope
        .var("QWEN_CODE_SYSTEM_SETTINGS_PATH")
        .map(PathBuf::from)
        .unwrap_or_else(default_system_settings);
    let defaults = scope
        .var("QWEN_CODE_SYSTEM_DEFAULTS_PATH")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            system
                .parent()
                .unwrap_or(Path::new("/"))
                .join("system-defaults.json")
        });
    [
        (Layer::SystemDefaults, defaults),
        (Layer::User, qwen_home.join("settings.json")),
        (
            Layer::Workspace,
            scope.workspace.join(".qwen").join("settings.json"),
        ),
        (Layer::System, system),
    ]
    .into_iter()
    .map(|(layer, path)| read_settings(layer, path))
    .collect()
}

pub(super) fn default_system_settings() -> PathBuf {
    if cfg!(target_os = "macos") {
        PathBuf::from("/Library/Application Support/QwenCode/settings.json")
    } else if cfg!(windows) {
        PathBuf::from(r"C:\ProgramData\qwen-code\settings.json")
    } else {
        PathBuf::from("/etc/qwen-code/settings.json")
    }
}

pub(super) fn read_settings(layer: Layer, path: PathBuf) -> SettingsFile {
    let (state, settings) = match read_jsonc(&path) {
        Ok(None) => (FileState::Absent, Map::new()),
        Ok(Some(Value::Object(map))) => (FileState::Read, migrate_v1(map)),
        Ok(Some(_)) => (
            FileState::Invalid("is JSON but not an object".to_owned()),
            Map::new(),
        ),
        Err(problem) => (problem.into_state(), Map::new()),
    };
    SettingsFile {
        layer,
        path,
        state,
        settings,
    }
}

/// A JSON-with-comments file (`//`, `/* */`, a leading BOM), as Qwen reads
/// its settings, with `JSON.parse`'s rules (`crate::json`): `Ok(None)`
/// when absent.
pub fn read_jsonc(path: &Path) -> Result<Option<Value>, Unread> {
    let Some(text) = read_whole(path)? else {
        return Ok(None);
    };
    parse_jsonc(&text).map(Some)
}

/// The text of a JSON-with-comments file as Qwen reads it (see
/// [`read_jsonc`]).
pub fn parse_jsonc(text: &str) -> Result<Value, Unread> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    match crate::json::parse_value(&strip_comments(text)) {
        Ok(value) => Ok(value),
        Err(error) if error.is_limit() => Err(Unread::Unjudged(format!(
            "is nested deeper than the {} levels doctor reads; Qwen reads it",
            crate::json::MAX_DEPTH
        ))),
        Err(error) => Err(Unread::Invalid(format!("is not valid JSON: {error}"))),
    }
}

/// `text` with JSON comments blanked out (strings left as they are).
pub(super) fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                out.push(c);
                while let Some(c) = chars.next() {
                    out.push(c);
                    match c {
                        '\\' => out.extend(chars.next()),
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut last = '\0';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
                out.push(' ');
            }
            _ => out.push(c),
        }
    }
    out
}

/// A settings file without `$version` is a V1 file, which Qwen migrates:
/// the keys this reads move to their V2 places.
pub(super) fn migrate_v1(mut map: Map<String, Value>) -> Map<String, Value> {
    if map.contains_key("$version") {
        return map;
    }
    for (old, section, new) in [
        ("allowMCPServers", "mcp", "allowed"),
        ("excludeMCPServers", "mcp", "excluded"),
        ("excludeTools", "tools", "exclude"),
        ("folderTrust", "security", "folderTrust"),
    ] {
        if let Some(value) = map.remove(old) {
            let value = if old == "folderTrust" {
                serde_json::json!({ "enabled": value })
            } else {
                value
            };
            let section = map
                .entry(section)
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(section) = section {
                section.entry(new).or_insert(value);
            }
        }
    }
    map
}

/// Qwen's merge: objects merge, `mcpServers` and `env` replace entries by
/// name, the lists this reads join, other values replace.
pub(super) fn merge(into: &mut Map<String, Value>, from: &Map<String, Value>) {
    merge_at(into, from, "");
}

pub(super) fn merge_at(into: &mut Map<String, Value>, from: &Map<String, Value>, path: &str) {
    const JOINED: &[&str] = &[
        "/mcp/allowed",
        "/mcp/excluded",
        "/permissions/deny",
        "/tools/exclude",
        "/advanced/excludedEnvVars",
    ];
    const BY_NAME: &[&str] = &["/mcpServers", "/env"];
    for (key, value) in from {
        let here = format!("{path}/{key}");
        match (into.get_mut(key), value) {
            (Some(Value::Array(old)), Value::Array(new)) if JOINED.contains(&here.as_str()) => {
                for item in new {
                    if !old.contains(item) {
                        old.push(item.clone());
                    }
                }
            }
            (Some(Value::Object(old)), Value::Object(new)) if BY_NAME.contains(&here.as_str()) => {
                for (name, entry) in new {
                    old.insert(name.clone(), entry.clone());
                }
            }
            (Some(Value::Object(old)), Value::Object(new)) => merge_at(old, new, &here),
            _ => {
                into.insert(key.clone(), value.clone());
            }
        }
    }
}
