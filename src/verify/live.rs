//! `ecp verify --live`: a running server held to the tool surface the
//! release pins. The release's `tools.lock` counts only as the statement's
//! subject (by digest), so a lock swapped beside the archive is caught;
//! the server is reached as `ecp check` reaches it (a URL, a command after
//! `--`, or an extension Qwen installed, by name), its endpoint pointed at
//! a loopback port nothing answers, and asked `tools/list` only
//! ([`crate::check::list_surface`]): no search runs.

use std::path::Path;

use super::{Found, Status, Step, step};
use crate::{
    check::{
        self, CheckSettings,
        target::{self, ManifestServer, Target},
    },
    package::LOCK_NAME,
    surface::ToolsLock,
};

/// The running server `--live` names.
#[derive(Debug, Clone)]
pub enum Live {
    /// A Streamable HTTP endpoint.
    Url(String),
    /// A command, started as `ecp check -- CMD` starts it.
    Command(Vec<String>),
    /// An extension Qwen installed on this machine, by its folder's name.
    Installed(String),
}

const ID: &str = "live";

/// `bearer` goes with a URL only (the CLI refuses it otherwise).
pub(super) fn live_step(
    archive: &Path,
    found: &Found,
    live: Option<&Live>,
    bearer: Option<&str>,
) -> Step {
    let folder = match archive.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let Some(live) = live else {
        return step(
            ID,
            Status::NotChecked,
            "pass --live URL, --live NAME (an extension Qwen installed) or --live -- CMD to hold a running server to the release's tools.lock",
        );
    };
    let failed = |detail: String| step(ID, Status::Failed, detail);
    let lock = match vouched_lock(folder, found) {
        Ok(lock) => lock,
        Err(why) => return failed(why),
    };
    let target = match target_of(live) {
        Ok(target) => target,
        Err(why) => return failed(why),
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => return failed(format!("cannot start the async runtime: {error}")),
    };
    let mut settings = CheckSettings::for_target(target);
    if let Live::Url(_) = live {
        settings.bearer = bearer.map(str::to_owned);
    }
    if let Live::Command(_) = live {
        // A command is given the endpoint and credential variables the
        // release's manifest names (as Qwen would pass them).
        if let Ok(ManifestServer::Local(launch)) = target::from_extension(archive, None)
            && let Some(binding) = launch.binding
        {
            settings.base_url_env = Some(binding.base_url);
            settings.token_env = binding.token;
        }
    }
    let surface = match runtime.block_on(check::list_surface(&settings)) {
        Ok(surface) => surface,
        Err(error) => {
            let hint = match (live, bearer) {
                (Live::Url(_), None) => {
                    " (if the endpoint is behind OAuth, pass --token-env NAME with a token for it)"
                }
                _ => "",
            };
            return failed(format!(
                "the live server's tools were not listed: {error}{hint}"
            ));
        }
    };
    match lock.drift(&surface).as_slice() {
        [] => step(
            ID,
            Status::Proven,
            format!(
                "the live server offers the tool surface the release pins ({} tool(s))",
                surface.tools.len()
            ),
        ),
        drift => failed(format!(
            "the live server's tools are not the release's: {}",
            drift
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        )),
    }
}

/// `tools.lock` beside the archive, when the statement names it with the
/// same digest.
fn vouched_lock(folder: &Path, found: &Found) -> Result<ToolsLock, String> {
    let path = folder.join(LOCK_NAME);
    let text =
        crate::files::read_text(&path, None, crate::surface::MAX_LOCK_BYTES).map_err(|e| {
            format!("no readable {LOCK_NAME} beside the archive ({e}); `ecp package` writes it")
        })?;
    let Found::Statement { statement, .. } = found else {
        return Err(format!("no statement vouches for {LOCK_NAME}"));
    };
    let digest = crate::digest::sha256(text.as_bytes());
    match super::subjects(statement)
        .into_iter()
        .find(|(name, _)| name == LOCK_NAME)
    {
        None => Err(format!("the statement names no {LOCK_NAME}")),
        Some((_, named)) if named != digest => Err(format!(
            "{LOCK_NAME} beside the archive is not the one the statement names (sha256 {digest}, the statement says {named})"
        )),
        Some(_) => ToolsLock::parse(LOCK_NAME, &text).map_err(|e| e.to_string()),
    }
}

fn target_of(live: &Live) -> Result<Target, String> {
    match live {
        Live::Url(url) => Ok(Target::Url(url.clone())),
        Live::Command(command) => Ok(Target::Command(command.clone())),
        Live::Installed(name) => {
            let workspace = std::env::current_dir().unwrap_or_default();
            let scope = crate::qwen::machine::Scope::current(workspace)
                .ok_or("no home folder to find Qwen's extensions in")?;
            let machine = crate::qwen::machine::Machine::read(&scope);
            machine
                .extensions
                .iter()
                .find(|e| &e.dir_name == name)
                .map(|e| Target::Extension(e.path.clone()))
                .ok_or_else(|| {
                    format!(
                        "no extension {} is installed for Qwen here (`qwen extensions list` names them)",
                        crate::surface::shown_name(name)
                    )
                })
        }
    }
}
