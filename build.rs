//! Records the commit ecp is built from (`ECP_SOURCE_COMMIT`), so that the
//! release workflows `ecp new` writes pin ecp's GitHub Action to that
//! commit. A release build sets `ECP_SOURCE_COMMIT` (ecp's own release
//! workflow passes `github.sha`); otherwise it is read from `.git` when the
//! source is a git checkout, or from `.cargo_vcs_info.json` when it is a
//! crate `cargo package` made. Without any, the workflows name the tag. A
//! build from commits not yet pushed pins a commit GitHub does not have.

use std::path::Path;

fn main() {
    println!("cargo:rerun-if-env-changed=ECP_SOURCE_COMMIT");
    let from_env = std::env::var("ECP_SOURCE_COMMIT").ok();
    let commit = from_env
        .filter(|c| is_commit(c))
        .or_else(git_head)
        .or_else(packaged_commit);
    if let Some(commit) = commit {
        println!("cargo:rustc-env=ECP_SOURCE_COMMIT={commit}");
    }
}

fn is_commit(text: &str) -> bool {
    text.len() == 40 && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// HEAD of the checkout, read from `.git` (no `git` needed).
fn git_head() -> Option<String> {
    let git = Path::new(".git");
    if !git.is_dir() {
        return None;
    }
    // Only files that exist: cargo reruns a build script (and rebuilds the
    // crate) on every build when a watched path is missing.
    let watch = |relative: &str| {
        if git.join(relative).exists() {
            println!("cargo:rerun-if-changed=.git/{relative}");
        }
    };
    watch("HEAD");
    let head = std::fs::read_to_string(git.join("HEAD")).ok()?;
    let head = head.trim();
    let Some(reference) = head.strip_prefix("ref: ") else {
        return is_commit(head).then(|| head.to_owned());
    };
    // A loose ref appears on the next commit even when the branch is only
    // in packed-refs now: watch the folder that will hold it.
    watch(reference);
    if let Some((folder, _)) = reference.rsplit_once('/') {
        watch(folder);
    }
    watch("packed-refs");
    if let Ok(loose) = std::fs::read_to_string(git.join(reference)) {
        let loose = loose.trim();
        return is_commit(loose).then(|| loose.to_owned());
    }
    let packed = std::fs::read_to_string(git.join("packed-refs")).ok()?;
    packed.lines().find_map(|line| {
        let (commit, name) = line.split_once(' ')?;
        (name == reference && is_commit(commit)).then(|| commit.to_owned())
    })
}

/// `git.sha1` of the `.cargo_vcs_info.json` that `cargo package` writes.
fn packaged_commit() -> Option<String> {
    let text = std::fs::read_to_string(".cargo_vcs_info.json").ok()?;
    let at = text.find("\"sha1\"")?;
    let rest = &text[at + 6..];
    let start = rest.find('"')? + 1;
    let commit = rest.get(start..start + 40)?;
    is_commit(commit).then(|| commit.to_owned())
}
