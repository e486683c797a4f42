//! `ecp upgrade` of a TypeScript (`local-ts`) extension: the runtime files
//! ecp copied (`src/profile/`, `src/runtime/`, the tests of the runtime,
//! `contracts/v1/`, `tsconfig.json`) brought to the ones this ecp carries,
//! and `package.json`'s dependency versions to the runtime's.
//!
//! A TypeScript extension records no checksum, so "written by ecp" is known
//! from a table of every version of every file the template ever wrote
//! (`typescript-history.txt`, written from git history by `cargo xtask
//! ts-history`; a test fails while it misses the current files). A carried
//! file whose SHA-256 is in the table for its path is replaced; one that
//! is not was edited, and stops the upgrade unless `force`. A file the
//! runtime no longer carries is removed when unedited.
//!
//! The provider's own files, `src/provider.ts`, `test/provider.test.ts`
//! and `src/main.ts` (rendered with the extension's name and variables,
//! compared with the name and variables put back), are replaced only all
//! three together and only when all three are unedited earlier versions
//! (before runtime 0.3.0 `src/provider.ts` was a copy of the whole V1
//! binding); otherwise they stay as they are, with a sentence.
//!
//! `package-lock.json` is rewritten from the runtime's when the extension
//! depends on exactly the runtime's packages (nothing the provider added);
//! otherwise the outcome says to run `npm install`.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

use super::{Expect, ReleaseNotes, UpgradeError, Upgraded, guard, read_text, write_atomically};
use crate::scaffold::{self, NewSettings, Template, typescript};

/// Every file any `ecp new --template local-ts` wrote that ecp owns:
/// SHA-256, path in the extension, the runtime version that first had it.
const HISTORY: &str = include_str!("typescript-history.txt");

/// The provider's files: replaced only together, only when unedited.
const PROVIDER_FILES: [&str; 3] = ["src/provider.ts", "test/provider.test.ts", "src/main.ts"];

/// The folders and files an upgrade reads and writes.
const TOUCHED: &[(&str, Expect)] = &[
    ("src", Expect::Tree),
    ("test", Expect::Tree),
    ("contracts", Expect::Tree),
    ("tsconfig.json", Expect::File),
    ("package.json", Expect::File),
    ("package-lock.json", Expect::File),
];

/// Whether `folder` looks like a TypeScript extension ecp generated.
pub fn is_typescript(folder: &Path) -> bool {
    folder.join("package.json").is_file() && folder.join("src/runtime/index.ts").is_file()
}

struct Known {
    /// path -> (sha256 -> first version)
    by_path: BTreeMap<&'static str, BTreeMap<&'static str, &'static str>>,
}

impl Known {
    fn load() -> Known {
        let mut by_path: BTreeMap<&str, BTreeMap<&str, &str>> = BTreeMap::new();
        for line in HISTORY.lines().filter(|l| !l.starts_with('#')) {
            let mut parts = line.split_whitespace();
            if let (Some(sum), Some(path), Some(version)) =
                (parts.next(), parts.next(), parts.next())
            {
                by_path.entry(path).or_default().insert(sum, version);
            }
        }
        Known { by_path }
    }

    /// The version that first wrote these bytes at `path`, if any did.
    fn version(&self, path: &str, bytes: &[u8]) -> Option<&'static str> {
        let sum = crate::digest::sha256(bytes);
        self.by_path.get(path)?.get(sum.as_str()).copied()
    }
}

/// What `src/main.ts` was rendered with: the extension's name and its
/// environment prefix, read back from the file.
fn main_settings(main: &str) -> Option<(String, String)> {
    let quoted = |after: &str| -> Option<String> {
        let start = main.find(after)? + after.len();
        let end = main[start..].find('"')?;
        Some(main[start..start + end].to_owned())
    };
    let name = quoted("name: \"")?;
    let base = quoted("BASE_URL_ENV = \"")?;
    let prefix = base.strip_suffix("_BASE_URL")?.to_owned();
    Some((name, prefix))
}

/// `src/main.ts` with its name and prefix put back as the template's
/// variables, so that it compares with the table's template texts.
fn unrendered_main(main: &str, name: &str, prefix: &str) -> String {
    main.replace(&format!("\"{prefix}_"), "\"{{ env_prefix }}_")
        .replace(&format!("name: \"{name}\""), "name: \"{{ name }}\"")
}

/// The carried files as this ecp writes them: path -> bytes (the
/// provider's files excluded).
fn carried() -> BTreeMap<String, &'static [u8]> {
    typescript::verbatim_files()
        .into_iter()
        .filter(|(path, _)| !PROVIDER_FILES.contains(&path.as_str()))
        .collect()
}

