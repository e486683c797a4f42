//! What `ecp try` does with Qwen Code, below the command line: which
//! archive of a folder or a release this machine installs, whether a
//! folder's archive is stale, replacing what an earlier `ecp try`
//! installed, running `qwen` and reading `qwen mcp list`'s verdict, and
//! what to tell a user whose server does not connect. `cli/try_it.rs`
//! holds the flags, the packaging and the printing.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
};

use crate::{
    extension::{
        build,
        manifest::{EntryKind, ManifestFacts, ServerFacts},
    },
    release,
    text::outside,
};

/// Why `ecp try` stopped short of Qwen's verdict.
#[derive(Debug, thiserror::Error)]
pub enum TryError {
    /// ecp could not do its part: a folder or release it cannot use, a
    /// program it cannot run, a `qwen` command that failed.
    #[error("{0}")]
    NotRun(String),
    /// The client has an extension of this name from another source.
    #[error("{client} already has {name} installed, from {}", outside::line(.from, 300))]
    InstalledElsewhere {
        client: &'static str,
        name: String,
        from: String,
        /// The client's command that uninstalls it.
        uninstall: String,
    },
    /// A Ctrl-C stopped the `qwen` command (and what it started).
    #[error("interrupted: {0} was stopped")]
    Interrupted(String),
}

impl TryError {
    /// What to do about it, when there is something to say.
    pub fn help(&self) -> Option<String> {
        match self {
            TryError::InstalledElsewhere { uninstall, .. } => Some(format!(
                "pass --replace to uninstall it first, or run `{uninstall}` yourself"
            )),
            _ => None,
        }
    }
}

/// The asset Qwen's installer picks on this machine from a release folder.
pub fn release_asset(folder: &Path) -> Result<PathBuf, TryError> {
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .map_err(|e| TryError::NotRun(format!("{}: {e}", folder.display())))?
        .flatten()
        .filter_map(|entry| entry.file_name().to_str().map(str::to_owned))
        .collect();
    names.sort();
    let assets: Vec<&str> = names.iter().map(String::as_str).collect();
    let (os, arch) = this_platform()?;
    // Qwen takes the first match in GitHub's order, which may be a file it
    // cannot extract (`ecp lint` of the folder says so); this takes an
    // archive among the matches.
    let found = match release::resolve(&assets, os, arch) {
        release::Resolution::Assets(found) => found,
        release::Resolution::Clone => Vec::new(),
    };
    match found.iter().find(|name| release::is_archive(name)) {
        Some(archive) => Ok(folder.join(archive)),
        None => Err(TryError::NotRun(format!(
            "{} holds no archive Qwen would install on {os}.{arch}",
            folder.display()
        ))),
    }
}

/// This machine's platform and architecture, as asset names spell them.
fn this_platform() -> Result<(&'static str, &'static str), TryError> {
    release::platform_of(&release::host_triple()).map_err(|e| TryError::NotRun(e.to_string()))
}

/// Where `ecp package` writes the archive of the extension in `folder` for
/// this machine.
pub fn host_archive(folder: &Path, facts: &ManifestFacts) -> Result<PathBuf, TryError> {
    let name = facts.name.as_deref().ok_or_else(|| {
        TryError::NotRun(format!(
            "{} has no name",
            folder.join(crate::extension::MANIFEST).display()
        ))
    })?;
    let (os, arch) = this_platform()?;
    let native = facts
        .entry_point
        .as_ref()
        .is_some_and(|e| e.kind == EntryKind::Native);
    let out = if build::is_node_project(folder) {
        "release"
    } else {
        "dist"
    };
    let stem = if native {
        format!("{os}.{arch}.{name}")
    } else {
        format!("{os}.{name}")
    };
    Ok(folder.join(out).join(format!("{stem}.tar.gz")))
}

/// Why the archive must be made again: missing, or a source file newer
/// than it (build output, dependencies and git's folder are not sources).
/// `None` when it is current. At most 20,000 entries are looked at; past
/// that the archive is made again.
pub fn stale(folder: &Path, archive: &Path) -> Option<String> {
    let Ok(made) = std::fs::metadata(archive).and_then(|m| m.modified()) else {
        return Some(format!("{} does not exist yet", archive.display()));
    };
    crate::files::changed_since(folder, made)
}

/// Uninstalls what an earlier `ecp try` installed under `name` (its source
/// is this archive), or anything when `forced` (`--replace`); refuses
/// otherwise. `log` hears the command it runs.
pub fn replace(
    program: &Path,
    name: &str,
    installed: &super::Installed,
    archive: &Path,
    forced: bool,
    log: &mut dyn FnMut(&str),
) -> Result<(), TryError> {
    let ours = installed.source.as_deref() == Some(&*archive.to_string_lossy());
    if !ours && !forced {
        return Err(TryError::InstalledElsewhere {
            client: "Qwen Code",
            uninstall: format!("qwen extensions uninstall {name}"),
            name: name.to_owned(),
            from: installed
                .source
                .clone()
                .unwrap_or_else(|| "an unknown source".to_owned()),
        });
    }
    log(&format!(
        "qwen extensions uninstall {name} (installed from {})",
        if ours {
            "this archive"
        } else {
            "elsewhere; --replace"
        }
    ));
    run_qwen(program, &["extensions", "uninstall", name], None).map(drop)
}

