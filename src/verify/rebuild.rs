//! The `rebuild` step of `ecp verify`: the recorded commit, checked out
//! and packaged again with the recorded target, formats and epoch, must
//! give the release's bytes ([`super::diff`] names the first difference).

use std::path::Path;

use serde_json::Value;

use super::{Status, Step, diff::first_difference, step};

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

/// Why a statement's record cannot be rebuilt from; each value is shown
/// cut short (it is the statement's, not ecp's).
#[derive(Debug, thiserror::Error)]
enum RecordedError {
    #[error("the statement records no source commit")]
    NoCommit,
    #[error("the recorded commit {0:?} is not a full git commit id")]
    NotACommit(String),
    #[error("the recorded folder {0:?} is not a folder inside the repository")]
    FolderOutside(String),
    #[error("the statement records no sourceDateEpoch")]
    NoEpoch,
    #[error("the recorded target {0:?} is not a target triple")]
    NotATriple(String),
}

/// A host build of another host: it cannot be compared here.
#[derive(Debug, thiserror::Error)]
#[error(
    "the release was built for its host {recorded} without --target; rebuild it on a {recorded} machine (this one is {host})"
)]
struct OtherHost {
    recorded: String,
    host: String,
}

/// Why the recorded commit could not be checked out.
#[derive(Debug, thiserror::Error)]
enum GitError {
    #[error("cannot run git: {0}")]
    NotRun(std::io::Error),
    /// The last line git said on stderr, cut to 300 characters.
    #[error("{0}")]
    Said(String),
    #[error("it checked out {0}, not the recorded commit")]
    OtherCommit(String),
}

/// At most `max` characters of `text`.
fn cut(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

impl<'a> Recorded<'a> {
    fn read(statement: &'a Value) -> Result<Recorded<'a>, RecordedError> {
        let commit = parameter(statement, "/externalParameters/source/digest/gitCommit")
            .ok_or(RecordedError::NoCommit)?;
        // A full object id only: a short one could name a branch or tag of
        // the same spelling in SOURCE instead.
        if !matches!(commit.len(), 40 | 64)
            || !commit.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f'))
        {
            return Err(RecordedError::NotACommit(cut(commit, 80)));
        }
        let path = parameter(statement, "/externalParameters/source/path").unwrap_or(".");
        if !Path::new(path).components().all(|c| {
            matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        }) {
            return Err(RecordedError::FolderOutside(cut(path, 200)));
        }
        let epoch = statement
            .pointer("/predicate/buildDefinition/internalParameters/sourceDateEpoch")
            .and_then(Value::as_u64)
            .ok_or(RecordedError::NoEpoch)?;
        let target = parameter(statement, "/externalParameters/target").map(str::to_owned);
        if let Some(triple) = &target
            && (triple.is_empty()
                || triple.ends_with(".json")
                || !triple
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
        {
            return Err(RecordedError::NotATriple(cut(triple, 80)));
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
) -> Result<Vec<String>, OtherHost> {
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
    let here = match crate::provenance::source::rust_toolchain(folder) {
        Some(crate::provenance::Toolchain::Rust { host, release, .. }) => Some((host, release)),
        _ => None,
    };
    let recorded_host = parameter(statement, "/internalParameters/toolchain/host");
    if target.is_none()
        && let (Some(recorded), Some((host, _))) = (recorded_host, &here)
        && recorded != host
    {
        return Err(OtherHost {
            recorded: recorded.to_owned(),
            host: host.clone(),
        });
    }
    let recorded_flags: Vec<&str> = internal("rustflags")
        .and_then(Value::as_array)
        .map(|flags| flags.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let these_flags = crate::extension::build::environment_rustflags();
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

pub(super) fn rebuild_step(
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
        Err(why) => return failed(why.to_string()),
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
        Err(why) => return failed(why.to_string()),
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

fn git_checkout(source: &str, commit: &str, into: &Path) -> Result<(), GitError> {
    // git's stdout, or the last line it said on stderr.
    let run = |args: &[&std::ffi::OsStr]| -> Result<String, GitError> {
        let output = std::process::Command::new("git")
            .args(args)
            .env("GIT_TERMINAL_PROMPT", "0")
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(GitError::NotRun)?;
        if output.status.success() {
            return Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned());
        }
        let said = String::from_utf8_lossy(&output.stderr);
        Err(GitError::Said(cut(
            said.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("git failed"),
            300,
        )))
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
        return Err(GitError::OtherCommit(head));
    }
    Ok(())
}
