//! `ecp try --client gemini|claude`: a release archive into Gemini CLI or
//! Claude Code through the client's own CLI, then the client's own status
//! of the server (`docs/channels-facts.md` measured each step with Gemini
//! CLI 0.61.0 and Claude Code 2.1.332).
//!
//! - The archive is unpacked into ecp's folder for the client
//!   ([`stage_root`]), where it stays: Claude Code loads a plugin of a
//!   directory marketplace in place, and Gemini CLI records the folder as
//!   the extension's source (which is how a later `ecp try` knows the
//!   installed extension as its own).
//! - Gemini CLI: `gemini extensions install FOLDER --consent
//!   --skip-settings`, with `GEMINI_CLI_TRUST_WORKSPACE=true` for that one
//!   command (Gemini otherwise asks whether to trust the unpacked folder,
//!   and waits even with no terminal); an extension of the name that an
//!   earlier `ecp try` installed is uninstalled first. `gemini mcp list`
//!   then says `Connected`, `Disconnected`, or `Disabled` in a folder the
//!   user has not trusted (Gemini runs no stdio server there).
//! - Claude Code: the folder is a directory marketplace named
//!   [`MARKETPLACE`] holding every plugin `ecp try` put there; `claude
//!   plugin marketplace add` and `claude plugin install NAME@ecp-try`
//!   (both idempotent), then `claude mcp list`.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::Client;
use crate::{extension::archive, qwen::try_it::TryError};

/// The directory marketplace of Claude Code that `ecp try` keeps.
pub const MARKETPLACE: &str = "ecp-try";
/// Where the unpacked archives go instead of ecp's data folder.
pub const DIR_ENV: &str = "ECP_TRY_DIR";

/// The folder of `client`'s unpacked archives: `$ECP_TRY_DIR/CLIENT`, else
/// `$XDG_DATA_HOME/ecp/try/CLIENT`, else under `~/.local/share`.
pub fn stage_root(client: Client) -> Option<PathBuf> {
    let base = std::env::var_os(DIR_ENV)
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            let data = std::env::var_os("XDG_DATA_HOME")
                .filter(|d| !d.is_empty())
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".local/share")))?;
            Some(data.join("ecp/try"))
        })?;
    Some(base.join(client_word(client)))
}

/// The client's command name, and its folder's.
pub fn client_word(client: Client) -> &'static str {
    match client {
        Client::Qwen => "qwen",
        Client::Gemini => "gemini",
        Client::Claude => "claude",
        Client::Mcpb => "mcpb",
    }
}

fn not_run(message: String) -> TryError {
    TryError::NotRun(message)
}

/// Unpacks `archive` (already linted) into `root/NAME`, replacing what an
/// earlier run put there; for Claude Code, writes the marketplace that
/// lists it. The unpacked extension's folder.
pub fn stage(archive: &Path, name: &str, client: Client, root: &Path) -> Result<PathBuf, TryError> {
    // The name becomes a folder that is replaced: one plain component.
    let plain = std::path::Path::new(name).components().count() == 1
        && !name.starts_with('.')
        && !name.contains(['/', '\\']);
    if !plain {
        return Err(not_run(format!(
            "{}: the extension's name {} cannot name a folder",
            archive.display(),
            crate::text::outside::value(name)
        )));
    }
    let cannot =
        |what: &str, e: std::io::Error| not_run(format!("cannot {what} {}: {e}", root.display()));
    std::fs::create_dir_all(root).map_err(|e| cannot("create", e))?;
    let unpacked = tempfile::Builder::new()
        .prefix(".unpacking-")
        .tempdir_in(root)
        .map_err(|e| cannot("write into", e))?;
    archive::unpack(archive, unpacked.path())
        .map_err(|e| not_run(format!("{}: {e}", archive.display())))?;
    let files = crate::extension::runtime::tree_paths(unpacked.path()).unwrap_or_default();
    let prefix = archive::manifest_root_of(files.iter().map(String::as_str)).unwrap_or_default();
    let folder = unpacked.path().join(prefix.trim_end_matches('/'));
    if !folder.join(client.file()).is_file() {
        return Err(not_run(format!(
            "{} holds no {} for {}: package it with `ecp package --clients {}` (it writes the manifest from qwen-extension.json)",
            archive.display(),
            client.file(),
            client.title(),
            client_word(client)
        )));
    }
    let place = root.join(name);
    if place.exists() {
        std::fs::remove_dir_all(&place).map_err(|e| cannot("replace the earlier copy in", e))?;
    }
    std::fs::rename(&folder, &place).map_err(|e| cannot("move the copy into", e))?;
    if client == Client::Claude {
        write_marketplace(root)?;
    }
    Ok(place)
}

