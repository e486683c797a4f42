//! Release archives (`.tar.gz`, `.zip`): read every entry's header as the
//! extractors that install them do, then check the archive rules (manifest
//! place, entry point and its mode, secret files, links, special files,
//! unsafe paths, duplicates, case collisions) and lint the manifest inside.
//!
//! A `.tar.gz` is read as GNU tar and Node's tar read it: every gzip member
//! in turn (a second member appended to a clean archive is part of what
//! they extract), through [`super::tar`], which bounds every header and
//! refuses what extractors would read differently. A `.zip` is read from
//! its central directory, as extractors do, with the entry count bounded
//! before anything else is read.

use std::{
    collections::{HashMap, HashSet},
    io::Read,
    path::Path,
};

use super::{
    ArchiveSummary, Finding, LintError, MANIFEST, MAX_BUNDLE_BYTES, Report, Rule,
    lint_manifest_text, manifest::EntryKind, tar,
};

/// Largest manifest read from an archive.
const MAX_MANIFEST_BYTES: u64 = 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Directory,
    Link,
    /// A device, FIFO, socket or an entry type extractors do not agree on.
    Special(&'static str),
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

/// What reading an archive gave: its entries, and the problem that stopped
/// the reading, if any (the entries read before it are still checked).
struct Contents {
    entries: Vec<Entry>,
    stopped: Option<(Rule, String)>,
    unpacked: u64,
}

fn archive_error(path: &Path, error: impl std::fmt::Display) -> LintError {
    LintError::Archive {
        path: path.to_owned(),
        message: error.to_string(),
    }
}

/// Whether an entry is a manifest lint reads: Qwen's, or another client's
/// (`crate::channels::CLIENT_FILES`, `package.json` of an npm package)
/// at most two folders deep.
fn is_manifest_name(path: &str) -> bool {
    let path = normalized(path);
    let base = path.rsplit('/').next();
    base == Some(MANIFEST)
        || (path.split('/').count() <= 3
            && (path == "package/package.json"
                || crate::channels::CLIENT_FILES
                    .iter()
                    .any(|f| path == *f || path.ends_with(&format!("/{f}")))))
}

/// The most manifest bytes an archive read keeps in all: a hostile archive
/// of many small manifests costs this much memory, not its unpacked size.
const MAX_KEPT_BYTES: u64 = 8 * 1024 * 1024;

/// The bytes of a manifest entry (small regular files with a manifest's
/// name, [`is_manifest_name`]) while `kept` is under [`MAX_KEPT_BYTES`];
/// `None` for every other entry, which is not read.
fn manifest_data(
    kind: Kind,
    name: &str,
    size: u64,
    entry: &mut dyn Read,
    kept: &mut u64,
) -> std::io::Result<Option<Vec<u8>>> {
    // Where Qwen looks for its manifest (the root or one top folder) has a
    // budget of its own, so that other clients' files cannot crowd it out.
    let normal = normalized(name);
    let where_qwen_looks =
        normal.rsplit('/').next() == Some(MANIFEST) && normal.split('/').count() <= 2;
    let budget = if where_qwen_looks {
        8 * MAX_KEPT_BYTES
    } else {
        MAX_KEPT_BYTES
    };
    if kind != Kind::File
        || !is_manifest_name(name)
        || size > MAX_MANIFEST_BYTES
        || kept.saturating_add(size) > budget
    {
        return Ok(None);
    }
    let mut data = Vec::new();
    entry.take(MAX_MANIFEST_BYTES).read_to_end(&mut data)?;
    *kept += data.len() as u64;
    Ok(Some(data))
}

fn tar_kind(kind: tar::Kind) -> Kind {
    match kind {
        tar::Kind::File => Kind::File,
        tar::Kind::Directory => Kind::Directory,
        tar::Kind::Symlink | tar::Kind::HardLink => Kind::Link,
        tar::Kind::CharDevice => Kind::Special("a character device"),
        tar::Kind::BlockDevice => Kind::Special("a block device"),
        tar::Kind::Fifo => Kind::Special("a FIFO"),
        tar::Kind::Other(_) => Kind::Special("an entry type extractors do not agree on"),
    }
}

fn stopped_by(error: &tar::TarError) -> Rule {
    match error {
        tar::TarError::HeaderTooLarge { .. }
        | tar::TarError::TooManyEntries(_)
        | tar::TarError::TooLarge(_) => Rule::ArchiveLimits,
        _ => Rule::ArchiveMalformed,
    }
}

/// Where an archive's bytes come from: a file (opened as a regular file
/// only) or memory (the fuzz targets).
#[derive(Clone, Copy)]
pub enum Bytes<'a> {
    File(&'a Path),
    Memory(&'a [u8]),
}

trait ReadSeek: Read + std::io::Seek {}
impl<T: Read + std::io::Seek> ReadSeek for T {}

impl Bytes<'_> {
    fn open(&self) -> Result<Box<dyn ReadSeek + '_>, LintError> {
        Ok(match self {
            Bytes::File(path) => {
                let (file, _) = crate::files::open_regular(path, None, u64::MAX)?;
                Box::new(std::io::BufReader::new(file))
            }
            Bytes::Memory(bytes) => Box::new(std::io::Cursor::new(*bytes)),
        })
    }

    fn len(&self) -> u64 {
        match self {
            Bytes::File(path) => std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
            Bytes::Memory(bytes) => bytes.len() as u64,
        }
    }
}

