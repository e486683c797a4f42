//! `ecp lint`: the pre-publish gate. Lints a manifest, an extension folder or
//! a built `.tar.gz`/`.zip`, and reports findings with stable rule IDs,
//! source positions and help, as text, JSON or SARIF.
//!
//! - [`json`]: a span-keeping JSON parser (positions for every value);
//! - [`rules`]: the rule catalogue (`ecp explain`);
//! - [`manifest`]: the manifest rules (secrets found by [`crate::text::secrets`]);
//! - [`archive`]: reading archives and their rules;
//! - [`release`]: a release folder as Qwen's installer would see it;
//! - [`report`]: the three output formats.

pub mod archive;
pub mod bundle;
pub mod clients;
/// The one JSON reader (moved below the commands; this path stays).
pub use crate::json;
pub mod manifest;
pub mod mem0;
pub mod paths;
pub mod registry;
pub mod release;
pub mod report;
pub mod rules;

use std::{
    collections::{BTreeMap, HashMap},
    path::{Path, PathBuf},
};

pub use rules::{Rule, Severity};

use json::{Span, line_column};

use crate::files;

pub use crate::input::MANIFEST;

/// One problem, where it is and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub rule: Rule,
    pub severity: Severity,
    pub message: String,
    /// The file as shown to the user (`archive.zip!/qwen-extension.json`
    /// for a file inside an archive).
    pub file: String,
    /// 1-based; `None` for findings about a whole file or archive entry.
    pub position: Option<Position>,
    /// JSON pointer of the offending value ("" for the document).
    pub pointer: String,
    pub help: String,
    /// The byte range the finding is about, when it is about a value.
    pub span: Option<Span>,
}

/// Where a finding starts and ends, 1-based, columns in characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub line: usize,
    pub column: usize,
    pub end_line: usize,
    pub end_column: usize,
    pub span: Span,
}

impl Finding {
    /// A finding about the JSON value at `span` of `file`; its position is
    /// resolved once for the whole report (`Report::resolve_positions`).
    pub(crate) fn new(
        rule: Rule,
        file: &str,
        span: Span,
        pointer: &str,
        message: String,
        help: impl Into<String>,
    ) -> Finding {
        Finding {
            rule,
            severity: rule.severity(),
            message,
            file: file.to_owned(),
            position: None,
            span: Some(span),
            pointer: pointer.to_owned(),
            help: help.into(),
        }
    }

    /// A finding about a whole file or archive entry.
    pub(crate) fn about(
        rule: Rule,
        file: &str,
        message: String,
        help: impl Into<String>,
    ) -> Finding {
        Finding {
            rule,
            severity: rule.severity(),
            message,
            file: file.to_owned(),
            position: None,
            span: None,
            pointer: String::new(),
            help: help.into(),
        }
    }
}

/// The most findings of one rule a report keeps; the rest are counted
/// (`omitted`), so that a hostile input cannot make the report, its memory
/// or its output grow with the number of findings.
pub const MAX_FINDINGS_PER_RULE: usize = 50;

/// Findings with a per-rule cap.
#[derive(Debug, Clone, Default)]
pub struct Findings {
    pub list: Vec<Finding>,
    /// Findings past the cap, by rule.
    pub omitted: BTreeMap<Rule, usize>,
    kept: HashMap<Rule, usize>,
}

impl Findings {
    /// Keeps the finding `make` builds unless `rule` is at the cap; it is
    /// built only when it is kept.
    pub fn add_with(&mut self, rule: Rule, make: impl FnOnce() -> Finding) {
        let kept = self.kept.entry(rule).or_insert(0);
        if *kept >= MAX_FINDINGS_PER_RULE {
            *self.omitted.entry(rule).or_insert(0) += 1;
        } else {
            *kept += 1;
            self.list.push(make());
        }
    }

    pub fn add(&mut self, finding: Finding) {
        self.add_with(finding.rule, || finding);
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty() && self.omitted.is_empty()
    }
}

/// A text that findings point into, with the ranges to mask when shown.
#[derive(Debug, Clone)]
pub struct Source {
    pub file: String,
    pub text: String,
    pub redactions: Vec<Span>,
}

