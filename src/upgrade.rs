//! `ecp upgrade`: brings a generated extension's runtime to the one this ecp
//! carries ([`crate::scaffold::vendor`]).
//!
//! - **Vendored** (`vendor/ecp-runtime`, ecp 0.2 and later): the copy is
//!   compared with the checksum `Cargo.toml` recorded; an edited copy is
//!   refused unless `force`. The new tree is written beside the old one and
//!   swapped in by two renames; `Cargo.toml` gets the new version and
//!   checksum, and the dependency versions it shares with the runtime.
//! - **Copied** (ecp 0.1.0: `src/profile/`, `src/runtime/`, `contracts/v1/`
//!   and a 97-line `src/main.rs`): every copied file is compared with what
//!   ecp 0.1.0 wrote (`tests/fixtures/copied-layout-0.1.0`, embedded), then
//!   replaced by the vendored crate, a new `src/main.rs` and `src/lib.rs`;
//!   `src/provider.rs` and the tests stay as they are (`crate::runtime` and
//!   `crate::profile` still resolve, through `src/lib.rs`), and dependencies
//!   that only the old copies used are dropped.
//!
//! Nothing the provider wrote is touched: not an edited `src/provider.rs`,
//! not edited tests, not the manifest. An unedited copy of the V1 binding
//! that ecp generated before runtime 0.3.0 becomes the small mapping of
//! today's template, with `src/main.rs` and the tests written for it, when
//! those are unedited too ([`provider`]); so do the tests of runtime 0.3.x
//! when they are unedited, each on its own.
//!
//! The folder may be someone else's: before anything is read or written,
//! every path an upgrade touches, every folder on the way to it and
//! everything inside the trees it reads is checked to be a regular file or
//! folder, not a link, FIFO, socket or device ([`guard`]); files are read
//! through [`crate::files`] (regular files only, opened without
//! waiting, bounded). What an interrupted swap left in `vendor/` is
//! finished or undone first ([`recover`]), and said.

mod edited;
mod provider;
mod swap;
mod typescript;

use edited::*;
use swap::*;

use std::path::{Path, PathBuf};

use crate::writes::{Place, WriteProblem};

use crate::extension::runtime::{self, Installed};
use crate::scaffold::{self, NewSettings, Template, vendor};

/// What ecp 0.1.0 copied into an extension, the reference for "unedited":
/// the SHA-256 and path of every file of [`COPIED_FOLDERS`], as in
/// `tests/fixtures/copied-layout-0.1.0` (a unit test holds the two equal).
const COPIED_DIGESTS: &str = include_str!("upgrade/copied-0.1.0.txt");

/// The glue ecp 0.1.0 generated for `acme-context` (the name and the
/// environment prefix are put back before comparing).
const COPIED_GLUE: [(&str, &str); 2] = [
    (
        "src/lib.rs",
        include_str!("../tests/fixtures/copied-layout-0.1.0/src/lib.rs"),
    ),
    (
        "src/main.rs",
        include_str!("../tests/fixtures/copied-layout-0.1.0/src/main.rs"),
    ),
];

/// The folders ecp 0.1.0 copied the runtime and the contract into.
const COPIED_FOLDERS: &[&str] = &["src/profile", "src/runtime", "contracts/v1"];

/// Copied folders an upgrade removes; `contracts/v1` stays (the extension's
/// own tests may read it) and is refreshed from the runtime's contract.
const REMOVED_FOLDERS: &[&str] = &["src/profile", "src/runtime"];

/// An extension's copy of the contract files, refreshed by every upgrade.
const CONTRACTS: &str = "contracts/v1";

