//! Release archives (`.tar.gz`, `.zip`, and the `.tgz` and `.mcpb` of the
//! other channels) read as the extractors that install them read them,
//! through one bounded reader: every command that opens an archive a user
//! handed it (lint, check, verify, the bundle rules) reads it here.
//!
//! A `.tar.gz` is read as GNU tar and Node's tar read it: every gzip member
//! in turn (a second member appended to a clean archive is part of what
//! they extract), through [`super::tar`], which bounds every header and
//! refuses what extractors would read differently. A `.zip` is read from
//! its central directory, as extractors do, with the entry count bounded
//! before anything else is read. What the reader refuses is an
//! [`ArchiveError`]; what the refusal means for a release (`ecp lint`'s
//! rules) is decided above, in `lint/archive.rs`.

use std::{collections::HashSet, io::Read, path::Path};

use super::{CLIENT_FILES, MANIFEST, tar};
use crate::files::FileProblem;

/// Largest manifest read from an archive.
const MAX_MANIFEST_BYTES: u64 = 1024 * 1024;

/// What an entry is, as an extractor would write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Directory,
    Link,
    /// A device, FIFO, socket or an entry type extractors do not agree on.
    Special(&'static str),
}

/// One entry of an archive, as read.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The path as written in the archive (see [`normalized`]).
    pub path: String,
    pub kind: Kind,
    /// The permission bits (`0o7777`).
    pub mode: u32,
    /// The size of its data, unpacked.
    pub size: u64,
    /// The bytes of a manifest entry ([`is_manifest_name`]); `None` for
    /// every other entry, which is not kept.
    pub data: Option<Vec<u8>>,
}

/// Why an archive could not be read (to its end).
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// The file is not a regular file ecp may read.
    #[error("cannot read {0}")]
    File(#[from] FileProblem),
    /// The archive passes one of the reader's bounds (entries, bytes,
    /// header sizes).
    #[error("{0}")]
    Limits(String),
    /// The archive is not one that extractors read alike, or no archive.
    #[error("{0}")]
    Malformed(String),
}

impl From<tar::TarError> for ArchiveError {
    fn from(error: tar::TarError) -> ArchiveError {
        match error {
            tar::TarError::HeaderTooLarge { .. }
            | tar::TarError::TooManyEntries(_)
            | tar::TarError::TooLarge(_) => ArchiveError::Limits(error.to_string()),
            _ => ArchiveError::Malformed(error.to_string()),
        }
    }
}

fn malformed(error: impl std::fmt::Display) -> ArchiveError {
    ArchiveError::Malformed(error.to_string())
}

/// What reading an archive gave: its entries, and the problem that stopped
/// the reading, if any (the entries read before it are still judged).
pub struct Contents {
    pub entries: Vec<Entry>,
    pub stopped: Option<ArchiveError>,
    /// The bytes unpacked, as far as the reading went.
    pub unpacked: u64,
}

