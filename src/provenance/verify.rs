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

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::dsse::Envelope;
use super::keys::{KeyError, VerifyingKey};
use crate::lint::{self, Severity};
use crate::release::{SUMS, Sums};

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

fn read_provenance(path: &Path) -> Result<(Value, Option<Envelope>), String> {
    let text = crate::files::read_text(path, None, super::MAX_STATEMENT_BYTES)
        .map_err(|p| p.to_string())?;
    parse_provenance(&text)
}

/// A statement file's text, or an envelope's and the statement it carries.
pub fn parse_provenance(text: &str) -> Result<(Value, Option<Envelope>), String> {
    let value: Value = serde_json::from_str(text)
        .or_else(|_| {
            serde_json::from_str(text.lines().find(|l| !l.trim().is_empty()).unwrap_or(""))
        })
        .map_err(|e| format!("not JSON ({e})"))?;
    if value.get("payloadType").is_some() {
        let envelope = Envelope::parse(text).map_err(|e| e.to_string())?;
        let payload = envelope.statement().map_err(|e| e.to_string())?;
        let statement: Value = serde_json::from_slice(&payload)
            .map_err(|e| format!("its payload is not JSON ({e})"))?;
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
    read: Result<(Value, Option<Envelope>), String>,
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
    if statement["_type"] != super::STATEMENT_TYPE {
        return step(
            "provenance",
            Status::Failed,
            format!("{file} is not an in-toto Statement v1"),
        );
    }
    if statement["predicateType"] != super::PREDICATE_TYPE {
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
        crate::channels::mcpb::lint(archive, &mut report)
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

/// A string field of the statement's build definition.
fn parameter<'a>(statement: &'a Value, pointer: &str) -> Option<&'a str> {
    statement
        .pointer(&format!("/predicate/buildDefinition{pointer}"))
        .and_then(Value::as_str)
}

/// What a statement records of its build, checked before anything runs:
/// a full commit id, a folder inside the repository, the archive time, a
/// target triple (never a path), the formats.
struct Recorded<'a> {
    commit: &'a str,
    path: &'a str,
    epoch: u64,
    target: Option<String>,
    formats: Vec<crate::package::Format>,
}

impl<'a> Recorded<'a> {
    fn read(statement: &'a Value) -> Result<Recorded<'a>, String> {
        let commit = parameter(statement, "/externalParameters/source/digest/gitCommit")
            .ok_or("the statement records no source commit")?;
        // A full object id only: a short one could name a branch or tag of
        // the same spelling in SOURCE instead.
        if !matches!(commit.len(), 40 | 64)
            || !commit.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f'))
        {
            return Err(format!(
                "the recorded commit {:?} is not a full git commit id",
                commit.chars().take(80).collect::<String>()
            ));
        }
        let path = parameter(statement, "/externalParameters/source/path").unwrap_or(".");
        if !Path::new(path).components().all(|c| {
            matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        }) {
            return Err(format!(
                "the recorded folder {:?} is not a folder inside the repository",
                path.chars().take(200).collect::<String>()
            ));
        }
        let epoch = statement
            .pointer("/predicate/buildDefinition/internalParameters/sourceDateEpoch")
            .and_then(Value::as_u64)
            .ok_or("the statement records no sourceDateEpoch")?;
        let target = parameter(statement, "/externalParameters/target").map(str::to_owned);
        if let Some(triple) = &target
            && (triple.is_empty()
                || triple.ends_with(".json")
                || !triple
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
        {
            return Err(format!(
                "the recorded target {:?} is not a target triple",
                triple.chars().take(80).collect::<String>()
            ));
        }
        let formats = statement
            .pointer("/predicate/buildDefinition/externalParameters/formats")
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .filter_map(crate::package::Format::from_extension)
                    .collect()
            })
            .unwrap_or_default();
        Ok(Recorded {
            commit,
            path,
            epoch,
            target,
            formats,
        })
    }
}