fn read_tar_gz(path: &Path, bytes: Bytes) -> Result<Contents, LintError> {
    let file = bytes.open()?;
    let stream = flate2::read::MultiGzDecoder::new(file);
    let mut entries = Vec::new();
    let mut kept = 0;
    let outcome = tar::read(stream, tar::Limits::default(), |entry, data| {
        let kind = tar_kind(entry.kind);
        let manifest = manifest_data(kind, &entry.path, entry.size, data, &mut kept)?;
        entries.push(Entry {
            path: entry.path.clone(),
            kind,
            mode: entry.mode,
            size: entry.size,
            data: manifest,
        });
        Ok(())
    });
    match outcome {
        Ok((_, unpacked)) => Ok(Contents {
            entries,
            stopped: None,
            unpacked,
        }),
        Err(error) if entries.is_empty() && stopped_by(&error) == Rule::ArchiveMalformed => {
            Err(archive_error(path, error))
        }
        Err(error) => {
            let unpacked = entries.iter().map(|e| e.size).sum();
            Ok(Contents {
                entries,
                stopped: Some((stopped_by(&error), error.to_string())),
                unpacked,
            })
        }
    }
}

/// Unpacks the archive `path` into the folder `into` (which should be
/// new and empty) through the same bounded readers as [`lint_archive`]:
/// the entry count and the bytes unpacked are bounded, and only folders
/// and regular files with relative paths are written (a link, a special
/// file, a path outside `into`, a duplicate, or an archive the reader
/// refuses stops the unpacking with its reason). File modes keep their
/// owner-execute bit, so that a packaged `dist/main` runs.
pub fn unpack(path: &Path, into: &Path) -> Result<(), LintError> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let bytes = Bytes::File(path);
    let limits = tar::Limits::default();
    let mut budget = limits.max_total_bytes;
    if name.ends_with(".zip") {
        let mut archive =
            zip::ZipArchive::new(bytes.open()?).map_err(|e| archive_error(path, e))?;
        if archive.len() > limits.max_entries {
            return Err(archive_error(
                path,
                format!("more than {} entries", limits.max_entries),
            ));
        }
        for index in 0..archive.len() {
            let mut entry = archive
                .by_index(index)
                .map_err(|e| archive_error(path, e))?;
            let entry_name = String::from_utf8_lossy(entry.name_raw()).into_owned();
            let kind = zip_kind(entry.unix_mode(), entry.is_dir(), entry.is_symlink());
            let mode = entry.unix_mode().unwrap_or(0o644);
            place(into, &entry_name, kind, mode, &mut entry, &mut budget)
                .map_err(|e| archive_error(path, e))?;
        }
        return Ok(());
    }
    let stream = flate2::read::MultiGzDecoder::new(bytes.open()?);
    tar::read(stream, limits, |entry, data| {
        place(
            into,
            &entry.path,
            tar_kind(entry.kind),
            entry.mode,
            data,
            &mut budget,
        )
    })
    .map_err(|e| archive_error(path, e))?;
    Ok(())
}