/// Whether an entry is a manifest lint reads: Qwen's, or another client's
/// ([`CLIENT_FILES`], `package.json` of an npm package) at most two
/// folders deep.
pub fn is_manifest_name(path: &str) -> bool {
    let path = normalized(path);
    let base = path.rsplit('/').next();
    base == Some(MANIFEST)
        || (path.split('/').count() <= 3
            && (path == "package/package.json"
                || CLIENT_FILES
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
    entry: &Entry,
    data: &mut dyn Read,
    kept: &mut u64,
) -> std::io::Result<Option<Vec<u8>>> {
    // Where Qwen looks for its manifest (the root or one top folder) has a
    // budget of its own, so that other clients' files cannot crowd it out.
    let normal = normalized(&entry.path);
    let where_qwen_looks =
        normal.rsplit('/').next() == Some(MANIFEST) && normal.split('/').count() <= 2;
    let budget = if where_qwen_looks {
        8 * MAX_KEPT_BYTES
    } else {
        MAX_KEPT_BYTES
    };
    if entry.kind != Kind::File
        || !is_manifest_name(&entry.path)
        || entry.size > MAX_MANIFEST_BYTES
        || kept.saturating_add(entry.size) > budget
    {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    data.take(MAX_MANIFEST_BYTES).read_to_end(&mut bytes)?;
    *kept += bytes.len() as u64;
    Ok(Some(bytes))
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
    fn open(&self) -> Result<Box<dyn ReadSeek + '_>, ArchiveError> {
        Ok(match self {
            Bytes::File(path) => {
                let (file, _) = crate::files::open_regular(path, None, u64::MAX)?;
                Box::new(std::io::BufReader::new(file))
            }
            Bytes::Memory(bytes) => Box::new(std::io::Cursor::new(*bytes)),
        })
    }

    /// The archive's own size, in bytes.
    pub fn len(&self) -> u64 {
        match self {
            Bytes::File(path) => std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
            Bytes::Memory(bytes) => bytes.len() as u64,
        }
    }

    /// Whether the archive has no bytes at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// How an archive is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// gzip-compressed tar (`.tar.gz`, npm's `.tgz`), every gzip member.
    TarGz,
    /// zip (`.zip`, and `.mcpb` bundles), from its central directory.
    Zip,
}

impl Format {
    /// A release archive's format by its file name: `.zip` is zip, any
    /// other name is read as `.tar.gz`.
    pub fn of(name: &str) -> Format {
        if name.ends_with(".zip") {
            Format::Zip
        } else {
            Format::TarGz
        }
    }

    /// The format of the archive at `path`, by its file name.
    pub fn of_path(path: &Path) -> Format {
        Format::of(path.file_name().and_then(|n| n.to_str()).unwrap_or(""))
    }
}

/// Visits every entry of the archive in order, with its
/// header and a reader of its data (at most `size` bytes, whatever the
/// visitor leaves unread is skipped), through the bounded readers: the
/// entry count, the names and the bytes unpacked in all are bounded. The
/// `&[u8]` is the entry's raw tar header (empty in a zip). Returns the
/// bytes unpacked.
pub fn each_entry(
    format: Format,
    bytes: Bytes,
    mut visit: impl FnMut(&Entry, &[u8], &mut dyn Read) -> std::io::Result<()>,
) -> Result<u64, ArchiveError> {
    let limits = tar::Limits::default();
    if format == Format::TarGz {
        let stream = flate2::read::MultiGzDecoder::new(bytes.open()?);
        let (_, unpacked) = tar::read(stream, limits, |header, data| {
            let entry = Entry {
                path: header.path.clone(),
                kind: tar_kind(header.kind),
                mode: header.mode,
                size: header.size,
                data: None,
            };
            visit(&entry, &header.header, data)
        })?;
        return Ok(unpacked);
    }
    let mut archive = zip::ZipArchive::new(bytes.open()?).map_err(malformed)?;
    if archive.len() > limits.max_entries {
        return Err(ArchiveError::Limits(format!(
            "{} entries; lint reads at most {}",
            archive.len(),
            limits.max_entries
        )));
    }
    let mut unpacked: u64 = 0;
    for index in 0..archive.len() {
        let mut data = archive.by_index(index).map_err(malformed)?;
        let path = data
            .name()
            .map(|n| n.into_owned())
            .unwrap_or_else(|_| String::from_utf8_lossy(data.name_raw()).into_owned());
        let mode = data.unix_mode();
        let entry = Entry {
            kind: zip_kind(mode, data.is_dir(), data.is_symlink()),
            mode: mode.unwrap_or(0) & 0o7777,
            size: data.size(),
            path,
            data: None,
        };
        unpacked = unpacked.saturating_add(entry.size);
        if unpacked > limits.max_total_bytes {
            return Err(ArchiveError::Limits(format!(
                "more than {} bytes unpacked",
                limits.max_total_bytes
            )));
        }
        // A zip entry says its own size: reading stops there, whatever the
        // compressed stream would still give.
        visit(&entry, &[], &mut (&mut data).take(entry.size)).map_err(malformed)?;
    }
    Ok(unpacked)
}

/// Reads the archive: every entry's header, and the bytes of
/// its manifests ([`is_manifest_name`]). A reading stopped by a bound (or,
/// in a tar, by a malformed header after some entries) keeps what it read
/// and says why in [`Contents::stopped`]; an archive that cannot be read
/// at all is the error.
pub fn read(format: Format, bytes: Bytes) -> Result<Contents, ArchiveError> {
    let mut entries = Vec::new();
    let mut kept = 0;
    let outcome = each_entry(format, bytes, |entry, _, data| {
        let mut entry = entry.clone();
        entry.data = manifest_data(&entry, data, &mut kept)?;
        entries.push(entry);
        Ok(())
    });
    let stopped = match outcome {
        Ok(unpacked) => {
            return Ok(Contents {
                entries,
                stopped: None,
                unpacked,
            });
        }
        Err(error @ ArchiveError::Limits(_)) => error,
        Err(error @ ArchiveError::Malformed(_))
            if format == Format::TarGz && !entries.is_empty() =>
        {
            error
        }
        Err(error) => return Err(error),
    };
    let unpacked = entries.iter().map(|e| e.size).sum();
    Ok(Contents {
        entries,
        stopped: Some(stopped),
        unpacked,
    })
}

/// Unpacks the archive `path` into the folder `into` (which should be
/// new and empty) through the same bounded reader as [`read`]: only
/// folders and regular files with relative paths are written (a link, a
/// special file, a path outside `into`, a duplicate, or an archive the
/// reader refuses stops the unpacking with its reason). File modes keep
/// their owner-execute bit, so that a packaged `dist/main` runs.
pub fn unpack(path: &Path, into: &Path) -> Result<(), ArchiveError> {
    let mut budget = tar::Limits::default().max_total_bytes;
    each_entry(
        Format::of_path(path),
        Bytes::File(path),
        |entry, _, data| place(into, entry, data, &mut budget),
    )?;
    Ok(())
}

/// Writes one entry of [`unpack`] under `into`, taking its size from
/// `budget`.
fn place(into: &Path, entry: &Entry, data: &mut dyn Read, budget: &mut u64) -> std::io::Result<()> {
    use std::io::{Error, ErrorKind};
    let name = &entry.path;
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
    match entry.kind {
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
                let executable = if entry.mode & 0o100 != 0 {
                    0o755
                } else {
                    0o644
                };
                file.set_permissions(std::fs::Permissions::from_mode(executable))?;
            }
            Ok(())
        }
        Kind::Link => Err(refuse(format!("entry `{name}` is a link"))),
        Kind::Special(what) => Err(refuse(format!("entry `{name}` is {what}"))),
    }
}

