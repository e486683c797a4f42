//! `ecp package`: lint, build (or take `--binary`), stage a self-contained
//! tree, and write reproducible archives named for Qwen's release-asset
//! lookup (see [`crate::release`]), with one merged `SHA256SUMS`. Archives are written to temporary files,
//! linted, and only then renamed into place: a failure leaves no partial
//! archive.
//!
//! - [`stage`]: what goes in (and what never does);
//! - [`write`]: the deterministic tar.gz and zip writers;
//! - [`build`]: `cargo_metadata` and `cargo build --release --locked`, or
//!   `npm ci` and `npm run build` for a Node project.
//!
//! Every output and every removal goes through the one write rule
//! ([`crate::writes`]), checked before the first write or removal: a
//! linked `dist/`, `.claude-plugin/` or output is refused (exit 2).

mod channels;
pub mod made;
mod pin;
mod plan;
pub mod stage;
pub mod write;

pub use channels::Channels;

use std::path::{Path, PathBuf};

pub use pin::LOCK_NAME;
use plan::{Before, Plan, check_outputs, remove_stale};
pub use write::{DEFAULT_EPOCH, Format};

use crate::{
    extension::build::{self, BuildError},
    lint::{self, MANIFEST, Report, Severity},
    provenance::{self, Toolchain},
    release::{self, SUMS, Sums},
    writes::{Place, WriteProblem},
};

/// What to package and how.
#[derive(Debug, Clone)]
pub struct PackageSettings {
    /// The extension folder.
    pub folder: PathBuf,
    /// Formats to write; empty means the default.
    pub formats: Vec<Format>,
    pub out_dir: PathBuf,
    /// A prebuilt entry point instead of building.
    pub binary: Option<PathBuf>,
    /// The Rust target triple (for the build and the archive names).
    pub target: Option<String>,
    /// Let cargo show its progress.
    pub progress: bool,
    /// Entry times (`SOURCE_DATE_EPOCH`, or [`DEFAULT_EPOCH`]).
    pub epoch: u64,
    /// Package the bundle a Node project already built (no `npm ci`, no
    /// `npm run build`).
    pub skip_build: bool,
    /// Sign the provenance statement with this key (a DSSE envelope).
    pub sign_key: Option<std::sync::Arc<crate::provenance::keys::SigningKey>>,
    /// Node projects: `npm ci --ignore-scripts` (no install scripts of the
    /// package or its dependencies).
    pub ignore_scripts: bool,
    /// The other clients and channels: client manifests, the npm package,
    /// the registry's `server.json`.
    pub channels: Channels,
}

impl PackageSettings {
    /// The output folder under the one write rule ([`crate::writes`]):
    /// inside the extension folder every component is checked (`dist`
    /// must not be a link); a folder elsewhere owns its last component.
    pub fn out(&self) -> Place {
        Place::within(&self.folder, &self.out_dir)
    }
}

/// One written archive.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct WrittenArchive {
    pub path: PathBuf,
    pub format: &'static str,
    pub bytes: u64,
    pub sha256: String,
}

/// The outcome of a successful run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Packaged {
    pub name: String,
    pub version: Option<String>,
    /// `linux.x64` and the like; `None` for a platform-less extension.
    pub platform: Option<String>,
    /// The entry point is a JavaScript bundle (`node dist/main.js`).
    pub bundle: bool,
    pub files: Vec<PackagedFile>,
    pub archives: Vec<WrittenArchive>,
    pub sums: PathBuf,
    /// The in-toto statement of this run's archives.
    pub provenance: PathBuf,
    /// Its DSSE envelope, when a key signed it.
    pub envelope: Option<PathBuf>,
    /// The signing key's id.
    pub key_id: Option<String>,
    /// `server.json` for the MCP registry, when asked for.
    pub registry: Option<PathBuf>,
    /// `tools.lock`, when an archive of this run runs here.
    pub tools_lock: Option<PathBuf>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct PackagedFile {
    pub name: String,
    pub mode: String,
    pub bytes: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum PackageError {
    #[error("{0}")]
    Lint(lint::LintError),
    #[error("ecp lint found {errors} error(s); fix them before packaging")]
    LintFindings { errors: usize, report: Box<Report> },
    #[error("refusing to package {path}: {reason}")]
    Refused { path: String, reason: String },
    #[error("the entry point {} cannot be packaged: {reason}", path.display())]
    MissingBinary { path: PathBuf, reason: String },
    #[error("{0}")]
    Build(String),
    #[error(
        "unsupported target `{0}`: the archive name needs linux, darwin or windows and x86_64, aarch64, i686 or armv7"
    )]
    Target(String),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the archive {} failed its own lint: {message}", path.display())]
    ArchiveLint { path: PathBuf, message: String },
    /// A client manifest, the npm package or `server.json` cannot be made.
    #[error("{0}")]
    Channel(String),
    /// An argument this extension cannot use (`--npm` for a native build,
    /// an unscoped npm name, `--registry` without what it names): said
    /// before anything is built, written or removed.
    #[error("{problem}")]
    Arguments { problem: String, help: String },
    /// The one write rule refused a place this run would write or remove
    /// (a link, a special file): nothing was written or removed.
    #[error("{0}")]
    Unsafe(WriteProblem),
    /// A Ctrl-C stopped the run (the tool it named was running, or it came
    /// between steps); nothing was published.
    #[error("interrupted: {0} and everything it started were stopped; nothing was published")]
    Interrupted(String),
}

