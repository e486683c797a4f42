//! Release archives (`.tar.gz`, `.zip`): read every entry's header, then
//! check the archive rules (manifest place, entry point and its mode,
//! secret files, links, unsafe paths, duplicates) and lint the manifest
//! inside.

use std::{collections::HashSet, fs::File, io::Read, path::Path};

use super::{
    ArchiveSummary, Finding, LintError, MANIFEST, MAX_BUNDLE_BYTES, Report, Rule,
    lint_manifest_text, manifest::EntryKind,
};

/// Largest manifest read from an archive.
const MAX_MANIFEST_BYTES: u64 = 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Directory,
    Link,
    Other,
}

#[derive(Debug, Clone)]
struct Entry {
    path: String,
    kind: Kind,
    mode: u32,
    size: u64,
    /// Kept for manifests only.
    data: Option<Vec<u8>>,
}

fn archive_error(path: &Path, error: impl std::fmt::Display) -> LintError {
    LintError::Archive {
        path: path.to_owned(),
        message: error.to_string(),
    }
}

fn is_manifest_name(path: &str) -> bool {
    path.rsplit('/').next() == Some(MANIFEST)
}

/// The bytes of a manifest entry (small regular files named
/// qwen-extension.json); `None` for every other entry, which is not read.
fn manifest_data(
    kind: Kind,
    name: &str,
    size: u64,
    entry: &mut impl Read,
) -> std::io::Result<Option<Vec<u8>>> {
    if kind != Kind::File || !is_manifest_name(name) || size > MAX_MANIFEST_BYTES {
        return Ok(None);
    }
    let mut data = Vec::new();
    entry.read_to_end(&mut data)?;
    Ok(Some(data))
}

fn read_tar_gz(path: &Path) -> Result<Vec<Entry>, LintError> {
    let (file, _) = super::files::open_regular(path, None, u64::MAX)?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut entries = Vec::new();
    for entry in archive.entries().map_err(|e| archive_error(path, e))? {
        let mut entry = entry.map_err(|e| archive_error(path, e))?;
        let header = entry.header();
        let kind = match header.entry_type() {
            tar::EntryType::Regular | tar::EntryType::Continuous => Kind::File,
            tar::EntryType::Directory => Kind::Directory,
            tar::EntryType::Symlink | tar::EntryType::Link => Kind::Link,
            _ => Kind::Other,
        };
        let mode = header.mode().unwrap_or(0);
        let size = header.size().unwrap_or(0);
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let data =
            manifest_data(kind, &name, size, &mut entry).map_err(|e| archive_error(path, e))?;
        entries.push(Entry {
            path: name,
            kind,
            mode,
            size,
            data,
        });
    }
    Ok(entries)
}

fn read_zip(path: &Path) -> Result<Vec<Entry>, LintError> {
    let (file, _) = super::files::open_regular(path, None, u64::MAX)?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| archive_error(path, e))?;
    let mut entries = Vec::new();
    for index in 0..archive.len() {
        let mut entry = archive
            .by_index(index)
            .map_err(|e| archive_error(path, e))?;
        let name = entry
            .name()
            .map(|n| n.into_owned())
            .unwrap_or_else(|_| String::from_utf8_lossy(entry.name_raw()).into_owned());
        let mode = entry.unix_mode().unwrap_or(0);
        let kind = if entry.is_symlink() {
            Kind::Link
        } else if entry.is_dir() {
            Kind::Directory
        } else if entry.is_file() {
            Kind::File
        } else {
            Kind::Other
        };
        let size = entry.size();
        let data =
            manifest_data(kind, &name, size, &mut entry).map_err(|e| archive_error(path, e))?;
        entries.push(Entry {
            path: name,
            kind,
            mode: mode & 0o7777,
            size,
            data,
        });
    }
    Ok(entries)
}