/// Writes one entry of [`unpack`] under `into`, taking its size from
/// `budget`.
fn place(
    into: &Path,
    name: &str,
    kind: Kind,
    mode: u32,
    data: &mut dyn Read,
    budget: &mut u64,
) -> std::io::Result<()> {
    use std::io::{Error, ErrorKind};
    let refuse = |why: String| Error::new(ErrorKind::InvalidData, why);
    let relative = name.trim_start_matches("./");
    if relative.is_empty() {
        return Ok(());
    }
    if is_unsafe_path(relative)
        || relative.contains('\\')
        || relative
            .split('/')
            .any(|part| part == "." || part.contains('\0'))
    {
        return Err(refuse(format!("entry `{name}` has an unsafe path")));
    }
    let target = into.join(relative.trim_end_matches('/'));
    match kind {
        Kind::Directory => std::fs::create_dir_all(&target),
        Kind::File => {
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent)?;
            }
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&target)
                .map_err(|e| match e.kind() {
                    ErrorKind::AlreadyExists => refuse(format!("entry `{name}` comes twice")),
                    _ => e,
                })?;
            let copied = std::io::copy(&mut data.take(budget.saturating_add(1)), &mut file)?;
            if copied > *budget {
                return Err(refuse("more bytes unpacked than lint reads".to_owned()));
            }
            *budget -= copied;
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let executable = if mode & 0o100 != 0 { 0o755 } else { 0o644 };
                file.set_permissions(std::fs::Permissions::from_mode(executable))?;
            }
            #[cfg(not(unix))]
            let _ = mode;
            Ok(())
        }
        Kind::Link => Err(refuse(format!("entry `{name}` is a link"))),
        Kind::Special(what) => Err(refuse(format!("entry `{name}` is {what}"))),
    }
}

/// Zip entry types from the Unix mode's file-type bits.
fn zip_kind(mode: Option<u32>, is_dir: bool, is_symlink: bool) -> Kind {
    match mode.map(|m| m & 0o170000) {
        _ if is_symlink => Kind::Link,
        Some(0o010000) => Kind::Special("a FIFO"),
        Some(0o020000) => Kind::Special("a character device"),
        Some(0o060000) => Kind::Special("a block device"),
        Some(0o140000) => Kind::Special("a socket"),
        _ if is_dir => Kind::Directory,
        _ => Kind::File,
    }
}

fn read_zip(path: &Path, bytes: Bytes) -> Result<Contents, LintError> {
    let file = bytes.open()?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| archive_error(path, e))?;
    let limits = tar::Limits::default();
    if archive.len() > limits.max_entries {
        return Ok(Contents {
            entries: Vec::new(),
            stopped: Some((
                Rule::ArchiveLimits,
                format!(
                    "{} entries; lint reads at most {}",
                    archive.len(),
                    limits.max_entries
                ),
            )),
            unpacked: 0,
        });
    }
    let mut entries = Vec::new();
    let mut unpacked: u64 = 0;
    let mut kept = 0;
    for index in 0..archive.len() {
        let mut entry = archive
            .by_index(index)
            .map_err(|e| archive_error(path, e))?;
        let name = entry
            .name()
            .map(|n| n.into_owned())
            .unwrap_or_else(|_| String::from_utf8_lossy(entry.name_raw()).into_owned());
        let mode = entry.unix_mode();
        let kind = zip_kind(mode, entry.is_dir(), entry.is_symlink());
        let size = entry.size();
        unpacked = unpacked.saturating_add(size);
        if unpacked > limits.max_total_bytes {
            return Ok(Contents {
                entries,
                stopped: Some((
                    Rule::ArchiveLimits,
                    format!("more than {} bytes unpacked", limits.max_total_bytes),
                )),
                unpacked,
            });
        }
        let data = manifest_data(kind, &name, size, &mut entry, &mut kept)
            .map_err(|e| archive_error(path, e))?;
        entries.push(Entry {
            path: name,
            kind,
            mode: mode.unwrap_or(0) & 0o7777,
            size,
            data,
        });
    }
    Ok(Contents {
        entries,
        stopped: None,
        unpacked,
    })
}

