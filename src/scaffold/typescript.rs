//! The TypeScript runtime (`runtimes/typescript` in ecp's repository), the
//! one source of the `local-ts` template's profile, runtime, provider
//! binding, tests and package files. `ecp new --template local-ts` copies
//! the sources verbatim (a test compares them byte for byte) and derives
//! `package.json` and `package-lock.json` from the runtime's own, so the
//! pinned versions and the lockfile are the ones ecp's suite tested.

use include_dir::{Dir, include_dir};

use super::{GeneratedFile, ScaffoldError};

static SOURCES: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/runtimes/typescript/src");
static TESTS: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/runtimes/typescript/test");
static CONTRACTS: Dir<'static> =
    include_dir!("$CARGO_MANIFEST_DIR/crates/ecp-runtime/contracts/v1");

/// The runtime's `package.json`.
pub const PACKAGE_JSON: &str = include_str!("../../runtimes/typescript/package.json");
/// The runtime's `package-lock.json`.
pub const PACKAGE_LOCK: &str = include_str!("../../runtimes/typescript/package-lock.json");
/// The runtime's `tsconfig.json`.
pub const TSCONFIG: &str = include_str!("../../runtimes/typescript/tsconfig.json");

/// Every file of `dir` with its path under `prefix`.
fn files_of(dir: &'static Dir<'static>, prefix: &str, out: &mut Vec<(String, &'static [u8])>) {
    let mut stack = vec![dir];
    while let Some(dir) = stack.pop() {
        stack.extend(dir.dirs());
        for file in dir.files() {
            let path = file.path().to_string_lossy().replace('\\', "/");
            out.push((format!("{prefix}/{path}"), file.contents()));
        }
    }
}

/// The files copied verbatim: `src/**` (profile, runtime, provider),
/// `test/**`, `contracts/v1/*`, `tsconfig.json`.
pub fn verbatim_files() -> Vec<(String, &'static [u8])> {
    let mut files = Vec::new();
    files_of(&SOURCES, "src", &mut files);
    files_of(&TESTS, "test", &mut files);
    files_of(&CONTRACTS, "contracts/v1", &mut files);
    files.push(("tsconfig.json".to_owned(), TSCONFIG.as_bytes()));
    files.sort();
    files
}

fn json_error(path: &str, error: serde_json::Error) -> ScaffoldError {
    ScaffoldError::Template {
        path: path.to_owned(),
        message: error.to_string(),
    }
}

/// npm's own layout: two spaces, a final newline.
fn npm_json(value: &serde_json::Value) -> Vec<u8> {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text.into_bytes()
}

/// `package.json` and `package-lock.json` for the extension `name`: the
/// runtime's, with the extension's name, version 0.1.0 and description.
pub fn package_files(name: &str, description: &str) -> Result<Vec<GeneratedFile>, ScaffoldError> {
    let mut package: serde_json::Value =
        serde_json::from_str(PACKAGE_JSON).map_err(|e| json_error("package.json", e))?;
    package["name"] = name.into();
    package["version"] = "0.1.0".into();
    package["description"] = description.into();
    let lock = package_lock(name, "0.1.0")?;
    Ok(vec![
        GeneratedFile {
            path: "package.json".into(),
            contents: npm_json(&package),
        },
        GeneratedFile {
            path: "package-lock.json".into(),
            contents: lock,
        },
    ])
}

/// The runtime's `package-lock.json` for the extension `name` at `version`
/// (also what `ecp upgrade` writes when the extension depends on the
/// runtime's packages only).
pub fn package_lock(name: &str, version: &str) -> Result<Vec<u8>, ScaffoldError> {
    let mut lock: serde_json::Value =
        serde_json::from_str(PACKAGE_LOCK).map_err(|e| json_error("package-lock.json", e))?;
    lock["name"] = name.into();
    lock["version"] = version.into();
    if let Some(root) = lock
        .pointer_mut("/packages/")
        .and_then(|r| r.as_object_mut())
    {
        root.insert("name".into(), name.into());
        root.insert("version".into(), version.into());
    }
    Ok(npm_json(&lock))
}

/// Every file the runtime contributes to a `local-ts` project.
pub fn project_files(name: &str, description: &str) -> Result<Vec<GeneratedFile>, ScaffoldError> {
    let mut files: Vec<GeneratedFile> = verbatim_files()
        .into_iter()
        .map(|(path, contents)| GeneratedFile {
            path,
            contents: contents.to_vec(),
        })
        .collect();
    files.extend(package_files(name, description)?);
    Ok(files)
}