/// A file of the extension, if it is there.
fn read_if_there(folder: &Path, path: &str) -> Result<Option<String>, UpgradeError> {
    let full = folder.join(path);
    if std::fs::symlink_metadata(&full).is_err() {
        return Ok(None);
    }
    read_text(folder, &full).map(Some)
}

/// The plan: what to write, what to remove, what was edited.
#[derive(Default)]
struct Plan {
    writes: Vec<(String, Vec<u8>)>,
    removes: Vec<String>,
    edited: Vec<String>,
    /// The versions the unedited files were first written by.
    seen: BTreeSet<&'static str>,
    provider: Option<String>,
}

fn plan_carried(folder: &Path, known: &Known, plan: &mut Plan) -> Result<(), UpgradeError> {
    let carried = carried();
    for (path, bytes) in &carried {
        match read_if_there(folder, path)? {
            Some(text) if text.as_bytes() == *bytes => {
                plan.seen.extend(known.version(path, bytes));
            }
            Some(text) => match known.version(path, text.as_bytes()) {
                Some(version) => {
                    plan.seen.insert(version);
                    plan.writes.push((path.clone(), bytes.to_vec()));
                }
                None => {
                    plan.edited.push(path.clone());
                    plan.writes.push((path.clone(), bytes.to_vec()));
                }
            },
            None => plan.writes.push((path.clone(), bytes.to_vec())),
        }
    }
    // Files an earlier runtime carried and this one does not.
    for path in known.by_path.keys() {
        if carried.contains_key(*path) || PROVIDER_FILES.contains(path) {
            continue;
        }
        if let Some(text) = read_if_there(folder, path)? {
            match known.version(path, text.as_bytes()) {
                Some(_) => plan.removes.push((*path).to_owned()),
                None => plan.edited.push((*path).to_owned()),
            }
        }
    }
    Ok(())
}

/// The provider's three files: replaced together when each is an unedited
/// earlier version, else left with a sentence.
fn plan_provider(folder: &Path, known: &Known, plan: &mut Plan) -> Result<(), UpgradeError> {
    let main = read_if_there(folder, "src/main.ts")?.unwrap_or_default();
    let Some((name, prefix)) = main_settings(&main) else {
        plan.provider = Some("src/main.ts was edited (no name or base URL variable where ecp writes them): left as it is".into());
        return Ok(());
    };
    let settings = NewSettings {
        env_prefix: prefix.clone(),
        ..NewSettings::with_defaults(&name, Template::LocalTs)
    };
    let fresh = scaffold::plan(&settings).map_err(|e| UpgradeError::Render(e.to_string()))?;
    let mut replace = Vec::new();
    let mut current = 0;
    for path in PROVIDER_FILES {
        let text = read_if_there(folder, path)?.unwrap_or_default();
        let compared = match path {
            "src/main.ts" => unrendered_main(&text, &name, &prefix),
            _ => text.clone(),
        };
        let Some(new) = fresh.iter().find(|f| f.path == path) else {
            continue;
        };
        if text.as_bytes() == new.contents.as_slice() {
            current += 1;
            continue;
        }
        match known.version(path, compared.as_bytes()) {
            Some(_) => replace.push((path.to_owned(), new.contents.clone())),
            None => {
                if current + replace.len() < PROVIDER_FILES.len() {
                    plan.provider = Some(format!(
                        "{path} was edited, so src/provider.ts, its test and src/main.ts stay as they are; the runtime now offers a hardened client (src/runtime/http.ts) for a small mapping: see src/provider.ts of a fresh `ecp new --template local-ts`"
                    ));
                }
                return Ok(());
            }
        }
    }
    if !replace.is_empty() {
        plan.provider = Some(
            "an unedited earlier src/provider.ts became the small mapping on the runtime's client (with its test and src/main.ts)".into(),
        );
        plan.writes.extend(replace);
    }
    Ok(())
}

/// Packages an earlier runtime depended on that today's does not need at
/// run time (by section): runtime 0.6.1 serves MCP and reaches the upstream
/// on Node's own modules, and keeps the SDK for its tests only.
const FORMER: &[(&str, &str)] = &[
    ("dependencies", "@modelcontextprotocol/sdk"),
    ("dependencies", "undici"),
];