/// What an archive holds, for the summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveSummary {
    pub file: String,
    pub entries: usize,
    /// Every entry's path as read (not in the JSON output).
    pub paths: Vec<String>,
    pub uncompressed_bytes: u64,
    pub compressed_bytes: u64,
}

/// Everything one lint run found.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The findings kept (at most [`MAX_FINDINGS_PER_RULE`] per rule).
    pub findings: Vec<Finding>,
    /// Findings past the cap, by rule; they count in [`Report::count`].
    pub omitted: BTreeMap<Rule, usize>,
    pub sources: Vec<Source>,
    pub archives: Vec<ArchiveSummary>,
    /// What the reader should know that is not a finding (it never changes
    /// the verdict): for example that Qwen cannot run a source folder as it
    /// would install it.
    pub notes: Vec<String>,
    kept: HashMap<Rule, usize>,
}

impl Report {
    /// Every finding of `severity`, the omitted ones included.
    pub fn count(&self, severity: Severity) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == severity)
            .count()
            + self
                .omitted
                .iter()
                .filter(|(rule, _)| rule.severity() == severity)
                .map(|(_, n)| n)
                .sum::<usize>()
    }

    /// Adds a finding, or counts it past the per-rule cap.
    pub fn add(&mut self, finding: Finding) {
        let kept = self.kept.entry(finding.rule).or_insert(0);
        if *kept >= MAX_FINDINGS_PER_RULE {
            *self.omitted.entry(finding.rule).or_insert(0) += 1;
        } else {
            *kept += 1;
            self.findings.push(finding);
        }
    }

    /// Adds findings collected elsewhere, with their omitted counts.
    pub(crate) fn extend(&mut self, findings: Findings) {
        for finding in findings.list {
            self.add(finding);
        }
        for (rule, n) in findings.omitted {
            *self.omitted.entry(rule).or_insert(0) += n;
        }
    }

    /// Fills every finding's line and column from its span, with one line
    /// index per source.
    fn resolve_positions(&mut self) {
        for source in &self.sources {
            let index = json::LineIndex::new(&source.text);
            for finding in self.findings.iter_mut().filter(|f| f.file == source.file) {
                if let Some(span) = finding.span {
                    let (line, column) = index.line_column(span.start);
                    let (end_line, end_column) = index.line_column(span.end);
                    finding.position = Some(Position {
                        line,
                        column,
                        end_line,
                        end_column,
                        span,
                    });
                }
            }
        }
    }

    pub(crate) fn sort(&mut self) {
        self.resolve_positions();
        self.findings.sort_by(|a, b| {
            let at = |f: &Finding| f.position.map(|p| (p.line, p.column));
            (&a.file, at(a), a.rule).cmp(&(&b.file, at(b), b.rule))
        });
    }
}

