//! The extensions installed for this user, as Qwen Code loads them: the
//! folders in byte order, each one's manifest, install record, id, and
//! whether this workspace activates it.

use super::*;

/// The folders of `<QWEN_HOME>/extensions`, in the byte order Qwen loads
/// them in (the first active one wins a server name).
pub(super) fn extensions(scope: &Scope, qwen_home: &Path) -> Vec<InstalledExtension> {
    let root = qwen_home.join("extensions");
    let Ok(entries) = std::fs::read_dir(&root) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    let store = read_jsonc(&qwen_home.join("extension-store").join("state.json"))
        .ok()
        .flatten();
    names
        .into_iter()
        .map(|dir_name| {
            let folder = root.join(&dir_name);
            let install = read_jsonc(&folder.join(crate::qwen::INSTALL_METADATA))
                .ok()
                .flatten()
                .and_then(|v| v.as_object().cloned());
            let linked = install
                .as_ref()
                .filter(|m| m.get("type").and_then(Value::as_str) == Some("link"))
                .and_then(|m| m.get("source")?.as_str().map(PathBuf::from));
            let path = linked.unwrap_or(folder);
            let manifest_path = path.join(crate::extension::MANIFEST);
            let manifest =
                crate::files::read_text(&manifest_path, Some(&path), MAX_CONFIG_BYTES).ok();
            let manifest_name = manifest
                .as_deref()
                .and_then(|t| crate::json::parse_value(t).ok())
                .and_then(|v| v.get("name")?.as_str().map(str::to_owned))
                .unwrap_or_else(|| dir_name.clone());
            let (active, activation) = activation(
                store.as_ref(),
                install.as_ref(),
                &manifest_name,
                &scope.workspace,
            );
            InstalledExtension {
                dir_name,
                path,
                manifest_path,
                manifest,
                install,
                active,
                activation,
            }
        })
        .collect()
}

/// Qwen's extension id: the SHA-256 of the GitHub repository URL (GitHub
/// installs), else the install source, else the name.
pub(super) fn extension_id(install: Option<&Map<String, Value>>, name: &str) -> String {
    let field = |key: &str| install.and_then(|m| m.get(key)?.as_str());
    let source = field("source");
    let github = matches!(field("type"), Some("git" | "github-release"))
        .then(|| source.and_then(github_repository))
        .flatten();
    let mut id = github
        .or(source.map(str::to_owned))
        .unwrap_or_else(|| name.to_owned());
    if let Some(plugin) = field("pluginName") {
        id = format!("{id}:{plugin}");
    }
    crate::digest::sha256(id.as_bytes())
}

/// `https://github.com/OWNER/REPO` for the forms a GitHub source takes.
pub(super) fn github_repository(source: &str) -> Option<String> {
    let rest = source
        .strip_prefix("https://github.com/")
        .or_else(|| source.strip_prefix("git@github.com:"))
        .or_else(|| {
            let parts: Vec<&str> = source.split('/').collect();
            (parts.len() == 2 && !source.contains(':') && !source.starts_with('.'))
                .then_some(source)
        })?;
    let mut parts = rest.trim_end_matches('/').split('/');
    let owner = parts.next()?;
    let repo = parts.next()?.trim_end_matches(".git");
    Some(format!("https://github.com/{owner}/{repo}"))
}

/// Whether the store activates the extension in `workspace`: a workspace
/// override (exact folder), else its path rules (the last match wins),
/// else its default; no policy is enabled.
pub(super) fn activation(
    store: Option<&Value>,
    install: Option<&Map<String, Value>>,
    name: &str,
    workspace: &Path,
) -> (bool, String) {
    let id = extension_id(install, name);
    let Some(policy) = store
        .and_then(|s| s.get("extensions")?.get(&id))
        .filter(|p| p.get("name").and_then(Value::as_str) == Some(name))
    else {
        return (true, "enabled (no activation rule)".to_owned());
    };
    let real = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_owned());
    let override_here = policy
        .get("workspaceOverrides")
        .and_then(|o| o.get(real.to_str()?))
        .and_then(Value::as_str);
    match override_here {
        Some("enabled") => return (true, "enabled for this workspace".to_owned()),
        Some("disabled") => return (false, "disabled for this workspace".to_owned()),
        _ => {}
    }
    let mut decided = None;
    let places: Vec<String> = [workspace.to_owned(), real]
        .iter()
        .filter_map(|p| p.to_str())
        .map(|p| format!("{}/", p.trim_end_matches('/')))
        .collect();
    for rule in policy
        .get("legacyPathRules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        let (enable, pattern) = match rule.strip_prefix('!') {
            Some(rest) => (false, rest),
            None => (true, rule),
        };
        let matches = match pattern.strip_suffix('*') {
            Some(prefix) => places.iter().any(|p| p.starts_with(prefix)),
            None => {
                let folder = format!("{}/", pattern.trim_end_matches('/'));
                places.contains(&folder)
            }
        };
        if matches {
            decided = Some((enable, rule.to_owned()));
        }
    }
    if let Some((enable, rule)) = decided {
        let word = if enable { "enabled" } else { "disabled" };
        return (enable, format!("{word} by the rule `{rule}`"));
    }
    let default = policy.get("defaultActivation").and_then(Value::as_str);
    match default {
        Some("disabled") => (false, "disabled (its default)".to_owned()),
        _ => (true, "enabled (its default)".to_owned()),
    }
}