/// `package.json` with the runtime's dependency versions (and any it
/// lacks), and without a package only an earlier runtime needed (unless
/// `provider_names` says the provider's own code names it); the names set.
/// `None` when nothing changes.
fn aligned_package(
    text: &str,
    known: &Known,
    provider_names: &dyn Fn(&str) -> bool,
) -> Result<(Option<String>, Vec<String>, bool), UpgradeError> {
    let mut package: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| UpgradeError::Render(format!("package.json: {e}")))?;
    let runtime: serde_json::Value = serde_json::from_str(typescript::PACKAGE_JSON)
        .map_err(|e| UpgradeError::Render(format!("the runtime's package.json: {e}")))?;
    let mut aligned = Vec::new();
    let mut only_runtime = true;
    for section in ["dependencies", "devDependencies"] {
        let wanted = runtime[section].as_object().cloned().unwrap_or_default();
        let Some(have) = package
            .as_object_mut()
            .map(|p| p.entry(section).or_insert_with(|| serde_json::json!({})))
            .and_then(serde_json::Value::as_object_mut)
        else {
            continue;
        };
        for (_, name) in FORMER.iter().filter(|(s, _)| *s == section) {
            if !wanted.contains_key(*name) && !provider_names(name) && have.remove(*name).is_some()
            {
                aligned.push(format!("{name} removed from {section}"));
            }
        }
        only_runtime &= have.keys().all(|name| wanted.contains_key(name));
        for (name, version) in wanted {
            if have.get(&name) != Some(&version) {
                aligned.push(format!("{name} {}", version.as_str().unwrap_or_default()));
                have.insert(name, version);
            }
        }
        // In npm's order, as `ecp new` writes it.
        have.sort_keys();
        // A section left empty that the runtime does not have goes, as in
        // what `ecp new` writes (runtime 0.6.1 has no `dependencies`).
        if have.is_empty() && runtime.get(section).is_none() {
            package.as_object_mut().map(|p| p.remove(section));
        }
    }
    // A script ecp wrote (any version) becomes today's; one the provider
    // wrote stays.
    let scripts = runtime["scripts"].as_object().cloned().unwrap_or_default();
    if let Some(have) = package
        .as_object_mut()
        .map(|p| p.entry("scripts").or_insert_with(|| serde_json::json!({})))
        .and_then(serde_json::Value::as_object_mut)
    {
        for (name, script) in scripts {
            let ours = match have.get(&name).map(|v| v.as_str()) {
                None => true,
                Some(Some(old)) => known
                    .version(&format!("package.json#scripts.{name}"), old.as_bytes())
                    .is_some(),
                Some(None) => false,
            };
            if ours && have.get(&name) != Some(&script) {
                aligned.push(format!("scripts.{name}"));
                have.insert(name, script);
            }
        }
    }
    if package.get("allowScripts").is_none()
        && let Some(allow) = runtime.get("allowScripts")
    {
        package["allowScripts"] = allow.clone();
        aligned.push("allowScripts".into());
    }
    if aligned.is_empty() {
        return Ok((None, aligned, only_runtime));
    }
    let mut written = serde_json::to_string_pretty(&package).unwrap_or_default();
    written.push('\n');
    Ok((Some(written), aligned, only_runtime))
}

/// The provider's own code as the upgrade leaves it (its files planned or
/// as they are): a package it imports stays in `package.json`, whoever
/// added it.
fn provider_code(folder: &Path, plan: &Plan) -> Vec<String> {
    PROVIDER_FILES
        .iter()
        .map(|path| {
            plan.writes
                .iter()
                .find(|(written, _)| written == path)
                .map(|(_, bytes)| String::from_utf8_lossy(bytes).into_owned())
                .or_else(|| std::fs::read_to_string(folder.join(path)).ok())
                .unwrap_or_default()
        })
        .collect()
}