/// How this rebuild differs from the recorded build in ways that may
/// explain a difference (notes), or why it cannot be compared at all (a
/// host build on another host).
fn rebuild_notes(
    statement: &Value,
    folder: &Path,
    target: Option<&str>,
) -> Result<Vec<String>, String> {
    let mut notes = Vec::new();
    let internal = |key: &str| {
        statement.pointer(&format!(
            "/predicate/buildDefinition/internalParameters/{key}"
        ))
    };
    if internal("dirty").and_then(Value::as_bool) == Some(true) {
        notes.push("the release was built from a tree with uncommitted changes".to_owned());
    }
    if parameter(statement, "/internalParameters/toolchain/prebuilt/sha256").is_some() {
        notes.push("the release shipped an entry point ecp did not build (--binary)".to_owned());
    }
    let here = match super::source::rust_toolchain(folder) {
        Some(super::Toolchain::Rust { host, release, .. }) => Some((host, release)),
        _ => None,
    };
    let recorded_host = parameter(statement, "/internalParameters/toolchain/host");
    if target.is_none()
        && let (Some(recorded), Some((host, _))) = (recorded_host, &here)
        && recorded != host
    {
        return Err(format!(
            "the release was built for its host {recorded} without --target; rebuild it on a {recorded} machine (this one is {host})"
        ));
    }
    let recorded_flags: Vec<&str> = internal("rustflags")
        .and_then(Value::as_array)
        .map(|flags| flags.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let these_flags = crate::package::build::environment_rustflags();
    if recorded_flags != these_flags.iter().map(String::as_str).collect::<Vec<_>>() {
        notes.push(
            "the release was built with other RUSTFLAGS than this environment's (set them as the statement records to compare like for like)"
                .to_owned(),
        );
    }
    let recorded_rustc = parameter(statement, "/internalParameters/toolchain/rustc");
    if let (Some(recorded), Some((_, release))) = (recorded_rustc, &here)
        && recorded != release
    {
        notes.push(format!(
            "recorded with rustc {recorded}, rebuilt with rustc {release}"
        ));
    }
    Ok(notes)
}

fn rebuild_step(
    source: &str,
    statement: &Value,
    archive: &Path,
    name: &str,
    linted: bool,
    log: &mut dyn FnMut(&str),
) -> Step {
    let failed = |detail: String| step("rebuild", Status::Failed, detail);
    if name.ends_with(".tgz") {
        // The package's name and registry are not in the statement yet.
        return failed(
            "--rebuild does not rebuild an npm package (the statement does not record its name); verify the package without --rebuild, and rebuild one of the release's archives"
                .into(),
        );
    }
    let recorded = match Recorded::read(statement) {
        Ok(recorded) => recorded,
        Err(why) => return failed(why),
    };
    let commit = recorded.commit;
    let scratch = match tempfile::Builder::new().prefix("ecp-verify-").tempdir() {
        Ok(scratch) => scratch,
        Err(error) => return failed(format!("cannot make a scratch folder: {error}")),
    };
    let checkout = scratch.path().join("source");
    log(&format!(
        "rebuild: git clone {source} and check out {commit}"
    ));
    log(
        "rebuild: this runs the source's build code on this machine (cargo's build scripts and procedural macros, npm's install and build scripts)",
    );
    if let Err(said) = git_checkout(source, commit, &checkout) {
        return failed(format!("cannot check out {commit} from {source}: {said}"));
    }
    // A committed link must not lead the build out of the scratch checkout.
    let path = recorded.path;
    let folder = match (checkout.join(path).canonicalize(), checkout.canonicalize()) {
        (Ok(folder), Ok(root)) if folder.starts_with(&root) => folder,
        _ => {
            return failed(format!(
                "the recorded folder {path:?} is not a folder inside the checkout of {commit}"
            ));
        }
    };
    let notes = match rebuild_notes(statement, &folder, recorded.target.as_deref()) {
        Ok(notes) => notes,
        Err(why) => return failed(why),
    };
    let out_dir = scratch.path().join("out");
    let settings = crate::package::PackageSettings {
        folder: folder.clone(),
        formats: recorded.formats,
        out_dir: out_dir.clone(),
        binary: None,
        target: recorded.target,
        progress: false,
        epoch: recorded.epoch,
        skip_build: false,
        sign_key: None,
        ignore_scripts: false,
        channels: Default::default(),
    };
    let mut inner = |line: &str| log(&format!("rebuild: {line}"));
    if let Err(error) = crate::package::package(&settings, &mut inner) {
        return failed(format!("ecp package of {commit} failed: {error}"));
    }
    let notes = if notes.is_empty() {
        String::new()
    } else {
        format!(" ({})", notes.join("; "))
    };
    match first_difference(archive, &out_dir.join(name), linted) {
        Ok(None) => step(
            "rebuild",
            Status::Proven,
            format!("{commit} packaged again in a scratch folder is byte-identical{notes}"),
        ),
        Ok(Some(difference)) => failed(format!(
            "{commit} packaged again differs: {difference}{notes}"
        )),
        Err(error) => failed(format!(
            "{commit} packaged again differs: cannot compare with the rebuild: {error}{notes}"
        )),
    }
}

fn git_checkout(source: &str, commit: &str, into: &Path) -> Result<(), String> {
    // git's stdout, or the last line it said on stderr.
    let run = |args: &[&std::ffi::OsStr]| -> Result<String, String> {
        let output = std::process::Command::new("git")
            .args(args)
            .env("GIT_TERMINAL_PROMPT", "0")
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("cannot run git: {e}"))?;
        if output.status.success() {
            return Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned());
        }
        let said = String::from_utf8_lossy(&output.stderr);
        Err(said
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("git failed")
            .chars()
            .take(300)
            .collect())
    };
    let os = |s: &str| std::ffi::OsString::from(s);
    run(&[
        &os("clone"),
        &os("--quiet"),
        &os("--no-checkout"),
        &os("--"),
        &os(source),
        into.as_os_str(),
    ])?;
    run(&[
        &os("-C"),
        into.as_os_str(),
        &os("-c"),
        &os("advice.detachedHead=false"),
        &os("checkout"),
        &os("--quiet"),
        &os("--detach"),
        &os(&format!("{commit}^{{commit}}")),
    ])?;
    // What was checked out is the recorded commit, not a ref of its name.
    let head = run(&[&os("-C"), into.as_os_str(), &os("rev-parse"), &os("HEAD")])?;
    if head != commit {
        return Err(format!("it checked out {head}, not the recorded commit"));
    }
    Ok(())
}

