//! MCP Bundles (`.mcpb`): a zip of `manifest.json`, the entry point and the
//! documentation, for desktop clients. `mcpb pack` stamps the packing time
//! on every entry (measured with 2.1.2: two packs differ), so ecp writes the
//! zip itself with its reproducible writer, and the registry's
//! `fileSha256` is the digest of those exact bytes.

use std::path::Path;

use crate::{
    lint::{Finding, LintError, Report, Rule},
    package::stage::StagedFile,
};

/// The bundle's file name: `acme-context.mcpb` for a bundle Node runs,
/// `acme-context-linux-x64.mcpb` for a native one. Never `{platform}.`
/// first: Qwen's release lookup takes any asset named so.
pub fn file_name(name: &str, platform: Option<&str>) -> String {
    match platform {
        Some(platform) => format!("{name}-{}.mcpb", platform.replace('.', "-")),
        None => format!("{name}.mcpb"),
    }
}

/// What goes into the bundle: the generated `manifest.json`, the entry
/// point and the documentation of the staged tree.
pub fn staged(
    files: &[StagedFile],
    entry: &str,
    manifest_json: &Path,
) -> std::io::Result<Vec<StagedFile>> {
    let size = std::fs::metadata(manifest_json)?.len();
    let mut out: Vec<StagedFile> = files
        .iter()
        .filter(|f| {
            f.name == entry
                || f.name == format!("{entry}.exe")
                || crate::package::stage::is_documentation(&f.name)
        })
        .cloned()
        .collect();
    out.push(StagedFile {
        name: super::MCPB.into(),
        source: manifest_json.to_owned(),
        mode: 0o644,
        size,
    });
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Lints an `.mcpb` file: a zip whose entries pass the entry rules of
/// every archive (`crate::lint::archive::bundle_entries`), whose
/// `manifest.json` mcpb accepts and whose entry point is in it.
pub fn lint(path: &Path, report: &mut Report) -> Result<(), LintError> {
    let shown = path.display().to_string();
    let (names, manifest) = crate::lint::archive::bundle_entries(
        path,
        crate::lint::archive::Bytes::File(path),
        super::MCPB,
        report,
    )?;
    let manifest = manifest.map(|data| String::from_utf8_lossy(&data).into_owned());
    let Some(manifest) = manifest else {
        report.add(Finding::about(
            Rule::ClientMcpb,
            &shown,
            "mcpb refuses it: no manifest.json of at most 1 MiB at the bundle root".into(),
            "`ecp package --clients mcpb` writes the bundle",
        ));
        return Ok(());
    };
    // Any manifest.json counts here: the bundle has nothing else.
    let manifest = if manifest.contains("manifest_version") || manifest.contains("dxt_version") {
        manifest
    } else {
        format!("{{\"manifest_version\": null, \"_\": {manifest}}}")
    };
    let label = |relative: &str| format!("{shown}!/{relative}");
    let read = |relative: &str| (relative == super::MCPB).then(|| manifest.clone());
    let exists = |relative: &str| names.iter().any(|n| n == relative);
    let holds = |relative: &str| {
        names
            .iter()
            .any(|n| n == relative || n.strip_prefix(relative).is_some_and(|r| r.starts_with('/')))
    };
    let place = super::rules::Place {
        label: &label,
        read: &read,
        exists: &exists,
        holds: &holds,
        shipped: true,
    };
    super::rules::lint(&place, None, &crate::extension::Project::default(), report);
    Ok(())
}
