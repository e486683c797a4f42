//! The extension as every command reads it, read once, below every
//! command (it imports nothing of ecp but the ground: `files`, `json`,
//! `input`, `name`, `release`, and the runtime's profile):
//!
//! - [`Extension`], [`Project`]: a folder's manifest text and the project
//!   beside it (`Cargo.toml` of a Rust extension, `package.json` of a
//!   TypeScript one), each through the bounded reader of [`crate::files`]
//!   (regular files only, never through a link that leaves the folder,
//!   capped before reading);
//! - [`manifest`]: what a manifest says (`ecp lint`'s facts, doctor's
//!   lenient reading);
//! - [`archive`], [`tar`]: the one bounded reader of archives;
//! - [`staged`]: a file as it will be packaged, and which are documentation;
//! - [`scratch`]: where an archive is unpacked to be run for a moment;
//! - [`build`]: the entry point built (cargo, npm), reproducibly;
//! - [`runtime`]: which runtime a folder holds, and a folder tree read
//!   bounded;
//! - the file names every command agrees on: [`MANIFEST`], the other
//!   clients' [`CLIENT_FILES`], npm's [`NPM_PREFIX`].
//!
//! Upgrade reads `Cargo.toml` through its own guard, which also refuses
//! links inside the folder.

use std::path::{Path, PathBuf};

use crate::files::{self, FileProblem};

pub mod archive;
pub mod build;
pub mod manifest;
pub mod runtime;
pub mod scratch;
pub mod staged;
pub mod tar;

/// The manifest's file name.
pub const MANIFEST: &str = crate::input::MANIFEST;
/// Gemini CLI's manifest.
pub const GEMINI: &str = "gemini-extension.json";
/// Claude Code's plugin manifest.
pub const CLAUDE: &str = ".claude-plugin/plugin.json";
/// Claude Code's server file beside a plugin (read by Qwen's converter only
/// in its wrapped form).
pub const CLAUDE_MCP: &str = ".mcp.json";
/// An MCP Bundle's manifest.
pub const MCPB: &str = "manifest.json";

/// Every client file lint reads beside `qwen-extension.json`.
pub const CLIENT_FILES: &[&str] = &[GEMINI, CLAUDE, CLAUDE_MCP, MCPB];

/// The folder every entry of an npm tarball sits in.
pub const NPM_PREFIX: &str = "package/";

/// The project files of an extension folder that ecp reads.
#[derive(Debug, Clone, Default)]
pub struct Project {
    /// `Cargo.toml`, parsed; `None` when absent or not TOML (lint says the
    /// second through cargo's own refusal when it builds).
    pub cargo: Option<toml::Table>,
    /// `package.json`, parsed; `None` when absent or not JSON.
    pub package_json: Option<serde_json::Value>,
    /// Whether a `package.json` is there at all (a Node project, even one
    /// whose `package.json` npm would refuse).
    pub node: bool,
}

/// One extension folder: where it is, its manifest's text (when there is
/// one) and its project.
#[derive(Debug, Clone)]
pub struct Extension {
    /// The folder holding the manifest.
    pub folder: PathBuf,
    /// `qwen-extension.json`, as text; `None` when the folder has none.
    pub manifest_text: Option<String>,
    /// What the project files say.
    pub project: Project,
}

impl Extension {
    /// Reads the folder's manifest and project files. A file that is
    /// absent is `None`; one that is there but cannot be read as a regular
    /// file inside the folder, within its cap, is the error.
    pub fn read(folder: &Path) -> Result<Extension, FileProblem> {
        Ok(Extension {
            folder: folder.to_owned(),
            manifest_text: read_manifest(folder)?,
            project: Project::read(folder)?,
        })
    }
}

impl Project {
    /// Reads `Cargo.toml` and `package.json` beside the manifest.
    pub fn read(folder: &Path) -> Result<Project, FileProblem> {
        let cargo = read_if_there(folder, "Cargo.toml")?;
        let package_json = read_if_there(folder, "package.json")?;
        Ok(Project {
            cargo: cargo.and_then(|text| text.parse::<toml::Table>().ok()),
            node: package_json.is_some(),
            package_json: package_json.and_then(|text| serde_json::from_str(&text).ok()),
        })
    }

