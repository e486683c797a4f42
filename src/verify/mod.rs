//! `ecp verify ARCHIVE`: what a reviewer can prove about a release archive
//! before installing it, each step proven, failed, or not checked (and why):
//!
//! - `sums`: `SHA256SUMS` beside the archive lists it with its digest;
//! - `provenance`: a statement beside it (or `--provenance FILE`) lists it
//!   by name with the same digest;
//! - `signature` (with `--key`): the statement's DSSE envelope is signed by
//!   that key;
//! - `lint`: the archive, its manifest and its layout pass `ecp lint`;
//! - `rebuild` (with `--rebuild SOURCE`): the recorded commit of SOURCE,
//!   packaged again in a scratch folder with the recorded target, formats and
//!   epoch, gives the same bytes; otherwise the first difference is named.

mod diff;
mod live;
mod rebuild;

pub use live::Live;

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::lint::{self, Severity};
use crate::provenance::dsse::Envelope;
use crate::provenance::keys::{KeyError, VerifyingKey};
use crate::release::{SUMS, Sums};
pub use diff::first_difference;
use rebuild::rebuild_step;

/// What to verify.
#[derive(Debug, Clone, Default)]
pub struct VerifyOptions {
    pub archive: PathBuf,
    /// A public key (or the private key file) the envelope must be signed by.
    pub key: Option<PathBuf>,
    /// A git repository (path or URL) to rebuild the recorded commit from.
    pub rebuild: Option<String>,
    /// The statement or envelope, when it is not beside the archive.
    pub provenance: Option<PathBuf>,
    /// A running server to hold to the release's `tools.lock`.
    pub live: Option<Live>,
    /// With [`Live::Url`]: a bearer token for the endpoint.
    pub bearer: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Proven,
    Failed,
    NotChecked,
}

