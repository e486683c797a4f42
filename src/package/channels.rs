//! The other clients and channels of `ecp package`: client manifests
//! written from `qwen-extension.json` (`--clients`) and staged with the
//! rest, the MCP Bundle (when `manifest.json` is there), the scoped npm
//! package (`--npm`) and the registry's `server.json` (`--registry`). The
//! bundle and the npm package are written to temporary files, linted, and
//! published with the archives (same sums, same provenance).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{PackageError, PackageSettings, Pending, WrittenArchive, stage, write, write_linted};
use crate::{
    channels::{self, Client, mcpb, npm, registry},
    lint,
};

/// What `--clients`, `--npm`, `--npm-name`, `--registry` and
/// `--download-url` ask for.
#[derive(Debug, Clone, Default)]
pub struct Channels {
    /// Client manifests to write into the folder before packaging.
    pub clients: Vec<Client>,
    /// `Some` writes the npm package (with `--npm-name` when given).
    pub npm: Option<Option<String>>,
    /// The registry name `server.json` is written under.
    pub registry: Option<String>,
    /// Where the release's assets are downloaded from.
    pub download_url: Option<String>,
}

fn refused(message: impl Into<String>) -> PackageError {
    PackageError::Channel(message.into())
}

/// Writes the client manifests `--clients` asks for into the folder.
pub(super) fn write_clients(
    settings: &PackageSettings,
    log: &mut dyn FnMut(&str),
) -> Result<(), PackageError> {
    let clients = &settings.channels.clients;
    if clients.iter().all(|c| *c == Client::Qwen) {
        return Ok(());
    }
    let written = channels::write_clients(&settings.folder, clients).map_err(|e| match e {
        channels::ClientsError::Derive(e) => refused(e.0),
        channels::ClientsError::Write(problem) => problem.into(),
    })?;
    log(&format!(
        "clients: wrote {} from {} (commit them: they are the extension's source now)",
        written.join(", "),
        lint::MANIFEST
    ));
    Ok(())
}

/// The places every run may write whatever the manifest says, checked by
/// the one write rule ([`crate::writes`]) before anything is read, written
/// or removed: the output folder, `SHA256SUMS`, `server.json` (with
/// `--registry`) and the client manifests `--clients` asks for.
pub(super) fn check_places(settings: &PackageSettings) -> Result<(), PackageError> {
    let out = settings.out();
    out.check_folder()?;
    out.join(crate::release::SUMS).check_file()?;
    if settings.channels.registry.is_some() {
        out.join(registry::FILE).check_file()?;
    }
    for client in &settings.channels.clients {
        if *client != Client::Qwen {
            channels::client_place(&settings.folder, *client).check_file()?;
        }
    }
    Ok(())
}

/// Stages every client manifest of the folder: the archive then serves
/// Gemini CLI and Claude Code as an unpacked folder too.
pub(super) fn stage_clients(stage: &mut stage::Stage, folder: &Path) -> Result<(), PackageError> {
    let plugin = std::fs::symlink_metadata(folder.join(channels::CLAUDE)).is_ok();
    for file in channels::CLIENT_FILES {
        // A `.mcp.json` without a plugin is Claude Code's project file (it
        // may hold the developer's own tokens): never shipped.
        if *file == channels::CLAUDE_MCP && !plugin {
            continue;
        }
        if std::fs::symlink_metadata(folder.join(file)).is_ok() {
            stage.add(file, true)?;
        }
    }
    Ok(())
}

