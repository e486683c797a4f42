//! Opening what ecp reads from a folder or a path it was given, as an
//! attacker may have arranged it (lint, package, upgrade, verify, check's
//! cassettes, keys, Qwen's install records): only
//! regular files (never a FIFO, which would hang lint, nor a device such as
//! `/dev/zero`, which never ends), by `lstat` first, with a size cap before
//! reading and a bounded read after; and, inside a folder under review,
//! never through a symlink that leaves the folder (a `qwen-extension.json`
//! linked to `/proc/self/environ` would print the environment).

use std::{
    fs::{File, OpenOptions},
    io::Read,
    path::{Path, PathBuf},
};

/// The largest manifest or `Cargo.toml` lint reads.
pub const MAX_TEXT_BYTES: u64 = 1024 * 1024;

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum FileProblem {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: is {what}, not a regular file; ecp reads regular files only", path.display())]
    NotRegular { path: PathBuf, what: &'static str },
    #[error("{}: is a symlink that leads out of the folder under review ({}); ecp does not follow it", path.display(), target.display())]
    LeavesFolder { path: PathBuf, target: PathBuf },
    #[error("{}: is {size} bytes; ecp reads at most {max}", path.display())]
    TooLarge { path: PathBuf, size: u64, max: u64 },
}

fn kind(file_type: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if file_type.is_dir() {
        "a folder"
    } else if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else {
        "a special file"
    }
}

/// Opens `path` for reading if it is (or, inside `folder`, links to) a
/// regular file of at most `max` bytes. Returns the file and its size.
pub fn open_regular(
    path: &Path,
    folder: Option<&Path>,
    max: u64,
) -> Result<(File, u64), FileProblem> {
    let io = |source| FileProblem::Io {
        path: path.to_owned(),
        source,
    };
    let _ = std::fs::symlink_metadata(path).map_err(io)?;
    // Inside a folder under review the resolved path (links anywhere on the
    // way, `dist -> /elsewhere` included) must stay in the folder.
    if let Some(folder) = folder {
        let target = std::fs::canonicalize(path).map_err(io)?;
        let root = std::fs::canonicalize(folder).map_err(io)?;
        if !target.starts_with(&root) {
            return Err(FileProblem::LeavesFolder {
                path: path.to_owned(),
                target,
            });
        }
    }
    let metadata = std::fs::metadata(path).map_err(io)?;
    if !metadata.file_type().is_file() {
        return Err(FileProblem::NotRegular {
            path: path.to_owned(),
            what: kind(metadata.file_type()),
        });
    }
    if metadata.len() > max {
        return Err(FileProblem::TooLarge {
            path: path.to_owned(),
            size: metadata.len(),
            max,
        });
    }
    // O_NONBLOCK: should the file be swapped for a FIFO after the check,
    // opening it still does not wait for a writer.
    let mut options = OpenOptions::new();
    options.read(true);
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(0o4000);
    }
    let file = options.open(path).map_err(io)?;
    let opened = file.metadata().map_err(io)?;
    if !opened.file_type().is_file() {
        return Err(FileProblem::NotRegular {
            path: path.to_owned(),
            what: kind(opened.file_type()),
        });
    }
    Ok((file, opened.len()))
}

/// Reads a text file through [`open_regular`], at most `max` bytes even if
/// it grows meanwhile; invalid UTF-8 becomes U+FFFD.
pub fn read_text(path: &Path, folder: Option<&Path>, max: u64) -> Result<String, FileProblem> {
    let bytes = read_bytes(path, folder, max)?;
    Ok(match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(error) => String::from_utf8_lossy(error.as_bytes()).into_owned(),
    })
}

/// Reads a file through [`open_regular`], whole: one that is, or grows
/// while it is read to, more than `max` bytes is [`FileProblem::TooLarge`].
pub fn read_bytes(path: &Path, folder: Option<&Path>, max: u64) -> Result<Vec<u8>, FileProblem> {
    let (file, _) = open_regular(path, folder, max)?;
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| FileProblem::Io {
            path: path.to_owned(),
            source,
        })?;
    if bytes.len() as u64 > max {
        return Err(FileProblem::TooLarge {
            path: path.to_owned(),
            size: bytes.len() as u64,
            max,
        });
    }
    Ok(bytes)
}

/// The folders of an extension's source folder that hold what is built
/// or fetched, not its sources: [`changed_since`] skips them.
const BUILT: &[&str] = &["dist", "release", "target", "node_modules", ".git", "build"];

/// The first file of the source folder `folder` (its build outputs and
/// dependencies aside) changed after `made`, shown relative to `folder`;
/// `None` when none did. A folder of over 20,000 entries is not compared
/// (it counts as changed, with that reason). Links are not followed.
pub fn changed_since(folder: &Path, made: std::time::SystemTime) -> Option<String> {
    let mut stack = vec![folder.to_owned()];
    let mut seen = 0usize;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            seen += 1;
            if seen > 20_000 {
                return Some("the folder is too large to compare".into());
            }
            let name = entry.file_name();
            if dir == folder && BUILT.iter().any(|s| name == *s) {
                continue;
            }
            let Ok(metadata) = std::fs::symlink_metadata(entry.path()) else {
                continue;
            };
            if metadata.is_dir() {
                stack.push(entry.path());
            } else if metadata.modified().is_ok_and(|m| m > made) {
                let path = entry.path();
                let shown = path.strip_prefix(folder).unwrap_or(&path);
                return Some(format!("{} changed since", shown.display()));
            }
        }
    }
    None
}