#[derive(Debug, Clone, Serialize)]
pub struct Step {
    pub id: &'static str,
    pub status: Status,
    pub detail: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct VerifyReport {
    pub archive: String,
    pub sha256: String,
    /// Every step that was asked for is proven.
    pub verified: bool,
    /// Who built it is proven: the signature step is proven. Without it a
    /// verified release only agrees with itself.
    pub origin_proven: bool,
    pub checks: Vec<Step>,
}

/// What stops `ecp verify` before it can judge anything.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("cannot read the archive {}: {reason}", path.display())]
    Archive { path: PathBuf, reason: String },
    #[error(transparent)]
    Key(#[from] KeyError),
}

impl VerifyError {
    pub fn help(&self) -> String {
        match self {
            VerifyError::Archive { .. } => {
                "pass a release archive, e.g. dist/linux.x64.acme-context.tar.gz".into()
            }
            VerifyError::Key(error) => error.help().into(),
        }
    }
}

/// The longest detail a step shows, in characters.
const MAX_DETAIL_CHARS: usize = 2000;

/// A step; its detail quotes the statement, the folder's file names and
/// the source, all written by whoever made the release, so it is shown
/// through [`crate::text::outside`]: escaped, masked and bounded, in the human
/// and the JSON form alike.
fn step(id: &'static str, status: Status, detail: impl AsRef<str>) -> Step {
    Step {
        id,
        status,
        detail: crate::text::outside::line(detail.as_ref(), MAX_DETAIL_CHARS),
    }
}

/// Runs every step; `log` hears the rebuild's progress.
/// The rebuild step: not checked unless `--rebuild`, and then only from a
/// statement that lists this archive.
fn rebuild_if_asked(
    options: &VerifyOptions,
    found: &Found,
    name: &str,
    sha256: &str,
    linted: bool,
    log: &mut dyn FnMut(&str),
) -> Step {
    match (&options.rebuild, found) {
        (None, _) => step(
            "rebuild",
            Status::NotChecked,
            "pass --rebuild SOURCE (a clone or the repository URL) to rebuild the recorded commit and compare",
        ),
        (Some(_), Found::Statement { statement, .. }) if !lists(statement, name, sha256) => step(
            "rebuild",
            Status::Failed,
            "no statement of this archive says what to rebuild",
        ),
        (Some(source), Found::Statement { statement, .. }) => {
            rebuild_step(source, statement, &options.archive, name, linted, log)
        }
        (Some(_), Found::Nothing(_)) => step(
            "rebuild",
            Status::Failed,
            "without a provenance statement there is no commit to rebuild",
        ),
    }
}

pub fn verify(
    options: &VerifyOptions,
    log: &mut dyn FnMut(&str),
) -> Result<VerifyReport, VerifyError> {
    let archive = &options.archive;
    let archive_error = |reason: String| VerifyError::Archive {
        path: archive.clone(),
        reason,
    };
    let key = options.key.as_deref().map(VerifyingKey::load).transpose()?;
    let sha256 = crate::digest::sha256_file(archive).map_err(|e| archive_error(e.to_string()))?;
    let name = archive
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| archive_error("its name is not UTF-8".into()))?
        .to_owned();
    let folder = match archive.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
        _ => PathBuf::from("."),
    };

    let mut checks = vec![sums_step(&folder, &name, &sha256)];
    let found = find_statement(&folder, options.provenance.as_deref(), &name, &sha256);
    let beside = read_all(&folder, options.provenance.as_deref());
    let conflicts = disagreements(&beside, &name, &sha256);
    checks.push(if conflicts.is_empty() {
        provenance_step(&found, &name, &sha256)
    } else {
        step(
            "provenance",
            Status::Failed,
            format!(
                "the provenance beside the archive does not agree: {}",
                conflicts.join("; ")
            ),
        )
    });
    checks.push(signature_step(&found, key.as_ref(), &beside));
    checks.push(lint_step(archive));
    let linted = checks.last().is_some_and(|c| c.status == Status::Proven);
    checks.push(rebuild_if_asked(
        options, &found, &name, &sha256, linted, log,
    ));
    checks.push(live::live_step(
        archive,
        &found,
        options.live.as_ref(),
        options.bearer.as_deref(),
    ));
    // An unsigned statement (or one whose signature was not checked) is
    // only as good as the folder it came in.
    let signed = checks
        .iter()
        .any(|c| c.id == "signature" && c.status == Status::Proven);
    if !signed
        && let Some(provenance) = checks
            .iter_mut()
            .find(|c| c.id == "provenance" && c.status == Status::Proven)
    {
        provenance.detail.push_str(
            "; with no verified signature this shows the release agrees with itself, not who built it",
        );
    }
    let asked = |id: &str| match id {
        "signature" => options.key.is_some(),
        "rebuild" => options.rebuild.is_some(),
        "live" => options.live.is_some(),
        _ => true,
    };
    let verified = checks
        .iter()
        .all(|c| c.status == Status::Proven || (!asked(c.id) && c.status == Status::NotChecked));
    Ok(VerifyReport {
        archive: crate::text::outside::line(&archive.display().to_string(), MAX_DETAIL_CHARS),
        sha256,
        verified,
        origin_proven: verified && signed,
        checks,
    })
}

fn sums_step(folder: &Path, name: &str, sha256: &str) -> Step {
    let path = folder.join(SUMS);
    let text = match crate::files::read_text(&path, None, crate::release::MAX_SUMS_BYTES) {
        Ok(text) => text,
        Err(problem) => {
            return step(
                "sums",
                Status::Failed,
                format!("no readable {SUMS} beside the archive ({problem})"),
            );
        }
    };
    let sums = match Sums::parse(&text) {
        Ok(sums) => sums,
        Err(error) => {
            return step(
                "sums",
                Status::Failed,
                format!("{SUMS} is not sha256sum output ({error})"),
            );
        }
    };
    match sums.entries.get(name) {
        None => step(
            "sums",
            Status::Failed,
            format!("{SUMS} does not list `{name}`"),
        ),
        Some(listed) if listed != sha256 => step(
            "sums",
            Status::Failed,
            format!(
                "the archive's sha256 is {sha256}, but {SUMS} says {listed}: the archive or the sums were changed"
            ),
        ),
        Some(_) => step(
            "sums",
            Status::Proven,
            format!("{SUMS} lists it with this sha256"),
        ),
    }
}

/// The statement that speaks of the archive, and where it came from.
enum Found {
    Statement {
        file: String,
        statement: Value,
        envelope: Option<Envelope>,
    },
    /// Why none was found.
    Nothing(String),
}