/// What `--npm` and `--registry` need, checked before anything is built
/// or written, so that a refusal leaves the output folder as it was; with
/// the names of the files this run may write besides the archives (a
/// failed run removes what an earlier run left under them).
pub(super) fn preflight(
    settings: &PackageSettings,
    facts: &crate::extension::manifest::ManifestFacts,
    platform: Option<&str>,
) -> Result<Vec<String>, PackageError> {
    let folder = &settings.folder;
    let name = facts.name.clone().unwrap_or_default();
    let mut outputs = Vec::new();
    if has_bundle(folder) {
        outputs.push(mcpb::file_name(&name, platform));
    }
    let wanted = settings.channels.npm.is_some() || settings.channels.registry.is_some();
    if !wanted {
        return Ok(outputs);
    }
    let (manifest, project) = source(folder)?;
    if let Some(explicit) = &settings.channels.npm {
        if is_native(facts) {
            return Err(refused(
                "an npm package installs on every platform, and this extension's dist/main is built for one: publish its GitHub release archives (ecp package without --npm); --npm is for a TypeScript or a remote extension",
            ));
        }
        let npm_name = npm::name(explicit.as_deref(), &project).map_err(|e| refused(e.0))?;
        outputs.push(npm::file_name(
            &npm_name,
            facts.version.as_deref().unwrap_or_default(),
        ));
    }
    if let Some(registry_name) = &settings.channels.registry {
        // Everything but the bundle's digest, which is known once it is
        // written.
        let local = facts.entry_point.is_some();
        let bundle = match (local, has_bundle(folder), &settings.channels.download_url) {
            (false, _, _) => None,
            (true, false, _) => {
                return Err(refused(
                    "a local extension is listed in the registry by its MCP Bundle: add `--clients mcpb` (and --download-url)",
                ));
            }
            (true, true, None) => {
                return Err(refused(
                    "server.json names the bundle's download URL: give --download-url (for example https://github.com/OWNER/REPO/releases/download/vX.Y.Z)",
                ));
            }
            (true, true, Some(base)) if !base.starts_with("https://") => {
                return Err(refused(format!(
                    "--download-url must be an https URL, not {base:?}"
                )));
            }
            (true, true, Some(base)) => Some(registry::Bundle {
                url: format!(
                    "{}/{}",
                    base.trim_end_matches('/'),
                    mcpb::file_name(&name, platform)
                ),
                sha256: "0".repeat(64),
            }),
        };
        registry::server_json(registry_name, &manifest, bundle.as_ref())
            .map_err(|e| refused(e.0))?;
        outputs.push(registry::FILE.to_owned());
    }
    Ok(outputs)
}

/// The folder's Qwen manifest as JSON, and its project.
fn source(folder: &Path) -> Result<(Value, crate::extension::Project), PackageError> {
    let extension =
        crate::extension::Extension::read(folder).map_err(|p| refused(p.to_string()))?;
    let text = extension.manifest_text.unwrap_or_default();
    let manifest =
        serde_json::from_str(&text).map_err(|e| refused(format!("{}: {e}", lint::MANIFEST)))?;
    Ok((manifest, extension.project))
}