/// Reads the entry named exactly `wanted` again (the bundle, known only
/// once the manifest is read), up to [`MAX_BUNDLE_BYTES`]; `None` when it is
/// larger or cannot be read.
fn read_entry(path: &Path, bytes: Bytes, wanted: &str) -> Result<Option<String>, LintError> {
    Ok(
        read_entry_bytes(path, bytes, wanted, MAX_BUNDLE_BYTES, false)?
            .map(|data| String::from_utf8_lossy(&data).into_owned()),
    )
}

/// The bytes of the entry named `wanted`: all of them when `prefix` is
/// false (`None` past `max`), or only the first `max` when it is true.
fn read_entry_bytes(
    path: &Path,
    bytes: Bytes,
    wanted: &str,
    max: u64,
    prefix: bool,
) -> Result<Option<Vec<u8>>, LintError> {
    let file = bytes.open()?;
    let take = |entry: &mut dyn Read, size: u64| -> std::io::Result<Option<Vec<u8>>> {
        if size > max && !prefix {
            return Ok(None);
        }
        let mut data = Vec::new();
        entry.take(max).read_to_end(&mut data)?;
        Ok(Some(data))
    };
    let name = path.to_string_lossy();
    if name.ends_with(".zip") {
        let mut archive = zip::ZipArchive::new(file).map_err(|e| archive_error(path, e))?;
        let mut entry = archive
            .by_name(wanted)
            .map_err(|e| archive_error(path, e))?;
        let size = entry.size();
        return take(&mut entry, size).map_err(|e| archive_error(path, e));
    }
    let stream = flate2::read::MultiGzDecoder::new(file);
    let mut found = None;
    let _ = tar::read(stream, tar::Limits::default(), |entry, data| {
        if found.is_none() && entry.kind == tar::Kind::File && entry.path == wanted {
            found = take(data, entry.size)?;
        }
        Ok(())
    });
    Ok(found)
}

/// `./a/b/` -> `a/b`.
/// An entry path as it lands on disk: empty and `.` parts dropped
/// (`.//qwen-extension.json` and `dist/./main` are `qwen-extension.json` and
/// `dist/main` to an extractor). `..` stays (it is `archive-path`).
fn normalized(path: &str) -> std::borrow::Cow<'_, str> {
    let clean = !path.starts_with("./")
        && !path.ends_with('/')
        && !path.contains("//")
        && !path.contains("/./")
        && !path.ends_with("/.")
        && path != ".";
    if clean {
        return std::borrow::Cow::Borrowed(path);
    }
    let parts: Vec<&str> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    std::borrow::Cow::Owned(parts.join("/"))
}

fn is_unsafe_path(path: &str) -> bool {
    let bytes = path.as_bytes();
    path.starts_with('/')
        || path.starts_with('\\')
        || (bytes.len() >= 2 && bytes[1] == b':' && bytes[0].is_ascii_alphabetic())
        || path.split(['/', '\\']).any(|part| part == "..")
}

/// The folder the manifest sits in ("" for the root), when the archive
/// follows Qwen's layout.
fn manifest_root(entries: &[Entry]) -> Option<String> {
    let files: Vec<std::borrow::Cow<str>> = entries.iter().map(|e| normalized(&e.path)).collect();
    manifest_root_of(files.iter().map(|f| f.as_ref()))
}

/// Where an extension's manifest is among `paths` (relative, `/`-separated,
/// normalized), as Qwen's installer finds it: `""` when it is at the root,
/// `"{top}/"` when every path is inside one top-level folder that holds it,
/// `None` otherwise. The one layout rule: `ecp lint` applies it to an
/// archive's entries and `ecp check` to what it extracted.
pub fn manifest_root_of<'a>(paths: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let mut tops: HashSet<&str> = HashSet::new();
    let mut nested = None;
    for path in paths {
        if path == MANIFEST {
            return Some(String::new());
        }
        if path.is_empty() {
            continue;
        }
        let top = path.split('/').next().unwrap_or(path);
        tops.insert(top);
        if path
            .strip_prefix(top)
            .and_then(|rest| rest.strip_prefix('/'))
            == Some(MANIFEST)
        {
            nested = Some(top);
        }
    }
    match (tops.len(), nested) {
        (1, Some(top)) => Some(format!("{top}/")),
        _ => None,
    }
}