/// `None` when the two files are byte-identical; else the first difference,
/// named by archive entry when both are archives of the same format.
/// Entries are compared only when the release archive passed `ecp lint`
/// (`entries`), whose bounded reader vouches for its headers.
pub fn first_difference(
    release: &Path,
    rebuilt: &Path,
    entries: bool,
) -> std::io::Result<Option<String>> {
    let mut a = std::fs::File::open(release)?;
    let mut b = std::fs::File::open(rebuilt)
        .map_err(|e| std::io::Error::new(e.kind(), "the rebuild wrote no archive of this name"))?;
    let Some(offset) = first_differing_byte(&mut a, &mut b)? else {
        return Ok(None);
    };
    let name = release.to_string_lossy();
    let entry = if !entries {
        None
    } else if name.ends_with(".tar.gz") {
        tar_difference(release, rebuilt).ok().flatten()
    } else if name.ends_with(".zip") {
        zip_difference(release, rebuilt).ok().flatten()
    } else {
        None
    };
    Ok(Some(match entry {
        Some(entry) => format!("{entry} (the archives first differ at byte {offset})"),
        None => format!("the archives first differ at byte {offset}"),
    }))
}

fn first_differing_byte(a: &mut impl Read, b: &mut impl Read) -> std::io::Result<Option<u64>> {
    let (mut left, mut right) = (vec![0; 64 * 1024], vec![0; 64 * 1024]);
    let mut offset = 0u64;
    loop {
        let n = read_full(a, &mut left)?;
        let m = read_full(b, &mut right)?;
        let common = n.min(m);
        if let Some(at) = (0..common).find(|&i| left[i] != right[i]) {
            return Ok(Some(offset + at as u64));
        }
        if n != m {
            return Ok(Some(offset + common as u64));
        }
        if n == 0 {
            return Ok(None);
        }
        offset += n as u64;
    }
}