/// The channel arguments the extension in the folder cannot use, judged
/// from its manifest and project files alone (what `preflight` says again
/// once the folder is linted): `--npm` for a native entry point, an npm
/// name Qwen cannot install, `--registry` for a local extension without
/// its bundle (`--clients mcpb`) or an https `--download-url`. A folder
/// whose manifest cannot be read is left to lint, which says why.
pub(super) fn check_arguments(settings: &PackageSettings) -> Result<(), PackageError> {
    let wanted = settings.channels.npm.is_some() || settings.channels.registry.is_some();
    if !wanted {
        return Ok(());
    }
    let folder = &settings.folder;
    let Ok(extension) = crate::extension::Extension::read(folder) else {
        return Ok(());
    };
    let Some(text) = extension.manifest_text.as_deref() else {
        return Ok(());
    };
    let mut scratch = lint::Report::default();
    let Ok(facts) = lint::lint_manifest_text(lint::MANIFEST, text, &mut scratch) else {
        return Ok(());
    };
    let refuse = |problem: &str, help: &str| {
        Err(PackageError::Arguments {
            problem: problem.to_owned(),
            help: help.to_owned(),
        })
    };
    let local = facts.entry_point.is_some();
    if let Some(explicit) = &settings.channels.npm {
        if is_native(&facts) {
            return refuse(
                "--npm: an npm package installs on every platform, and this extension's dist/main is built for one",
                "publish its GitHub release archives (ecp package without --npm); --npm is for a TypeScript or a remote extension",
            );
        }
        if let Err(error) = npm::name(explicit.as_deref(), &extension.project) {
            let (problem, help) = error
                .0
                .split_once(" — ")
                .unwrap_or((&error.0, "give one with --npm-name @scope/name"));
            return refuse(&format!("--npm: {problem}"), help);
        }
    }
    if settings.channels.registry.is_some() && local {
        let bundle = has_bundle(folder) || settings.channels.clients.contains(&Client::Mcpb);
        let https =
            "for example --download-url https://github.com/OWNER/REPO/releases/download/vX.Y.Z";
        match &settings.channels.download_url {
            _ if !bundle => {
                return refuse(
                    "--registry: a local extension is listed in the registry by its MCP Bundle, and there is none",
                    "add --clients mcpb (and --download-url)",
                );
            }
            None => {
                return refuse(
                    "--registry: server.json names the bundle's download URL, and --download-url is not given",
                    https,
                );
            }
            Some(base) if !base.starts_with("https://") => {
                return refuse(
                    &format!("--download-url must be an https URL, not {base:?}"),
                    https,
                );
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Whether the manifest's entry point is a native `dist/main`.
fn is_native(facts: &crate::extension::manifest::ManifestFacts) -> bool {
    facts
        .entry_point
        .as_ref()
        .is_some_and(|e| e.kind == crate::extension::manifest::EntryKind::Native)
}

/// Whether the folder has an MCP Bundle manifest.
fn has_bundle(folder: &Path) -> bool {
    let path = folder.join(channels::MCPB);
    std::fs::symlink_metadata(&path).is_ok()
        && crate::files::read_text(&path, Some(folder), crate::files::MAX_TEXT_BYTES)
            .is_ok_and(|t| t.contains("manifest_version") || t.contains("dxt_version"))
}

/// The MCP Bundle and the npm package, written and linted, not yet in
/// place.
pub(super) fn write_assets(
    settings: &PackageSettings,
    files: &[stage::StagedFile],
    facts: &crate::extension::manifest::ManifestFacts,
    platform: Option<&str>,
) -> Result<Vec<Pending>, PackageError> {
    let folder = &settings.folder;
    let wants_npm = settings.channels.npm.is_some();
    if !has_bundle(folder) && !wants_npm {
        return Ok(Vec::new());
    }
    let (manifest, project) = source(folder)?;
    let scratch = tempfile::tempdir().map_err(|source| PackageError::Io {
        path: std::env::temp_dir(),
        source,
    })?;
    let mut pending = Vec::new();
    if has_bundle(folder) {
        pending.push(write_bundle(
            settings,
            files,
            facts,
            platform,
            &manifest,
            &project,
            scratch.path(),
        )?);
    }
    if let Some(explicit) = &settings.channels.npm {
        pending.push(write_npm(
            settings,
            files,
            facts,
            explicit.as_deref(),
            &manifest,
            &project,
            scratch.path(),
        )?);
    }
    Ok(pending)
}

/// The MCP Bundle: its manifest derived for this build, the entry point
/// and the documentation, zipped and linted.
fn write_bundle(
    settings: &PackageSettings,
    files: &[stage::StagedFile],
    facts: &crate::extension::manifest::ManifestFacts,
    platform: Option<&str>,
    manifest: &Value,
    project: &crate::extension::Project,
    scratch: &Path,
) -> Result<Pending, PackageError> {
    let name = facts.name.clone().unwrap_or_default();
    let entry = facts.entry_point.as_ref().map(|e| e.path.clone()).ok_or_else(|| {
        refused("an MCP Bundle carries a local server; this extension has none (remove manifest.json)")
    })?;
    let node_platform = platform.map(|p| p.split('.').next().unwrap_or(p));
    let bundle_manifest =
        channels::mcpb(manifest, &channels::author(project, &name), node_platform)
            .map_err(|e| refused(e.0))?;
    let manifest_path = scratch.join(channels::MCPB);
    let io = |source| PackageError::Io {
        path: manifest_path.clone(),
        source,
    };
    std::fs::write(&manifest_path, channels::render(&bundle_manifest)).map_err(io)?;
    let mut staged = mcpb::staged(files, &entry, &manifest_path).map_err(io)?;
    // Node decides how `dist/main.js` loads from the nearest package.json:
    // an ES module bundle needs its `type` in the bundle too.
    let module_type = project
        .package_json
        .as_ref()
        .and_then(|p| p.get("type"))
        .cloned();
    if let Some(module_type) = module_type {
        let path = scratch.join("bundle-package.json");
        std::fs::write(
            &path,
            channels::render(&serde_json::json!({ "type": module_type })),
        )
        .map_err(io)?;
        let size = std::fs::metadata(&path).map_err(io)?.len();
        staged.push(stage::StagedFile {
            name: "package.json".into(),
            source: path,
            mode: 0o644,
            size,
        });
        staged.sort_by(|a, b| a.name.cmp(&b.name));
    }
    let final_path = settings.out_dir.join(mcpb::file_name(&name, platform));
    write_linted(
        settings,
        &staged,
        write::Format::Zip,
        settings.epoch,
        final_path,
        "mcpb",
        &|path, report| crate::lint::archive::bundle(path, report),
    )
}

/// The npm package: the staged tree under `package/` with a generated
/// `package.json`, at npm pack's entry time, linted as an archive.
fn write_npm(
    settings: &PackageSettings,
    files: &[stage::StagedFile],
    facts: &crate::extension::manifest::ManifestFacts,
    explicit: Option<&str>,
    manifest: &Value,
    project: &crate::extension::Project,
    scratch: &Path,
) -> Result<Pending, PackageError> {
    if facts
        .entry_point
        .as_ref()
        .is_some_and(|e| e.kind == crate::extension::manifest::EntryKind::Native)
    {
        return Err(refused(
            "an npm package installs on every platform, and this extension's dist/main is built for one: publish its GitHub release archives (ecp package without --npm); --npm is for a TypeScript or a remote extension",
        ));
    }
    let npm_name = npm::name(explicit, project).map_err(|e| refused(e.0))?;
    let version = facts.version.clone().unwrap_or_default();
    let package_json = npm::package_json(
        &npm_name,
        manifest,
        project,
        settings.channels.registry.as_deref(),
    );
    let package_path = scratch.join("package.json");
    let io = |source| PackageError::Io {
        path: package_path.clone(),
        source,
    };
    std::fs::write(&package_path, channels::render(&package_json)).map_err(io)?;
    let staged = npm::staged(files, &package_path).map_err(io)?;
    let final_path = settings.out_dir.join(npm::file_name(&npm_name, &version));
    write_linted(
        settings,
        &staged,
        write::Format::TarGz,
        npm::NPM_EPOCH,
        final_path,
        "npm",
        &|path, report| lint::archive::lint_archive(path, report).map(|_| ()),
    )
}

/// `server.json` for `--registry`, validated against the published schema
/// before it is written.
pub(super) fn write_registry(
    settings: &PackageSettings,
    archives: &[WrittenArchive],
    log: &mut dyn FnMut(&str),
) -> Result<Option<PathBuf>, PackageError> {
    let Some(name) = &settings.channels.registry else {
        return Ok(None);
    };
    let (manifest, _) = source(&settings.folder)?;
    let built = archives.iter().find(|a| a.format == "mcpb");
    let bundle = match (built, &settings.channels.download_url) {
        (Some(built), Some(base)) => {
            if !base.starts_with("https://") {
                return Err(refused(format!(
                    "--download-url must be an https URL, not {base:?}"
                )));
            }
            let file = built
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            Some(registry::Bundle {
                url: format!("{}/{file}", base.trim_end_matches('/')),
                sha256: built.sha256.clone(),
            })
        }
        (Some(_), None) => {
            return Err(refused(
                "server.json names the bundle's download URL: give --download-url (for example https://github.com/OWNER/REPO/releases/download/vX.Y.Z)",
            ));
        }
        (None, _) => None,
    };
    let value =
        registry::server_json(name, &manifest, bundle.as_ref()).map_err(|e| refused(e.0))?;
    let problems = crate::lint::registry::problems(&value, &[]);
    if let Some((pointer, message)) = problems.first() {
        return Err(refused(format!("server.json {pointer}: {message}")));
    }
    let place = settings.out().join(registry::FILE);
    place.write(channels::render(&value).as_bytes())?;
    let path = place.path();
    log(&format!(
        "registry: {} (valid against the 2025-12-11 schema)",
        path.display()
    ));
    Ok(Some(path))
}