/// What an archive says about itself, for the release-folder rules.
#[derive(Debug, Clone, Default)]
pub struct ArchiveFacts {
    pub manifest: super::manifest::ManifestFacts,
    /// What the native entry point was built for, when it has one whose
    /// header is readable.
    pub binary: Option<crate::release::Binary>,
}

/// Lints an archive: its entries, then the manifest inside; the facts are
/// `None` when there is no readable manifest.
pub fn lint_archive(path: &Path, report: &mut Report) -> Result<Option<ArchiveFacts>, LintError> {
    lint_archive_bytes(path, Bytes::File(path), report)
}

/// Lints an archive named `path` whose bytes come from `bytes`.
pub fn lint_archive_bytes(
    path: &Path,
    bytes: Bytes,
    report: &mut Report,
) -> Result<Option<ArchiveFacts>, LintError> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let read = if name.ends_with(".zip") {
        read_zip(path, bytes)?
    } else {
        read_tar_gz(path, bytes)?
    };
    let entries = read.entries;
    let shown = path.display().to_string();
    report.archives.push(ArchiveSummary {
        file: shown.clone(),
        entries: entries.len(),
        paths: Vec::new(),
        uncompressed_bytes: read.unpacked.max(entries.iter().map(|e| e.size).sum()),
        compressed_bytes: bytes.len(),
    });
    let layout = if name.ends_with(".tgz") {
        Layout::Npm
    } else {
        Layout::Release
    };
    let outcome = archive_rules(path, bytes, &entries, read.stopped, layout, report);
    // The paths move into the summary (no second copy of them at the peak).
    if let Some(summary) = report.archives.last_mut() {
        summary.paths = entries.into_iter().map(|e| e.path).collect();
    }
    outcome
}

/// What a zip-based bundle (`.mcpb`) holds, read by the same reader as a
/// release `.zip` and judged by the same entry rules (paths, duplicates
/// also by letter case, links, special files, secret files, limits): the
/// normalized path of every regular file, and the bytes of the regular
/// file at `wanted` (at most 1 MiB) when there is exactly one such entry.
pub fn bundle_entries(
    path: &Path,
    bytes: Bytes,
    wanted: &str,
    report: &mut Report,
) -> Result<(Vec<String>, Option<Vec<u8>>), LintError> {
    let read = read_zip(path, bytes)?;
    let shown = path.display().to_string();
    if let Some((rule, problem)) = read.stopped {
        report.add(Finding::about(
            rule,
            &shown,
            format!("the bundle was not read to its end: {problem}"),
            "pack it again with ecp package --clients mcpb (or mcpb pack)",
        ));
    }
    entry_rules(&read.entries, &shown, report);
    let files: Vec<String> = read
        .entries
        .iter()
        .filter(|e| e.kind == Kind::File)
        .map(|e| normalized(&e.path).into_owned())
        .collect();
    let mut matching = read
        .entries
        .into_iter()
        .filter(|e| normalized(&e.path) == wanted);
    let data = match (matching.next(), matching.next()) {
        (Some(entry), None) if entry.kind == Kind::File => entry.data,
        _ => None,
    };
    Ok((files, data))
}

