//! How an upgrade touches the folder: every path it will read, replace or
//! remove guarded first (a regular file or a real folder inside the
//! extension, never a link), the vendored runtime swapped in through a
//! sibling folder, and a swap an interrupted run left behind finished or
//! undone.

use super::*;

/// What an upgrade expects at a path it touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Expect {
    /// A regular file, read or replaced whole.
    File,
    /// A folder whose whole tree is read, replaced or removed.
    Tree,
}

/// The paths `ecp upgrade` reads, writes, renames or removes, relative to
/// the extension folder (and the `vendor/.ecp-runtime-*` an interrupted
/// swap left, [`leftovers`]).
pub(super) const TOUCHED: &[(&str, Expect)] = &[
    ("Cargo.toml", Expect::File),
    ("src/main.rs", Expect::File),
    ("src/lib.rs", Expect::File),
    (vendor::VENDOR_DIR, Expect::Tree),
    (CONTRACTS, Expect::Tree),
    ("src/profile", Expect::Tree),
    ("src/runtime", Expect::Tree),
    ("src/provider.rs", Expect::File),
    ("tests/provider.rs", Expect::File),
    ("tests/contract.rs", Expect::File),
];

/// What converting the copied layout reads besides: every source of the
/// crate (for the dependencies they still use).
pub(super) const COPIED_SOURCES: &[(&str, Expect)] =
    &[("src", Expect::Tree), ("tests", Expect::Tree)];

/// The prefixes of the folders [`replace_vendor`] writes beside
/// `vendor/ecp-runtime`.
pub(super) const NEW_PREFIX: &str = ".ecp-runtime-new-";
pub(super) const OLD_PREFIX: &str = ".ecp-runtime-old-";

pub(super) fn expecting<'a>(
    paths: impl Iterator<Item = (&'a str, Expect)>,
) -> Vec<(PathBuf, Expect)> {
    paths
        .map(|(path, expect)| (PathBuf::from(path), expect))
        .collect()
}

/// [`guard`] over [`TOUCHED`], then over the leftovers of an interrupted
/// swap (listed only once `vendor/` is known to be a real folder).
pub(super) fn guard_touched(folder: &Path) -> Result<(), UpgradeError> {
    guard(folder, &expecting(TOUCHED.iter().copied()))?;
    let (news, olds) = leftovers(folder)?;
    let leftovers: Vec<(PathBuf, Expect)> = news
        .into_iter()
        .chain(olds)
        .map(|path| {
            let relative = path.strip_prefix(folder).unwrap_or(&path).to_owned();
            (relative, Expect::Tree)
        })
        .collect();
    guard(folder, &leftovers)
}

/// Refuses, before anything is read or written, a link or special file on
/// the way to anything an upgrade touches: every folder from the extension
/// down to it and the file itself (the one write rule,
/// [`crate::writes`]), and everything inside the trees it reads or
/// replaces (`vendor/`, `contracts/v1`, the copied layout's folders, the
/// leftovers of an interrupted swap). A linked `vendor/` would have the
/// upgrade rename, remove and rewrite the folder at the link's target; a
/// FIFO would hang the read.
pub(super) fn guard(folder: &Path, touched: &[(PathBuf, Expect)]) -> Result<(), UpgradeError> {
    let refused = |problem| match problem {
        WriteProblem::Unsafe { path, what } => UpgradeError::Unsafe { path, what },
        WriteProblem::Io { path, source } => UpgradeError::Io { path, source },
    };
    for (relative, expect) in touched {
        let place = Place::within(folder, &folder.join(relative));
        let present = match expect {
            Expect::File => place.check_file(),
            Expect::Tree => place.check_folder(),
        }
        .map_err(refused)?;
        if !present || *expect == Expect::File {
            continue;
        }
        // Inside the tree: links are listed, never followed.
        let path = place.path();
        for inside in runtime::tree_paths(&path).map_err(io(&path))? {
            let entry = path.join(&inside);
            let kind = std::fs::symlink_metadata(&entry)
                .map_err(io(&entry))?
                .file_type();
            if let Some(what) = crate::writes::special(kind) {
                return Err(UpgradeError::Unsafe { path: entry, what });
            }
        }
    }
    Ok(())
}

/// The folders an interrupted [`replace_vendor`] left beside
/// `vendor/ecp-runtime`: (new copies, old copies), each sorted.
pub(super) fn leftovers(folder: &Path) -> Result<(Vec<PathBuf>, Vec<PathBuf>), UpgradeError> {
    let runtime = folder.join(vendor::VENDOR_DIR);
    let parent = runtime.parent().unwrap_or(folder);
    let mut news = Vec::new();
    let mut olds = Vec::new();
    // A link or a file here is refused by the guard over TOUCHED first.
    if !std::fs::symlink_metadata(parent).is_ok_and(|m| m.is_dir()) {
        return Ok((news, olds));
    }
    for entry in std::fs::read_dir(parent).map_err(io(parent))? {
        let entry = entry.map_err(io(parent))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(NEW_PREFIX) {
            news.push(entry.path());
        } else if name.starts_with(OLD_PREFIX) {
            olds.push(entry.path());
        }
    }
    news.sort();
    olds.sort();
    Ok((news, olds))
}

