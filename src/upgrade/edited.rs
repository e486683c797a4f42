//! Whether the runtime an extension holds was edited locally: the
//! vendored copy against its recorded checksum (or this ecp's copy), the
//! contract files, and ecp 0.1.0's copied layout against what it wrote. An
//! upgrade never replaces an edit.

use super::*;

/// The vendored copy's files that differ from what was recorded: none when
/// the checksum matches, or when the copy is exactly the one this ecp
/// carries (an upgrade stopped before it recorded the checksum); else the
/// files that differ from this ecp's copy (or the folder itself when that
/// says nothing).
pub(super) fn edited_vendored(
    folder: &Path,
    recorded: Option<&str>,
) -> Result<Vec<String>, UpgradeError> {
    let root = folder.join(vendor::VENDOR_DIR);
    if std::fs::symlink_metadata(&root).is_err() {
        // Deleted, or an interrupted swap that left nothing to put back:
        // only --force writes a runtime whose old copy cannot be compared.
        return Ok(vec![format!(
            "{} (missing, and no interrupted upgrade left a copy to put back)",
            vendor::VENDOR_DIR
        )]);
    }
    let on_disk = runtime::read_tree(&root).map_err(io(&root))?;
    let sum = vendor::tree_sha256(on_disk.iter().map(|(p, c)| (p.as_str(), c.as_slice())));
    if recorded == Some(sum.as_str()) || sum == vendor::runtime_sha256() {
        return Ok(Vec::new());
    }
    let carried = vendor::runtime_files();
    let mut differing: Vec<String> = on_disk
        .iter()
        .filter(|(path, contents)| {
            !carried
                .iter()
                .any(|(p, c)| p == path && *c == contents.as_slice())
        })
        .map(|(path, _)| format!("{}/{path}", vendor::VENDOR_DIR))
        .collect();
    for (path, _) in &carried {
        if !on_disk.iter().any(|(p, _)| p == path) {
            differing.push(format!("{}/{path} (missing)", vendor::VENDOR_DIR));
        }
    }
    if differing.is_empty() || recorded.is_none() {
        differing = vec![format!(
            "{} (its files do not match the checksum in Cargo.toml)",
            vendor::VENDOR_DIR
        )];
    }
    differing.truncate(20);
    Ok(differing)
}

/// The extension's own `contracts/v1` files (kept by an upgrade from the
/// copied layout) that differ from the vendored runtime's, which an earlier
/// upgrade wrote them from.
pub(super) fn edited_contracts(folder: &Path) -> Result<Vec<String>, UpgradeError> {
    let root = folder.join(CONTRACTS);
    if !root.is_dir() {
        return Ok(Vec::new());
    }
    let vendored_root = folder.join(vendor::VENDOR_DIR).join(CONTRACTS);
    let vendored = if vendored_root.is_dir() {
        runtime::read_tree(&vendored_root).map_err(io(&vendored_root))?
    } else {
        Vec::new()
    };
    let mut edited = Vec::new();
    for (path, contents) in runtime::read_tree(&root).map_err(io(&root))? {
        if !vendored.contains(&(path.clone(), contents)) {
            edited.push(format!("{CONTRACTS}/{path}"));
        }
    }
    Ok(edited)
}

/// The extension's environment prefix, from the copied layout's
/// `src/lib.rs` (`pub const BASE_URL_ENV: &str = "ACME_CONTEXT_BASE_URL";`).
pub(super) fn copied_env_prefix(folder: &Path) -> Option<String> {
    let lib = read_text(folder, &folder.join("src/lib.rs")).ok()?;
    let line = lib
        .lines()
        .find(|l| l.starts_with("pub const BASE_URL_ENV: &str = \""))?;
    let value = line.split('"').nth(1)?;
    value.strip_suffix("_BASE_URL").map(str::to_owned)
}