/// The rules over each entry: its path stays inside, appears once (also
/// letter case folded), and is a regular file or folder that is no secret.
fn entry_rules(entries: &[Entry], shown: &str, report: &mut Report) {
    let entry_label = |entry: &str| format!("{shown}!/{entry}");
    let mut seen: HashSet<std::borrow::Cow<str>> = HashSet::new();
    // Case-insensitive file systems (macOS, Windows) extract
    // `QWEN-EXTENSION.JSON` and `qwen-extension.json` to one file.
    let mut folded: HashMap<String, std::borrow::Cow<str>> = HashMap::new();
    for entry in entries {
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
        if !seen.insert(normalized(&entry.path)) {
            report.add(Finding::about(
                Rule::ArchiveDuplicate,
                &label,
                format!("entry `{}` appears more than once", entry.path),
                "package each path once",
            ));
        }
        let lower = normalized(&entry.path).to_lowercase();
        match folded.get(&lower) {
            Some(first) if *first != normalized(&entry.path) => report.add(Finding::about(
                Rule::ArchiveDuplicate,
                &label,
                format!(
                    "entry `{}` and `{}` are one file on a case-insensitive file system",
                    crate::text::secrets::shown(&entry.path),
                    crate::text::secrets::shown(first)
                ),
                "give every path a spelling that differs in more than letter case",
            )),
            Some(_) => {}
            None => {
                folded.insert(lower, normalized(&entry.path));
            }
        }
        if let Kind::Special(what) = entry.kind {
            report.add(Finding::about(
                Rule::ArchiveSpecialFile,
                &label,
                format!(
                    "entry `{}` is {what}",
                    crate::text::secrets::shown(&entry.path)
                ),
                "package regular files and folders only",
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
        if entry.kind == Kind::File && crate::text::secrets::is_secret_file(&entry.path) {
            report.add(Finding::about(
                Rule::ArchiveSecretFile,
                &label,
                format!("entry `{}` is an environment or key file", entry.path),
                "remove it from the package; secrets come from the environment at run time",
            ));
        }
    }
}

/// The manifest's entry point in the archive: there, a native one with
/// mode 0755 (and what its header says it was built for), a bundle judged
/// by the bundle rules.
fn entry_point_rules<'e>(
    path: &Path,
    bytes: Bytes,
    entry_point: &super::manifest::EntryPoint,
    manifest_label: &str,
    find: &dyn Fn(&str) -> Option<&'e Entry>,
    report: &mut Report,
) -> Result<Option<crate::release::Binary>, LintError> {
    let relative = &entry_point.path;
    let missing = |report: &mut Report, help: &str| {
        report.add(Finding::new(
            Rule::ArchiveEntryPoint,
            manifest_label,
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
                Some(entry) if entry.mode & 0o777 != 0o755 => report.add(Finding::new(
                    Rule::ArchiveEntryPoint,
                    manifest_label,
                    entry_point.span,
                    &entry_point.pointer,
                    format!(
                        "the entry point `{}` has mode {:04o}; it must be 0755",
                        normalized(&entry.path),
                        entry.mode & 0o777
                    ),
                    "store it with mode 0755",
                )),
                Some(entry) => {
                    let wanted = entry.path.clone();
                    // A header that cannot be read is no fact, not a
                    // reason to stop.
                    let binary = read_entry_bytes(path, bytes, &wanted, 64 * 1024, true)
                        .ok()
                        .flatten()
                        .and_then(|head| crate::release::Binary::read(&head));
                    if let Some(binary) = &binary
                        && let Some((problem, help)) =
                            name_for_platform(relative, &normalized(&wanted), binary)
                    {
                        report.add(Finding::new(
                            Rule::ArchiveEntryPoint,
                            manifest_label,
                            entry_point.span,
                            &entry_point.pointer,
                            problem,
                            help,
                        ));
                    }
                    return Ok(binary);
                }
            }
        }
        EntryKind::Script => match find(relative) {
            None => missing(
                report,
                "build the bundle into dist/main.js before packaging",
            ),
            Some(entry) => {
                let wanted = entry.path.clone();
                if let Some(source) = read_entry(path, bytes, &wanted)? {
                    super::bundle_rules(manifest_label, entry_point, &source, report);
                }
            }
        },
    }
    Ok(None)
}

/// Whether the native entry point's file name is the one Qwen Code starts
/// on the binary's platform. Qwen 0.24.4 starts a stdio server through
/// cross-spawn without a shell: on win32 a command with a path in it is
/// looked up with each `PATHEXT` extension (`.EXE` first by default), and a
/// file without one does not count as executable, so `dist\main` runs
/// `dist\main.exe` and never an extensionless `dist\main`; elsewhere the
/// path is run exactly, so a `main.exe` is never found.
fn name_for_platform(
    relative: &str,
    found: &str,
    binary: &crate::release::Binary,
) -> Option<(String, String)> {
    let exe = found.to_ascii_lowercase().ends_with(".exe");
    let base = relative.rsplit('/').next().unwrap_or(relative);
    if binary.platform == "win32" && !exe {
        Some((
            format!(
                "the entry point `{found}` is a Windows executable without `.exe`: Qwen Code on Windows looks for `{relative}.exe` and does not run it"
            ),
            format!("name it `{base}.exe` (ecp package --target x86_64-pc-windows-msvc does)"),
        ))
    } else if binary.platform != "win32" && exe && !relative.to_ascii_lowercase().ends_with(".exe")
    {
        Some((
            format!(
                "the entry point is `{found}`, built for {}: Qwen Code runs `{relative}` exactly there and does not find it",
                binary.describe()
            ),
            format!("name it `{base}` without `.exe`"),
        ))
    } else {
        None
    }
}

/// How the installer that takes an archive lays its entries out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// A release archive (`.tar.gz`, `.zip`): the manifest at the root, or
    /// in the one top-level folder ([`manifest_root_of`]).
    Release,
    /// An npm package (`.tgz`): npm extracts the first path component
    /// away, and Qwen Code's npm installer moves every `package/` entry
    /// over the root and keeps the rest beside them; only `package/` is
    /// what both install, so only it is judged, and anything else is
    /// refused.
    Npm,
}

/// The folder lint judges the manifest in, by the installer's layout;
/// `None`, said as `archive-manifest`, when there is none.
fn judged_root(
    entries: &[Entry],
    layout: Layout,
    shown: &str,
    report: &mut Report,
) -> Option<String> {
    let root = match layout {
        Layout::Release => manifest_root(entries),
        Layout::Npm => npm_root(entries, shown, report),
    };
    if root.is_none() {
        let (problem, help) = match layout {
            Layout::Release => (
                format!("no {MANIFEST} at the archive root or in one top-level folder"),
                format!("put {MANIFEST} at the root of the archive"),
            ),
            Layout::Npm => (
                format!("no package/{MANIFEST}: npm and Qwen Code install the package/ folder"),
                format!("put {MANIFEST} in package/ (ecp package --npm does)"),
            ),
        };
        report.add(Finding::about(Rule::ArchiveManifest, shown, problem, help));
    }
    root
}

/// `package/` when it holds the manifest; every entry outside it is
/// refused.
fn npm_root(entries: &[Entry], shown: &str, report: &mut Report) -> Option<String> {
    let prefix = crate::channels::npm::PREFIX;
    let mut outside = 0;
    for entry in entries {
        let path = normalized(&entry.path);
        if path.starts_with(prefix) || path == prefix.trim_end_matches('/') {
            continue;
        }
        outside += 1;
        if outside <= 20 {
            report.add(Finding::about(
                Rule::NpmPackage,
                &format!("{shown}!/{}", crate::text::secrets::shown(&entry.path)),
                format!(
                    "entry `{}` is outside package/: npm strips the first folder of every path and Qwen Code installs the entry beside the package's files, so the two install different extensions",
                    crate::text::secrets::shown(&entry.path)
                ),
                "put every file of the package in package/ (npm pack and ecp package --npm do)",
            ));
        }
    }
    let manifest = format!("{prefix}{MANIFEST}");
    entries
        .iter()
        .any(|e| normalized(&e.path) == manifest)
        .then(|| prefix.to_owned())
}

/// The archive rules over the entries read, then the manifest inside.
fn archive_rules(
    path: &Path,
    bytes: Bytes,
    entries: &[Entry],
    stopped: Option<(Rule, String)>,
    layout: Layout,
    report: &mut Report,
) -> Result<Option<ArchiveFacts>, LintError> {
    let shown = &path.display().to_string();
    let entry_label = |entry: &str| format!("{shown}!/{entry}");
    if let Some((rule, problem)) = stopped {
        report.add(Finding::about(
            rule,
            shown,
            format!("the archive was not read to its end: {problem}"),
            "package it again with ecp package (or GNU tar), one gzip stream, regular entries only",
        ));
    }
    entry_rules(entries, shown, report);

    let Some(root) = judged_root(entries, layout, shown, report) else {
        return Ok(None);
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
        return Ok(None);
    };
    let text = String::from_utf8_lossy(data).into_owned();
    let manifest_label = entry_label(&manifest_path);
    let facts = lint_manifest_text(&manifest_label, &text, report)?;
    let mut binary = None;
    let find = |relative: &str| {
        let wanted = format!("{root}{relative}");
        entries
            .iter()
            .find(|e| normalized(&e.path) == wanted && e.kind == Kind::File)
    };
    if let Some(entry_point) = &facts.entry_point {
        binary = entry_point_rules(path, bytes, entry_point, &manifest_label, &find, report)?;
    }
    let holds = |relative: &str| {
        let wanted = format!("{root}{relative}");
        entries.iter().any(|e| {
            let path = normalized(&e.path);
            path == wanted
                || path
                    .strip_prefix(wanted.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        })
    };
    client_entries(
        &root,
        &text,
        facts.version.as_deref(),
        &find,
        &holds,
        &entry_label,
        report,
    );
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
    Ok(Some(ArchiveFacts {
        manifest: facts,
        binary,
    }))
}

/// The other clients' manifests in an archive, and the `package.json` of an
/// npm package (whose files sit in `package/`).
fn client_entries<'e>(
    root: &str,
    manifest: &str,
    version: Option<&str>,
    find: &dyn Fn(&str) -> Option<&'e Entry>,
    holds: &dyn Fn(&str) -> bool,
    entry_label: &dyn Fn(&str) -> String,
    report: &mut Report,
) {
    let data_of = |relative: &str| {
        find(relative)
            .and_then(|e| e.data.as_ref())
            .map(|d| String::from_utf8_lossy(d).into_owned())
    };
    let label = |relative: &str| entry_label(&format!("{root}{relative}"));
    let exists = |relative: &str| find(relative).is_some();
    let holds = |relative: &str| holds(relative);
    let place = crate::channels::rules::Place {
        label: &label,
        read: &data_of,
        exists: &exists,
        holds: &holds,
        shipped: true,
    };
    let project = crate::extension::Project::default();
    crate::channels::rules::lint(&place, Some(manifest), &project, report);
    // A client file lint did not keep (over 1 MiB, or past the budget) is
    // said, never passed over as if it were not there.
    let npm = root == crate::channels::npm::PREFIX;
    let files = crate::channels::CLIENT_FILES.iter().copied();
    for file in files.chain(npm.then_some("package.json")) {
        if exists(file) && data_of(file).is_none() {
            report.add(Finding::about(
                Rule::ArchiveLimits,
                &label(file),
                format!("{file} was not read: it is larger than 1 MiB, or the archive's other manifests used up what lint reads (8 MiB)"),
                "keep the client manifests small; ecp writes each in well under a kilobyte",
            ));
        }
    }
    if root == crate::channels::npm::PREFIX
        && let Some(package_json) = data_of("package.json")
    {
        crate::channels::npm::lint(&label("package.json"), &package_json, version, report);
    }
}

#[cfg(test)]
mod layout_tests {
    use super::manifest_root_of;

    #[test]
    fn the_manifest_is_at_the_root_or_in_the_one_top_level_folder() {
        let root = |paths: &[&str]| manifest_root_of(paths.iter().copied());
        assert_eq!(
            root(&["qwen-extension.json", "dist/main"]),
            Some(String::new())
        );
        assert_eq!(
            root(&["ext/qwen-extension.json", "ext/dist/main"]),
            Some("ext/".into())
        );
        // Anything beside the folder makes it not the one top-level folder.
        assert_eq!(root(&["README.md", "ext/qwen-extension.json"]), None);
        assert_eq!(
            root(&["a/qwen-extension.json", "b/qwen-extension.json"]),
            None
        );
        assert_eq!(root(&["ext/sub/qwen-extension.json"]), None);
        assert_eq!(root(&[]), None);
    }
}