/// The provenance files of `folder` (or the one given), envelopes first.
fn candidates(folder: &Path, given: Option<&Path>) -> Vec<PathBuf> {
    if let Some(given) = given {
        return vec![given.to_owned()];
    }
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|n| n.ends_with(".intoto.jsonl") || n.ends_with(".intoto.json"))
        .take(lint::release::MAX_ASSETS)
        .collect();
    // Envelopes before plain statements: a signed statement can be checked.
    names.sort_by_key(|n| (!n.ends_with(".jsonl"), n.clone()));
    names.into_iter().map(|n| folder.join(n)).collect()
}

/// Why a provenance file gives no statement.
#[derive(Debug, thiserror::Error)]
pub enum ProvenanceError {
    /// Not a regular file within its cap.
    #[error("{0}")]
    Read(#[from] crate::files::FileProblem),
    /// Neither a statement nor an envelope line is JSON.
    #[error("not JSON ({0})")]
    NotJson(serde_json::Error),
    /// A DSSE envelope that is malformed, or whose payload is not a statement.
    #[error("{0}")]
    Envelope(#[from] crate::provenance::dsse::EnvelopeError),
    /// The envelope's payload is not JSON.
    #[error("its payload is not JSON ({0})")]
    PayloadNotJson(serde_json::Error),
}

fn read_provenance(path: &Path) -> Result<(Value, Option<Envelope>), ProvenanceError> {
    let text = crate::files::read_text(path, None, crate::provenance::MAX_STATEMENT_BYTES)?;
    parse_provenance(&text)
}

/// A statement file's text, or an envelope's and the statement it carries.
pub fn parse_provenance(text: &str) -> Result<(Value, Option<Envelope>), ProvenanceError> {
    let value: Value = serde_json::from_str(text)
        .or_else(|_| {
            serde_json::from_str(text.lines().find(|l| !l.trim().is_empty()).unwrap_or(""))
        })
        .map_err(ProvenanceError::NotJson)?;
    if value.get("payloadType").is_some() {
        let envelope = Envelope::parse(text)?;
        let payload = envelope.statement()?;
        let statement: Value =
            serde_json::from_slice(&payload).map_err(ProvenanceError::PayloadNotJson)?;
        return Ok((statement, Some(envelope)));
    }
    Ok((value, None))
}

/// The statement's subjects as (name, sha256), at most 1024.
pub fn subjects(statement: &Value) -> Vec<(String, String)> {
    statement["subject"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .take(1024)
                .map(|s| {
                    (
                        s["name"].as_str().unwrap_or_default().to_owned(),
                        s["digest"]["sha256"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn lists(statement: &Value, name: &str, sha256: &str) -> bool {
    subjects(statement)
        .iter()
        .any(|(n, d)| n == name && d.eq_ignore_ascii_case(sha256))
}

fn find_statement(folder: &Path, given: Option<&Path>, name: &str, sha256: &str) -> Found {
    let files = candidates(folder, given);
    if files.is_empty() {
        return Found::Nothing(
            "no provenance statement (*.intoto.json or *.intoto.jsonl) beside the archive".into(),
        );
    }
    let mut seen = Vec::new();
    let mut first_readable = None;
    // A statement of this name with another digest is kept in case no
    // statement agrees with the archive (then it is what is judged).
    let mut naming = None;
    for path in &files {
        let shown = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match read_provenance(path) {
            Err(reason) => seen.push(format!("{shown}: {reason}")),
            Ok((statement, envelope)) => {
                let names: Vec<String> = subjects(&statement).into_iter().map(|s| s.0).collect();
                if lists(&statement, name, sha256) {
                    return Found::Statement {
                        file: shown,
                        statement,
                        envelope,
                    };
                }
                if names.iter().any(|n| n == name) {
                    naming.get_or_insert(Found::Statement {
                        file: shown,
                        statement,
                        envelope,
                    });
                    continue;
                }
                seen.push(format!("{shown} lists {}", shown_list(&names)));
                first_readable.get_or_insert((shown, statement, envelope));
            }
        }
    }
    if let Some(found) = naming {
        return found;
    }
    // A statement given by name is judged even when it is about another archive.
    if let (Some(_), Some((file, statement, envelope))) = (given, first_readable) {
        return Found::Statement {
            file,
            statement,
            envelope,
        };
    }
    Found::Nothing(format!("no statement lists `{name}` ({})", seen.join("; ")))
}

/// One provenance file beside the archive (or given), as read.
struct Provenance {
    file: String,
    read: Result<(Value, Option<Envelope>), ProvenanceError>,
}

/// Every provenance file beside the archive, and the one given: all of
/// them are judged, not only the one that agrees with the archive.
fn read_all(folder: &Path, given: Option<&Path>) -> Vec<Provenance> {
    let mut files = candidates(folder, None);
    if let Some(given) = given
        && !files.iter().any(|f| f == given)
    {
        files.push(given.to_owned());
    }
    files
        .iter()
        .map(|path| Provenance {
            file: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            read: read_provenance(path),
        })
        .collect()
}

/// Where the provenance files disagree with the archive (a subject of its
/// name with another digest) or with each other (one subject, two digests),
/// or cannot be read (a file that cannot be judged could hide either).
fn disagreements(beside: &[Provenance], name: &str, sha256: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut digests: std::collections::BTreeMap<String, (String, &str)> =
        std::collections::BTreeMap::new();
    for provenance in beside {
        let file = &provenance.file;
        let statement = match &provenance.read {
            Err(reason) => {
                found.push(format!("{file} cannot be read ({reason})"));
                continue;
            }
            Ok((statement, _)) => statement,
        };
        for (subject, digest) in subjects(statement) {
            let digest = digest.to_ascii_lowercase();
            if subject == name && digest != sha256 {
                found.push(format!(
                    "{file} records sha256 {digest} for `{name}`, but the archive's is {sha256}: the archive was changed or the statement is another build's"
                ));
            }
            match digests.get(&subject) {
                Some((other, other_file)) if *other != digest => found.push(format!(
                    "{other_file} and {file} record different digests for `{subject}`"
                )),
                Some(_) => {}
                None => {
                    digests.insert(subject, (digest, file));
                }
            }
        }
    }
    found.dedup();
    found.truncate(8);
    found
}

fn shown_list(names: &[String]) -> String {
    if names.is_empty() {
        return "no subjects".into();
    }
    let mut shown: Vec<String> = names.iter().take(6).map(|n| format!("`{n}`")).collect();
    if names.len() > 6 {
        shown.push(format!("and {} more", names.len() - 6));
    }
    shown.join(", ")
}

/// `git+https://host/o/r@abc123 (folder sub, clean)`, from the statement.
fn origin(statement: &Value) -> String {
    let build = &statement["predicate"]["buildDefinition"];
    let source = &build["externalParameters"]["source"];
    let Some(commit) = source["digest"]["gitCommit"].as_str() else {
        return "no recorded source commit".into();
    };
    let uri = source["uri"]
        .as_str()
        .map_or_else(|| "commit ".to_owned(), |uri| format!("{uri}@"));
    let dirty = match build["internalParameters"]["dirty"].as_bool() {
        Some(true) => " (with uncommitted changes)",
        Some(false) => " (clean)",
        None => "",
    };
    let path = match source["path"].as_str() {
        Some(".") | None => String::new(),
        Some(path) => format!(", folder {path}"),
    };
    let version = build["externalParameters"]["version"]
        .as_str()
        .map(|v| format!(", version {v}"))
        .unwrap_or_default();
    format!("{uri}{commit}{path}{version}{dirty}")
}

fn provenance_step(found: &Found, name: &str, sha256: &str) -> Step {
    let (file, statement) = match found {
        Found::Nothing(why) => return step("provenance", Status::Failed, why.clone()),
        Found::Statement {
            file, statement, ..
        } => (file, statement),
    };
    if statement["_type"] != crate::provenance::STATEMENT_TYPE {
        return step(
            "provenance",
            Status::Failed,
            format!("{file} is not an in-toto Statement v1"),
        );
    }
    if statement["predicateType"] != crate::provenance::PREDICATE_TYPE {
        return step(
            "provenance",
            Status::Failed,
            format!("{file} has no SLSA Provenance v1 predicate"),
        );
    }
    let listed: Vec<(String, String)> = subjects(statement)
        .into_iter()
        .filter(|(n, _)| n == name)
        .collect();
    if listed.is_empty() {
        let names: Vec<String> = subjects(statement).into_iter().map(|s| s.0).collect();
        return step(
            "provenance",
            Status::Failed,
            format!(
                "{file} is the statement of other archives ({}), not of `{name}`",
                shown_list(&names)
            ),
        );
    }
    if !lists(statement, name, sha256) {
        return step(
            "provenance",
            Status::Failed,
            format!(
                "{file} records sha256 {} for `{name}`, but the archive's is {sha256}: the archive was changed or the statement is another build's",
                listed[0].1
            ),
        );
    }
    let builder = statement["predicate"]["runDetails"]["builder"]["id"]
        .as_str()
        .unwrap_or("an unnamed builder");
    step(
        "provenance",
        Status::Proven,
        format!(
            "{file} lists it with this sha256: built from {} by {builder}",
            origin(statement)
        ),
    )
}

fn signature_step(found: &Found, key: Option<&VerifyingKey>, beside: &[Provenance]) -> Step {
    // An envelope beside the archive is named even when the statement
    // judged is another (unsigned) file: its signature is what would
    // prove the origin.
    let signed_beside: Vec<String> = beside
        .iter()
        .filter_map(|p| match &p.read {
            Ok((_, Some(envelope))) => Some(format!(
                "{} is signed by key {}",
                p.file,
                envelope.key_ids().join(", ")
            )),
            _ => None,
        })
        .collect();
    if key.is_none() && !signed_beside.is_empty() {
        return step(
            "signature",
            Status::NotChecked,
            format!(
                "{}; the signature was not checked: pass --key PUBLIC_KEY to check it",
                signed_beside.join("; ")
            ),
        );
    }
    let (file, envelope) = match found {
        Found::Nothing(_) => {
            return step(
                "signature",
                if key.is_some() {
                    Status::Failed
                } else {
                    Status::NotChecked
                },
                "no statement, so no signature",
            );
        }
        Found::Statement { file, envelope, .. } => (file, envelope),
    };
    match (envelope, key) {
        (None, Some(_)) => step(
            "signature",
            Status::Failed,
            format!(
                "{file} is not signed; a signed release has a .intoto.jsonl envelope (`ecp package --sign-key`)"
            ),
        ),
        (None, None) => step(
            "signature",
            Status::NotChecked,
            format!("{file} is not signed"),
        ),
        (Some(envelope), None) => step(
            "signature",
            Status::NotChecked,
            format!(
                "{file} is signed by key {}; pass --key PUBLIC_KEY to check it",
                envelope.key_ids().join(", ")
            ),
        ),
        (Some(envelope), Some(key)) => match envelope.verify(key) {
            Ok(()) => step(
                "signature",
                Status::Proven,
                format!(
                    "{file} is signed by the given {} key {}",
                    key.algorithm().name(),
                    key.key_id()
                ),
            ),
            Err(error) => step("signature", Status::Failed, format!("{file}: {error}")),
        },
    }
}

fn lint_step(archive: &Path) -> Step {
    let mut report = lint::Report::default();
    // An MCP Bundle is a zip by another name, with a bundle's manifest.
    let read = if archive.to_string_lossy().ends_with(".mcpb") {
        crate::lint::archive::bundle(archive, &mut report)
    } else {
        lint::archive::lint_archive(archive, &mut report).map(|_| ())
    };
    match read {
        Err(error) => step(
            "lint",
            Status::Failed,
            format!("ecp lint cannot read it: {error}"),
        ),
        Ok(_) => {
            let errors = report.count(Severity::Error);
            match report
                .findings
                .iter()
                .find(|f| f.severity == Severity::Error)
            {
                Some(first) => step(
                    "lint",
                    Status::Failed,
                    format!(
                        "ecp lint finds {errors} error(s), the first [{}] {}",
                        first.rule, first.message
                    ),
                ),
                None => step(
                    "lint",
                    Status::Proven,
                    format!(
                        "its manifest and layout pass ecp lint ({} warning(s))",
                        report.count(Severity::Warning)
                    ),
                ),
            }
        }
    }
}