/// The bytes of the regular file named exactly `wanted`: all of them when
/// `prefix` is false (`None` past `max`), or only the first `max` when it
/// is true. `None` when there is no such entry, or when a tar stops
/// before it (the stop is [`read`]'s to report).
pub fn read_entry_bytes(
    format: Format,
    bytes: Bytes,
    wanted: &str,
    max: u64,
    prefix: bool,
) -> Result<Option<Vec<u8>>, ArchiveError> {
    let mut found = None;
    let outcome = each_entry(format, bytes, |entry, _, data| {
        if found.is_none() && entry.kind == Kind::File && entry.path == wanted {
            if entry.size > max && !prefix {
                found = Some(None);
                return Ok(());
            }
            let mut kept = Vec::new();
            data.take(max).read_to_end(&mut kept)?;
            found = Some(Some(kept));
        }
        Ok(())
    });
    match (found, outcome) {
        (Some(found), _) => Ok(found),
        (None, Ok(_)) => Ok(None),
        (None, Err(error)) if format == Format::Zip => Err(error),
        (None, Err(_)) => Ok(None),
    }
}

/// An entry path as it lands on disk: empty and `.` parts dropped
/// (`.//qwen-extension.json` and `dist/./main` are `qwen-extension.json` and
/// `dist/main` to an extractor), so `./a/b/` is `a/b`. `..` stays (lint
/// refuses it).
pub fn normalized(path: &str) -> std::borrow::Cow<'_, str> {
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

/// Whether an entry would extract outside the folder: absolute, a drive
/// letter, or a `..` part.
pub fn is_unsafe_path(path: &str) -> bool {
    let bytes = path.as_bytes();
    path.starts_with('/')
        || path.starts_with('\\')
        || (bytes.len() >= 2 && bytes[1] == b':' && bytes[0].is_ascii_alphabetic())
        || path.split(['/', '\\']).any(|part| part == "..")
}

/// The folder the manifest sits in ("" for the root), when the archive
/// follows Qwen's layout.
pub fn manifest_root(entries: &[Entry]) -> Option<String> {
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