/// Runs `qwen ARGS [ARCHIVE --consent]` with no stdin, in a process group
/// of its own (Ctrl-C stops it through `crate::children`); its output when
/// it succeeds, its last lines when it fails.
pub fn run_qwen(program: &Path, args: &[&str], archive: Option<&Path>) -> Result<String, TryError> {
    let mut words: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    if let Some(archive) = archive {
        words.push(archive.to_string_lossy().into_owned());
        words.push("--consent".to_owned());
    }
    let shown = format!("qwen {}", args.join(" "));
    run_client(program, &shown, &words, None)
}

/// Runs a client's command (`shown` in messages) with no stdin and, when
/// given, one variable set for it alone; as [`run_qwen`].
pub fn run_client(
    program: &Path,
    shown: &str,
    args: &[String],
    env: Option<(&str, &str)>,
) -> Result<String, TryError> {
    let mut command = Command::new(program);
    command.args(args);
    if let Some((name, value)) = env {
        command.env(name, value);
    }
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let output: Output = crate::children::spawn(&mut command)
        .and_then(crate::children::Child::wait_with_output)
        .map_err(|e| TryError::NotRun(format!("cannot run {}: {e}", program.display())))?;
    if crate::children::interrupted() {
        return Err(TryError::Interrupted(shown.to_owned()));
    }
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    if output.status.success() {
        return Ok(text);
    }
    Err(TryError::NotRun(format!(
        "{shown} failed ({}):\n{}",
        output.status,
        outside::block(&text, 20, 300)
    )))
}

/// What `qwen mcp list` says of the extension's server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Connection {
    /// Connected: its line of the list.
    Connected(String),
    /// Listed, not connected: its line, and what to do.
    Disconnected { line: String, help: String },
    /// Not in the list at all.
    NotListed,
}

/// The verdict from `qwen mcp list` for `name`.
pub fn connection(listed: &str, name: &str, server: Option<&ServerFacts>) -> Connection {
    match super::server_state(listed, name) {
        Some((true, line)) => Connection::Connected(line),
        Some((false, line)) => Connection::Disconnected {
            line,
            help: disconnected_help(server),
        },
        None => Connection::NotListed,
    }
}

/// What to do when Qwen cannot connect: a remote server must answer and be
/// signed in to; a local one needs the variables its manifest passes.
fn disconnected_help(server: Option<&ServerFacts>) -> String {
    disconnected_help_for(server, "Qwen Code")
}

/// [`disconnected_help`] for `client` (its name in the message).
pub fn disconnected_help_for(server: Option<&ServerFacts>, client: &str) -> String {
    if let Some(url) = server.and_then(|s| s.http_url.as_deref()) {
        return format!(
            "a remote server connects once {} answers and {client} has signed in to it (its OAuth sign-in); `ecp check --url URL --token-env TOKEN` checks the endpoint itself",
            outside::value(url)
        );
    }
    let unset = unset_variables(server);
    if unset.is_empty() {
        return "`ecp call . \"a query\"` shows what the server says when it starts".to_owned();
    }
    format!(
        "set {} in the environment {client} starts from",
        unset.join(" and ")
    )
}

/// The variables the server's `env` refers to that are unset here (read
/// as Qwen fills a manifest, [`super::vars::names_in`]).
fn unset_variables(server: Option<&ServerFacts>) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for (_, value) in server.map(|s| s.env.as_slice()).unwrap_or_default() {
        for name in super::vars::names_in(value) {
            if std::env::var_os(&name).is_none() && !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names
}

/// Whether `path` is a file this user may run (on Unix: an execute bit).
pub fn is_program(path: &Path) -> bool {
    let Ok(metadata) = std::fs::metadata(path) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        metadata.is_file() && metadata.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        metadata.is_file()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_disconnected_server_gets_the_help_its_kind_needs() {
        let remote = ServerFacts {
            http_url: Some("https://context.acme.dev/mcp".into()),
            ..Default::default()
        };
        let help = disconnected_help(Some(&remote));
        assert!(
            help.contains("https://context.acme.dev/mcp answers") && help.contains("signed in"),
            "{help}"
        );
        let local = ServerFacts {
            env: vec![(
                "X_BASE_URL".into(),
                "${ECP_TRY_TEST_SURELY_UNSET_VARIABLE}".into(),
            )],
            ..Default::default()
        };
        assert_eq!(
            disconnected_help(Some(&local)),
            "set ECP_TRY_TEST_SURELY_UNSET_VARIABLE in the environment Qwen Code starts from"
        );
        // Qwen's own variables are none; `$NAME` is one, as Qwen reads it.
        let builtins = ServerFacts {
            env: vec![(
                "X_CONFIG".into(),
                "${extensionPath}${/}a${pathSeparator}$ECP_TRY_TEST_OTHER_UNSET".into(),
            )],
            ..Default::default()
        };
        assert_eq!(
            unset_variables(Some(&builtins)),
            ["ECP_TRY_TEST_OTHER_UNSET"]
        );
        assert!(disconnected_help(None).contains("ecp call"));
    }
}