fn read_full(reader: &mut impl Read, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match reader.read(&mut buffer[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

/// The first entry of two tar.gz archives that differs, by name, mode,
/// size or content.
fn tar_difference(release: &Path, rebuilt: &Path) -> std::io::Result<Option<String>> {
    let open = |path: &Path| -> std::io::Result<tar::Archive<flate2::read::MultiGzDecoder<std::fs::File>>> {
        Ok(tar::Archive::new(flate2::read::MultiGzDecoder::new(
            std::fs::File::open(path)?,
        )))
    };
    let (mut a, mut b) = (open(release)?, open(rebuilt)?);
    let mut left = a.entries()?;
    let mut right = b.entries()?;
    loop {
        match (left.next(), right.next()) {
            (None, None) => return Ok(None),
            (Some(x), None) => {
                return Ok(Some(format!(
                    "the release has `{}` after the rebuild's last entry",
                    x?.path()?.display()
                )));
            }
            (None, Some(y)) => {
                return Ok(Some(format!(
                    "the rebuild has `{}` after the release's last entry",
                    y?.path()?.display()
                )));
            }
            (Some(x), Some(y)) => {
                let (mut x, mut y) = (x?, y?);
                let (xp, yp) = (x.path()?.into_owned(), y.path()?.into_owned());
                if xp != yp {
                    return Ok(Some(format!(
                        "the release has `{}` where the rebuild has `{}`",
                        xp.display(),
                        yp.display()
                    )));
                }
                let (xh, yh) = (x.header().clone(), y.header().clone());
                if xh.mode()? != yh.mode()? || xh.mtime()? != yh.mtime()? {
                    return Ok(Some(format!("`{}` has other metadata", xp.display())));
                }
                if let Some(at) = first_differing_byte(&mut x, &mut y)? {
                    return Ok(Some(format!(
                        "`{}` differs from its byte {at} (sizes {} and {})",
                        xp.display(),
                        xh.size()?,
                        yh.size()?
                    )));
                }
                if xh.as_bytes() != yh.as_bytes() {
                    return Ok(Some(format!("`{}` has another header", xp.display())));
                }
            }
        }
    }
}

fn zip_difference(release: &Path, rebuilt: &Path) -> std::io::Result<Option<String>> {
    let open = |path: &Path| {
        zip::ZipArchive::new(std::fs::File::open(path)?).map_err(std::io::Error::other)
    };
    let (mut a, mut b) = (open(release)?, open(rebuilt)?);
    for index in 0..a.len().max(b.len()) {
        if index >= a.len() || index >= b.len() {
            return Ok(Some(
                "the archives hold different numbers of entries".into(),
            ));
        }
        let mut x = a.by_index(index).map_err(std::io::Error::other)?;
        let mut y = b.by_index(index).map_err(std::io::Error::other)?;
        let name = x.name().map_err(std::io::Error::other)?.into_owned();
        let other = y.name().map_err(std::io::Error::other)?.into_owned();
        if name != other {
            return Ok(Some(format!(
                "the release has `{name}` where the rebuild has `{other}`"
            )));
        }
        let (xs, ys) = (x.size(), y.size());
        if let Some(at) = first_differing_byte(&mut x, &mut y)? {
            return Ok(Some(format!(
                "`{name}` differs from its byte {at} (sizes {xs} and {ys})"
            )));
        }
    }
    Ok(None)
}
