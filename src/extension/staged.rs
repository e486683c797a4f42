//! A file as it will be packaged: its name in the archive, where its bytes
//! are, its mode and size. `ecp package` stages the tree (`package/stage.rs`
//! decides what ships); the channels' writers (npm, mcpb) take staged files
//! and add their own. Which root files are documentation is one rule for
//! all of them.

use std::path::{Path, PathBuf};

/// One file of the archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StagedFile {
    /// The path inside the archive, `/`-separated, relative.
    pub name: String,
    pub source: PathBuf,
    /// 0o644 or 0o755.
    pub mode: u32,
    pub size: u64,
}

/// README and LICENSE files at the root, when present.
pub fn documentation_files(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file() || t.is_symlink()))
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| is_documentation(name))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Whether a root file name is documentation (README, LICENSE).
pub fn is_documentation(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    !name.contains('/')
        && (upper.starts_with("README")
            || upper.starts_with("LICENSE")
            || upper.starts_with("LICENCE"))
}