impl From<BuildError> for PackageError {
    fn from(error: BuildError) -> PackageError {
        match error {
            BuildError::Failed(problem) => PackageError::Build(problem),
            BuildError::Interrupted(what) => PackageError::Interrupted(what),
            other => PackageError::Build(other.to_string()),
        }
    }
}

impl From<WriteProblem> for PackageError {
    fn from(problem: WriteProblem) -> PackageError {
        match problem {
            WriteProblem::Io { path, source } => PackageError::Io { path, source },
            refused @ WriteProblem::Unsafe { .. } => PackageError::Unsafe(refused),
        }
    }
}

impl PackageError {
    /// What to do about it, when there is something to say.
    pub fn help(&self) -> Option<String> {
        match self {
            PackageError::Lint(error) => error.help(),
            PackageError::Unsafe(problem) => problem.help(),
            PackageError::LintFindings { .. } => {
                Some("`ecp explain RULE` says more about each rule".into())
            }
            PackageError::Interrupted(_) => {
                Some("run the same command again: it starts from the beginning".into())
            }
            PackageError::Arguments { help, .. } => Some(help.clone()),
            _ => None,
        }
    }
}

/// Node's platform and architecture names for a Rust target triple
/// ([`release::platform_of`]), refused as a [`PackageError::Target`].
pub fn platform_of(triple: &str) -> Result<(&'static str, &'static str), PackageError> {
    release::platform_of(triple).map_err(|e| PackageError::Target(e.0))
}

pub use release::host_triple;

/// Runs the whole pipeline; `log` hears one line per step. When it fails,
/// the archives of the same name that an earlier run left in the output
/// folder are removed (with their sums), so that nothing there looks like
/// the outcome of this run.
pub fn package(
    settings: &PackageSettings,
    log: &mut dyn FnMut(&str),
) -> Result<Packaged, PackageError> {
    let mut would_replace = Vec::new();
    let mut before = Before::default();
    let result = run(settings, log, &mut would_replace, &mut before);
    match &result {
        Ok(packaged) => made::record(
            &settings.folder,
            packaged
                .archives
                .iter()
                .map(|a| (a.path.as_path(), a.sha256.as_str())),
        ),
        // A refusal of the write rule removes nothing either.
        Err(PackageError::Unsafe(_)) => before.restore(log),
        Err(_) => {
            before.restore(log);
            remove_stale(&settings.out(), &would_replace, log);
        }
    }
    result
}

/// The `SHA256SUMS` already in an output folder (empty when there is
/// none); a link or special file there is refused by the write rule.
fn read_sums(place: &Place) -> Result<Sums, PackageError> {
    if !place.check_file()? {
        return Ok(Sums::default());
    }
    let path = &place.path();
    let text =
        crate::files::read_text(path, None, crate::release::MAX_SUMS_BYTES).map_err(|problem| {
            PackageError::Refused {
                path: path.display().to_string(),
                reason: problem.to_string(),
            }
        })?;
    Sums::parse(&text).map_err(|error| PackageError::Refused {
        path: path.display().to_string(),
        reason: format!(
            "it is not sha256sum output ({error}); remove it and package again, each target into the same folder"
        ),
    })
}

pub use crate::lint::report::human_size as size;