/// Why lint could not run at all (exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum LintError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{file}:{line}:{column}: not JSON: {message}")]
    NotJson {
        file: String,
        text: String,
        line: usize,
        column: usize,
        offset: usize,
        message: String,
    },
    #[error("cannot read {0}")]
    File(#[from] files::FileProblem),
    #[error(transparent)]
    Input(#[from] crate::input::InputError),
    #[error("{}: not a readable archive: {message}", path.display())]
    Archive { path: PathBuf, message: String },
}

impl LintError {
    /// What to do about it, when there is something to say.
    pub fn help(&self) -> Option<String> {
        match self {
            LintError::Input(input) => Some(input.help()),
            LintError::NotJson { .. } => Some(
                "fix the syntax; qwen-extension.json is strict JSON (no comments, no trailing commas)"
                    .into(),
            ),
            LintError::Archive { .. } => Some(
                "pass a .tar.gz or .zip as `ecp package` writes it, or the extension folder".into(),
            ),
            LintError::Read { .. } | LintError::File(_) => None,
        }
    }
}

/// Reads a manifest or `Cargo.toml`: a regular file of at most 1 MiB, not
/// through a symlink that leaves `folder` (when one is under review).
fn read(path: &Path, folder: Option<&Path>) -> Result<String, LintError> {
    files::read_text(path, folder, files::MAX_TEXT_BYTES).map_err(LintError::File)
}

/// Lints one manifest text shown as `file`, adding to `report`.
pub fn lint_manifest_text(
    file: &str,
    text: &str,
    report: &mut Report,
) -> Result<manifest::ManifestFacts, LintError> {
    let check = manifest::check(file, text).map_err(|error| {
        let (line, column) = line_column(text, error.offset);
        LintError::NotJson {
            file: file.to_owned(),
            text: text.to_owned(),
            line,
            column,
            offset: error.offset,
            message: error.message,
        }
    })?;
    report.extend(check.findings);
    report.sources.push(Source {
        file: file.to_owned(),
        text: text.to_owned(),
        redactions: check.redactions,
    });
    Ok(check.facts)
}

fn display(path: &Path) -> String {
    path.display().to_string()
}

/// What a lint run checks besides the input itself.
#[derive(Debug, Clone, Default)]
pub struct LintOptions {
    /// The release tag (`v1.2.0`) the manifest version must agree with.
    pub release_tag: Option<String>,
}

/// Lints a folder, a manifest file, an archive or a release folder.
pub fn lint_path(path: &Path) -> Result<Report, LintError> {
    lint_path_with(path, &LintOptions::default()).map(|(report, _)| report)
}

/// [`lint_path`], with what the manifest of a folder or a manifest file
/// says (`None` for an archive): one parse for the findings and the facts
/// `ecp package` builds on.
pub fn lint_path_with_facts(
    path: &Path,
) -> Result<(Report, Option<manifest::ManifestFacts>), LintError> {
    lint_path_with(path, &LintOptions::default())
}

/// [`lint_path_with_facts`] with options.
pub fn lint_path_with(
    path: &Path,
    options: &LintOptions,
) -> Result<(Report, Option<manifest::ManifestFacts>), LintError> {
    let mut report = Report::default();
    let mut facts = None;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    crate::input::InputError::check_exists(path)?;
    let metadata = std::fs::metadata(path).map_err(|source| LintError::Read {
        path: path.to_owned(),
        source,
    })?;
    let tag = options.release_tag.as_deref();
    if name.ends_with(".mcpb") {
        archive::bundle(path, &mut report)?;
    } else if name == crate::channels::registry::FILE && metadata.is_file() {
        let text = read(path, None)?;
        let folder = folder_of(path);
        let bundles = bundles_beside(folder);
        registry::lint(&display(path), &text, &bundles, &mut report);
    } else if name.ends_with(".tar.gz") || name.ends_with(".tgz") || name.ends_with(".zip") {
        let found = archive::lint_archive(path, &mut report)?;
        if let (Some(tag), Some(found)) = (tag, found) {
            tag_rule(&display(path), tag, &found.manifest, &mut report);
        }
    } else if metadata.is_dir()
        && std::fs::symlink_metadata(path.join(MANIFEST)).is_err()
        && release::is_release_folder(path)
    {
        release::lint_release_folder(path, tag, &mut report)?;
    } else if metadata.is_dir() {
        let found = lint_folder(path, &mut report)?;
        if let Some(tag) = tag {
            tag_rule(&display(&path.join(MANIFEST)), tag, &found, &mut report);
        }
        facts = Some(found);
    } else if let Some((text, root, kind)) = mem0_file(path, name, &metadata)? {
        mem0::lint(&display(path), &text, &root, kind, &mut report);
    } else {
        let text = read(path, None)?;
        let found = lint_manifest_text(&display(path), &text, &mut report)?;
        let folder = folder_of(path);
        folder_rules(folder, &display(path), &found, &mut report)?;
        if let Some(tag) = tag {
            tag_rule(&display(path), tag, &found, &mut report);
        }
        facts = Some(found);
    }
    report.sort();
    Ok((report, facts))
}

/// A file given on its own that is one of Qwen's Mem0 provider files
/// (recognised by its shape, [`mem0::recognise`]), read and parsed.
fn mem0_file(
    path: &Path,
    name: &str,
    metadata: &std::fs::Metadata,
) -> Result<Option<(String, json::Node, mem0::Kind)>, LintError> {
    if name == MANIFEST || !metadata.is_file() {
        return Ok(None);
    }
    let text = read(path, None)?;
    let Ok(root) = json::parse(&text) else {
        return Ok(None);
    };
    Ok(mem0::recognise(&root).map(|kind| (text, root, kind)))
}

/// The folder a file given on its own sits in: `.` for a bare file name
/// (whose `parent()` is the empty path, which names no folder).
fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// `--release-tag`: the tag names the manifest's version.
fn tag_rule(file: &str, tag: &str, facts: &manifest::ManifestFacts, report: &mut Report) {
    if let Some(problem) = release::tag_disagrees(tag, facts.version.as_deref()) {
        let help = "tag the commit whose manifest and Cargo.toml carry the version (`git tag vX.Y.Z`), or bump them";
        report.add(match facts.version_span {
            Some(span) => Finding::new(Rule::ReleaseVersion, file, span, "/version", problem, help),
            None => Finding::about(Rule::ReleaseVersion, file, problem, help),
        });
    }
}

fn lint_folder(folder: &Path, report: &mut Report) -> Result<manifest::ManifestFacts, LintError> {
    let manifest_path = folder.join(MANIFEST);
    let Some(text) = crate::extension::read_manifest(folder)? else {
        return Err(crate::input::InputError::NoManifest {
            path: folder.to_owned(),
        }
        .into());
    };
    let shown = display(&manifest_path);
    let facts = lint_manifest_text(&shown, &text, report)?;
    folder_rules(folder, &shown, &facts, report)?;
    client_rules(folder, &text, report)?;
    if let Some(note) = installed_as_is(folder, &facts) {
        report.notes.push(note);
    }
    Ok(facts)
}

/// The other clients' manifests of a folder (`clients`),
/// its `server.json`, and the `package.json` of a folder that is an
/// unpacked npm package.
fn client_rules(folder: &Path, manifest: &str, report: &mut Report) -> Result<(), LintError> {
    let label = |relative: &str| display(&folder.join(relative));
    let read_client = |relative: &str| {
        let path = folder.join(relative);
        std::fs::symlink_metadata(&path).ok()?;
        files::read_text(&path, Some(folder), files::MAX_TEXT_BYTES).ok()
    };
    let exists = |relative: &str| folder.join(relative).is_file();
    let holds = |relative: &str| {
        let path = folder.join(relative);
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => std::fs::read_dir(&path)
                .map(|mut entries| entries.next().is_some())
                .unwrap_or(true),
            Ok(_) => true,
            Err(_) => false,
        }
    };
    let project = crate::extension::Project::read(folder)?;
    let place = clients::Place {
        label: &label,
        read: &read_client,
        exists: &exists,
        holds: &holds,
        shipped: false,
    };
    clients::lint(&place, Some(manifest), &project, report);
    for relative in crate::channels::CLIENT_FILES {
        let path = folder.join(relative);
        if std::fs::symlink_metadata(&path).is_ok() {
            // There but unreadable (a link out, a FIFO, too large): said,
            // never skipped.
            if let Err(problem) = files::read_text(&path, Some(folder), files::MAX_TEXT_BYTES) {
                return Err(LintError::File(problem));
            }
        }
    }
    let server_json = folder.join(crate::channels::registry::FILE);
    if std::fs::symlink_metadata(&server_json).is_ok() {
        let text = read(&server_json, Some(folder))?;
        registry::lint(
            &display(&server_json),
            &text,
            &bundles_beside(folder),
            report,
        );
    }
    Ok(())
}

