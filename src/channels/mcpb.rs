//! MCP Bundles (`.mcpb`): a zip of `manifest.json`, the entry point and the
//! documentation, for desktop clients. `mcpb pack` stamps the packing time
//! on every entry (measured with 2.1.2: two packs differ), so ecp writes the
//! zip itself with its reproducible writer, and the registry's
//! `fileSha256` is the digest of those exact bytes.

use std::path::Path;

use crate::extension::staged::{StagedFile, is_documentation};

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
            f.name == entry || f.name == format!("{entry}.exe") || is_documentation(&f.name)
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
