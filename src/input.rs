//! What every command says about the path it was given. `ecp lint`, `ecp
//! package`, `ecp check` and `ecp call` all take an extension folder, a
//! manifest or an archive; a path that is not there, or a folder without a
//! manifest, reads the same everywhere: the path, what is wrong, what to do.

use std::path::{Path, PathBuf};

/// The manifest's file name.
pub const MANIFEST: &str = "qwen-extension.json";

/// A path given on the command line that cannot be used as an extension.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    #[error("{} does not exist", shown(path))]
    Missing { path: PathBuf },
    #[error("{} has no {MANIFEST}", shown(path))]
    NoManifest { path: PathBuf },
}

/// A path as the user typed it; `.` reads "the current folder (/abs/path)".
pub fn shown(path: &Path) -> String {
    if path == Path::new(".") || path.as_os_str().is_empty() {
        match std::env::current_dir() {
            Ok(cwd) => format!("the current folder ({})", cwd.display()),
            Err(_) => "the current folder".to_owned(),
        }
    } else {
        path.display().to_string()
    }
}

impl InputError {
    /// What to do about it.
    pub fn help(&self) -> String {
        match self {
            InputError::Missing { .. } => format!(
                "pass an extension folder, its {MANIFEST} or a .tar.gz/.zip archive; `ecp new NAME` creates an extension"
            ),
            InputError::NoManifest { .. } => format!(
                "run it in the extension folder (the one that holds {MANIFEST}) or pass that folder; `ecp new NAME` creates an extension"
            ),
        }
    }

    /// `Missing` when nothing is at `path` (a dangling symlink counts as
    /// there, and is judged by the command's own rules).
    pub fn check_exists(path: &Path) -> Result<(), InputError> {
        match std::fs::symlink_metadata(path) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                Err(InputError::Missing {
                    path: path.to_owned(),
                })
            }
            _ => Ok(()),
        }
    }
}

/// Prints `error: ...` and `= help: ...` on stderr, the one shape of every
/// could-not-run message.
pub fn print_error(message: &dyn std::fmt::Display, help: Option<&str>) {
    eprintln!("error: {message}");
    if let Some(help) = help {
        eprintln!("  = help: {help}");
    }
}
