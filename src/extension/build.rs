//! Building the extension's entry point (below every command: package
//! builds to ship, check builds to judge, verify rebuilds). A native one: find its bin target with
//! `cargo_metadata`, then `cargo build --release --locked`, reading the
//! artifact path from cargo's JSON messages.
//!
//! The build is reproducible: the same commit, toolchain and target give
//! the same `dist/main` whatever the folder, `CARGO_HOME`, target folder or
//! user. Cargo passes the package's own sources (and a vendored runtime
//! inside it) to rustc by relative paths; registry sources, the toolchain
//! and build-script output sit under absolute paths, which
//! [`reproducible_rustflags`] maps to fixed names (`/cargo`, `/rustc-sysroot`,
//! `/target`). Those flags go in `CARGO_ENCODED_RUSTFLAGS` after any the
//! environment gives in `RUSTFLAGS` (which the statement records);
//! `build.rustflags` of a `.cargo/config.toml` is then not read, as cargo
//! documents for any environment flags.

use std::{
    io::BufReader,
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use cargo_metadata::{Message, MetadataCommand, TargetKind};

use crate::children;

/// Why a build did not give an entry point.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// cargo or npm failed, or gave no executable; the words say which.
    #[error("{0}")]
    Failed(String),
    /// A Ctrl-C stopped the named tool (and everything it started).
    #[error("interrupted: {0} and everything it started were stopped")]
    Interrupted(String),
    /// A Node bundle must be built, and the dependencies are not there.
    #[error(
        "{bundle} is not the build of the current code ({why}), and the dependencies are not installed"
    )]
    NotInstalled {
        bundle: String,
        why: String,
        folder: PathBuf,
    },
    /// The build script ran and wrote no bundle.
    #[error("`npm run build` wrote no {0}")]
    NoBundle(String),
}

impl BuildError {
    /// What to do about it, when there is something to say.
    pub fn help(&self) -> Option<String> {
        match self {
            BuildError::NotInstalled { folder, .. } => Some(format!(
                "run `npm ci && npm run build` in {} (both run code from the folder), then this again; or check the extension's release archive instead",
                folder.display()
            )),
            BuildError::NoBundle(_) => {
                Some("the build script must write the bundle the manifest runs".to_owned())
            }
            BuildError::Failed(_) | BuildError::Interrupted(_) => None,
        }
    }
}

/// [`BuildError::Interrupted`] when a Ctrl-C stopped `what` (see
/// [`children::watch_interrupts`]).
pub fn interrupted(what: &str) -> Result<(), BuildError> {
    if children::interrupted() {
        return Err(BuildError::Interrupted(what.to_owned()));
    }
    Ok(())
}

/// The bin target to build for the crate at `folder` (the only one, or the
/// one named after the extension) and cargo's target folder.
pub fn binary_target(folder: &Path, extension: &str) -> Result<(String, PathBuf), BuildError> {
    let manifest = folder.join("Cargo.toml");
    let metadata = MetadataCommand::new()
        .manifest_path(&manifest)
        .no_deps()
        .exec()
        .map_err(|e| BuildError::Failed(format!("cargo metadata failed: {e}")))?;
    let target_dir = metadata.target_directory.clone().into_std_path_buf();
    let manifest = manifest.canonicalize().unwrap_or(manifest);
    let package = metadata
        .packages
        .iter()
        .find(|p| {
            p.manifest_path.as_std_path().canonicalize().ok().as_deref() == Some(manifest.as_path())
        })
        .ok_or_else(|| BuildError::Failed(format!("{} is not a package", manifest.display())))?;
    let bins: Vec<&str> = package
        .targets
        .iter()
        .filter(|t| t.kind.contains(&TargetKind::Bin))
        .map(|t| t.name.as_str())
        .collect();
    match bins.as_slice() {
        [] => Err(BuildError::Failed(format!(
            "package {} has no binary target to ship as dist/main",
            package.name
        ))),
        [only] => Ok(((*only).to_owned(), target_dir)),
        many => many
            .iter()
            .find(|name| **name == extension)
            .map(|name| ((*name).to_owned(), target_dir))
            .ok_or_else(|| {
                BuildError::Failed(format!(
                    "package {} has several binaries ({}) and none is named {extension}; pass --binary",
                    package.name,
                    many.join(", ")
                ))
            }),
    }
}

