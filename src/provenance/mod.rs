//! Release provenance a reviewer can check.
//!
//! `ecp package` writes, beside the archives of each run, an in-toto
//! Statement v1 whose predicate is SLSA Provenance v1
//! ([`statement`]): the archives as subjects (sha256), the git source
//! (repository, commit, folder, dirty or not), the lockfile's digest, the
//! toolchain and target, `SOURCE_DATE_EPOCH`, the ecp version and the
//! builder (the GitHub Actions run when there is one). The same inputs give
//! the same bytes. With `--sign-key` the statement is also wrapped in a DSSE
//! envelope ([`dsse`]) signed with an Ed25519 or ECDSA P-256 key
//! ([`keys`]). `ecp verify` (`src/verify/`) checks a release against all of it,
//! and can rebuild it from the recorded commit.
//!
//! File names: `provenance.{platform}.{arch}.intoto.json` (the statement)
//! and `.intoto.jsonl` (the envelope, one JSON line), or
//! `provenance.intoto.json[l]` for a platform-less extension. They start
//! with no platform prefix, so Qwen's release-asset lookup never picks them.

pub mod dsse;
pub mod keys;
pub mod source;

use serde_json::{Map, Value, json};

pub use source::{Builder, Source, Toolchain};

pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
pub const PREDICATE_TYPE: &str = "https://slsa.dev/provenance/v1";
/// The most a statement or envelope read back may hold.
pub const MAX_STATEMENT_BYTES: u64 = 16 * 1024 * 1024;

/// The build type: what the parameters mean and how to rebuild
/// (`docs/build-type-v1.md` of ecp's repository).
pub fn build_type() -> String {
    format!(
        "{}/blob/main/docs/build-type-v1.md",
        env!("CARGO_PKG_REPOSITORY").trim_end_matches('/')
    )
}

/// The statement's file name for a run on `platform` (`linux.x64`).
pub fn statement_name(platform: Option<&str>) -> String {
    match platform {
        Some(platform) => format!("provenance.{platform}.intoto.json"),
        None => "provenance.intoto.json".to_owned(),
    }
}

/// The envelope's file name beside `statement_name`.
pub fn envelope_name(platform: Option<&str>) -> String {
    format!("{}l", statement_name(platform))
}

/// One archive the statement is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    pub name: String,
    pub sha256: String,
}

/// Everything a statement records besides its subjects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildFacts {
    pub extension: String,
    pub version: Option<String>,
    pub source: Option<Source>,
    /// The `--target` triple when one was given.
    pub target: Option<String>,
    /// `linux.x64`, or `None` for a platform-less extension.
    pub platform: Option<String>,
    pub formats: Vec<String>,
    /// The lockfile (`Cargo.lock`, `package-lock.json`) and its sha256.
    pub lockfile: Option<(String, String)>,
    pub toolchain: Toolchain,
    /// Flags the builder's environment added to rustc (`RUSTFLAGS`); the
    /// path remapping `ecp package` adds is part of the build type.
    pub rustflags: Vec<String>,
    pub source_date_epoch: u64,
    pub builder: Builder,
}

/// The statement, pretty-printed, with a final newline.
pub fn statement(subjects: &[Subject], facts: &BuildFacts) -> String {
    let subject: Vec<Value> = subjects
        .iter()
        .map(|s| json!({"name": s.name, "digest": {"sha256": s.sha256}}))
        .collect();

    let mut external = Map::new();
    external.insert("extension".into(), json!(facts.extension));
    if let Some(version) = &facts.version {
        external.insert("version".into(), json!(version));
    }
    if let Some(source) = &facts.source {
        let mut value = Map::new();
        if let Some(uri) = &source.uri {
            value.insert("uri".into(), json!(uri));
        }
        value.insert("digest".into(), json!({"gitCommit": source.commit}));
        value.insert("path".into(), json!(source.path));
        external.insert("source".into(), Value::Object(value));
    }
    external.insert("target".into(), json!(facts.target));
    external.insert("platform".into(), json!(facts.platform));
    external.insert("formats".into(), json!(facts.formats));

    let mut internal = Map::new();
    internal.insert("ecpVersion".into(), json!(env!("CARGO_PKG_VERSION")));
    internal.insert("sourceDateEpoch".into(), json!(facts.source_date_epoch));
    if let Some(source) = &facts.source {
        internal.insert("dirty".into(), json!(source.dirty));
    }
    internal.insert("toolchain".into(), toolchain_json(&facts.toolchain));
    if !facts.rustflags.is_empty() {
        internal.insert("rustflags".into(), json!(facts.rustflags));
    }

    let mut dependencies = Vec::new();
    if let Some(source) = &facts.source {
        let mut value = Map::new();
        if let Some(uri) = &source.uri {
            value.insert("uri".into(), json!(format!("{uri}@{}", source.commit)));
        }
        value.insert("digest".into(), json!({"gitCommit": source.commit}));
        dependencies.push(Value::Object(value));
    }
    if let Some((name, sha256)) = &facts.lockfile {
        dependencies.push(json!({"name": name, "digest": {"sha256": sha256}}));
    }

    let mut run_details = Map::new();
    run_details.insert("builder".into(), json!({"id": facts.builder.id}));
    if let Some(invocation) = &facts.builder.invocation {
        run_details.insert("metadata".into(), json!({"invocationId": invocation}));
    }

    let statement = json!({
        "_type": STATEMENT_TYPE,
        "subject": subject,
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "buildDefinition": {
                "buildType": build_type(),
                "externalParameters": external,
                "internalParameters": internal,
                "resolvedDependencies": dependencies,
            },
            "runDetails": run_details,
        },
    });
    let mut text = serde_json::to_string_pretty(&statement).unwrap_or_default();
    text.push('\n');
    text
}

fn toolchain_json(toolchain: &Toolchain) -> Value {
    match toolchain {
        Toolchain::Rust {
            release,
            commit,
            host,
            llvm,
        } => json!({"rustc": release, "rustcCommit": commit, "host": host, "llvm": llvm}),
        Toolchain::Node { node, npm } => json!({"node": node, "npm": npm}),
        Toolchain::Prebuilt { sha256 } => json!({"prebuilt": {"sha256": sha256}}),
        Toolchain::None => json!({}),
    }
}