/// `.claude-plugin/marketplace.json` listing every plugin folder in
/// `root`.
fn write_marketplace(root: &Path) -> Result<(), TryError> {
    let mut names: Vec<String> = std::fs::read_dir(root)
        .map_err(|e| not_run(format!("{}: {e}", root.display())))?
        .flatten()
        .filter(|entry| entry.path().join(super::CLAUDE).is_file())
        .filter_map(|entry| entry.file_name().to_str().map(str::to_owned))
        .filter(|name| !name.starts_with('.'))
        .collect();
    names.sort();
    let plugins: Vec<Value> = (names.iter())
        .map(|name| json!({"name": name, "source": format!("./{name}")}))
        .collect();
    let marketplace = json!({
        "name": MARKETPLACE,
        "owner": {"name": "ecp try"},
        "metadata": {"description": "Extensions that `ecp try` unpacked from their release archives"},
        "plugins": plugins,
    });
    let file = root.join(".claude-plugin/marketplace.json");
    crate::writes::Place::destination(&file)
        .write(super::render(&marketplace).as_bytes())
        .map_err(|problem| not_run(format!("{}: {problem}", file.display())))
}

/// One command of a client: its arguments, and an environment variable set
/// for it alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub args: Vec<String>,
    pub env: Option<(&'static str, &'static str)>,
}

impl Step {
    fn new(args: &[&str]) -> Step {
        Step {
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: None,
        }
    }

    /// The command as a shell line, `program` named as the user types it.
    pub fn shown(&self, program: &str) -> String {
        let mut words: Vec<String> = Vec::new();
        if let Some((name, value)) = self.env {
            words.push(format!("{name}={value}"));
        }
        words.push(program.to_owned());
        words.extend(
            self.args
                .iter()
                .map(|a| crate::qwen::shell_word(Path::new(a))),
        );
        words.join(" ")
    }
}

/// The commands that install the staged `folder` as `name` (after the
/// uninstall of an earlier `ecp try`'s Gemini install, which the command
/// line runs first).
pub fn install_steps(client: Client, folder: &Path, name: &str) -> Vec<Step> {
    let folder = folder.to_string_lossy();
    match client {
        Client::Gemini => {
            let mut install = Step::new(&[
                "extensions",
                "install",
                &folder,
                "--consent",
                "--skip-settings",
            ]);
            install.env = Some(("GEMINI_CLI_TRUST_WORKSPACE", "true"));
            vec![install]
        }
        Client::Claude => {
            let root = Path::new(&*folder).parent().unwrap_or(Path::new("."));
            vec![
                Step::new(&["plugin", "marketplace", "add", &root.to_string_lossy()]),
                Step::new(&["plugin", "install", &format!("{name}@{MARKETPLACE}")]),
            ]
        }
        Client::Qwen | Client::Mcpb => Vec::new(),
    }
}

/// What Gemini CLI has installed under `name`: the source it recorded, when
/// it has the extension (`~/.gemini/extensions/NAME/.gemini-extension-install.json`).
pub fn gemini_installed(name: &str) -> Option<Option<String>> {
    let home = std::env::var_os("HOME")?;
    let folder = Path::new(&home).join(".gemini/extensions").join(name);
    if !folder.exists() {
        return None;
    }
    let text = crate::files::read_text(
        &folder.join(".gemini-extension-install.json"),
        None,
        64 * 1024,
    )
    .ok();
    let source = text
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| v.get("source").and_then(Value::as_str).map(str::to_owned));
    Some(source)
}

