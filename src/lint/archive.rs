//! The archive rules: what `ecp lint` says of a release archive
//! (`.tar.gz`, `.zip`), an npm tarball and a bundle's entries, read by the
//! bounded reader of [`crate::extension::archive`]: the manifest's place,
//! the entry point and its mode, secret files, links, special files,
//! unsafe paths, duplicates, case collisions, then the manifest inside.

use std::{
    collections::{HashMap, HashSet},
    path::Path,
};

use super::{
    ArchiveSummary, Finding, LintError, MANIFEST, MAX_BUNDLE_BYTES, Report, Rule,
    lint_manifest_text, manifest::EntryKind,
};
use crate::extension::archive::{
    self as reader, ArchiveError, Entry, Format, Kind, is_unsafe_path, manifest_root, normalized,
};
pub use crate::extension::archive::{Bytes, manifest_root_of, unpack};

/// A reader's refusal as lint's error: the file problem as it is, any
/// other refusal as an archive that is not readable.
fn archive_error(path: &Path, error: ArchiveError) -> LintError {
    match error {
        ArchiveError::File(problem) => LintError::File(problem),
        other => LintError::Archive {
            path: path.to_owned(),
            message: other.to_string(),
        },
    }
}

/// The rule a reading that stopped early breaks.
fn stopped_by(error: &ArchiveError) -> Rule {
    match error {
        ArchiveError::Limits(_) => Rule::ArchiveLimits,
        ArchiveError::File(_) | ArchiveError::Malformed(_) => Rule::ArchiveMalformed,
    }
}

/// Reads the entry named exactly `wanted` again (the bundle, known only
/// once the manifest is read), up to [`MAX_BUNDLE_BYTES`]; `None` when it is
/// larger or cannot be read.
fn read_entry(path: &Path, bytes: Bytes, wanted: &str) -> Result<Option<String>, LintError> {
    Ok(reader::read_entry_bytes(
        Format::of_path(path),
        bytes,
        wanted,
        MAX_BUNDLE_BYTES,
        false,
    )
    .map_err(|e| archive_error(path, e))?
    .map(|data| String::from_utf8_lossy(&data).into_owned()))
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
    let read = reader::read(Format::of(name), bytes).map_err(|e| archive_error(path, e))?;
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
    let read = reader::read(Format::Zip, bytes).map_err(|e| archive_error(path, e))?;
    let shown = path.display().to_string();
    if let Some(problem) = read.stopped {
        report.add(Finding::about(
            stopped_by(&problem),
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

/// Lints an `.mcpb` file: a zip whose entries pass the entry rules of
/// every archive (`crate::lint::archive::bundle_entries`), whose
/// `manifest.json` mcpb accepts and whose entry point is in it.
pub fn bundle(path: &Path, report: &mut Report) -> Result<(), LintError> {
    let shown = path.display().to_string();
    let (names, manifest) =
        bundle_entries(path, Bytes::File(path), crate::extension::MCPB, report)?;
    let manifest = manifest.map(|data| String::from_utf8_lossy(&data).into_owned());
    let Some(manifest) = manifest else {
        report.add(Finding::about(
            Rule::ClientMcpb,
            &shown,
            "mcpb refuses it: no manifest.json of at most 1 MiB at the bundle root".into(),
            "`ecp package --clients mcpb` writes the bundle",
        ));
        return Ok(());
    };
    // Any manifest.json counts here: the bundle has nothing else.
    let manifest = if manifest.contains("manifest_version") || manifest.contains("dxt_version") {
        manifest
    } else {
        format!("{{\"manifest_version\": null, \"_\": {manifest}}}")
    };
    let label = |relative: &str| format!("{shown}!/{relative}");
    let read = |relative: &str| (relative == crate::extension::MCPB).then(|| manifest.clone());
    let exists = |relative: &str| names.iter().any(|n| n == relative);
    let holds = |relative: &str| {
        names
            .iter()
            .any(|n| n == relative || n.strip_prefix(relative).is_some_and(|r| r.starts_with('/')))
    };
    let place = super::clients::Place {
        label: &label,
        read: &read,
        exists: &exists,
        holds: &holds,
        shipped: true,
    };
    super::clients::lint(&place, None, &crate::extension::Project::default(), report);
    Ok(())
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
                    crate::text::outside::shown(&entry.path),
                    crate::text::outside::shown(first)
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
                    crate::text::outside::shown(&entry.path)
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
                    let format = Format::of_path(path);
                    let binary = reader::read_entry_bytes(format, bytes, &wanted, 64 * 1024, true)
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
    let prefix = crate::extension::NPM_PREFIX;
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
                &format!("{shown}!/{}", crate::text::outside::shown(&entry.path)),
                format!(
                    "entry `{}` is outside package/: npm strips the first folder of every path and Qwen Code installs the entry beside the package's files, so the two install different extensions",
                    crate::text::outside::shown(&entry.path)
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
    stopped: Option<ArchiveError>,
    layout: Layout,
    report: &mut Report,
) -> Result<Option<ArchiveFacts>, LintError> {
    let shown = &path.display().to_string();
    let entry_label = |entry: &str| format!("{shown}!/{entry}");
    if let Some(problem) = stopped {
        report.add(Finding::about(
            stopped_by(&problem),
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
    let place = crate::lint::clients::Place {
        label: &label,
        read: &data_of,
        exists: &exists,
        holds: &holds,
        shipped: true,
    };
    let project = crate::extension::Project::default();
    crate::lint::clients::lint(&place, Some(manifest), &project, report);
    // A client file lint did not keep (over 1 MiB, or past the budget) is
    // said, never passed over as if it were not there.
    let npm = root == crate::extension::NPM_PREFIX;
    let files = crate::extension::CLIENT_FILES.iter().copied();
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
    if root == crate::extension::NPM_PREFIX
        && let Some(package_json) = data_of("package.json")
    {
        crate::lint::clients::npm_package(&label("package.json"), &package_json, version, report);
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