/// Upgrades the TypeScript extension at `folder`.
pub fn upgrade(folder: &Path, force: bool) -> Result<Upgraded, UpgradeError> {
    let touched: Vec<(PathBuf, Expect)> = TOUCHED
        .iter()
        .map(|(p, e)| (PathBuf::from(p), *e))
        .collect();
    guard(folder, &touched)?;
    let known = Known::load();
    let mut plan = Plan::default();
    plan_carried(folder, &known, &mut plan)?;
    plan_provider(folder, &known, &mut plan)?;
    if !plan.edited.is_empty() && !force {
        return Err(UpgradeError::Edited { files: plan.edited });
    }
    let package_text = read_text(folder, &folder.join("package.json"))?;
    let own = provider_code(folder, &plan);
    let provider_names = |name: &str| {
        own.iter()
            .any(|code| code.contains(&format!("\"{name}")) || code.contains(&format!("'{name}")))
    };
    let (package, aligned, only_runtime) = aligned_package(&package_text, &known, &provider_names)?;
    let name = serde_json::from_str::<serde_json::Value>(&package_text)
        .ok()
        .and_then(|p| p["name"].as_str().map(str::to_owned))
        .unwrap_or_default();
    let carried = crate::scaffold::vendor::RUNTIME_VERSION;
    let from = plan
        .seen
        .iter()
        .copied()
        .max_by_key(|v| crate::runtime::releases::parse_version(v));
    let from = from.unwrap_or("unknown").to_owned();
    let mut outcome = Upgraded {
        name: crate::text::outside::value(&name),
        from: from.clone(),
        from_layout: "typescript",
        to: carried,
        changed: false,
        notes: Vec::<ReleaseNotes>::new(),
        written: Vec::new(),
        removed: Vec::new(),
        dropped: Vec::new(),
        aligned: aligned.clone(),
        forced: plan
            .edited
            .iter()
            .map(|f| crate::text::outside::value(f))
            .collect(),
        recovered: Vec::new(),
        provider: plan.provider.clone(),
        tests: None,
    };
    for (path, bytes) in &plan.writes {
        write_atomically(&folder.join(path), bytes)?;
        outcome.written.push(path.clone());
    }
    for path in &plan.removes {
        let full = folder.join(path);
        std::fs::remove_file(&full).map_err(super::io(&full))?;
        outcome.removed.push(path.clone());
    }
    if let Some(package) = package {
        write_atomically(&folder.join("package.json"), package.as_bytes())?;
        outcome.written.push("package.json".into());
        if only_runtime {
            let version = serde_json::from_str::<serde_json::Value>(&package)
                .ok()
                .and_then(|p| p["version"].as_str().map(str::to_owned))
                .unwrap_or_else(|| "0.1.0".into());
            let lock = typescript::package_lock(&name, &version)
                .map_err(|e| UpgradeError::Render(e.to_string()))?;
            write_atomically(&folder.join("package-lock.json"), &lock)?;
            outcome.written.push("package-lock.json".into());
        } else {
            outcome.aligned.push("(package-lock.json is not rewritten: the extension has dependencies of its own; run `npm install`)".into());
        }
    }
    outcome.changed = !outcome.written.is_empty() || !outcome.removed.is_empty();
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_history_holds_every_file_this_ecp_writes() {
        let known = Known::load();
        for (path, bytes) in typescript::verbatim_files() {
            assert!(
                known.version(&path, bytes).is_some(),
                "{path} is not in src/upgrade/typescript-history.txt: run `cargo xtask ts-history` and commit the table"
            );
        }
        let settings = NewSettings::with_defaults("acme-context", Template::LocalTs);
        let main = scaffold::plan(&settings)
            .unwrap()
            .into_iter()
            .find(|f| f.path == "src/main.ts")
            .unwrap();
        let main = String::from_utf8(main.contents).unwrap();
        let (name, prefix) = main_settings(&main).unwrap();
        assert_eq!(
            (name.as_str(), prefix.as_str()),
            ("acme-context", "ACME_CONTEXT")
        );
        assert!(
            known
                .version(
                    "src/main.ts",
                    unrendered_main(&main, &name, &prefix).as_bytes()
                )
                .is_some(),
            "templates/local-ts/src/main.ts.tera is not in the history table: run `cargo xtask ts-history`"
        );
    }

    #[test]
    fn former_runtime_packages_go_unless_the_provider_imports_them() {
        let known = Known::load();
        let old = r#"{"name":"acme-context","dependencies":{"@modelcontextprotocol/sdk":"1.32.2","undici":"6.29.1"},"devDependencies":{"typescript":"5.9.3"}}"#;
        let (written, aligned, only_runtime) = aligned_package(old, &known, &|_| false).unwrap();
        let written: serde_json::Value = serde_json::from_str(&written.unwrap()).unwrap();
        assert!(written.get("dependencies").is_none(), "{written}");
        assert_eq!(
            written["devDependencies"]["@modelcontextprotocol/sdk"],
            "1.32.2"
        );
        assert!(
            aligned.contains(&"undici removed from dependencies".to_owned()),
            "{aligned:?}"
        );
        assert!(only_runtime);
        // A provider whose own code imports undici keeps it (and its own lockfile).
        let (written, _, only_runtime) =
            aligned_package(old, &known, &|name| name == "undici").unwrap();
        let written: serde_json::Value = serde_json::from_str(&written.unwrap()).unwrap();
        assert_eq!(written["dependencies"]["undici"], "6.29.1");
        assert!(
            written["dependencies"]
                .get("@modelcontextprotocol/sdk")
                .is_none()
        );
        assert!(!only_runtime);
    }
}