/// The MCP Bundles in `folder` (at most 64), with their sha256, for the
/// `fileSha256` rule of a `server.json` there.
pub(crate) fn bundles_beside(folder: &Path) -> Vec<(String, String)> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".mcpb"))
        .take(64)
        .filter_map(|n| {
            Some((
                n.clone(),
                crate::digest::sha256_file(&folder.join(&n)).ok()?,
            ))
        })
        .collect()
}

/// Why `qwen extensions install FOLDER` would not give a working extension
/// although the folder lints clean: a Rust source folder has no `dist/main`
/// (`ecp package` builds it into the archive), and a Node project would be
/// copied with its `node_modules`. `None` for a folder Qwen can run as is.
fn installed_as_is(folder: &Path, facts: &manifest::ManifestFacts) -> Option<String> {
    let entry = facts.entry_point.as_ref()?;
    let fix = "`ecp try` packages it and installs the archive for this machine into Qwen Code";
    match entry.kind {
        manifest::EntryKind::Native
            if !folder.join(&entry.path).is_file() && folder.join("Cargo.toml").is_file() =>
        {
            Some(format!(
                "Qwen cannot run this folder as installed: `{}` is built into the release archive by `ecp package`, not kept here; {fix}",
                entry.path
            ))
        }
        manifest::EntryKind::Script if folder.join("node_modules").is_dir() => Some(format!(
            "installing this folder would copy its node_modules into Qwen (the extension needs only `{}`); {fix}",
            entry.path
        )),
        _ => None,
    }
}

