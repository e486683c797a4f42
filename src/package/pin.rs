//! `tools.lock`: the tool surface of the archive just written, pinned
//! ([`crate::surface`]) through [`check::list_surface`]: the archive is
//! started as `ecp check` starts it, its endpoint pointed at a loopback
//! port nothing answers, and asked `tools/list` only. An archive this
//! machine cannot run (another platform's binary), a remote extension and
//! a server that does not start without its own configuration are said,
//! and get no lock: pin those with `ecp check ... --write-lock`.

use super::{PackageError, PackageSettings, WrittenArchive, plan::Plan, platform_of};
use crate::provenance;
use crate::{
    check::{self, CheckSettings, target::Target},
    surface::ToolsLock,
};

/// The lock's file name in the output folder.
pub const LOCK_NAME: &str = "tools.lock";

/// Why no lock was written.
#[derive(Debug, thiserror::Error)]
pub enum NotPinned {
    #[error("no archive of this run runs on this machine")]
    NoArchive,
    #[error("{0}")]
    Check(#[from] check::CheckError),
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
}

/// The tool surface of the first of `archives` (a `.tar.gz` or `.zip`),
/// when the run's archives run here.
pub fn surface_of(archives: &[WrittenArchive], runs_here: bool) -> Result<ToolsLock, NotPinned> {
    let archive = archives
        .iter()
        .find(|a| runs_here && matches!(a.format, "tar.gz" | "zip"))
        .ok_or(NotPinned::NoArchive)?;
    let settings = CheckSettings::for_target(Target::Extension(archive.path.clone()));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(NotPinned::Runtime)?;
    Ok(runtime.block_on(check::list_surface(&settings))?)
}

/// Writes `tools.lock` from an archive this machine runs (a bundle runs
/// wherever node does; a binary where the target's platform is this
/// host's): its subject for the statement, or `None`, said.
pub(super) fn pin_tools(
    settings: &PackageSettings,
    plan: &Plan,
    archives: &[WrittenArchive],
    log: &mut dyn FnMut(&str),
) -> Result<Option<provenance::Subject>, PackageError> {
    if !plan.script && !plan.native {
        log(&format!(
            "tools: no {} (no local server: pin the endpoint's tools with `ecp check --url URL --write-lock FILE`)",
            LOCK_NAME
        ));
        return Ok(None);
    }
    let host = platform_of(&crate::release::host_triple()).ok();
    let runs_here = plan.script || (plan.native && platform_of(&plan.triple).ok() == host);
    match surface_of(archives, runs_here) {
        Ok(surface) => {
            let text = surface.to_text();
            settings.out().join(LOCK_NAME).write(text.as_bytes())?;
            log(&format!(
                "tools: {} ({} tool(s) pinned)",
                settings.out().join(LOCK_NAME).path().display(),
                surface.tools.len()
            ));
            Ok(Some(provenance::Subject {
                name: LOCK_NAME.to_owned(),
                sha256: crate::digest::sha256(text.as_bytes()),
            }))
        }
        Err(why) => {
            log(&format!(
                "tools: no {} ({why}; `ecp check TARGET --write-lock FILE` pins a running server)",
                LOCK_NAME
            ));
            Ok(None)
        }
    }
}