/// Reads the entry named exactly `wanted` again (the bundle, known only
/// once the manifest is read), up to [`MAX_BUNDLE_BYTES`]; `None` when it is
/// larger.
fn read_entry(path: &Path, wanted: &str) -> Result<Option<String>, LintError> {
    let open = || {
        File::open(path).map_err(|source| LintError::Read {
            path: path.to_owned(),
            source,
        })
    };
    let take = |entry: &mut dyn Read, size: u64| -> Result<Option<String>, LintError> {
        if size > MAX_BUNDLE_BYTES {
            return Ok(None);
        }
        let mut data = Vec::new();
        entry
            .take(MAX_BUNDLE_BYTES + 1)
            .read_to_end(&mut data)
            .map_err(|e| archive_error(path, e))?;
        Ok(Some(String::from_utf8_lossy(&data).into_owned()))
    };
    let name = path.to_string_lossy();
    if name.ends_with(".zip") {
        let mut archive = zip::ZipArchive::new(open()?).map_err(|e| archive_error(path, e))?;
        let mut entry = archive
            .by_name(wanted)
            .map_err(|e| archive_error(path, e))?;
        let size = entry.size();
        return take(&mut entry, size);
    }
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(open()?));
    for entry in archive.entries().map_err(|e| archive_error(path, e))? {
        let mut entry = entry.map_err(|e| archive_error(path, e))?;
        if String::from_utf8_lossy(&entry.path_bytes()) == wanted {
            let size = entry.header().size().unwrap_or(0);
            return take(&mut entry, size);
        }
    }
    Ok(None)
}

/// `./a/b/` -> `a/b`.
fn normalized(path: &str) -> &str {
    path.trim_start_matches("./").trim_end_matches('/')
}

fn is_unsafe_path(path: &str) -> bool {
    let bytes = path.as_bytes();
    path.starts_with('/')
        || path.starts_with('\\')
        || (bytes.len() >= 2 && bytes[1] == b':' && bytes[0].is_ascii_alphabetic())
        || path.split(['/', '\\']).any(|part| part == "..")
}

/// File names that hold secrets by convention.
pub fn is_secret_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    let templates = [".env.example", ".env.sample", ".env.template"];
    if name == ".env" || (name.starts_with(".env.") && !templates.contains(&name.as_str())) {
        return true;
    }
    let exact = [
        "id_rsa",
        "id_dsa",
        "id_ecdsa",
        "id_ed25519",
        ".npmrc",
        ".pypirc",
        ".netrc",
        ".git-credentials",
        "credentials.json",
        "service-account.json",
    ];
    let extensions = [".pem", ".key", ".p12", ".pfx", ".jks", ".keystore"];
    exact.contains(&name.as_str()) || extensions.iter().any(|ext| name.ends_with(ext))
}

/// The folder the manifest sits in ("" for the root), when the archive
/// follows Qwen's layout.
fn manifest_root(entries: &[Entry]) -> Option<String> {
    let files: Vec<&str> = entries.iter().map(|e| normalized(&e.path)).collect();
    if files.contains(&MANIFEST) {
        return Some(String::new());
    }
    let tops: HashSet<&str> = files
        .iter()
        .filter(|p| !p.is_empty())
        .map(|p| p.split('/').next().unwrap_or(p))
        .collect();
    let [top] = tops.into_iter().collect::<Vec<_>>()[..] else {
        return None;
    };
    files
        .contains(&format!("{top}/{MANIFEST}").as_str())
        .then(|| format!("{top}/"))
}