/// The glue ecp 0.1.0 wrote at `path` for an extension `name` (with its
/// environment prefix), from the embedded one for `acme-context`.
pub(super) fn copied_glue(path: &str, name: &str, env_prefix: &str) -> Option<String> {
    let (_, text) = COPIED_GLUE.iter().find(|(glue, _)| *glue == path)?;
    Some(
        text.replace("ACME_CONTEXT", env_prefix)
            .replace("acme_context", &name.replace('-', "_"))
            .replace("acme-context", name),
    )
}

/// The path and SHA-256 of every file ecp 0.1.0 copied, from the table.
pub(super) fn copied_digests() -> impl Iterator<Item = (&'static str, &'static str)> {
    COPIED_DIGESTS
        .lines()
        .filter_map(|line| line.split_once("  "))
        .map(|(digest, path)| (path, digest))
}

/// Every file ecp 0.1.0 copied (and the glue it generated), in path order.
pub(super) fn copied_paths() -> Vec<String> {
    let mut paths: Vec<String> = copied_digests()
        .map(|(path, _)| path.to_owned())
        .chain(COPIED_GLUE.iter().map(|(path, _)| (*path).to_owned()))
        .collect();
    paths.sort();
    paths
}

/// Whether `actual` is what ecp 0.1.0 wrote at `path`.
pub(super) fn copied_unedited(path: &str, actual: &str, name: &str, env_prefix: &str) -> bool {
    if let Some(glue) = copied_glue(path, name, env_prefix) {
        return actual == glue;
    }
    let digest = crate::digest::sha256(actual.as_bytes());
    copied_digests().any(|(known, expected)| known == path && expected == digest)
}

/// The files of the copied layout that differ from what ecp 0.1.0 wrote, or
/// that are missing, plus any file added inside the copied folders.
pub(super) fn edited_copied(folder: &Path, name: &str) -> Result<Vec<String>, UpgradeError> {
    let env_prefix = copied_env_prefix(folder).unwrap_or_default();
    let known = copied_paths();
    let mut edited = Vec::new();
    for path in &known {
        match read_text(folder, &folder.join(path)) {
            Ok(actual) if copied_unedited(path, &actual, name, &env_prefix) => {}
            Ok(_) => edited.push(path.clone()),
            Err(UpgradeError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                edited.push(format!("{path} (missing)"))
            }
            Err(other) => return Err(other),
        }
    }
    for copied in COPIED_FOLDERS {
        let root = folder.join(copied);
        if !root.is_dir() {
            continue;
        }
        for path in runtime::tree_paths(&root).map_err(io(&root))? {
            let full = format!("{copied}/{path}");
            if !known.contains(&full) {
                edited.push(format!("{full} (added)"));
            }
        }
    }
    Ok(edited)
}

/// `src/main.rs` and `src/lib.rs` as this ecp generates them.
pub(super) fn glue_files(
    name: &str,
    env_prefix: &str,
) -> Result<Vec<(String, String)>, UpgradeError> {
    let mut settings = NewSettings::with_defaults(name, Template::Local);
    settings.env_prefix = env_prefix.to_owned();
    let files = scaffold::plan(&settings).map_err(|e| UpgradeError::Render(e.to_string()))?;
    Ok(files
        .into_iter()
        .filter(|f| f.path == "src/main.rs" || f.path == "src/lib.rs")
        .map(|f| {
            (
                f.path,
                old_provider_names(&String::from_utf8_lossy(&f.contents)),
            )
        })
        .collect())
}

/// The glue for a kept provider file of the copied layout, which defines
/// the binding's `HttpSearchConfig`/`HttpSearchProvider` (converting that
/// file to the small mapping is issue 29's open part).
pub(super) fn old_provider_names(glue: &str) -> String {
    glue.replace(
        "provider::SearchProvider}",
        "provider::{HttpSearchConfig, HttpSearchProvider}}",
    )
    .replace(
        ".main(|| SearchProvider::from_env(BASE_URL_ENV, TOKEN_ENV))",
        ".main(|| HttpSearchConfig::from_env(BASE_URL_ENV, TOKEN_ENV).map(HttpSearchProvider::new))",
    )
}