/// Finishes or undoes an upgrade that stopped inside [`replace_vendor`],
/// from what it left in `vendor/` (every leftover already passed
/// [`guard`]). [`replace_vendor`] writes a new copy into
/// `.ecp-runtime-new-*`, makes an empty `.ecp-runtime-old-*`, renames
/// `vendor/ecp-runtime` onto it, renames the new copy to
/// `vendor/ecp-runtime`, then removes the old copy. So:
///
/// - `vendor/ecp-runtime` missing (stopped between the two renames): a
///   complete new copy (exactly the carried runtime) is swapped in and the
///   old copy removed; without one, the old copy is put back. With neither
///   nothing is put back, and the upgrade then refuses, naming the missing
///   runtime.
/// - `vendor/ecp-runtime` present (stopped before the first rename or
///   after the second): the leftovers are removed.
///
/// Says what it did, one sentence per step.
pub(super) fn recover_swap(folder: &Path) -> Result<Vec<String>, UpgradeError> {
    let target = folder.join(vendor::VENDOR_DIR);
    let (mut news, mut olds) = leftovers(folder)?;
    let mut said = Vec::new();
    let shown = |path: &Path| {
        crate::text::outside::value(&path.strip_prefix(folder).unwrap_or(path).to_string_lossy())
    };
    if std::fs::symlink_metadata(&target).is_err() && !(news.is_empty() && olds.is_empty()) {
        let complete = news.iter().position(|new| {
            runtime::read_tree(new).is_ok_and(|tree| {
                vendor::tree_sha256(tree.iter().map(|(p, c)| (p.as_str(), c.as_slice())))
                    == vendor::runtime_sha256()
            })
        });
        let non_empty_old = olds
            .iter()
            .position(|old| std::fs::read_dir(old).is_ok_and(|mut d| d.next().is_some()));
        if let Some(index) = complete {
            let new = news.remove(index);
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                // Stopped before its mode was set, it would still be 0700.
                std::fs::set_permissions(&new, std::fs::Permissions::from_mode(0o755))
                    .map_err(io(&new))?;
            }
            std::fs::rename(&new, &target).map_err(io(&target))?;
            said.push(format!(
                "finished an interrupted upgrade: {} swapped in from {} (a complete copy of runtime {})",
                vendor::VENDOR_DIR,
                shown(&new),
                vendor::RUNTIME_VERSION
            ));
        } else if let Some(index) = non_empty_old {
            let old = olds.remove(index);
            std::fs::rename(&old, &target).map_err(io(&target))?;
            said.push(format!(
                "undid an interrupted upgrade: {} put back from {} (no complete new copy was left)",
                vendor::VENDOR_DIR,
                shown(&old)
            ));
        }
    }
    for leftover in news.iter().chain(&olds) {
        std::fs::remove_dir_all(leftover).map_err(io(leftover))?;
        said.push(format!(
            "removed {}, left by an interrupted upgrade",
            shown(leftover)
        ));
    }
    Ok(said)
}

/// Writes the carried runtime to a sibling of `vendor/ecp-runtime` and
/// swaps it in: the old copy is renamed away, the new one renamed in, the
/// old one removed. A failure on the way puts the old copy back.
pub(super) fn replace_vendor(folder: &Path) -> Result<(), UpgradeError> {
    let target = folder.join(vendor::VENDOR_DIR);
    let parent = target.parent().unwrap_or(folder).to_owned();
    std::fs::create_dir_all(&parent).map_err(io(&parent))?;
    let staging = tempfile::Builder::new()
        .prefix(NEW_PREFIX)
        .tempdir_in(&parent)
        .map_err(io(&parent))?;
    for (path, contents) in vendor::runtime_files() {
        let file = staging.path().join(&path);
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir).map_err(io(dir))?;
        }
        std::fs::write(&file, contents).map_err(io(&file))?;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // tempdir creates 0700; a source folder is 0755.
        std::fs::set_permissions(staging.path(), std::fs::Permissions::from_mode(0o755))
            .map_err(io(staging.path()))?;
    }
    let old = if std::fs::symlink_metadata(&target).is_ok() {
        let old = tempfile::Builder::new()
            .prefix(OLD_PREFIX)
            .tempdir_in(&parent)
            .map_err(io(&parent))?
            .keep();
        // rename(2) replaces the empty placeholder folder.
        std::fs::rename(&target, &old).map_err(io(&target))?;
        Some(old)
    } else {
        None
    };
    let staged = staging.keep();
    if let Err(source) = std::fs::rename(&staged, &target) {
        if let Some(old) = &old {
            let _ = std::fs::rename(old, &target);
        }
        let _ = std::fs::remove_dir_all(&staged);
        return Err(UpgradeError::Io {
            path: target,
            source,
        });
    }
    if let Some(old) = old {
        let _ = std::fs::remove_dir_all(old);
    }
    Ok(())
}

pub(super) fn write_atomically(path: &Path, contents: &[u8]) -> Result<(), UpgradeError> {
    crate::atomic::write(path, contents).map_err(|e| UpgradeError::Io {
        path: e.path,
        source: e.source,
    })
}