/// An archive written to a temporary file and linted, not yet in place.
type Pending = (tempfile::NamedTempFile, PathBuf, &'static str, String, u64);

/// The steps of `ecp package`, in order; a failure at any step leaves no
/// archive that looks current (see [`package`]).
fn run(
    settings: &PackageSettings,
    log: &mut dyn FnMut(&str),
    would_replace: &mut Vec<String>,
    before: &mut Before,
) -> Result<Packaged, PackageError> {
    // Where this run writes, by the one write rule, before anything is
    // read, written or removed: the output folder, the sums, server.json,
    // the client manifests.
    channels::check_places(settings)?;
    // The channel arguments this extension cannot use, from the manifest
    // alone: refused before a client file is written, a build runs or an
    // earlier run's output is removed.
    channels::check_arguments(settings)?;
    // The sums already in the output folder are read first: a file that is
    // not sha256sum output stops the run before anything is written or
    // removed.
    let sums_place = settings.out().join(SUMS);
    let sums_path = sums_place.path();
    let mut sums = read_sums(&sums_place)?;
    // The plan, from the manifest alone, and what this run's writes would
    // replace, all before the first write.
    let plan = Plan::read(settings);
    would_replace.extend(check_outputs(settings, plan.outputs())?);
    *before = Before::read(settings)?;
    // 0. The client manifests asked for, written from qwen-extension.json
    // (so that lint judges them with the rest); a failed run puts back
    // what they replaced.
    channels::write_clients(settings, log)?;
    // 1. Lint (which also reads the manifest's facts, one parse), a Node
    // project's bundle built, and lint's verdict.
    let (report, facts) =
        lint::lint_path_with_facts(&settings.folder).map_err(PackageError::Lint)?;
    let (report, facts, toolchain) =
        build_bundle(settings, &plan, report, facts.unwrap_or_default(), log)?;
    gate(settings, &plan, &report, log)?;
    let platform_name = match platform_of(&plan.triple) {
        Ok((os, arch)) if plan.native => Some(format!("{os}.{arch}")),
        _ => None,
    };
    let outputs = channels::preflight(settings, &facts, platform_name.as_deref())?;
    would_replace.extend(check_outputs(settings, outputs)?);
    build::interrupted("ecp lint")?;
    // 2. The entry point (built, given, or none for a manifest-only
    // extension) and the staged tree.
    let (files, platform, toolchain) = stage_tree(settings, &plan, &facts, toolchain, log)?;
    // 3. Archives, written to temporary files and linted before they count.
    let (mut pending, formats) = write_archives(settings, &plan, &files, platform.as_deref())?;
    // The MCP Bundle and the npm package, linted the same way.
    pending.extend(channels::write_assets(
        settings,
        &files,
        &facts,
        platform.as_deref(),
    )?);
    // A Ctrl-C while the archives were written: they stay temporary.
    build::interrupted("writing the archives")?;
    // 4. Everything is good: rename into place, then merge the sums.
    let archives = publish(settings, pending, &mut sums, log)?;
    sums_place.write(sums.render().as_bytes())?;
    log(&format!(
        "sums: {} ({} archive(s))",
        sums_path.display(),
        sums.entries.len()
    ));
    // 5. The tool surface of an archive that runs here, pinned; then
    // provenance: the statement of this run's archives (and the lock),
    // signed when a key is given.
    let lock = pin::pin_tools(settings, &plan, &archives, log)?;
    let build_facts = provenance::BuildFacts {
        extension: plan.name.clone(),
        version: facts.version.clone(),
        source: provenance::source::source(&settings.folder, &settings.out_dir),
        target: settings.target.clone(),
        platform: platform.clone(),
        formats: formats.iter().map(|f| f.extension().to_owned()).collect(),
        lockfile: lockfile(&settings.folder, plan.script),
        rustflags: if matches!(toolchain, Toolchain::Rust { .. }) {
            build::environment_rustflags()
        } else {
            Vec::new()
        },
        toolchain,
        source_date_epoch: settings.epoch,
        builder: provenance::source::builder(),
    };
    let (statement, envelope, key_id) =
        write_provenance(settings, &archives, lock.as_ref(), &build_facts, log)?;
    // 6. server.json, naming what was just written.
    let registry = channels::write_registry(settings, &archives, log)?;
    Ok(Packaged {
        name: plan.name,
        version: facts.version,
        platform,
        bundle: plan.script,
        files: files
            .iter()
            .map(|f| PackagedFile {
                name: f.name.clone(),
                mode: format!("{:04o}", f.mode),
                bytes: f.size,
            })
            .collect(),
        archives,
        sums: sums_path,
        provenance: statement,
        envelope,
        key_id,
        registry,
        tools_lock: lock.map(|subject| settings.out().join(&subject.name).path()),
    })
}

/// A Node project builds its bundle (`npm ci`, `npm run build`) unless
/// `--skip-build`; then the folder is linted again, bundle and all. Only a
/// missing bundle may stand in the way of the build.
fn build_bundle(
    settings: &PackageSettings,
    plan: &Plan,
    report: Report,
    facts: crate::extension::manifest::ManifestFacts,
    log: &mut dyn FnMut(&str),
) -> Result<(Report, crate::extension::manifest::ManifestFacts, Toolchain), PackageError> {
    let folder = &settings.folder;
    let blocking = report.count(Severity::Error).saturating_sub(
        report
            .findings
            .iter()
            .filter(|f| f.rule == lint::Rule::EntryPointMissing)
            .count(),
    );
    if !(plan.script && build::is_node_project(folder) && blocking == 0) {
        return Ok((report, facts, Toolchain::None));
    }
    if settings.skip_build {
        log("build: skipped (--skip-build), packaging the bundle as it is");
        return Ok((report, facts, Toolchain::None));
    }
    let started = std::time::Instant::now();
    build::build_node(folder, settings.progress, settings.ignore_scripts, log)?;
    let toolchain = provenance::source::node_toolchain(folder).unwrap_or(Toolchain::None);
    log(&format!(
        "build: the bundle in {:.1} s",
        started.elapsed().as_secs_f64()
    ));
    let (again, found) = lint::lint_path_with_facts(folder).map_err(PackageError::Lint)?;
    Ok((again, found.unwrap_or_default(), toolchain))
}

/// Lint's verdict: a bundle that still imports packages, or any error,
/// stops the run.
fn gate(
    settings: &PackageSettings,
    plan: &Plan,
    report: &Report,
    log: &mut dyn FnMut(&str),
) -> Result<(), PackageError> {
    if plan.script
        && let Some(finding) = report
            .findings
            .iter()
            .find(|f| f.rule == lint::Rule::BundleNotSelfContained)
    {
        return Err(PackageError::Refused {
            path: finding.file.clone(),
            reason: format!(
                "{}; Qwen installs no packages (bundle every dependency: esbuild --bundle --platform=node)",
                finding.message
            ),
        });
    }
    let errors = report.count(Severity::Error);
    if errors > 0 {
        return Err(PackageError::LintFindings {
            errors,
            report: Box::new(report.clone()),
        });
    }
    log(&format!(
        "lint: {} has no errors ({} warning(s))",
        settings.folder.join(MANIFEST).display(),
        report.count(Severity::Warning)
    ));
    Ok(())
}

/// The staged tree: the manifest, context files, documentation, the
/// `include` setting, and the entry point; with the platform the archives
/// are for (`None`: every platform) and what built the entry point.
fn stage_tree(
    settings: &PackageSettings,
    plan: &Plan,
    facts: &crate::extension::manifest::ManifestFacts,
    mut toolchain: Toolchain,
    log: &mut dyn FnMut(&str),
) -> Result<(Vec<stage::StagedFile>, Option<String>, Toolchain), PackageError> {
    let folder = &settings.folder;
    let mut stage = stage::Stage::new(folder)?;
    stage.add(MANIFEST, true)?;
    channels::stage_clients(&mut stage, folder)?;
    for (file, _) in &facts.context_files {
        stage.add(file, true)?;
    }
    for file in stage::documentation_files(folder) {
        stage.add(&file, true)?;
    }
    let project = crate::extension::Project::read(folder)
        .map_err(|problem| PackageError::Lint(lint::LintError::File(problem)))?;
    for include in project.include() {
        stage.add(&include, true)?;
    }
    let platform = match &facts.entry_point {
        None => None,
        // A JavaScript bundle runs on every platform Node runs on.
        Some(entry) if entry.kind == crate::extension::manifest::EntryKind::Script => {
            stage.add(&entry.path, true)?;
            if toolchain == Toolchain::None {
                // Not built by this run (--skip-build, or not a Node project).
                toolchain = prebuilt(&folder.join(&entry.path))?;
            }
            None
        }
        Some(crate::extension::manifest::EntryPoint { path: entry, .. }) => {
            let (os, arch) = platform_of(&plan.triple)?;
            let (binary, built_by) = native_binary(settings, plan, log)?;
            let entry_name = if os == "win32" {
                format!("{entry}.exe")
            } else {
                entry.clone()
            };
            stage.add_entry_point(&entry_name, &binary)?;
            // Staged, so readable: the digest of what ecp did not build.
            toolchain = match built_by {
                Some(toolchain) => toolchain,
                None => prebuilt(&binary)?,
            };
            Some(format!("{os}.{arch}"))
        }
    };
    let files = stage.finish();
    log(&format!(
        "stage: {} file(s): {}",
        files.len(),
        files
            .iter()
            .map(|f| f.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    Ok((files, platform, toolchain))
}

/// The native entry point: `--binary` as given (no toolchain), or built
/// with `cargo build --release` (its toolchain).
fn native_binary(
    settings: &PackageSettings,
    plan: &Plan,
    log: &mut dyn FnMut(&str),
) -> Result<(PathBuf, Option<Toolchain>), PackageError> {
    if let Some(binary) = &settings.binary {
        log(&format!("build: skipped, shipping {}", binary.display()));
        return Ok((binary.clone(), None));
    }
    let folder = &settings.folder;
    let (bin, target_dir) = build::binary_target(folder, &plan.name)?;
    log(&format!(
        "build: cargo build --release --locked --bin {bin}{}",
        settings
            .target
            .as_deref()
            .map(|t| format!(" --target {t}"))
            .unwrap_or_default()
    ));
    log(
        "build: this runs code from the folder: cargo runs the build scripts (build.rs) and procedural macros of the crate and of its dependencies",
    );
    let started = std::time::Instant::now();
    let built = build::build(
        folder,
        &bin,
        settings.target.as_deref(),
        &target_dir,
        settings.progress,
    )?;
    let toolchain = provenance::source::rust_toolchain(folder).unwrap_or(Toolchain::None);
    log(&format!(
        "build: {} in {:.1} s",
        built.display(),
        started.elapsed().as_secs_f64()
    ));
    Ok((built, Some(toolchain)))
}

/// Every archive of the run, written to a temporary file in the output
/// folder and linted; with the formats written.
fn write_archives(
    settings: &PackageSettings,
    plan: &Plan,
    files: &[stage::StagedFile],
    platform: Option<&str>,
) -> Result<(Vec<Pending>, Vec<Format>), PackageError> {
    settings.out().create_folder()?;
    let mut formats = settings.formats.clone();
    if formats.is_empty() {
        formats = match platform {
            Some(_) => vec![Format::TarGz, Format::Zip],
            None => vec![Format::TarGz],
        };
    }
    formats.sort();
    formats.dedup();
    let mut pending = Vec::new();
    for stem in release::stems(&plan.name, platform) {
        for &format in &formats {
            let final_path = settings
                .out_dir
                .join(format!("{stem}.{}", format.extension()));
            pending.push(write_checked(settings, files, format, final_path)?);
        }
    }
    Ok((pending, formats))
}

/// Renames the archives into place and records them in `sums` (the other
/// targets' archives packaged into this folder keep their lines; lines for
/// archives no longer there go).
fn publish(
    settings: &PackageSettings,
    pending: Vec<Pending>,
    sums: &mut Sums,
    log: &mut dyn FnMut(&str),
) -> Result<Vec<WrittenArchive>, PackageError> {
    let mut archives = Vec::new();
    let out = settings.out();
    for (temporary, final_path, format, sha256, bytes) in pending {
        let file_name = final_path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        out.join(&file_name).publish(temporary)?;
        // ecp before 0.3 wrote `{archive}.sha256`, a name that starts with
        // the platform prefix Qwen matches: it could be installed. Only a
        // regular file is removed (the write rule).
        let legacy = out.join(format!("{file_name}.sha256"));
        if legacy.remove_file().unwrap_or(false) {
            log(&format!(
                "removed {}: its name starts with a platform prefix, so Qwen could install it; the sums are in {SUMS}",
                legacy.path().display()
            ));
        }
        log(&format!(
            "archive: {} ({}, sha256 {})",
            final_path.display(),
            size(bytes),
            &sha256[..12.min(sha256.len())]
        ));
        sums.entries.insert(file_name, sha256.clone());
        archives.push(WrittenArchive {
            path: final_path,
            format,
            bytes,
            sha256,
        });
    }
    sums.entries.retain(|file, _| {
        std::fs::symlink_metadata(settings.out_dir.join(file)).is_ok_and(|m| m.is_file())
    });
    Ok(archives)
}

/// The in-toto statement of `archives`, and its DSSE envelope when a key
/// signs it (an older envelope, no longer true, is removed otherwise):
/// (statement, envelope, key id).
fn write_provenance(
    settings: &PackageSettings,
    archives: &[WrittenArchive],
    lock: Option<&provenance::Subject>,
    build_facts: &provenance::BuildFacts,
    log: &mut dyn FnMut(&str),
) -> Result<(PathBuf, Option<PathBuf>, Option<String>), PackageError> {
    let mut subjects: Vec<provenance::Subject> = archives
        .iter()
        .map(|a| provenance::Subject {
            name: a
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            sha256: a.sha256.clone(),
        })
        .collect();
    subjects.extend(lock.cloned());
    let statement = provenance::statement(&subjects, build_facts);
    let platform = build_facts.platform.as_deref();
    let statement_place = settings.out().join(provenance::statement_name(platform));
    let envelope_place = settings.out().join(provenance::envelope_name(platform));
    let (statement_path, envelope_path) = (statement_place.path(), envelope_place.path());
    statement_place.write(statement.as_bytes())?;
    let Some(key) = &settings.sign_key else {
        envelope_place.remove_file()?;
        log(&format!(
            "provenance: {} (unsigned; --sign-key KEY signs it)",
            statement_path.display()
        ));
        return Ok((statement_path, None, None));
    };
    let envelope = provenance::dsse::Envelope::sign(statement.as_bytes(), key);
    envelope_place.write(envelope.to_line().as_bytes())?;
    let id = key.verifying_key().key_id();
    log(&format!(
        "provenance: {} and its envelope {}, signed by key {id}",
        statement_path.display(),
        envelope_path.display()
    ));
    Ok((statement_path, Some(envelope_path), Some(id)))
}

/// What the statement records of an entry point ecp did not build: its
/// digest.
fn prebuilt(path: &Path) -> Result<Toolchain, PackageError> {
    let sha256 = crate::digest::sha256_file(path).map_err(|source| PackageError::Io {
        path: path.to_owned(),
        source,
    })?;
    Ok(Toolchain::Prebuilt { sha256 })
}

/// The lockfile a build resolved its dependencies from, and its sha256.
fn lockfile(folder: &Path, node: bool) -> Option<(String, String)> {
    let name = if node {
        "package-lock.json"
    } else {
        "Cargo.lock"
    };
    let digest = crate::digest::sha256_file(&folder.join(name)).ok()?;
    Some((name.to_owned(), digest))
}

/// Writes one archive to a temporary file in the output folder and lints
/// it; it counts only when it passes.
pub(super) fn write_checked(
    settings: &PackageSettings,
    files: &[stage::StagedFile],
    format: Format,
    final_path: PathBuf,
) -> Result<Pending, PackageError> {
    let check =
        |path: &Path, report: &mut Report| lint::archive::lint_archive(path, report).map(|_| ());
    write_linted(
        settings,
        files,
        format,
        settings.epoch,
        final_path,
        format.extension(),
        &check,
    )
}

/// Writes `files` as `format` with entry times `epoch` to a temporary file
/// beside `final_path` (named like it, so that the check reads it as the
/// same kind), checks it with `check`, and keeps it only when it has no
/// error; `kind` is what the summary calls it.
pub(super) fn write_linted(
    settings: &PackageSettings,
    files: &[stage::StagedFile],
    format: Format,
    epoch: u64,
    final_path: PathBuf,
    kind: &'static str,
    check: &dyn Fn(&Path, &mut Report) -> Result<(), lint::LintError>,
) -> Result<Pending, PackageError> {
    let io = |source| PackageError::Io {
        path: final_path.clone(),
        source,
    };
    let name = final_path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let suffix = match name.rsplit_once('.') {
        _ if name.ends_with(".tar.gz") => ".tar.gz".to_owned(),
        Some((_, extension)) => format!(".{extension}"),
        None => String::new(),
    };
    let mut temporary = settings.out().temporary(".ecp-package-", &suffix)?;
    let sha256 = write::write_archive(format, files, epoch, temporary.as_file_mut()).map_err(io)?;
    let mut report = Report::default();
    check(temporary.path(), &mut report).map_err(PackageError::Lint)?;
    if let Some(finding) = report
        .findings
        .iter()
        .find(|f| f.severity == Severity::Error)
    {
        return Err(PackageError::ArchiveLint {
            path: final_path,
            message: format!("[{}] {}", finding.rule, finding.message),
        });
    }
    let bytes = temporary.as_file().metadata().map(|m| m.len()).unwrap_or(0);
    Ok((temporary, final_path, kind, sha256, bytes))
}