/// Rules that need the folder around the manifest: context files and the
/// crate version.
///
/// A `Cargo.toml` or `package.json` that is there but cannot be read as a
/// regular file (a FIFO, a link to `/dev/zero` or out of the folder, too
/// large) stops lint with its reason, as an unreadable manifest does: a
/// folder lint could not read whole is never called clean.
fn folder_rules(
    folder: &Path,
    file: &str,
    facts: &manifest::ManifestFacts,
    report: &mut Report,
) -> Result<(), LintError> {
    for (name, span) in &facts.context_files {
        if !folder.join(name).is_file() {
            report.add(Finding::new(
                Rule::ContextFileMissing,
                file,
                *span,
                "/contextFileName",
                format!("context file `{name}` does not exist next to the manifest"),
                format!("add {name} or remove it from contextFileName"),
            ));
        }
    }
    if let Some(entry) = &facts.entry_point
        && entry.kind == manifest::EntryKind::Script
    {
        match read_bundle(&folder.join(&entry.path), folder) {
            Err(why) => report.add(Finding::new(
                Rule::EntryPointMissing,
                file,
                entry.span,
                &entry.pointer,
                format!("the bundle `{}` {why}", entry.path),
                "build it (for example `npm run build`) before linting the release folder",
            )),
            Ok(source) => bundle_rules(file, entry, &source, report),
        }
    }
    let project = crate::extension::Project::read(folder)?;
    if let Some(table) = &project.cargo
        && let Some(installed) = crate::extension::runtime::installed(folder, table)
        && let Some(finding) = runtime_finding(
            &installed,
            crate::runtime::releases::RELEASES,
            &display(&folder.join("Cargo.toml")),
        )
    {
        report.add(finding);
    }
    // The manifest, Cargo.toml and package.json describe one release.
    let others = [
        ("Cargo.toml", project.crate_version()),
        ("package.json", project.package_json_version()),
    ];
    if let Some(version) = &facts.version {
        for (source, other) in others {
            if let Some(other) = other.filter(|other| other != version) {
                report.add(Finding::new(
                    Rule::VersionDrift,
                    file,
                    facts.version_span.unwrap_or_default(),
                    "/version",
                    format!("the manifest says {version} but {source} says {other}"),
                    "bump both versions together",
                ));
            }
        }
    }
    Ok(())
}

/// The largest bundle read for the self-contained scan.
pub(crate) const MAX_BUNDLE_BYTES: u64 = 64 * 1024 * 1024;

/// Why a bundle was not read, as the end of a sentence about it.
#[derive(Debug, thiserror::Error)]
enum Unread {
    #[error("is not in the folder")]
    Missing,
    #[error("{}", unread_words(.0))]
    Problem(files::FileProblem),
}

fn unread_words(problem: &files::FileProblem) -> String {
    match problem {
        files::FileProblem::NotRegular { what, .. } => format!("is {what}, not a regular file"),
        files::FileProblem::LeavesFolder { .. } => {
            "is a link that leads out of the folder".to_owned()
        }
        files::FileProblem::TooLarge { max, .. } => format!("is larger than {} MiB", max >> 20),
        files::FileProblem::Io { source, .. } => format!("cannot be read: {source}"),
    }
}

/// Reads a bundle from a folder through [`files::read_text`]: a regular
/// file of at most [`MAX_BUNDLE_BYTES`], not through a link that leaves the
/// folder. `Err` says what is wrong with it.
fn read_bundle(path: &Path, folder: &Path) -> Result<String, Unread> {
    match std::fs::symlink_metadata(path) {
        Err(_) => Err(Unread::Missing),
        Ok(_) => files::read_text(path, Some(folder), MAX_BUNDLE_BYTES).map_err(Unread::Problem),
    }
}