/// Builds `bin` in release mode and returns the executable's path. Cargo's
/// progress goes to the terminal when `progress`, else it stays quiet
/// (errors are still shown).
pub fn build(
    folder: &Path,
    bin: &str,
    target: Option<&str>,
    target_dir: &Path,
    progress: bool,
) -> Result<PathBuf, BuildError> {
    if !folder.join("Cargo.lock").is_file() {
        // A reproducible build needs a lock file; a new extension has none yet.
        let status = children::spawn(
            Command::new(cargo())
                .arg("generate-lockfile")
                .current_dir(folder)
                .stdout(Stdio::null()),
        )
        .and_then(|mut child| child.wait())
        .map_err(|e| BuildError::Failed(format!("cannot run cargo: {e}")))?;
        interrupted("cargo generate-lockfile")?;
        if !status.success() {
            return Err(BuildError::Failed(
                "cargo generate-lockfile failed; create Cargo.lock and commit it".into(),
            ));
        }
        eprintln!("note: created Cargo.lock for a reproducible build; commit it");
    }
    let mut command = Command::new(cargo());
    command
        .args([
            "build",
            "--release",
            "--locked",
            "--bin",
            bin,
            "--message-format=json-render-diagnostics",
        ])
        .current_dir(folder)
        .env_remove("RUSTFLAGS")
        .env(
            "CARGO_ENCODED_RUSTFLAGS",
            reproducible_rustflags(folder, target_dir).join("\x1f"),
        )
        .stdout(Stdio::piped());
    if let Some(target) = target {
        command.args(["--target", target]);
    }
    if !progress {
        command.arg("--quiet");
    }
    let mut child = children::spawn(&mut command)
        .map_err(|e| BuildError::Failed(format!("cannot run cargo: {e}")))?;
    let mut executable = None;
    if let Some(stdout) = child.stdout() {
        for message in Message::parse_stream(BufReader::new(stdout)).flatten() {
            if let Message::CompilerArtifact(artifact) = message
                && artifact.target.name == bin
                && let Some(path) = artifact.executable
            {
                executable = Some(path.into_std_path_buf());
            }
        }
    }
    let status = child
        .wait()
        .map_err(|e| BuildError::Failed(format!("cargo build: {e}")))?;
    interrupted("cargo build")?;
    if !status.success() {
        return Err(BuildError::Failed(format!(
            "cargo build --release --locked --bin {bin} failed (its errors are above)"
        )));
    }
    executable.ok_or_else(|| BuildError::Failed(format!("cargo built no executable for {bin}")))
}

/// `cargo build --bin BIN` in `folder`: cargo's dev profile, the one `cargo
/// test` already built the dependencies with, so `ecp check .` after `cargo
/// test` (or after a one-line edit) rebuilds only the crate, in seconds, where
/// the release profile's fat LTO takes about a minute and a profile of its
/// own would build every dependency a third time. `ecp package` never uses
/// it. The caller's environment is kept as it is (`CARGO_TARGET_DIR`,
/// `RUSTFLAGS`: the same build as running that command by hand, so neither
/// redoes the other's), and the executable's path comes from cargo's JSON
/// messages. Cargo's progress goes to stderr when `progress`, else it stays
/// quiet; compiler warnings are counted, not shown. On failure the message
/// holds the last lines of the compiler's errors (or says cargo's own are
/// above).
pub fn build_for_check(folder: &Path, bin: &str, progress: bool) -> Result<PathBuf, BuildError> {
    let shown = "cargo build".to_owned();
    let mut command = Command::new(cargo());
    command
        .args(["build", "--bin", bin, "--message-format=json"])
        .current_dir(folder)
        .stdin(Stdio::null())
        .stdout(Stdio::piped());
    if !progress {
        command.arg("--quiet");
    }
    let mut child = children::spawn(&mut command)
        .map_err(|e| BuildError::Failed(format!("cannot run cargo: {e}")))?;
    let (mut executable, mut errors, mut warnings) = (None, String::new(), 0usize);
    if let Some(stdout) = child.stdout() {
        for message in Message::parse_stream(BufReader::new(stdout)).flatten() {
            match message {
                Message::CompilerArtifact(artifact) if artifact.target.name == bin => {
                    if let Some(path) = artifact.executable {
                        executable = Some(path.into_std_path_buf());
                    }
                }
                Message::CompilerMessage(message) => {
                    use cargo_metadata::diagnostic::DiagnosticLevel;
                    match message.message.level {
                        DiagnosticLevel::Error | DiagnosticLevel::Ice => {
                            if let Some(rendered) = &message.message.rendered {
                                errors.push_str(rendered);
                            }
                        }
                        DiagnosticLevel::Warning => warnings += 1,
                        _ => {}
                    }
                }
                _ => {}
            }
        }
    }
    let status = child
        .wait()
        .map_err(|e| BuildError::Failed(format!("{shown}: {e}")))?;
    if children::interrupted() {
        return Err(BuildError::Interrupted(shown));
    }
    if warnings > 0 {
        eprintln!("note: the build gave {warnings} compiler warning(s); `{shown}` shows them");
    }
    if !status.success() {
        return Err(BuildError::Failed(if errors.trim().is_empty() {
            format!(
                "{shown} failed in {} ({status}; cargo's errors are above)",
                folder.display()
            )
        } else {
            format!(
                "{shown} failed in {}:\n{}",
                folder.display(),
                crate::text::outside::block(&errors, 20, 300)
            )
        }));
    }
    executable.ok_or_else(|| BuildError::Failed(format!("{shown} built no executable for {bin}")))
}

