//! Qwen Code on this machine, as `ecp try` drives it: the `qwen` program,
//! the folder its user-scope installs go to, and what an installed
//! extension records about where it came from.
//!
//! Measured in Qwen Code 0.24.4 (see `docs/commands.md`): an install goes to
//! `$HOME/.qwen/extensions/NAME/` (named after the manifest's `name`) with
//! a `.qwen-extension-install.json` holding `{"source", "type"}`; installing
//! a name that is installed fails, so a reinstall uninstalls first;
//! `qwen extensions install SOURCE --consent` asks nothing; `qwen mcp list`
//! prints `✓ NAME: ... - Connected` or `✗ NAME: ... - Disconnected` and
//! exits 0 either way.

pub mod env_file;
pub mod machine;
pub mod try_it;
pub mod vars;

use std::path::{Path, PathBuf};

/// The file Qwen writes into an installed extension's folder.
pub const INSTALL_METADATA: &str = ".qwen-extension-install.json";

/// The program to run: `explicit` when given, else `qwen` on `PATH`.
pub fn program(explicit: Option<&Path>) -> Option<PathBuf> {
    if let Some(explicit) = explicit {
        return Some(explicit.to_owned());
    }
    let name = if cfg!(windows) { "qwen.cmd" } else { "qwen" };
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|folder| folder.join(name))
        .find(|candidate| candidate.is_file())
}

/// The program `name` on `PATH` (on Windows also `name.exe`, `name.cmd`).
pub fn program_named(name: &str) -> Option<PathBuf> {
    let names: Vec<String> = if cfg!(windows) {
        vec![
            format!("{name}.exe"),
            format!("{name}.cmd"),
            name.to_owned(),
        ]
    } else {
        vec![name.to_owned()]
    };
    std::env::split_paths(&std::env::var_os("PATH")?).find_map(|folder| {
        names
            .iter()
            .map(|n| folder.join(n))
            .find(|candidate| candidate.is_file())
    })
}

/// This machine in Node's words (`process.platform`, `process.arch`), as
/// Qwen names release assets: `linux`/`darwin`/`win32`, `x64`/`arm64`.
pub fn host() -> (&'static str, &'static str) {
    let platform = match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        other => other,
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        "x86" => "ia32",
        other => other,
    };
    (platform, arch)
}

/// Where Qwen installs user-scope extensions (`$HOME/.qwen/extensions`).
pub fn extensions_dir() -> Option<PathBuf> {
    let home = std::env::var_os(if cfg!(windows) { "USERPROFILE" } else { "HOME" })?;
    Some(PathBuf::from(home).join(".qwen").join("extensions"))
}

/// An extension Qwen has installed under a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    pub folder: PathBuf,
    /// The source it was installed from, as Qwen recorded it.
    pub source: Option<String>,
}

/// The extension installed as `name`, if any. The install record is read
/// bounded (64 KiB) and only as far as its `source` string.
pub fn installed(name: &str) -> Option<Installed> {
    let folder = extensions_dir()?.join(name);
    std::fs::symlink_metadata(&folder).ok()?;
    let source = crate::files::read_text(&folder.join(INSTALL_METADATA), None, 64 * 1024)
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|record| record.get("source")?.as_str().map(str::to_owned));
    Some(Installed { folder, source })
}

/// What `qwen mcp list` says of the server `name`: `Some(true)` connected,
/// `Some(false)` disconnected, `None` not listed; with the line itself.
/// Qwen colours the mark (`ESC[31m✗ESC[0m`) even when its output is not a
/// terminal; the line comes back without colour.
pub fn server_state(listed: &str, name: &str) -> Option<(bool, String)> {
    listed.lines().find_map(|line| {
        let line = without_colour(line);
        let line = line.trim();
        let rest = line
            .strip_prefix('✓')
            .or_else(|| line.strip_prefix('✗'))?
            .trim_start();
        let server = rest.split(':').next()?;
        (server == name).then(|| {
            (
                line.ends_with("Connected") && !line.ends_with("Disconnected"),
                line.to_owned(),
            )
        })
    })
}

/// `line` without ANSI escape sequences (`ESC [ ... letter`).
fn without_colour(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' && chars.clone().next() == Some('[') {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `path` as one shell word (POSIX quoting when it needs any).
pub fn shell_word(path: &Path) -> String {
    let text = path.display().to_string();
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+,:@%=".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_mcp_list_lines_as_qwen_prints_them() {
        let listed = "Configured MCP servers:\n\n✓ acme-context: /x/dist/main  (stdio) - Connected\n✗ acme-context-ts: node /y/dist/main.js (stdio) - Disconnected\n";
        assert_eq!(
            server_state(listed, "acme-context").map(|s| s.0),
            Some(true)
        );
        assert_eq!(
            server_state(listed, "acme-context-ts").map(|s| s.0),
            Some(false)
        );
        assert_eq!(server_state(listed, "acme"), None);
        // As Qwen Code 0.24.4 prints it into a pipe.
        let coloured = "\x1b[31m✗\x1b[0m acme-context: /x/dist/main  (stdio) - Disconnected\n";
        assert_eq!(
            server_state(coloured, "acme-context"),
            Some((
                false,
                "✗ acme-context: /x/dist/main  (stdio) - Disconnected".to_owned()
            ))
        );
    }

    #[test]
    fn quotes_what_a_shell_would_split() {
        assert_eq!(
            shell_word(Path::new("/a/dist/x.tar.gz")),
            "/a/dist/x.tar.gz"
        );
        assert_eq!(shell_word(Path::new("/a b/it's")), "'/a b/it'\\''s'");
    }
}