/// Why an upgrade does not happen.
#[derive(Debug, thiserror::Error)]
pub enum UpgradeError {
    #[error(transparent)]
    Input(#[from] crate::input::InputError),
    #[error("{} has no Cargo.toml: `ecp upgrade` works on a local (Rust) extension that `ecp new` generated", shown(.0))]
    NoCrate(PathBuf),
    #[error("{} is a remote extension: it carries no runtime to upgrade (the provider's own server answers at its httpUrl)", shown(.0))]
    Remote(PathBuf),
    #[error("{} holds no runtime that ecp generated (neither vendor/ecp-runtime with [package.metadata.ecp.runtime] in Cargo.toml, nor ecp 0.1.0's src/runtime/)", shown(.0))]
    NotGenerated(PathBuf),
    #[error("the runtime here was edited since ecp wrote it: {}", crate::text::outside::line(&.files.join(", "), 2000))]
    Edited { files: Vec<String> },
    #[error(
        "the vendored runtime {} is newer than the one this ecp carries ({carried}); upgrade ecp instead", crate::text::outside::value(.vendored)
    )]
    Newer { vendored: String, carried: String },
    #[error("{}: {}", shown(.path), crate::text::outside::value(.message))]
    Toml { path: PathBuf, message: String },
    #[error("{}: {}", shown(.path), crate::text::outside::value(&.source.to_string()))]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is {size} bytes; ecp upgrade reads at most {max} bytes of one file", shown(.path))]
    TooLarge { path: PathBuf, size: u64, max: u64 },
    #[error("cannot render the new files: {0}")]
    Render(String),
    #[error("{} is {what}; ecp upgrade reads and writes regular files and folders only, never through a link", shown(.path))]
    Unsafe { path: PathBuf, what: &'static str },
}

/// A path as a message shows it: escaped and bounded, since its names
/// come from the extension's folder.
fn shown(path: &Path) -> String {
    crate::text::outside::line(&crate::input::shown(path), 1000)
}

/// Why a file was not read, as an upgrade says it.
fn unreadable(problem: crate::files::FileProblem) -> UpgradeError {
    use crate::files::FileProblem;
    match problem {
        FileProblem::Io { path, source } => UpgradeError::Io { path, source },
        FileProblem::NotRegular { path, what } => UpgradeError::Unsafe { path, what },
        FileProblem::LeavesFolder { path, .. } => UpgradeError::Unsafe {
            path,
            what: "a symlink that leads out of the extension",
        },
        FileProblem::TooLarge { path, size, max } => UpgradeError::TooLarge { path, size, max },
    }
}

/// A text file of the extension, read as [`crate::files::read_text`]
/// reads it: a regular file inside `folder`, never waited on, bounded.
fn read_text(folder: &Path, path: &Path) -> Result<String, UpgradeError> {
    crate::files::read_text(path, Some(folder), crate::files::MAX_TEXT_BYTES).map_err(unreadable)
}

impl UpgradeError {
    /// What to do about it.
    pub fn help(&self) -> Option<String> {
        match self {
            UpgradeError::Input(input) => Some(input.help()),
            UpgradeError::Edited { .. } => Some(
                "the upgrade would replace those changes: move them into your provider file (src/provider.rs, or src/provider.ts; the runtime is not yours to edit), or pass --force to replace them anyway".into(),
            ),
            UpgradeError::Unsafe { .. } => Some(
                "replace the link or special file with the real folder or file (a fresh `ecp new` shows what belongs there), or remove it if nothing belongs there (a `vendor/.ecp-runtime-*` leftover), then run ecp upgrade again".into(),
            ),
            UpgradeError::TooLarge { .. } => Some(
                "no file ecp generates is that large: replace it with what a fresh `ecp new` writes, then run ecp upgrade again".into(),
            ),
            UpgradeError::NotGenerated(_) | UpgradeError::NoCrate(_) => {
                Some("run it in the folder `ecp new` created (the one with Cargo.toml and qwen-extension.json)".into())
            }
            _ => None,
        }
    }
}

