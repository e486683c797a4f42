//! What every command says about the path it was given. `ecp lint`, `ecp
//! package`, `ecp check` and `ecp call` all take an extension folder, a
//! manifest or an archive; a path that is not there, a folder without a
//! manifest, a file where a folder is expected or a folder where a file is,
//! reads the same everywhere: the path (once), what is wrong, what to do.
//! [`Takes::check`] is the one rule; the command line applies it to every
//! path argument before a command starts.

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
    /// A file where a folder (or an archive) is expected.
    #[error("{} is a file; `ecp {command}` takes {}", shown(path), takes.wanted())]
    NotAFolder {
        path: PathBuf,
        command: String,
        takes: Takes,
    },
    /// A folder where a file is expected.
    #[error("{} is a folder; `ecp {command}` takes {}", shown(path), takes.wanted())]
    NotAFile {
        path: PathBuf,
        command: String,
        takes: Takes,
    },
}

/// What a command takes at one of its path arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Takes {
    /// An extension folder (`ecp package`, `ecp upgrade`).
    Folder,
    /// An extension folder or a release archive (`ecp check`, `ecp call`).
    FolderOrArchive,
    /// An extension folder, a manifest, an archive or a release folder
    /// (`ecp lint`): any file but a folder named like an archive.
    Anything,
    /// A release archive (`ecp verify`).
    Archive,
    /// A folder that may not exist yet (`ecp new --dir`, `ecp package
    /// --out-dir`).
    NewFolder,
    /// A file, judged by the command once it is one (keys, binaries,
    /// cassettes); only a folder is refused here.
    File,
}

/// A file name `ecp` reads as a release archive.
pub fn is_archive_name(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.ends_with(".tar.gz") || name.ends_with(".tgz") || name.ends_with(".zip")
}

impl Takes {
    fn wanted(self) -> &'static str {
        match self {
            Takes::Folder => "the extension folder",
            Takes::FolderOrArchive => "an extension folder or a .tar.gz/.zip archive",
            Takes::Anything => {
                "an extension folder, its manifest, a .tar.gz/.zip archive or a release folder"
            }
            Takes::Archive => "a .tar.gz/.zip release archive",
            Takes::NewFolder => "a folder (one that does not exist yet is created)",
            Takes::File => "a file",
        }
    }

    /// Whether `path` is what `ecp COMMAND` takes here: a path that is
    /// not there is [`InputError::Missing`] (except for a new folder or a
    /// file the command judges itself), a file where a folder is expected
    /// [`InputError::NotAFolder`], and the reverse [`InputError::NotAFile`].
    /// A dangling symlink counts as there, and is judged by the command.
    pub fn check(self, path: &Path, command: &str) -> Result<(), InputError> {
        if std::fs::symlink_metadata(path).is_err() {
            return match self {
                Takes::NewFolder | Takes::File => Ok(()),
                _ => InputError::check_exists(path),
            };
        }
        let Ok(metadata) = std::fs::metadata(path) else {
            // A dangling link, or one that cannot be followed.
            return Ok(());
        };
        let folder = metadata.is_dir();
        let archive = is_archive_name(path);
        let not_a_folder = || InputError::NotAFolder {
            path: path.to_owned(),
            command: command.to_owned(),
            takes: self,
        };
        let not_a_file = || InputError::NotAFile {
            path: path.to_owned(),
            command: command.to_owned(),
            takes: self,
        };
        match self {
            Takes::Folder | Takes::NewFolder if !folder => Err(not_a_folder()),
            Takes::FolderOrArchive if !folder && !archive => Err(not_a_folder()),
            Takes::Anything if folder && archive => Err(not_a_file()),
            Takes::Archive | Takes::File if folder => Err(not_a_file()),
            _ => Ok(()),
        }
    }
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
            InputError::NotAFolder {
                path,
                command,
                takes,
            } => not_a_folder_help(path, command, *takes),
            InputError::NotAFile {
                path,
                command,
                takes,
            } => not_a_file_help(path, command, *takes),
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

/// What to pass instead of the file at `path`.
fn not_a_folder_help(path: &Path, command: &str, takes: Takes) -> String {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if takes == Takes::NewFolder {
        return "pick another path, or remove or rename the file".into();
    }
    if name == MANIFEST {
        let parent = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.display().to_string(),
            _ => ".".to_owned(),
        };
        return format!("pass the folder that holds it: `ecp {command} {parent}`");
    }
    if is_archive_name(path) {
        return format!(
            "an archive is what `ecp package` writes; `ecp lint`, `ecp check` and `ecp verify` take archives, `ecp {command}` the extension folder (the one that holds {MANIFEST})"
        );
    }
    match takes {
        Takes::FolderOrArchive => format!(
            "pass the extension folder (the one that holds {MANIFEST}) or an archive `ecp package` wrote"
        ),
        _ => format!("pass the extension folder (the one that holds {MANIFEST})"),
    }
}

/// What to pass instead of the folder at `path`.
fn not_a_file_help(path: &Path, command: &str, takes: Takes) -> String {
    match takes {
        Takes::Archive => {
            let mut archives: Vec<String> = std::fs::read_dir(path)
                .into_iter()
                .flatten()
                .flatten()
                .map(|entry| entry.path())
                .filter(|p| is_archive_name(p) && p.is_file())
                .map(|p| p.display().to_string())
                .collect();
            archives.sort();
            if let Some(first) = archives.first() {
                format!("pass one of the archives in it, e.g. `ecp {command} {first}`")
            } else if path.join(MANIFEST).exists() {
                format!(
                    "that is an extension folder: `ecp package` writes its archives into dist/, then `ecp {command} dist/ARCHIVE`; `ecp lint` and `ecp check` take the folder itself"
                )
            } else {
                "pass a .tar.gz or .zip archive as `ecp package` writes it into dist/".into()
            }
        }
        Takes::Anything => format!(
            "its name says archive but it is a folder; pass the archive file itself, or rename the folder to lint it as an extension folder with `ecp {command}`"
        ),
        _ => "pass the file itself, not the folder that holds it".into(),
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
