//! The runtime an extension folder holds, as every command reads it: the
//! record `ecp new` and `ecp upgrade` leave in `Cargo.toml`
//! (`[package.metadata.ecp.runtime]`), or ecp 0.1.0's copied layout; and
//! the bounded reading of a folder tree (the vendored runtime's, an
//! extracted archive's) that upgrade, lint and check compare by.

/// The runtime an extension folder holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Installed {
    /// `vendor/ecp-runtime`, with the version and checksum `Cargo.toml`
    /// recorded when ecp wrote it.
    Vendored {
        version: String,
        recorded_sha256: Option<String>,
    },
    /// ecp 0.1.0's layout: the runtime copied into `src/runtime/` and
    /// `src/profile/`, the contract into `contracts/v1/`.
    Copied,
}

/// The runtime version ecp 0.1.0's copied layout holds.
pub const COPIED_VERSION: &str = "0.1.0";

impl Installed {
    /// Its runtime version.
    pub fn version(&self) -> &str {
        match self {
            Installed::Vendored { version, .. } => version,
            Installed::Copied => COPIED_VERSION,
        }
    }
}

/// `[package.metadata.ecp.runtime]` of a parsed `Cargo.toml`: (version,
/// sha256).
fn recorded(cargo_toml: &toml::Table) -> Option<(String, Option<String>)> {
    let runtime = cargo_toml
        .get("package")?
        .get("metadata")?
        .get("ecp")?
        .get("runtime")?;
    Some((
        runtime.get("version")?.as_str()?.to_owned(),
        runtime
            .get("sha256")
            .and_then(|s| s.as_str())
            .map(str::to_owned),
    ))
}

/// Which runtime the extension at `folder` (whose `Cargo.toml` is
/// `cargo_toml`) holds, if it is one that ecp generated.
pub fn installed(folder: &std::path::Path, cargo_toml: &toml::Table) -> Option<Installed> {
    if let Some((version, recorded_sha256)) = recorded(cargo_toml) {
        return Some(Installed::Vendored {
            version,
            recorded_sha256,
        });
    }
    let copied =
        folder.join("src/runtime/mod.rs").is_file() && folder.join("src/profile/mod.rs").is_file();
    copied.then_some(Installed::Copied)
}

/// The largest file [`read_tree`] reads (the runtime's largest is far
/// below; a tree is someone else's folder).
const MAX_TREE_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// The most [`read_tree`] reads from one tree, all files together (the
/// runtime is under 1 MiB).
const MAX_TREE_BYTES: u64 = 64 * 1024 * 1024;

/// Every file under `root` as (relative `/` path, contents), sorted; a link
/// is read as its target text behind a marker, so that it never matches a
/// file (and is never followed). Only regular files are opened (a FIFO
/// would hang the read, a device never end it), without waiting, and read
/// bounded: at most [`MAX_TREE_FILE_BYTES`] a file and [`MAX_TREE_BYTES`]
/// in all, else an error that names the file.
pub fn read_tree(root: &std::path::Path) -> std::io::Result<Vec<(String, Vec<u8>)>> {
    let mut files = Vec::new();
    let mut total: u64 = 0;
    walk(root, &mut |relative, path, kind| {
        let contents = if kind.is_symlink() {
            let target = std::fs::read_link(path)?;
            format!("\0link\0{}", target.display()).into_bytes()
        } else {
            let (file, _) = crate::files::open_regular(path, None, MAX_TREE_FILE_BYTES)
                .map_err(|problem| not_read(&relative, problem))?;
            let mut contents = Vec::new();
            std::io::Read::read_to_end(
                &mut std::io::Read::take(file, MAX_TREE_FILE_BYTES + 1),
                &mut contents,
            )?;
            if contents.len() as u64 > MAX_TREE_FILE_BYTES {
                return Err(invalid(format!(
                    "{relative} grew past {MAX_TREE_FILE_BYTES} bytes while it was read"
                )));
            }
            contents
        };
        total += contents.len() as u64;
        if total > MAX_TREE_BYTES {
            return Err(invalid(format!(
                "holds more than {MAX_TREE_BYTES} bytes of files (at {relative}); a tree is read up to that"
            )));
        }
        files.push((relative, contents));
        Ok(())
    })?;
    files.sort();
    Ok(files)
}

fn invalid(message: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, message)
}

/// Why the file at `relative` (in a tree) was not read.
fn not_read(relative: &str, problem: crate::files::FileProblem) -> std::io::Error {
    use crate::files::FileProblem;
    match problem {
        FileProblem::Io { source, .. } => {
            std::io::Error::new(source.kind(), format!("{relative}: {source}"))
        }
        FileProblem::NotRegular { what, .. } => {
            invalid(format!("{relative} is {what}, not a regular file"))
        }
        FileProblem::TooLarge { size, max, .. } => invalid(format!(
            "{relative} is {size} bytes; a file of a tree is read up to {max}"
        )),
        other => invalid(other.to_string()),
    }
}

/// The relative `/` paths of every file and link under `root`, sorted,
/// without reading them.
pub fn tree_paths(root: &std::path::Path) -> std::io::Result<Vec<String>> {
    let mut paths = Vec::new();
    walk(root, &mut |relative, _, _| {
        paths.push(relative);
        Ok(())
    })?;
    paths.sort();
    Ok(paths)
}

/// Calls `visit(relative path, path, kind)` for every non-folder under
/// `root`; links are reported, never followed.
fn walk(
    root: &std::path::Path,
    visit: &mut dyn FnMut(String, &std::path::Path, std::fs::FileType) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let path = entry.path();
            let kind = entry.file_type()?;
            if kind.is_dir() {
                stack.push(path);
                continue;
            }
            let relative = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .to_string_lossy()
                .replace('\\', "/");
            visit(relative, &path, kind)?;
        }
    }
    Ok(())
}