/// The client's own status of the server, from its `mcp list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    Connected(String),
    /// Listed, not connected.
    Disconnected(String),
    /// Gemini CLI lists it, but runs no stdio server in an untrusted folder.
    Disabled(String),
    NotListed,
}

/// Reads `listed` (the client's `mcp list` output) for the extension `name`.
pub fn status(client: Client, listed: &str, name: &str) -> Status {
    let line = match client {
        Client::Gemini => {
            let from = format!(" (from {name}):");
            listed.lines().find(|l| l.contains(&from))
        }
        _ => {
            let prefix = format!("plugin:{name}:");
            listed.lines().find(|l| l.trim_start().starts_with(&prefix))
        }
    };
    let Some(line) = line.map(|l| l.trim().to_owned()) else {
        return Status::NotListed;
    };
    let ending = line.rsplit(" - ").next().unwrap_or_default();
    if ending.ends_with("Connected") && !ending.ends_with("Disconnected") {
        Status::Connected(line)
    } else if ending.ends_with("Disabled") {
        Status::Disabled(line)
    } else {
        Status::Disconnected(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_clients_list_line_is_read_as_it_prints_it() {
        // Gemini CLI 0.61.0 and Claude Code 2.1.332, as measured.
        let gemini = "Configured MCP servers:\n\n✓ acme-context (from acme-context): node /h/.gemini/extensions/acme-context/dist/main.js (stdio) - Connected\n";
        assert!(matches!(
            status(Client::Gemini, gemini, "acme-context"),
            Status::Connected(_)
        ));
        let off = gemini
            .replace("✓", "✗")
            .replace("- Connected", "- Disconnected");
        assert!(matches!(
            status(Client::Gemini, &off, "acme-context"),
            Status::Disconnected(_)
        ));
        let untrusted = gemini
            .replace("✓", "○")
            .replace("- Connected", "- Disabled");
        assert!(matches!(
            status(Client::Gemini, &untrusted, "acme-context"),
            Status::Disabled(_)
        ));
        assert_eq!(status(Client::Gemini, gemini, "acme"), Status::NotListed);

        let claude = "Checking MCP server health…\n\nplugin:acme-context:acme-context: node /m/acme-context/dist/main.js - ✔ Connected\n";
        assert!(matches!(
            status(Client::Claude, claude, "acme-context"),
            Status::Connected(_)
        ));
        let failed = claude.replace(
            "✔ Connected",
            "✘ Failed to connect — CONNECTION_CLOSED: Connection closed",
        );
        assert!(matches!(
            status(Client::Claude, &failed, "acme-context"),
            Status::Disconnected(_)
        ));
        assert_eq!(status(Client::Claude, claude, "other"), Status::NotListed);
    }

    #[test]
    fn a_name_that_is_not_one_plain_folder_is_refused_before_anything_is_written() {
        let root = tempfile::tempdir().unwrap();
        let keep = root.path().join("keep");
        std::fs::create_dir_all(&keep).unwrap();
        for name in ["..", ".", "", "a/b", ".hidden"] {
            let error = stage(
                Path::new("/nonexistent.tar.gz"),
                name,
                Client::Gemini,
                &keep,
            )
            .unwrap_err()
            .to_string();
            assert!(error.contains("cannot name a folder"), "{name:?}: {error}");
        }
        assert!(keep.is_dir() && root.path().is_dir());
    }

    #[test]
    fn the_install_commands_are_the_clients_own() {
        let folder = Path::new("/d/ecp/try/claude/acme-context");
        let shown: Vec<String> = (install_steps(Client::Claude, folder, "acme-context").iter())
            .map(|s| s.shown("claude"))
            .collect();
        assert_eq!(
            shown,
            [
                "claude plugin marketplace add /d/ecp/try/claude",
                "claude plugin install acme-context@ecp-try"
            ]
        );
        let gemini = install_steps(
            Client::Gemini,
            Path::new("/d/g/acme-context"),
            "acme-context",
        );
        assert_eq!(
            gemini[0].shown("gemini"),
            "GEMINI_CLI_TRUST_WORKSPACE=true gemini extensions install /d/g/acme-context --consent --skip-settings"
        );
    }
}
