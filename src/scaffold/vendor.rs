//! The runtime crate as this ecp carries it (`crates/ecp-runtime`, embedded
//! at compile time): `ecp new` writes it verbatim under
//! `vendor/ecp-runtime/` of every local extension with its version and a
//! checksum of the tree in `Cargo.toml`, and `ecp upgrade` replaces an older
//! copy with it.

use include_dir::{Dir, include_dir};
use sha2::{Digest, Sha256};

static RUNTIME: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/crates/ecp-runtime");

/// Where the vendored crate lives in an extension.
pub const VENDOR_DIR: &str = "vendor/ecp-runtime";

/// The version of the runtime this ecp carries.
pub const RUNTIME_VERSION: &str = crate::runtime::releases::VERSION;

/// Every file of the carried runtime: (path relative to the crate, with `/`
/// separators; contents), sorted by path.
pub fn runtime_files() -> Vec<(String, &'static [u8])> {
    let mut files = Vec::new();
    let mut stack = vec![&RUNTIME];
    while let Some(dir) = stack.pop() {
        stack.extend(dir.dirs());
        for file in dir.files() {
            let path = file.path().to_string_lossy().replace('\\', "/");
            files.push((path, file.contents()));
        }
    }
    files.sort();
    files
}

/// The checksum of a tree: SHA-256 over each file's path, length and bytes,
/// in path order. Any added, removed, renamed or edited file changes it.
pub fn tree_sha256<'a>(files: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> String {
    let mut hasher = Sha256::new();
    for (path, contents) in files {
        hasher.update(path.as_bytes());
        hasher.update([0]);
        hasher.update(contents.len().to_string().as_bytes());
        hasher.update([0]);
        hasher.update(contents);
    }
    crate::digest::hex(&hasher.finalize())
}

/// The checksum of the carried runtime.
pub fn runtime_sha256() -> String {
    tree_sha256(
        runtime_files()
            .iter()
            .map(|(path, contents)| (path.as_str(), *contents)),
    )
}