/// The rustc flags the environment gives (`CARGO_ENCODED_RUSTFLAGS`, else
/// `RUSTFLAGS` split on whitespace), as cargo reads them.
pub fn environment_rustflags() -> Vec<String> {
    if let Ok(encoded) = std::env::var("CARGO_ENCODED_RUSTFLAGS") {
        return encoded
            .split('\x1f')
            .filter(|f| !f.is_empty())
            .map(str::to_owned)
            .collect();
    }
    std::env::var("RUSTFLAGS")
        .map(|flags| flags.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// `CARGO_HOME` as cargo finds it.
fn cargo_home() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("CARGO_HOME").filter(|h| !h.is_empty()) {
        return Some(PathBuf::from(home));
    }
    let user = std::env::var_os(if cfg!(windows) { "USERPROFILE" } else { "HOME" })?;
    Some(PathBuf::from(user).join(".cargo"))
}

/// The toolchain's sysroot as rustup resolves it in `folder`.
fn sysroot(folder: &Path) -> Option<PathBuf> {
    let output = Command::new(rustc())
        .args(["--print", "sysroot"])
        .current_dir(folder)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let path = String::from_utf8(output.stdout).ok()?;
    let path = path.trim();
    (output.status.success() && !path.is_empty()).then(|| PathBuf::from(path))
}

/// The environment's flags, then a `--remap-path-prefix` for each absolute
/// folder whose name could reach the binary (rustc applies the last match).
pub fn reproducible_rustflags(folder: &Path, target_dir: &Path) -> Vec<String> {
    let mut flags = environment_rustflags();
    let remaps = [
        (cargo_home(), "/cargo"),
        (sysroot(folder), "/rustc-sysroot"),
        (Some(target_dir.to_owned()), "/target"),
    ];
    for (from, to) in remaps {
        if let Some(from) = from.filter(|p| p.is_absolute()) {
            let flag = format!("--remap-path-prefix={}={to}", from.display());
            // An environment that already carries this build's flags (to
            // share its build with a plain `cargo build --release`) gets
            // them once (a repeated flag would change every unit's
            // fingerprint and rebuild the whole tree), and last, where
            // rustc's last-match rule makes them win.
            flags.retain(|f| *f != flag);
            flags.push(flag);
        }
    }
    flags
}

/// The rustc cargo runs (`RUSTC`, else `rustc` on `PATH`).
pub fn rustc() -> String {
    std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into())
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// Whether `folder` is a Node project (`package.json` beside the manifest).
pub fn is_node_project(folder: &Path) -> bool {
    folder.join("package.json").is_file()
}

/// Runs one npm command in `folder`. npm's own output goes to the terminal
/// when `progress`; otherwise it is kept and shown only when npm fails.
fn npm(folder: &Path, args: &[&str], progress: bool) -> Result<(), BuildError> {
    let shown = format!("npm {}", args.join(" "));
    let mut command = Command::new(if cfg!(windows) { "npm.cmd" } else { "npm" });
    command.args(args).current_dir(folder).stdin(Stdio::null());
    let output = if progress {
        command.stdout(Stdio::inherit()).stderr(Stdio::inherit());
        children::spawn(&mut command)
            .and_then(|mut child| child.wait())
            .map(|status| (status, Vec::new()))
    } else {
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        children::spawn(&mut command)
            .and_then(children::Child::wait_with_output)
            .map(|o| {
                let mut text = o.stdout;
                text.extend_from_slice(&o.stderr);
                (o.status, text)
            })
    };
    let (status, text) = output.map_err(|e| {
        BuildError::Failed(format!(
            "cannot run {shown}: {e} (is Node.js with npm installed?)"
        ))
    })?;
    interrupted(&shown)?;
    if status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&text);
    let tail: Vec<&str> = said.lines().rev().take(20).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    Err(BuildError::Failed(if tail.is_empty() {
        format!("{shown} failed ({status})")
    } else {
        format!("{shown} failed ({status}):\n{}", tail.join("\n"))
    }))
}

