//! Which archives `ecp package` made on this machine, for `ecp try`: an
//! archive lying in an extension's `dist/` or `release/` may have come
//! with the repository (a committed `dist/`, a zip download), and
//! installing it would install what it says, not what the folder says.
//! So every `ecp package` run records the digest of each archive it wrote,
//! per source folder, in ecp's cache (`$XDG_CACHE_HOME/ecp/made/`, else
//! `~/.cache/ecp/made/`: outside every repository, so no folder can bring
//! a record of its own), and `ecp try` reuses an archive only when its
//! bytes are the ones recorded; anything else is packaged again. Without a
//! home folder nothing is recorded, and `ecp try` always packages.

use std::path::{Path, PathBuf};

/// The most lines a record keeps (one per archive name).
const MAX_LINES: usize = 256;

fn cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("ecp").join("made"))
}

/// The record of `folder` (by its canonical path).
fn record_path(folder: &Path) -> Option<PathBuf> {
    let folder = std::fs::canonicalize(folder).ok()?;
    let key = crate::digest::sha256(folder.as_os_str().as_encoded_bytes());
    Some(cache_dir()?.join(key))
}

/// The recorded `(sha256, file name)` lines of `folder`.
fn read(folder: &Path) -> Vec<(String, String)> {
    let Some(path) = record_path(folder) else {
        return Vec::new();
    };
    let Ok(text) = crate::files::read_text(&path, None, 64 * 1024) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| {
            let (sum, name) = line.split_once("  ")?;
            Some((sum.to_owned(), name.to_owned()))
        })
        .collect()
}

/// Records that this machine's `ecp package` wrote `archives` (path and
/// sha256) for `folder`. A failure to record is no failure of the run: the
/// next `ecp try` packages again.
pub fn record<'a>(folder: &Path, archives: impl IntoIterator<Item = (&'a Path, &'a str)>) {
    let Some(path) = record_path(folder) else {
        return;
    };
    let mut lines = read(folder);
    for (archive, sha256) in archives {
        let Some(name) = archive.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        lines.retain(|(_, n)| n != name);
        lines.push((sha256.to_owned(), name.to_owned()));
    }
    let keep = lines.len().saturating_sub(MAX_LINES);
    let text: String = lines[keep..]
        .iter()
        .map(|(sum, name)| format!("{sum}  {name}\n"))
        .collect();
    if let Some(parent) = path.parent()
        && std::fs::create_dir_all(parent).is_ok()
    {
        let _ = crate::atomic::write(&path, text.as_bytes());
    }
}

/// Whether `archive` holds the bytes this machine's `ecp package` last
/// wrote under its name for `folder`.
pub fn made_here(folder: &Path, archive: &Path) -> bool {
    let Some(name) = archive.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    let Some((recorded, _)) = read(folder).into_iter().find(|(_, n)| n == name) else {
        return false;
    };
    let regular = std::fs::symlink_metadata(archive).is_ok_and(|m| m.file_type().is_file());
    regular && crate::digest::sha256_file(archive).is_ok_and(|sum| sum == recorded)
}