    /// `[package] version` of `Cargo.toml`.
    pub fn crate_version(&self) -> Option<String> {
        self.cargo
            .as_ref()?
            .get("package")?
            .get("version")?
            .as_str()
            .map(str::to_owned)
    }

    /// `version` of `package.json`.
    pub fn package_json_version(&self) -> Option<String> {
        self.package_json
            .as_ref()?
            .get("version")?
            .as_str()
            .map(str::to_owned)
    }

    /// What the project declares to ship besides the manifest, the entry
    /// point and the documentation: `[package.metadata.ecp] include` of
    /// `Cargo.toml`, then `"ecp": {"include": [...]}` of `package.json`
    /// (strings only).
    pub fn include(&self) -> Vec<String> {
        let from_cargo = self
            .cargo
            .as_ref()
            .and_then(|c| {
                c.get("package")?
                    .get("metadata")?
                    .get("ecp")?
                    .get("include")
            })
            .and_then(|i| i.as_array())
            .into_iter()
            .flatten()
            .filter_map(|i| i.as_str());
        let from_npm = self
            .package_json
            .as_ref()
            .and_then(|p| p.pointer("/ecp/include")?.as_array())
            .into_iter()
            .flatten()
            .filter_map(|i| i.as_str());
        from_cargo.chain(from_npm).map(str::to_owned).collect()
    }
}

/// The manifest of `folder`, as text, when there is one.
pub fn read_manifest(folder: &Path) -> Result<Option<String>, FileProblem> {
    read_if_there(folder, MANIFEST)
}

/// `name` in `folder`, read as text when it is there.
fn read_if_there(folder: &Path, name: &str) -> Result<Option<String>, FileProblem> {
    let path = folder.join(name);
    match std::fs::symlink_metadata(&path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        _ => files::read_text(&path, Some(folder), files::MAX_TEXT_BYTES).map(Some),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_project_says_its_versions_and_what_it_ships() {
        let temp = tempfile::tempdir().unwrap();
        let folder = temp.path();
        std::fs::write(
            folder.join("Cargo.toml"),
            "[package]\nname = \"x\"\nversion = \"1.2.3\"\n[package.metadata.ecp]\ninclude = [\"LICENSE\", 7, \"data/\"]\n",
        )
        .unwrap();
        std::fs::write(
            folder.join("package.json"),
            r#"{"version": "1.2.4", "ecp": {"include": ["NOTICE"]}}"#,
        )
        .unwrap();
        let extension = Extension::read(folder).unwrap();
        assert!(extension.manifest_text.is_none());
        let project = &extension.project;
        assert_eq!(project.crate_version().as_deref(), Some("1.2.3"));
        assert_eq!(project.package_json_version().as_deref(), Some("1.2.4"));
        assert_eq!(project.include(), ["LICENSE", "data/", "NOTICE"]);
        assert!(project.node);
    }

    #[test]
    fn files_that_are_not_toml_or_json_say_nothing_and_others_are_refused() {
        let temp = tempfile::tempdir().unwrap();
        let folder = temp.path();
        std::fs::write(folder.join("Cargo.toml"), "[package\n").unwrap();
        std::fs::write(folder.join("package.json"), "{").unwrap();
        let project = Project::read(folder).unwrap();
        assert!(project.cargo.is_none() && project.package_json.is_none());
        assert!(project.node);
        assert!(project.include().is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn a_link_out_of_the_folder_or_a_fifo_is_never_read() {
        let temp = tempfile::tempdir().unwrap();
        let folder = temp.path().join("extension");
        std::fs::create_dir(&folder).unwrap();
        let outside = temp.path().join("secret.toml");
        std::fs::write(&outside, "[package]\nversion = \"9.9.9\"\n").unwrap();
        std::os::unix::fs::symlink(&outside, folder.join("Cargo.toml")).unwrap();
        assert!(matches!(
            Project::read(&folder),
            Err(FileProblem::LeavesFolder { .. })
        ));
        std::fs::remove_file(folder.join("Cargo.toml")).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(folder.join(MANIFEST))
            .status()
            .unwrap();
        assert!(made.success());
        // Refused at once, not a read that waits for a writer.
        assert!(matches!(
            Extension::read(&folder),
            Err(FileProblem::NotRegular { .. })
        ));
    }
}