/// The warning for a bundle that still imports packages.
pub(crate) fn bundle_rules(
    file: &str,
    entry: &manifest::EntryPoint,
    source: &str,
    report: &mut Report,
) {
    let imports = bundle::external_imports(source);
    if !imports.is_empty() {
        report.add(Finding::new(
            Rule::BundleNotSelfContained,
            file,
            entry.span,
            &entry.pointer,
            format!(
                "the bundle `{}` still imports {}, which Qwen's install does not provide",
                entry.path,
                bundle::describe(&imports)
            ),
            "bundle every dependency: esbuild --bundle --platform=node --format=esm",
        ));
    }
}

/// What to say about the runtime an extension holds, judged against
/// `releases` (newest first, the first being the one this ecp carries): an
/// error when a newer release fixes a security problem, a warning when it
/// is merely older.
pub(crate) fn runtime_finding(
    installed: &crate::extension::runtime::Installed,
    releases: &[crate::runtime::releases::Release],
    file: &str,
) -> Option<Finding> {
    let version = installed.version();
    let carried = releases.first()?.version;
    let newer = crate::runtime::releases::newer_in(releases, version);
    let layout = match installed {
        crate::extension::runtime::Installed::Copied => " (copied into src/ by ecp 0.1.0)",
        crate::extension::runtime::Installed::Vendored { .. } => "",
    };
    let help = "run `ecp upgrade`: it shows what changes, replaces the runtime and leaves src/provider.rs alone";
    if let Some(fix) = newer
        .iter()
        .find_map(|r| r.security_fix.map(|f| (r.version, f)))
    {
        return Some(Finding::about(
            Rule::RuntimeSecurityFix,
            file,
            format!(
                "the extension's runtime is ecp-runtime {version}{layout}; {} fixes a security problem in it: {}",
                fix.0, fix.1
            ),
            help,
        ));
    }
    (!newer.is_empty()).then(|| {
        Finding::about(
            Rule::RuntimeOutdated,
            file,
            format!(
                "the extension's runtime is ecp-runtime {version}{layout}; this ecp carries {carried}"
            ),
            help,
        )
    })
}

#[cfg(test)]
mod runtime_tests {
    use crate::runtime::releases::Release;

    use super::*;
    use crate::extension::runtime::Installed;

    fn vendored(version: &str) -> Installed {
        Installed::Vendored {
            version: version.to_owned(),
            recorded_sha256: None,
        }
    }

    const RELEASES: &[Release] = &[
        Release {
            version: "0.4.0",
            notes: &["newest"],
            security_fix: None,
        },
        Release {
            version: "0.3.0",
            notes: &["fixes a token check"],
            security_fix: Some("a token for another audience was accepted"),
        },
        Release {
            version: "0.2.0",
            notes: &["older"],
            security_fix: None,
        },
    ];

    #[test]
    fn an_older_runtime_warns_and_one_with_a_later_security_fix_fails() {
        let rule = |installed: &Installed| {
            runtime_finding(installed, RELEASES, "Cargo.toml").map(|f| (f.rule, f.message))
        };
        assert_eq!(rule(&vendored("0.4.0")), None);
        let (outdated, message) = rule(&vendored("0.3.0")).unwrap();
        assert_eq!(outdated, Rule::RuntimeOutdated);
        assert!(
            message.contains("ecp-runtime 0.3.0; this ecp carries 0.4.0"),
            "{message}"
        );
        let (fix, message) = rule(&vendored("0.2.0")).unwrap();
        assert_eq!(fix, Rule::RuntimeSecurityFix);
        assert!(
            message.contains("0.3.0 fixes a security problem"),
            "{message}"
        );
        assert_eq!(
            rule(&Installed::Copied).unwrap().0,
            Rule::RuntimeSecurityFix
        );
        // The list this ecp ships: its own version is current.
        let carried = vendored(crate::runtime::releases::VERSION);
        assert!(
            runtime_finding(&carried, crate::runtime::releases::RELEASES, "Cargo.toml").is_none()
        );
        assert_eq!(
            runtime_finding(
                &Installed::Copied,
                crate::runtime::releases::RELEASES,
                "Cargo.toml"
            )
            .map(|f| f.rule),
            Some(Rule::RuntimeSecurityFix),
            "0.4.3 fixes a security problem (a loopback endpoint's token sent to a proxy)"
        );
    }
}
