//! `ecp lint`: the pre-publish gate. Lints a manifest, an extension folder or
//! a built `.tar.gz`/`.zip`, and reports findings with stable rule IDs,
//! source positions and help, as text, JSON or SARIF.
//!
//! - [`json`]: a span-keeping JSON parser (positions for every value);
//! - [`rules`]: the rule catalogue (`ecp explain`);
//! - [`manifest`]: the manifest rules; [`secrets`]: secret detection;
//! - [`archive`]: reading archives and their rules;
//! - [`report`]: the three output formats.

pub mod archive;
pub mod bundle;
pub mod json;
pub mod manifest;
pub mod paths;
pub mod report;
pub mod rules;
pub mod secrets;

use std::path::{Path, PathBuf};

pub use rules::{Rule, Severity};

use json::{Span, line_column};

/// The manifest's file name.
pub const MANIFEST: &str = "qwen-extension.json";

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
    pub(crate) fn new(
        rule: Rule,
        file: &str,
        text: &str,
        span: Span,
        pointer: &str,
        message: String,
        help: impl Into<String>,
    ) -> Finding {
        let help = help.into();
        let (line, column) = line_column(text, span.start);
        let (end_line, end_column) = line_column(text, span.end);
        Finding {
            rule,
            severity: rule.severity(),
            message,
            file: file.to_owned(),
            position: Some(Position {
                line,
                column,
                end_line,
                end_column,
                span,
            }),
            pointer: pointer.to_owned(),
            help,
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
            pointer: String::new(),
            help: help.into(),
        }
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
    pub uncompressed_bytes: u64,
    pub compressed_bytes: u64,
}

/// Everything one lint run found.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub findings: Vec<Finding>,
    pub sources: Vec<Source>,
    pub archives: Vec<ArchiveSummary>,
}

impl Report {
    pub fn count(&self, severity: Severity) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == severity)
            .count()
    }

    fn sort(&mut self) {
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
    #[error("{}: no {MANIFEST} here; pass an extension folder, a {MANIFEST} or a .tar.gz/.zip archive", path.display())]
    NoManifest { path: PathBuf },
    #[error("{}: not a readable archive: {message}", path.display())]
    Archive { path: PathBuf, message: String },
}

fn read(path: &Path) -> Result<String, LintError> {
    std::fs::read_to_string(path).map_err(|source| LintError::Read {
        path: path.to_owned(),
        source,
    })
}

/// Lints one manifest text shown as `file`, adding to `report`.
pub(crate) fn lint_manifest_text(
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
    report.findings.extend(check.findings);
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

/// Lints a folder, a manifest file or an archive.
pub fn lint_path(path: &Path) -> Result<Report, LintError> {
    let mut report = Report::default();
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if name.ends_with(".tar.gz") || name.ends_with(".tgz") || name.ends_with(".zip") {
        archive::lint_archive(path, &mut report)?;
    } else if path.is_dir() {
        lint_folder(path, &mut report)?;
    } else if path.is_file() {
        let text = read(path)?;
        let facts = lint_manifest_text(&display(path), &text, &mut report)?;
        let folder = path.parent().unwrap_or(Path::new("."));
        folder_rules(folder, &display(path), &text, &facts, &mut report);
    } else if !path.exists() {
        return Err(LintError::Read {
            path: path.to_owned(),
            source: std::io::ErrorKind::NotFound.into(),
        });
    } else {
        return Err(LintError::NoManifest {
            path: path.to_owned(),
        });
    }
    report.sort();
    Ok(report)
}

fn lint_folder(folder: &Path, report: &mut Report) -> Result<(), LintError> {
    let manifest_path = folder.join(MANIFEST);
    if !manifest_path.is_file() {
        return Err(LintError::NoManifest {
            path: folder.to_owned(),
        });
    }
    let text = read(&manifest_path)?;
    let shown = display(&manifest_path);
    let facts = lint_manifest_text(&shown, &text, report)?;
    folder_rules(folder, &shown, &text, &facts, report);
    Ok(())
}

/// Rules that need the folder around the manifest: context files and the
/// crate version.
fn folder_rules(
    folder: &Path,
    file: &str,
    text: &str,
    facts: &manifest::ManifestFacts,
    report: &mut Report,
) {
    for (name, span) in &facts.context_files {
        if !folder.join(name).is_file() {
            report.findings.push(Finding::new(
                Rule::ContextFileMissing,
                file,
                text,
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
        match read_bundle(&folder.join(&entry.path)) {
            Err(why) => report.findings.push(Finding::new(
                Rule::EntryPointMissing,
                file,
                text,
                entry.span,
                &entry.pointer,
                format!("the bundle `{}` {why}", entry.path),
                "build it (for example `npm run build`) before linting the release folder",
            )),
            Ok(source) => bundle_rules(file, text, entry, &source, report),
        }
    }
    let cargo = folder.join("Cargo.toml");
    if let (Some(version), Ok(cargo_text)) = (&facts.version, std::fs::read_to_string(&cargo))
        && let Some(crate_version) = crate_version(&cargo_text)
        && crate_version != *version
    {
        let span = facts.version_span.unwrap_or_default();
        report.findings.push(Finding::new(
            Rule::VersionDrift,
            file,
            text,
            span,
            "/version",
            format!("the manifest says {version} but Cargo.toml says {crate_version}"),
            "bump both versions together",
        ));
    }
}

/// The largest bundle read for the self-contained scan.
pub(crate) const MAX_BUNDLE_BYTES: u64 = 64 * 1024 * 1024;

/// Reads a bundle from a folder: a regular file, not a link, of at most
/// [`MAX_BUNDLE_BYTES`]. `Err` says what is wrong with it.
fn read_bundle(path: &Path) -> Result<String, String> {
    let metadata =
        std::fs::symlink_metadata(path).map_err(|_| "is not in the folder".to_owned())?;
    if !metadata.file_type().is_file() {
        return Err("is not a regular file".into());
    }
    if metadata.len() > MAX_BUNDLE_BYTES {
        return Err(format!("is larger than {} MiB", MAX_BUNDLE_BYTES >> 20));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("cannot be read: {e}"))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The warning for a bundle that still imports packages.
pub(crate) fn bundle_rules(
    file: &str,
    text: &str,
    entry: &manifest::EntryPoint,
    source: &str,
    report: &mut Report,
) {
    let imports = bundle::external_imports(source);
    if !imports.is_empty() {
        report.findings.push(Finding::new(
            Rule::BundleNotSelfContained,
            file,
            text,
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

fn crate_version(cargo_toml: &str) -> Option<String> {
    let document: toml::Table = cargo_toml.parse().ok()?;
    document
        .get("package")?
        .get("version")?
        .as_str()
        .map(str::to_owned)
}
