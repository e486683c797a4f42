//! A scoped npm package of an extension, in `npm pack`'s layout: every file
//! under `package/`, a generated `package.json`, npm's fixed entry time
//! (1985-10-26T08:15:00Z) and modes 0644/0755. Qwen Code 0.24.4 installs it
//! with `qwen extensions install @scope/name [--registry URL]`: it downloads
//! the one tarball, checks no integrity, installs no dependency, moves
//! `package/` to the extension root and keeps `package.json` there
//! (`docs/channels-facts.md` §5). So the package lists no dependencies and
//! no scripts, and keeps the project's `type` (Node reads the nearest
//! `package.json` to decide how `dist/main.js` loads).

use std::path::Path;

use serde_json::{Map, Value, json};

use super::DeriveError;
use crate::extension::{Project, staged::StagedFile};

/// npm pack's entry time: 1985-10-26T08:15:00Z.
pub const NPM_EPOCH: u64 = 499_162_500;

pub use crate::extension::NPM_PREFIX as PREFIX;

/// Lifecycle scripts npm runs when a package is installed.
pub const INSTALL_SCRIPTS: &[&str] = &["preinstall", "install", "postinstall", "prepare"];

/// Whether `name` is a scoped npm package name Qwen installs
/// (`@scope/name`, lower case, URL-safe, at most 214 characters).
pub fn is_scoped(name: &str) -> bool {
    let part = |s: &str| {
        !s.is_empty()
            && !s.starts_with(['.', '_'])
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-._~".contains(&b))
    };
    name.len() <= 214
        && name
            .strip_prefix('@')
            .and_then(|rest| rest.split_once('/'))
            .is_some_and(|(scope, pkg)| part(scope) && part(pkg))
}

/// The package name: `--npm-name`, else the project's `package.json`
/// name when it is scoped.
pub fn name(explicit: Option<&str>, project: &Project) -> Result<String, DeriveError> {
    let from_project = project
        .package_json
        .as_ref()
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str);
    let name = explicit.or(from_project.filter(|n| n.starts_with('@'))).ok_or_else(|| {
        DeriveError(format!(
            "Qwen Code installs only scoped npm packages (@scope/name); {} — give one with --npm-name @scope/name",
            match from_project {
                Some(found) => format!("package.json names {found:?}"),
                None => "the extension has no package.json name".into(),
            }
        ))
    })?;
    if !is_scoped(name) {
        return Err(DeriveError(format!(
            "{name:?} is not a scoped npm package name: @scope/name, lower case letters, digits, `-`, `.`, `_` and `~`"
        )));
    }
    Ok(name.to_owned())
}

/// `npm pack`'s file name: `@acme/context` 0.1.0 -> `acme-context-0.1.0.tgz`.
pub fn file_name(name: &str, version: &str) -> String {
    format!(
        "{}-{version}.tgz",
        name.trim_start_matches('@').replace('/', "-")
    )
}

/// The `package.json` of the package: the name, the manifest's version and
/// description, what the project says of its license, repository, engines
/// and module type; `mcpName` when the server is listed in the MCP
/// registry. No dependencies, no scripts.
pub fn package_json(
    name: &str,
    manifest: &Value,
    project: &Project,
    mcp_name: Option<&str>,
) -> Value {
    let mut out = Map::new();
    out.insert("name".into(), json!(name));
    for key in ["version", "description"] {
        if let Some(value) = manifest.get(key) {
            out.insert(key.into(), value.clone());
        }
    }
    let from_project = |key: &str| {
        project
            .package_json
            .as_ref()
            .and_then(|p| p.get(key))
            .cloned()
    };
    let license = from_project("license").or_else(|| {
        let license = project
            .cargo
            .as_ref()?
            .get("package")?
            .get("license")?
            .as_str()?;
        Some(json!(license))
    });
    if let Some(license) = license {
        out.insert("license".into(), license);
    }
    for key in ["type", "engines", "repository", "homepage", "author"] {
        if let Some(value) = from_project(key) {
            out.insert(key.into(), value);
        }
    }
    out.insert(
        "keywords".into(),
        json!(["qwen-code", "qwen-extension", "mcp", "context-search"]),
    );
    if let Some(mcp_name) = mcp_name {
        out.insert("mcpName".into(), json!(mcp_name));
    }
    Value::Object(out)
}

/// The staged tree of the archives under `package/`, with `package_json`
/// (a file written by the caller) as `package/package.json`.
pub fn staged(
    files: &[StagedFile],
    package_json: &Path,
) -> Result<Vec<StagedFile>, std::io::Error> {
    let size = std::fs::metadata(package_json)?.len();
    let mut out: Vec<StagedFile> = files
        .iter()
        .filter(|f| f.name != "package.json")
        .map(|f| StagedFile {
            name: format!("{PREFIX}{}", f.name),
            ..f.clone()
        })
        .collect();
    out.push(StagedFile {
        name: format!("{PREFIX}package.json"),
        source: package_json.to_owned(),
        mode: 0o644,
        size,
    });
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_scoped_url_safe_names_are_installable() {
        assert!(is_scoped("@acme/context"));
        assert!(is_scoped("@acme-co/context.search_v2"));
        for bad in [
            "context",
            "@acme",
            "@/x",
            "@Acme/x",
            "@acme/x y",
            "@acme/.x",
            "@acme/x/y",
        ] {
            assert!(!is_scoped(bad), "{bad}");
        }
        assert_eq!(
            file_name("@acme/context", "0.1.0"),
            "acme-context-0.1.0.tgz"
        );
    }

    #[test]
    fn the_package_json_lists_nothing_to_install_or_run() {
        let project = Project {
            package_json: Some(json!({"name": "x", "type": "module", "license": "MIT",
                "dependencies": {"a": "1"}, "scripts": {"postinstall": "x"}})),
            ..Project::default()
        };
        let manifest = json!({"version": "1.2.3", "description": "d"});
        let package = package_json("@acme/x", &manifest, &project, Some("io.github.acme/x"));
        assert_eq!(package["version"], "1.2.3");
        assert_eq!(package["type"], "module");
        assert_eq!(package["mcpName"], "io.github.acme/x");
        assert!(package.get("dependencies").is_none() && package.get("scripts").is_none());
    }
}