/// What an upgrade did (or, when `changed` is false, found to be current).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Upgraded {
    pub name: String,
    pub from: String,
    /// `vendored` or `copied` (ecp 0.1.0's layout).
    pub from_layout: &'static str,
    pub to: &'static str,
    pub changed: bool,
    /// The release notes between the two, newest first.
    pub notes: Vec<ReleaseNotes>,
    pub written: Vec<String>,
    pub removed: Vec<String>,
    /// Dependencies dropped from `Cargo.toml` (only the old copies used them).
    pub dropped: Vec<String>,
    /// Dependencies whose version was set to the runtime's.
    pub aligned: Vec<String>,
    /// Files that had been edited and were replaced because of `force`.
    pub forced: Vec<String>,
    /// What was done about an upgrade that had been interrupted.
    pub recovered: Vec<String>,
    /// What happened to `src/provider.rs`, when there is something to say.
    pub provider: Option<String>,
    /// What happened to the tests ecp wrote, when they were replaced on
    /// their own.
    pub tests: Option<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct ReleaseNotes {
    pub version: &'static str,
    pub notes: &'static [&'static str],
    pub security_fix: Option<&'static str>,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> UpgradeError + '_ {
    move |source| UpgradeError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Upgrades the extension at `folder`: [`recover`], then
/// [`upgrade_recovered`].
pub fn upgrade(folder: &Path, force: bool) -> Result<Upgraded, UpgradeError> {
    let recovered = recover(folder)?;
    upgrade_recovered(folder, force, recovered)
}

/// Checks that `folder` is an extension with a `Cargo.toml` whose touched
/// paths are safe ([`guard`]), then finishes or undoes an upgrade that was
/// interrupted inside its swap of `vendor/ecp-runtime`. Returns what it
/// did, one sentence each (nothing when there was nothing to repair).
pub fn recover(folder: &Path) -> Result<Vec<String>, UpgradeError> {
    crate::input::InputError::check_exists(folder)?;
    let cargo_path = folder.join("Cargo.toml");
    if std::fs::symlink_metadata(&cargo_path).is_err() {
        if typescript::is_typescript(folder) {
            // Nothing is swapped in a TypeScript extension: nothing to
            // recover.
            return Ok(Vec::new());
        }
        if is_remote(folder) {
            return Err(UpgradeError::Remote(folder.to_owned()));
        }
        return Err(UpgradeError::NoCrate(folder.to_owned()));
    }
    guard_touched(folder)?;
    recover_swap(folder)
}

/// Whether `folder` holds a manifest whose one server is remote (`httpUrl`).
fn is_remote(folder: &Path) -> bool {
    let manifest = folder.join(crate::lint::MANIFEST);
    read_text(folder, &manifest)
        .ok()
        .and_then(|text| crate::lint::manifest::check(crate::lint::MANIFEST, &text).ok())
        .and_then(|checked| checked.facts.server)
        .is_some_and(|server| server.http_url.is_some())
}

/// Upgrades the extension at `folder` once [`recover`] returned
/// `recovered` (reported in the outcome).
pub fn upgrade_recovered(
    folder: &Path,
    force: bool,
    recovered: Vec<String>,
) -> Result<Upgraded, UpgradeError> {
    if std::fs::symlink_metadata(folder.join("Cargo.toml")).is_err()
        && typescript::is_typescript(folder)
    {
        return typescript::upgrade(folder, force).map(|mut outcome| {
            outcome.recovered = recovered;
            outcome
        });
    }
    // Again: a recovery moved folders, and this may be called alone.
    guard_touched(folder)?;
    let generated = Generated::read(folder)?;
    let installed = &generated.installed;
    let edited = match installed {
        Installed::Vendored {
            recorded_sha256, ..
        } => {
            let mut edited = edited_vendored(folder, recorded_sha256.as_deref())?;
            edited.extend(edited_contracts(folder)?);
            edited
        }
        Installed::Copied => edited_copied(folder, &generated.name)?,
    };
    let mut outcome = generated.outcome(recovered);
    // The provider file of the vendored layout (the copied layout keeps its
    // own, with glue written for it).
    let provider_plan = match installed {
        Installed::Vendored { .. } => provider::plan(folder, &generated.name)?,
        Installed::Copied => provider::Plan::default(),
    };
    outcome.provider = provider_plan.note.clone();
    outcome.tests = provider_plan.tests_note.clone();
    if generated.current() && edited.is_empty() {
        outcome.changed = !provider_plan.writes.is_empty();
        for (path, contents) in &provider_plan.writes {
            write_atomically(&folder.join(path), contents)?;
            outcome.written.push(path.clone());
        }
        reqwest_feature_if_named(folder, &generated, &mut outcome)?;
        return Ok(outcome);
    }
    if !edited.is_empty() && !force {
        return Err(UpgradeError::Edited { files: edited });
    }
    outcome.forced = edited
        .iter()
        .map(|f| crate::text::outside::value(f))
        .collect();
    outcome.changed = true;
    replace_runtime(folder, &generated, &mut outcome)?;
    // An unedited provider file of an earlier generation, converted.
    for (path, contents) in &provider_plan.writes {
        write_atomically(&folder.join(path), contents)?;
        outcome.written.push(path.clone());
    }
    Ok(outcome)
}

/// A current runtime whose crate names the old reqwest paths (code an
/// earlier ecp generated, put back by its owner) gets the runtime's
/// `reqwest` feature, so that it still builds; nothing else changes.
fn reqwest_feature_if_named(
    folder: &Path,
    generated: &Generated,
    outcome: &mut Upgraded,
) -> Result<(), UpgradeError> {
    let sources = copied_sources(folder, &[])?;
    let mut document = generated.document()?;
    if reqwest_feature(&sources, &mut document, outcome) {
        write_atomically(&generated.cargo_path, document.to_string().as_bytes())?;
        outcome.written.push("Cargo.toml".into());
        outcome.changed = true;
    }
    Ok(())
}

/// Turns the runtime's `reqwest` feature on in `document` when `sources`
/// name its old paths and it is off, and says so in `outcome`; whether it
/// did.
fn reqwest_feature(
    sources: &str,
    document: &mut toml_edit::DocumentMut,
    outcome: &mut Upgraded,
) -> bool {
    let turned_on = names_runtime_reqwest(sources, document) && enable_reqwest_feature(document);
    if turned_on {
        outcome
            .aligned
            .push("ecp-runtime with its reqwest feature".into());
    }
    turned_on
}

/// A Rust extension as ecp generated it: its `Cargo.toml` and the runtime
/// it carries, read once.
struct Generated {
    cargo_path: PathBuf,
    cargo_text: String,
    installed: Installed,
    name: String,
    from: String,
}

impl Generated {
    /// Reads `Cargo.toml` and what runtime it carries; refuses a crate ecp
    /// did not generate and a runtime newer than this ecp's.
    fn read(folder: &Path) -> Result<Generated, UpgradeError> {
        let cargo_path = folder.join("Cargo.toml");
        let cargo_text = read_text(folder, &cargo_path)?;
        let cargo_table: toml::Table =
            cargo_text
                .parse()
                .map_err(|e: toml::de::Error| UpgradeError::Toml {
                    path: cargo_path.clone(),
                    message: e.message().to_owned(),
                })?;
        let installed = runtime::installed(folder, &cargo_table)
            .ok_or_else(|| UpgradeError::NotGenerated(folder.to_owned()))?;
        if matches!(installed, Installed::Copied) {
            // Converting the copied layout reads every source of the crate,
            // to keep the dependencies they still use.
            guard(folder, &expecting(COPIED_SOURCES.iter().copied()))?;
        }
        let name = cargo_table
            .get("package")
            .and_then(|p| p.get("name"))
            .and_then(|n| n.as_str())
            .unwrap_or_default()
            .to_owned();
        let from = installed.version().to_owned();
        let carried = vendor::RUNTIME_VERSION;
        if crate::runtime::releases::parse_version(&from)
            > crate::runtime::releases::parse_version(carried)
        {
            return Err(UpgradeError::Newer {
                vendored: from,
                carried: carried.to_owned(),
            });
        }
        Ok(Generated {
            cargo_path,
            cargo_text,
            installed,
            name,
            from,
        })
    }

    /// Its `Cargo.toml`, for editing.
    fn document(&self) -> Result<toml_edit::DocumentMut, UpgradeError> {
        self.cargo_text
            .parse()
            .map_err(|e: toml_edit::TomlError| UpgradeError::Toml {
                path: self.cargo_path.clone(),
                message: e.to_string(),
            })
    }

    /// Current: this version, recorded with this copy's checksum (a stale
    /// checksum over the carried files is an upgrade that stopped before
    /// recording it, finished by running again).
    fn current(&self) -> bool {
        match &self.installed {
            Installed::Vendored {
                recorded_sha256, ..
            } => {
                self.from == vendor::RUNTIME_VERSION
                    && recorded_sha256.as_deref() == Some(&vendor::runtime_sha256())
            }
            Installed::Copied => false,
        }
    }

    /// The outcome before anything is done: versions and release notes.
    fn outcome(&self, recovered: Vec<String>) -> Upgraded {
        Upgraded {
            // Shown to a terminal and in JSON: the extension's own values.
            name: crate::text::outside::value(&self.name),
            from: crate::text::outside::value(&self.from),
            from_layout: match self.installed {
                Installed::Vendored { .. } => "vendored",
                Installed::Copied => "copied",
            },
            to: vendor::RUNTIME_VERSION,
            changed: false,
            notes: crate::runtime::releases::newer_than(&self.from)
                .into_iter()
                .map(|r| ReleaseNotes {
                    version: r.version,
                    notes: r.notes,
                    security_fix: r.security_fix,
                })
                .collect(),
            written: Vec::new(),
            removed: Vec::new(),
            dropped: Vec::new(),
            aligned: Vec::new(),
            forced: Vec::new(),
            recovered,
            provider: None,
            tests: None,
        }
    }
}

/// The runtime replaced: the vendored crate swapped in whole, the copied
/// layout's glue written and its copies removed, the contract refreshed,
/// and `Cargo.toml` recording the new runtime.
fn replace_runtime(
    folder: &Path,
    generated: &Generated,
    outcome: &mut Upgraded,
) -> Result<(), UpgradeError> {
    let copied = matches!(generated.installed, Installed::Copied);
    // Everything new is rendered before anything is touched.
    let rewrites = if copied {
        let env_prefix =
            copied_env_prefix(folder).unwrap_or_else(|| crate::name::env_prefix(&generated.name));
        glue_files(&generated.name, &env_prefix)?
    } else {
        Vec::new()
    };
    // The sources as they will be after the upgrade (the copies removed,
    // the glue rewritten), read now so that a file that cannot be read
    // stops the upgrade before it changes anything.
    let sources = copied_sources(folder, &rewrites)?;
    let mut document = generated.document()?;
    record_runtime(&mut document);

    // 1. The vendored crate, swapped in whole.
    replace_vendor(folder)?;
    outcome.written.push(format!(
        "{}/ ({} files)",
        vendor::VENDOR_DIR,
        vendor::runtime_files().len()
    ));
    // 2. The glue of the copied layout, and its copies removed.
    for (path, contents) in &rewrites {
        write_atomically(&folder.join(path), contents.as_bytes())?;
        outcome.written.push(path.clone());
    }
    if folder.join(CONTRACTS).is_dir() {
        for (path, contents) in vendor::runtime_files() {
            if let Some(name) = path.strip_prefix(&format!("{CONTRACTS}/")) {
                write_atomically(&folder.join(CONTRACTS).join(name), contents)?;
            }
        }
        outcome.written.push(format!("{CONTRACTS}/"));
    }
    if copied {
        for removed in REMOVED_FOLDERS {
            let path = folder.join(removed);
            if path.exists() {
                std::fs::remove_dir_all(&path).map_err(io(&path))?;
                outcome.removed.push(format!("{removed}/"));
            }
        }
    }
    if copied {
        // Shown: the names are the extension's own `Cargo.toml` keys.
        outcome.dropped = drop_unused_dependencies(&sources, &mut document)
            .iter()
            .map(|name| crate::text::outside::value(name))
            .collect();
    }
    // 3. Cargo.toml: the new version, checksum and shared versions, and
    // the runtime's `reqwest` feature for a mapping that still needs it.
    outcome.aligned = align_dependencies(&mut document);
    reqwest_feature(&sources, &mut document, outcome);
    write_atomically(&generated.cargo_path, document.to_string().as_bytes())?;
    outcome.written.push("Cargo.toml".into());
    Ok(())
}

/// `[package.metadata.ecp.runtime]` and the `ecp-runtime` dependency, set
/// to the carried runtime (the dependency keeps its path, or gets the
/// vendored one).
fn record_runtime(document: &mut toml_edit::DocumentMut) {
    use toml_edit::{Item, Table, value};
    let package = document["package"].or_insert(Item::Table(Table::new()));
    let metadata = package["metadata"].or_insert(implicit_table());
    let ecp = metadata["ecp"].or_insert(implicit_table());
    let runtime = ecp["runtime"].or_insert(Item::Table(Table::new()));
    runtime["version"] = value(vendor::RUNTIME_VERSION);
    runtime["sha256"] = value(vendor::runtime_sha256());
    let Some(dependencies) = document["dependencies"]
        .or_insert(Item::Table(Table::new()))
        .as_table_like_mut()
    else {
        return;
    };
    // `TableLike::get_mut` finds; `Item::get_mut` would insert.
    match dependencies.get_mut("ecp-runtime") {
        Some(existing) if existing.is_str() => {
            // A crates.io requirement: the owner switched; keep it, newer.
            *existing = value(vendor::RUNTIME_VERSION);
        }
        Some(existing) => {
            if let Some(table) = existing.as_table_like_mut() {
                table.insert("version", value(vendor::RUNTIME_VERSION));
            }
        }
        None => {
            let mut entry = toml_edit::InlineTable::new();
            entry.insert("path", vendor::VENDOR_DIR.into());
            entry.insert("version", vendor::RUNTIME_VERSION.into());
            dependencies.insert("ecp-runtime", value(entry));
        }
    }
}

/// Whether the crate's sources name the runtime's hidden reqwest paths of
/// 0.4.1 and earlier (`ProxyEnv::into_reqwest`, or `reqwest` while the
/// crate has no `reqwest` dependency of its own, so that the name is
/// `ecp_runtime::reqwest`), which the runtime builds only with its
/// `reqwest` feature.
fn names_runtime_reqwest(sources: &str, document: &toml_edit::DocumentMut) -> bool {
    let own = document
        .get("dependencies")
        .and_then(|t| t.as_table_like())
        .is_some_and(|t| t.contains_key("reqwest"));
    sources.contains("into_reqwest") || (!own && sources.contains("reqwest::"))
}

/// `features = ["reqwest"]` on the `ecp-runtime` dependency; whether it
/// was not there before.
fn enable_reqwest_feature(document: &mut toml_edit::DocumentMut) -> bool {
    let Some(item) = document
        .get_mut("dependencies")
        .and_then(|t| t.as_table_like_mut())
        .and_then(|t| t.get_mut("ecp-runtime"))
    else {
        return false;
    };
    if let Some(version) = item.as_str().map(str::to_owned) {
        let mut table = toml_edit::InlineTable::new();
        table.insert("version", version.into());
        *item = toml_edit::value(table);
    }
    let Some(dependency) = item.as_table_like_mut() else {
        return false;
    };
    let mut features = dependency
        .get("features")
        .and_then(|f| f.as_array())
        .cloned()
        .unwrap_or_default();
    if features.iter().any(|f| f.as_str() == Some("reqwest")) {
        return false;
    }
    features.push("reqwest");
    dependency.insert("features", toml_edit::value(features));
    true
}

fn implicit_table() -> toml_edit::Item {
    let mut table = toml_edit::Table::new();
    table.set_implicit(true);
    toml_edit::Item::Table(table)
}

/// The dependencies of the carried runtime: name and version requirement.
fn runtime_requirements() -> Vec<(String, String)> {
    let manifest = vendor::runtime_files()
        .into_iter()
        .find(|(path, _)| path == "Cargo.toml")
        .map(|(_, contents)| String::from_utf8_lossy(contents).into_owned())
        .unwrap_or_default();
    let Ok(table) = manifest.parse::<toml::Table>() else {
        return Vec::new();
    };
    table
        .get("dependencies")
        .and_then(|d| d.as_table())
        .map(|deps| {
            deps.iter()
                .filter_map(|(name, spec)| {
                    let version = spec
                        .as_str()
                        .or_else(|| spec.get("version").and_then(|v| v.as_str()))?;
                    Some((name.clone(), version.to_owned()))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Sets every dependency the extension shares with the runtime to the
/// runtime's requirement, so that both resolve to one version.
fn align_dependencies(document: &mut toml_edit::DocumentMut) -> Vec<String> {
    let mut aligned = Vec::new();
    let requirements = runtime_requirements();
    for section in ["dependencies", "dev-dependencies"] {
        let Some(table) = document
            .get_mut(section)
            .and_then(|t| t.as_table_like_mut())
        else {
            continue;
        };
        for (name, requirement) in &requirements {
            let Some(item) = table.get_mut(name) else {
                continue;
            };
            let current = item.as_str().map(str::to_owned).or_else(|| {
                item.as_table_like()
                    .and_then(|t| t.get("version"))
                    .and_then(|v| v.as_str())
                    .map(str::to_owned)
            });
            if current.as_deref() == Some(requirement.as_str()) || current.is_none() {
                continue;
            }
            if item.is_str() {
                *item = toml_edit::value(requirement.as_str());
            } else if let Some(inline) = item.as_table_like_mut() {
                inline.insert("version", toml_edit::value(requirement.as_str()));
            }
            aligned.push(format!("{name} {requirement}"));
        }
    }
    aligned
}

/// The Rust sources of the crate (`src/`, `tests/`) as they will be after
/// converting the copied layout: without the copies it removes and with
/// the glue `rewrites` in place of the old. Every file is read bounded
/// ([`runtime::read_tree`]); one that cannot be read stops the upgrade
/// (skipping it could drop a dependency it uses).
fn copied_sources(folder: &Path, rewrites: &[(String, String)]) -> Result<String, UpgradeError> {
    let mut sources = String::new();
    for dir in ["src", "tests"] {
        let root = folder.join(dir);
        if !root.is_dir() {
            continue;
        }
        for (path, contents) in runtime::read_tree(&root).map_err(io(&root))? {
            let full = format!("{dir}/{path}");
            let replaced = REMOVED_FOLDERS
                .iter()
                .any(|f| full.starts_with(&format!("{f}/")))
                || rewrites.iter().any(|(p, _)| *p == full);
            if path.ends_with(".rs") && !replaced {
                sources.push_str(&String::from_utf8_lossy(&contents));
                sources.push('\n');
            }
        }
    }
    for (_, contents) in rewrites {
        sources.push_str(contents);
        sources.push('\n');
    }
    Ok(sources)
}

/// Drops the `[dependencies]` that none of the extension's own `sources`
/// (`src/`, `tests/`, after the upgrade: [`copied_sources`]) name any
/// more: the old copies'.
fn drop_unused_dependencies(sources: &str, document: &mut toml_edit::DocumentMut) -> Vec<String> {
    // A path that starts with the crate's name: `ident::`, `ident!` or
    // `use ident`, not preceded by another identifier character
    // (`rustls::crypto::ring::` does not use `ring`).
    let used = |name: &str| {
        let ident = name.replace('-', "_");
        sources.match_indices(&ident).any(|(at, _)| {
            let before = sources[..at].chars().next_back();
            let after = &sources[at + ident.len()..];
            let starts_path = !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
            starts_path
                && (after.starts_with("::")
                    || after.starts_with('!')
                    || sources[..at].ends_with("use "))
        })
    };
    let Some(table) = document
        .get_mut("dependencies")
        .and_then(|t| t.as_table_like_mut())
    else {
        return Vec::new();
    };
    let unused: Vec<String> = table
        .iter()
        .map(|(name, _)| name.to_owned())
        .filter(|name| name != "ecp-runtime" && !used(name))
        .collect();
    for name in &unused {
        table.remove(name);
    }
    unused
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A mapping that names the runtime's old reqwest paths gets the
    /// runtime's `reqwest` feature, once; one with its own reqwest, or
    /// none, does not.
    #[test]
    fn the_reqwest_feature_is_turned_on_for_a_mapping_that_needs_it() {
        let parse = |text: &str| text.parse::<toml_edit::DocumentMut>().unwrap();
        let vendored = "[dependencies]\necp-runtime = { path = \"vendor/ecp-runtime\" }\n";
        let old = "use ecp_runtime::{proxy::ProxyEnv, reqwest::{Client}};\nfn c() -> reqwest::Client { todo!() }";
        assert!(names_runtime_reqwest(old, &parse(vendored)));
        assert!(names_runtime_reqwest(
            "ProxyEnv::from_env().into_reqwest()",
            &parse(vendored)
        ));
        let own = "[dependencies]\nreqwest = \"0.13\"\necp-runtime = \"0.6.0\"\n";
        assert!(!names_runtime_reqwest(
            "reqwest::Client::new()",
            &parse(own)
        ));
        assert!(!names_runtime_reqwest(
            "http::Upstream::from_env",
            &parse(vendored)
        ));
        let mut document = parse(vendored);
        assert!(enable_reqwest_feature(&mut document));
        assert!(!enable_reqwest_feature(&mut document));
        assert!(
            document.to_string().contains("features = [\"reqwest\"]"),
            "{document}"
        );
        let mut document = parse(own);
        assert!(enable_reqwest_feature(&mut document));
        let text = document.to_string();
        assert!(
            text.contains("ecp-runtime = { version = \"0.6.0\", features = [\"reqwest\"] }"),
            "{text}"
        );
    }

    #[test]
    fn the_runtime_dependency_is_added_once() {
        let mut document: toml_edit::DocumentMut =
            "[package]\nname = \"a\"\n\n[dependencies]\nserde = \"1\"\n"
                .parse()
                .unwrap();
        record_runtime(&mut document);
        let text = document.to_string();
        assert!(
            text.contains("ecp-runtime = { path = \"vendor/ecp-runtime\""),
            "{text}"
        );
        record_runtime(&mut document);
        assert_eq!(document.to_string().matches("ecp-runtime =").count(), 1);
    }

    /// The digest table is the fixture of what ecp 0.1.0 copied, file for
    /// file: regenerate it from `tests/fixtures/copied-layout-0.1.0` (`sha256sum`
    /// of each file under `contracts/v1`, `src/profile` and `src/runtime`,
    /// sorted by path) if this fails.
    #[test]
    fn the_copied_digests_are_the_fixtures_files() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/copied-layout-0.1.0");
        let mut expected = String::new();
        let mut paths = runtime::tree_paths(&root).unwrap();
        paths.sort();
        for path in paths {
            if COPIED_FOLDERS
                .iter()
                .any(|folder| path.starts_with(&format!("{folder}/")))
            {
                let bytes = std::fs::read(root.join(&path)).unwrap();
                let digest = crate::digest::sha256(&bytes);
                expected.push_str(&format!("{digest}  {path}\n"));
            }
        }
        assert_eq!(COPIED_DIGESTS, expected);
        for (path, text) in COPIED_GLUE {
            assert!(copied_unedited(path, text, "acme-context", "ACME_CONTEXT"));
            assert!(!copied_unedited(
                path,
                &format!("{text} "),
                "acme-context",
                "ACME_CONTEXT"
            ));
        }
        let (path, _) = copied_digests().next().unwrap();
        let text = std::fs::read_to_string(root.join(path)).unwrap();
        assert!(copied_unedited(path, &text, "x", "X"));
        assert!(!copied_unedited(path, &format!("{text}\n"), "x", "X"));
    }
}