/// Lints an archive: its entries, then the manifest inside.
pub fn lint_archive(path: &Path, report: &mut Report) -> Result<(), LintError> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let entries = if name.ends_with(".zip") {
        read_zip(path)?
    } else {
        read_tar_gz(path)?
    };
    let shown = path.display().to_string();
    let entry_label = |entry: &str| format!("{shown}!/{entry}");
    report.archives.push(ArchiveSummary {
        file: shown.clone(),
        entries: entries.len(),
        uncompressed_bytes: entries.iter().map(|e| e.size).sum(),
        compressed_bytes: std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
    });

    let mut seen = HashSet::new();
    for entry in &entries {
        let label = entry_label(&entry.path);
        if is_unsafe_path(&entry.path) {
            report.add(Finding::about(
                Rule::ArchivePath,
                &label,
                format!(
                    "entry `{}` would extract outside the extension folder",
                    entry.path
                ),
                "package paths relative to the extension root, without `..`",
            ));
        }
        if !seen.insert(normalized(&entry.path).to_owned()) {
            report.add(Finding::about(
                Rule::ArchiveDuplicate,
                &label,
                format!("entry `{}` appears more than once", entry.path),
                "package each path once",
            ));
        }
        if entry.kind == Kind::Link {
            report.add(Finding::about(
                Rule::ArchiveLink,
                &label,
                format!(
                    "entry `{}` is a link; Qwen rejects links in release archives",
                    entry.path
                ),
                "package the file it points to instead",
            ));
        }
        if entry.kind == Kind::File && is_secret_file(&entry.path) {
            report.add(Finding::about(
                Rule::ArchiveSecretFile,
                &label,
                format!("entry `{}` is an environment or key file", entry.path),
                "remove it from the package; secrets come from the environment at run time",
            ));
        }
    }

    let Some(root) = manifest_root(&entries) else {
        report.add(Finding::about(
            Rule::ArchiveManifest,
            &shown,
            format!("no {MANIFEST} at the archive root or in one top-level folder"),
            format!("put {MANIFEST} at the root of the archive"),
        ));
        return Ok(());
    };
    let manifest_path = format!("{root}{MANIFEST}");
    let manifest = entries
        .iter()
        .find(|e| normalized(&e.path) == manifest_path && e.kind == Kind::File);
    let Some(data) = manifest.and_then(|m| m.data.as_ref()) else {
        report.add(Finding::about(
            Rule::ArchiveManifest,
            &entry_label(&manifest_path),
            format!("{MANIFEST} is not a regular file of at most 1 MiB"),
            "package the manifest as a regular file",
        ));
        return Ok(());
    };
    let text = String::from_utf8_lossy(data).into_owned();
    let manifest_label = entry_label(&manifest_path);
    let facts = lint_manifest_text(&manifest_label, &text, report)?;

    let find = |relative: &str| {
        let wanted = format!("{root}{relative}");
        entries
            .iter()
            .find(|e| normalized(&e.path) == wanted && e.kind == Kind::File)
    };
    if let Some(entry_point) = &facts.entry_point {
        let relative = &entry_point.path;
        let missing = |report: &mut Report, help: &str| {
            report.add(Finding::new(
                Rule::ArchiveEntryPoint,
                &manifest_label,
                entry_point.span,
                &entry_point.pointer,
                format!("the entry point `{relative}` is not in the archive"),
                help,
            ))
        };
        match entry_point.kind {
            EntryKind::Native => {
                match find(relative).or_else(|| find(&format!("{relative}.exe"))) {
                    None => missing(
                        report,
                        "build the binary into dist/main before packaging (ecp package does)",
                    ),
                    Some(entry) if entry.mode & 0o777 != 0o755 => {
                        report.add(Finding::new(
                            Rule::ArchiveEntryPoint,
                            &manifest_label,
                            entry_point.span,
                            &entry_point.pointer,
                            format!(
                                "the entry point `{}` has mode {:04o}; it must be 0755",
                                normalized(&entry.path),
                                entry.mode & 0o777
                            ),
                            "store it with mode 0755",
                        ))
                    }
                    Some(_) => {}
                }
            }
            EntryKind::Script => match find(relative) {
                None => missing(
                    report,
                    "build the bundle into dist/main.js before packaging",
                ),
                Some(entry) => {
                    let wanted = entry.path.clone();
                    if let Some(source) = read_entry(path, &wanted)? {
                        super::bundle_rules(&manifest_label, entry_point, &source, report);
                    }
                }
            },
        }
    }
    for (name, span) in &facts.context_files {
        if find(name).is_none() {
            report.add(Finding::new(
                Rule::ContextFileMissing,
                &manifest_label,
                *span,
                "/contextFileName",
                format!("context file `{name}` is not in the archive"),
                format!("package {name} next to the manifest"),
            ));
        }
    }
    Ok(())
}