/// A TypeScript (Node) extension's bundle for `ecp check .` and `ecp call
/// .`, as a Rust one gets its dev build: when `package.json` has a `build`
/// script and the bundle is missing or older than an input of the build
/// (`src/`, `package.json`, its lock, `tsconfig.json`), `npm run build` makes it first, so
/// that a check never judges a stale bundle. `Ok(None)`: it was current
/// (or the folder has no build script); `Ok(Some(why))`: it was built now,
/// because of `why`. Without `node_modules` it is refused, with the
/// commands that install and build.
pub fn bundle_for_check(folder: &Path, bundle: &Path) -> Result<Option<String>, BuildError> {
    let manifest = folder.join("package.json");
    let Ok(text) = crate::files::read_text(&manifest, Some(folder), 1024 * 1024) else {
        return Ok(None);
    };
    let has_build = crate::json::parse_value(&text)
        .ok()
        .is_some_and(|package| package["scripts"]["build"].is_string());
    if !has_build {
        return Ok(None);
    }
    let shown = bundle.strip_prefix(folder).unwrap_or(bundle).display();
    let why = match std::fs::metadata(bundle).and_then(|m| m.modified()) {
        Err(_) => format!("{shown} does not exist yet"),
        Ok(made) => match build_input_changed(folder, made) {
            None => return Ok(None),
            Some(why) => why,
        },
    };
    if !folder.join("node_modules").is_dir() {
        return Err(BuildError::NotInstalled {
            bundle: shown.to_string(),
            why,
            folder: folder.to_owned(),
        });
    }
    npm(folder, &["run", "build"], false)?;
    if !bundle.is_file() {
        return Err(BuildError::NoBundle(shown.to_string()));
    }
    Ok(Some(why))
}

/// The first input of a Node build changed after `made`: a file under
/// `src/`, or `package.json`, `package-lock.json`, `tsconfig.json` (not
/// the tests, nor a cassette recorded into `tests/`).
fn build_input_changed(folder: &Path, made: std::time::SystemTime) -> Option<String> {
    let changed = |name: &str| {
        std::fs::symlink_metadata(folder.join(name))
            .and_then(|m| m.modified())
            .is_ok_and(|m| m > made)
    };
    let root = ["package.json", "package-lock.json", "tsconfig.json"];
    if let Some(name) = root.into_iter().find(|name| changed(name)) {
        return Some(format!("{name} changed since"));
    }
    crate::files::changed_since(&folder.join("src"), made).map(|why| format!("src/{why}"))
}

/// `npm ci` (a missing `package-lock.json` is created first, with a note)
/// and `npm run build`, which writes the bundle. Both run code from the
/// folder, which is said first: `npm ci` the install scripts of the package
/// and its dependencies (unless `ignore_scripts`), `npm run build` the
/// package's build script.
pub fn build_node(
    folder: &Path,
    progress: bool,
    ignore_scripts: bool,
    log: &mut dyn FnMut(&str),
) -> Result<(), BuildError> {
    let mut quiet = vec!["--no-audit", "--no-fund"];
    if ignore_scripts {
        quiet.push("--ignore-scripts");
    }
    if !folder.join("package-lock.json").is_file() {
        npm(
            folder,
            &[&["install", "--package-lock-only"], &quiet[..]].concat(),
            progress,
        )?;
        eprintln!("note: created package-lock.json for a reproducible build; commit it");
    }
    log(if ignore_scripts {
        "build: this runs code from the folder: npm run build runs package.json's build script (install scripts are off: --ignore-scripts)"
    } else {
        "build: this runs code from the folder: npm ci runs the install scripts of package.json and of every dependency (--ignore-scripts turns them off), npm run build its build script"
    });
    let ci = [&["ci"], &quiet[..]].concat();
    log(&format!("build: npm {}", ci.join(" ")));
    npm(folder, &ci, progress)?;
    log("build: npm run build");
    npm(folder, &["run", "build"], progress)
}
