//! The staged tree: which files of the extension folder go into the
//! archive, under which names and modes. Nothing is copied; entries point at
//! their sources and the writers stream them.

use std::path::{Component, Path, PathBuf};

use super::PackageError;
pub use crate::extension::staged::{StagedFile, documentation_files};
use crate::text::secrets::is_secret_file;

/// Folders never packaged, wherever they appear.
const EXCLUDED_FOLDERS: &[&str] = &[".git", ".hg", ".svn", "target", "node_modules", "dist"];

/// Collects the files to package, refusing what must never ship.
pub struct Stage {
    root: PathBuf,
    files: Vec<StagedFile>,
}

impl Stage {
    pub fn new(root: &Path) -> Result<Stage, PackageError> {
        let root = root.canonicalize().map_err(|source| PackageError::Io {
            path: root.to_owned(),
            source,
        })?;
        Ok(Stage {
            root,
            files: Vec::new(),
        })
    }

    /// Adds `relative` (a file or folder under the extension root).
    /// `required`: a missing path is an error rather than skipped.
    pub fn add(&mut self, relative: &str, required: bool) -> Result<(), PackageError> {
        // `docs/` names the folder itself (a trailing slash would make the
        // file system follow a link there).
        let relative = match relative.trim_end_matches('/') {
            "" => relative,
            trimmed => trimmed,
        };
        let relative_path = Path::new(relative);
        if !self.safe_way(relative, required)? {
            return Ok(());
        }
        let path = self.root.join(relative_path);
        let metadata = match std::fs::symlink_metadata(&path) {
            Ok(metadata) => metadata,
            Err(_) if !required => return Ok(()),
            Err(source) => return Err(PackageError::Io { path, source }),
        };
        if metadata.file_type().is_symlink() {
            return Err(PackageError::Refused {
                path: relative.to_owned(),
                reason: "it is a symlink; Qwen rejects links in release archives".into(),
            });
        }
        if metadata.is_dir() {
            let mut entries: Vec<_> = std::fs::read_dir(&path)
                .map_err(|source| PackageError::Io {
                    path: path.clone(),
                    source,
                })?
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| !EXCLUDED_FOLDERS.contains(&name.as_str()))
                .collect();
            entries.sort();
            for entry in entries {
                self.add(&format!("{}/{entry}", relative.trim_end_matches('/')), true)?;
            }
            return Ok(());
        }
        if !metadata.file_type().is_file() {
            return Err(PackageError::Refused {
                path: relative.to_owned(),
                reason: "it is a FIFO, socket or device, not a regular file".into(),
            });
        }
        // Defence in depth: the resolved path is inside the extension.
        let resolved = path.canonicalize().map_err(|source| PackageError::Io {
            path: path.clone(),
            source,
        })?;
        if !resolved.starts_with(&self.root) {
            return Err(PackageError::Refused {
                path: relative.to_owned(),
                reason: "it resolves outside the extension folder".into(),
            });
        }
        let name = relative
            .replace('\\', "/")
            .trim_start_matches("./")
            .to_owned();
        if is_secret_file(&name) {
            return Err(PackageError::Refused {
                path: name,
                reason: "it is an environment or key file; secrets come from the environment at run time".into(),
            });
        }
        self.push(name, path, 0o644, metadata.len());
        Ok(())
    }

    /// Whether `relative` may be staged: no backslash (a separator to the
    /// Windows and zip extractors: `..\..\evil` would become `../../evil`),
    /// inside the extension, and no link on its way (`docs -> /etc` would
    /// pack files from outside the extension under `docs/`). `false` for
    /// an optional path with a folder on its way missing.
    fn safe_way(&self, relative: &str, required: bool) -> Result<bool, PackageError> {
        let refused = |reason: String| PackageError::Refused {
            path: relative.to_owned(),
            reason,
        };
        if relative.contains('\\') {
            return Err(refused(
                "its name holds a backslash, which extractors read as a folder separator".into(),
            ));
        }
        let relative_path = Path::new(relative);
        if relative_path.is_absolute()
            || relative_path
                .components()
                .any(|c| matches!(c, Component::ParentDir | Component::Prefix(_)))
        {
            return Err(refused("it is outside the extension folder".into()));
        }
        let mut walked = self.root.clone();
        let parts: Vec<Component> = relative_path.components().collect();
        for part in parts.iter().take(parts.len().saturating_sub(1)) {
            walked.push(part);
            match std::fs::symlink_metadata(&walked) {
                Ok(metadata) if metadata.file_type().is_symlink() => {
                    return Err(refused(format!(
                        "the folder `{}` on its way is a symlink; only what is inside the extension is packaged",
                        walked.strip_prefix(&self.root).unwrap_or(&walked).display()
                    )));
                }
                Ok(_) => {}
                Err(_) if !required => return Ok(false),
                Err(source) => {
                    return Err(PackageError::Io {
                        path: walked,
                        source,
                    });
                }
            }
        }
        Ok(true)
    }

    /// Adds the entry point from anywhere on disk (a build output).
    pub fn add_entry_point(&mut self, name: &str, source: &Path) -> Result<(), PackageError> {
        let metadata = std::fs::metadata(source).map_err(|error| PackageError::MissingBinary {
            path: source.to_owned(),
            reason: error.to_string(),
        })?;
        if !metadata.is_file() {
            return Err(PackageError::MissingBinary {
                path: source.to_owned(),
                reason: "not a regular file".into(),
            });
        }
        self.push(name.to_owned(), source.to_owned(), 0o755, metadata.len());
        Ok(())
    }

    fn push(&mut self, name: String, source: PathBuf, mode: u32, size: u64) {
        self.files.retain(|f| f.name != name);
        self.files.push(StagedFile {
            name,
            source,
            mode,
            size,
        });
    }

    /// The files, sorted by name (the archive order).
    pub fn finish(mut self) -> Vec<StagedFile> {
        self.files.sort_by(|a, b| a.name.cmp(&b.name));
        self.files
    }
}
