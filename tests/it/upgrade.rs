//! `ecp upgrade`: an extension as ecp 0.1.0 generated it (the copied
//! layout, kept in `tests/fixtures/copied-layout-0.1.0`) and one of the
//! vendored layout with an older runtime are upgraded, then build, test,
//! package and pass `ecp check`; a runtime edited locally is refused and
//! `--force` replaces it; `ecp lint` warns before and is clean after; the
//! built `dist/main` reads `ECP_NO_AUTH` as `ecp serve` does.

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use ecp::extension::runtime::read_tree;
use ecp::scaffold::vendor;

use crate::cli::{ecp, ecp_new, files_under, generated_target, relative};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/copied-layout-0.1.0")
}

/// A copy of `from` at `to`, every file.
fn copy_tree(from: &Path, to: &Path) {
    for file in files_under(from) {
        let target = to.join(relative(from, &file));
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(&file, &target).unwrap();
    }
}

fn in_dir(dir: &Path, args: &[&str]) -> std::process::Output {
    let mut all = args.to_vec();
    let path = dir.to_str().unwrap();
    all.push(path);
    ecp(&all)
}

fn text(output: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn lint_ids(dir: &Path) -> Vec<String> {
    let output = ecp(&["lint", dir.to_str().unwrap(), "--format", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap().to_owned())
        .collect()
}

fn cargo_test(dir: &Path) {
    let status = Command::new(env!("CARGO"))
        // Not the doc tests: they compile after cargo releases the shared
        // target folder, where another test may be rebuilding the same crate.
        .args(["test", "--offline", "--quiet", "--lib", "--bins", "--tests"])
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", crate::cli::generated_target())
        .envs(crate::cli::LIGHT_RELEASE)
        .status()
        .unwrap();
    assert!(status.success(), "cargo test failed in {}", dir.display());
}

/// `ecp check .` (which builds the current code with cargo's dev profile,
/// on the dependencies `cargo test` built): the upgraded extension
/// conforms. (Its lint is clean; the release profile is the packaging
/// tests' to build.)
fn conforms(dir: &Path) {
    let checked = Command::new(env!("CARGO_BIN_EXE_ecp"))
        .args(["check", ".", "--format", "json"])
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", crate::cli::generated_target())
        .envs(crate::cli::LIGHT_RELEASE)
        .env("CARGO_NET_OFFLINE", "true")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let report: serde_json::Value =
        serde_json::from_slice(&checked.stdout).unwrap_or_else(|_| panic!("{}", text(&checked)));
    assert_eq!(report["failed"], 0, "{report:#}");
    assert_eq!(report["verdict"], "conforms", "{report:#}");
    assert_eq!(checked.status.code(), Some(0));
}

/// The vendored copy in `dir` is the one this ecp carries, and Cargo.toml
/// records it.
fn assert_carried_runtime(dir: &Path) {
    let vendored = dir.join(vendor::VENDOR_DIR);
    let on_disk = read_tree(&vendored).unwrap();
    let carried: Vec<(String, Vec<u8>)> = vendor::runtime_files()
        .into_iter()
        .map(|(p, c)| (p, c.to_vec()))
        .collect();
    assert_eq!(on_disk, carried);
    let cargo: toml::Table = std::fs::read_to_string(dir.join("Cargo.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let recorded = &cargo["package"]["metadata"]["ecp"]["runtime"];
    assert_eq!(recorded["version"].as_str(), Some(vendor::RUNTIME_VERSION));
    assert_eq!(
        recorded["sha256"].as_str(),
        Some(vendor::runtime_sha256().as_str())
    );
    assert_eq!(
        cargo["dependencies"]["ecp-runtime"]["path"].as_str(),
        Some("vendor/ecp-runtime")
    );
}

#[test]
fn the_copied_layout_of_ecp_0_1_0_is_upgraded_and_conforms() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("acme-context");
    copy_tree(&fixture(), &dir);
    let provider_before = std::fs::read(dir.join("src/provider.rs")).unwrap();
    let tests_before = std::fs::read(dir.join("tests/provider.rs")).unwrap();
    assert_eq!(lint_ids(&dir), ["runtime-security-fix"]);

    let output = in_dir(&dir, &["upgrade"]);
    assert!(output.status.success(), "{}", text(&output));
    let said = text(&output);
    assert!(
        said.contains("ecp-runtime 0.1.0 (copied into src/ by ecp 0.1.0) -> "),
        "{said}"
    );
    assert!(
        said.contains("removed: src/profile/, src/runtime/"),
        "{said}"
    );
    assert!(said.contains("Next: cargo test"), "{said}");
    assert!(!dir.join("src/runtime").exists() && !dir.join("src/profile").exists());
    assert_carried_runtime(&dir);
    // The provider's files are untouched; the glue is the new one.
    assert_eq!(
        std::fs::read(dir.join("src/provider.rs")).unwrap(),
        provider_before
    );
    assert_eq!(
        std::fs::read(dir.join("tests/provider.rs")).unwrap(),
        tests_before
    );
    let main = std::fs::read_to_string(dir.join("src/main.rs")).unwrap();
    assert!(
        main.contains("ecp_runtime::Adapter::new(\"acme-context\""),
        "{main}"
    );
    let cargo = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    for gone in ["hyper", "ring =", "base64", "rmcp"] {
        assert!(
            !cargo.contains(gone),
            "{gone} is still in Cargo.toml:\n{cargo}"
        );
    }
    assert!(lint_ids(&dir).is_empty());

    // A second run has nothing to do.
    let again = in_dir(&dir, &["upgrade"]);
    assert!(again.status.success());
    assert!(text(&again).contains("is current; nothing to do"));

    cargo_test(&dir);
    conforms(&dir);
    no_auth_reads_like_ecp_serve(&generated_target().join("debug/acme-context"));
}

#[test]
fn an_edited_runtime_is_refused_unless_forced() {
    let temp = tempfile::tempdir().unwrap();
    // The copied layout, with a local change to the runtime.
    let copied = temp.path().join("copied");
    copy_tree(&fixture(), &copied);
    let server = copied.join("src/runtime/server.rs");
    let mut source = std::fs::read_to_string(&server).unwrap();
    source.push_str("\n// a local change\n");
    std::fs::write(&server, source).unwrap();
    let refused = in_dir(&copied, &["upgrade"]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    let said = text(&refused);
    assert!(
        said.contains(
            "error: the runtime here was edited since ecp wrote it: src/runtime/server.rs"
        ),
        "{said}"
    );
    assert!(said.contains("--force"), "{said}");
    assert!(server.exists(), "a refused upgrade changed nothing");
    let forced = in_dir(&copied, &["upgrade", "--force", "--json"]);
    assert!(forced.status.success(), "{}", text(&forced));
    let outcome: serde_json::Value = serde_json::from_slice(&forced.stdout).unwrap();
    assert_eq!(
        outcome["forced"],
        serde_json::json!(["src/runtime/server.rs"])
    );
    assert_carried_runtime(&copied);

    // The vendored layout: an edit to vendor/ecp-runtime breaks its checksum.
    let vendored = temp.path().join("vendored");
    assert!(ecp_new(&vendored, &[]).status.success());
    let lib = vendored.join("vendor/ecp-runtime/src/lib.rs");
    let mut source = std::fs::read_to_string(&lib).unwrap();
    source.push_str("\n// a local change\n");
    std::fs::write(&lib, source).unwrap();
    let refused = in_dir(&vendored, &["upgrade"]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(
        text(&refused).contains("vendor/ecp-runtime/src/lib.rs"),
        "{}",
        text(&refused)
    );
    let forced = in_dir(&vendored, &["upgrade", "--force"]);
    assert!(forced.status.success(), "{}", text(&forced));
    assert_carried_runtime(&vendored);

    // An upgrade that stopped after swapping the folder but before it
    // recorded the checksum left the carried runtime under a stale sum:
    // that is not an edit, and the next run finishes without --force.
    let cargo_toml = vendored.join("Cargo.toml");
    let recorded = std::fs::read_to_string(&cargo_toml).unwrap();
    let sum = vendor::runtime_sha256();
    assert!(recorded.contains(&sum));
    std::fs::write(&cargo_toml, recorded.replace(&sum, &"0".repeat(64))).unwrap();
    let resumed = in_dir(&vendored, &["upgrade"]);
    assert!(resumed.status.success(), "{}", text(&resumed));
    assert!(
        std::fs::read_to_string(&cargo_toml).unwrap().contains(&sum),
        "{}",
        text(&resumed)
    );
    assert_carried_runtime(&vendored);
}

/// Makes the fresh extension at `dir` one with an older release, as an
/// earlier ecp would have vendored it: version 0.1.9 in the copy, recorded
/// in `Cargo.toml` with the copy's own checksum.
fn make_older(dir: &Path) {
    let vendored = dir.join(vendor::VENDOR_DIR);
    let manifest = vendored.join("Cargo.toml");
    let old = std::fs::read_to_string(&manifest).unwrap().replacen(
        &format!("version = \"{}\"", vendor::RUNTIME_VERSION),
        "version = \"0.1.9\"",
        1,
    );
    std::fs::write(&manifest, old).unwrap();
    let stale = read_tree(&vendored).unwrap();
    let sum = vendor::tree_sha256(stale.iter().map(|(p, c)| (p.as_str(), c.as_slice())));
    let cargo_path = dir.join("Cargo.toml");
    let cargo = std::fs::read_to_string(&cargo_path)
        .unwrap()
        .replace(&vendor::runtime_sha256(), &sum)
        .replace(
            &format!("version = \"{}\"\nsha256", vendor::RUNTIME_VERSION),
            "version = \"0.1.9\"\nsha256",
        )
        .replace(
            &format!(
                "path = \"vendor/ecp-runtime\", version = \"{}\"",
                vendor::RUNTIME_VERSION
            ),
            "path = \"vendor/ecp-runtime\", version = \"0.1.9\"",
        );
    std::fs::write(&cargo_path, cargo).unwrap();
}

/// Puts the provider file, `src/main.rs` and the tests that ecp wrote with
/// runtime 0.2.6 into the extension `acme-context` at `dir`
/// (tests/fixtures/generated-0.2.6).
fn write_generated_0_2_6(dir: &Path) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/generated-0.2.6");
    for (from, to) in [
        ("src/provider.rs", "src/provider.rs"),
        ("src/main.rs.tera", "src/main.rs"),
        ("tests/provider.rs.tera", "tests/provider.rs"),
        ("tests/contract.rs.tera", "tests/contract.rs"),
    ] {
        let text = std::fs::read_to_string(fixture.join(from))
            .unwrap()
            .replace("{{ crate_name }}", "acme_context")
            .replace("{{ name }}", "acme-context");
        std::fs::write(dir.join(to), text).unwrap();
    }
}

#[test]
fn an_older_vendored_runtime_is_upgraded_and_conforms() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("acme-context");
    assert!(ecp_new(&dir, &[]).status.success());
    let fresh = snapshot(&dir);
    assert!(text(&in_dir(&dir, &["upgrade"])).contains("is current; nothing to do"));
    make_older(&dir);
    assert_eq!(lint_ids(&dir), ["runtime-security-fix"]);
    // As runtime 0.2.6's ecp generated it: the binding copied as the
    // provider file, and main.rs and the tests written against it.
    write_generated_0_2_6(&dir);

    let output = in_dir(&dir, &["upgrade"]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        text(&output).contains(&format!("ecp-runtime 0.1.9 -> {}", vendor::RUNTIME_VERSION)),
        "{}",
        text(&output)
    );
    assert!(
        text(&output).contains("src/provider.rs was an unedited copy of the old V1 binding"),
        "{}",
        text(&output)
    );
    // The four files are today's, byte for byte.
    let now = snapshot(&dir);
    for path in [
        "src/provider.rs",
        "src/main.rs",
        "tests/provider.rs",
        "tests/contract.rs",
    ] {
        let get = |files: &[(String, Vec<u8>)]| {
            files
                .iter()
                .find(|(p, _)| p == path)
                .map(|(_, c)| c.clone())
        };
        assert_eq!(get(&now), get(&fresh), "{path}");
    }
    assert_carried_runtime(&dir);
    assert!(lint_ids(&dir).is_empty());
    // No staging folders are left behind.
    let leftovers: Vec<String> = std::fs::read_dir(dir.join("vendor"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(leftovers, ["ecp-runtime"]);
    cargo_test(&dir);
    conforms(&dir);
}

/// The two tests runtime 0.3.x's ecp wrote (tests/fixtures/generated-0.3.1)
/// into the extension `name` at `dir`.
fn write_tests_of_0_3(dir: &Path, name: &str) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/generated-0.3.1");
    for test in ["contract", "provider"] {
        let text = std::fs::read_to_string(fixture.join(format!("tests/{test}.rs.tera")))
            .unwrap()
            .replace("{{ crate_name }}", &name.replace('-', "_"))
            .replace("{{ name }}", name);
        std::fs::write(dir.join(format!("tests/{test}.rs")), text).unwrap();
    }
}

#[test]
fn tests_of_runtime_0_3_move_to_the_api_and_edited_ones_still_build() {
    // A name of its own: this test builds the crate with an edited test.
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("kept-context");
    let made = ecp(&[
        "new",
        "kept-context",
        "--yes",
        "--dir",
        dir.to_str().unwrap(),
    ]);
    assert!(made.status.success(), "{}", text(&made));
    let fresh = snapshot(&dir);
    make_older(&dir);
    write_tests_of_0_3(&dir, "kept-context");
    let provider_test = dir.join("tests/provider.rs");
    let mine = std::fs::read_to_string(&provider_test).unwrap() + "\n// mine\n";
    std::fs::write(&provider_test, &mine).unwrap();

    let output = in_dir(&dir, &["upgrade"]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        text(&output)
            .contains("kept-context: tests/contract.rs as runtime 0.3's ecp wrote it: now today's"),
        "{}",
        text(&output)
    );
    let now = snapshot(&dir);
    let get = |files: &[(String, Vec<u8>)], path: &str| {
        files
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, c)| c.clone())
    };
    assert_eq!(
        get(&now, "tests/contract.rs"),
        get(&fresh, "tests/contract.rs")
    );
    assert_eq!(
        get(&now, "tests/provider.rs"),
        Some(mine.clone().into_bytes())
    );
    assert!(
        String::from_utf8(get(&fresh, "tests/contract.rs").unwrap())
            .unwrap()
            .contains("contracts::render_vectors()")
    );
    // The edited test still names ecp_runtime::binding and the contract
    // texts, which 0.4.0 keeps hidden for it: it builds and passes.
    assert!(mine.contains("ecp_runtime::binding::parse_json_like_javascript"));
    cargo_test(&dir);
}

#[test]
fn upgrade_refuses_what_ecp_did_not_generate() {
    let temp = tempfile::tempdir().unwrap();
    // A remote extension is answered (exit 0) by
    // `a_remote_extension_is_told_plainly_it_has_no_runtime`; a
    // folder with neither a crate nor a manifest is refused.
    let remote = temp.path().join("remote");
    std::fs::create_dir(&remote).unwrap();
    let output = in_dir(&remote, &["upgrade"]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(
        text(&output).contains("has no Cargo.toml"),
        "{}",
        text(&output)
    );
    let output = in_dir(&temp.path().join("nope"), &["upgrade"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output).contains("does not exist"),
        "{}",
        text(&output)
    );
    std::fs::write(remote.join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
    let output = in_dir(&remote, &["upgrade"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output).contains("holds no runtime that ecp generated"),
        "{}",
        text(&output)
    );
}

/// The built `dist/main` takes the `ECP_NO_AUTH` words `ecp serve` takes
/// (`tests/it/first_hour.rs` asks `ecp serve` the same).
fn no_auth_reads_like_ecp_serve(main: &Path) {
    crate::cli::assert_no_auth_words(
        main.to_str().unwrap(),
        &["--listen", "127.0.0.1:0"],
        &[
            ("ACME_CONTEXT_BASE_URL", "http://127.0.0.1:9"),
            ("ACME_CONTEXT_TOKEN", "t"),
        ],
    );
}

/// Everything under `root` (folders, files with their bytes, links with
/// their targets, FIFOs), by `lstat`: links are recorded, never followed.
fn snapshot(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut entries = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let kind = std::fs::symlink_metadata(&path).unwrap().file_type();
            let what = if kind.is_symlink() {
                format!("link {}", std::fs::read_link(&path).unwrap().display()).into_bytes()
            } else if kind.is_dir() {
                stack.push(path.clone());
                b"folder".to_vec()
            } else if kind.is_file() {
                std::fs::read(&path).unwrap()
            } else {
                b"special".to_vec()
            };
            entries.push((relative(root, &path), what));
        }
    }
    entries.sort();
    entries
}

/// `ecp upgrade ARGS DIR` under the hostile tests' memory cap and timeout.
fn upgrade_capped(dir: &Path, args: &[&str]) -> std::process::Output {
    let mut all = vec!["upgrade"];
    all.extend_from_slice(args);
    all.push(dir.to_str().unwrap());
    super::hostile::ecp_capped(&all, &[], None)
}

fn mkfifo(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

/// Finding 3 of issue 28: a linked `vendor/` or `contracts/` (or a link
/// anywhere on the way to what upgrade reads or writes) had the upgrade
/// rename, remove and rewrite the folder at the link's target. Each is
/// refused with and without --force, by path, and nothing is changed:
/// not the extension, not the link's target.
#[test]
fn upgrade_refuses_links_on_its_way_and_changes_nothing() {
    let temp = tempfile::tempdir().unwrap();
    let outside = temp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let fresh = |name: &str| {
        let dir = temp.path().join(name);
        assert!(ecp_new(&dir, &[]).status.success());
        dir
    };
    let link = |target: &Path, at: &Path| std::os::unix::fs::symlink(target, at).unwrap();
    let mut cases: Vec<(PathBuf, &str)> = Vec::new();

    // vendor/ linked to a folder elsewhere (the real runtime moved there).
    let dir = fresh("linked-vendor");
    std::fs::rename(dir.join("vendor"), outside.join("vendor")).unwrap();
    link(&outside.join("vendor"), &dir.join("vendor"));
    cases.push((dir, "linked-vendor/vendor is a symlink"));
    // vendor/ecp-runtime itself linked.
    let dir = fresh("linked-runtime");
    std::fs::rename(
        dir.join("vendor/ecp-runtime"),
        outside.join("runtime-elsewhere"),
    )
    .unwrap();
    link(
        &outside.join("runtime-elsewhere"),
        &dir.join("vendor/ecp-runtime"),
    );
    cases.push((dir, "linked-runtime/vendor/ecp-runtime is a symlink"));
    // contracts/ linked to a folder with a contracts tree of its own.
    let dir = fresh("linked-contracts");
    std::fs::create_dir_all(outside.join("contracts/v1")).unwrap();
    std::fs::write(outside.join("contracts/v1/mine.json"), "{}").unwrap();
    link(&outside.join("contracts"), &dir.join("contracts"));
    cases.push((dir, "linked-contracts/contracts is a symlink"));
    // A file inside the runtime linked to a file elsewhere.
    let dir = fresh("linked-file");
    let lib = dir.join("vendor/ecp-runtime/src/lib.rs");
    std::fs::rename(&lib, outside.join("lib.rs")).unwrap();
    link(&outside.join("lib.rs"), &lib);
    cases.push((
        dir,
        "linked-file/vendor/ecp-runtime/src/lib.rs is a symlink",
    ));
    // Cargo.toml linked to one elsewhere (read, then rewritten).
    let dir = fresh("linked-cargo");
    std::fs::rename(dir.join("Cargo.toml"), outside.join("Cargo.toml")).unwrap();
    link(&outside.join("Cargo.toml"), &dir.join("Cargo.toml"));
    cases.push((dir, "linked-cargo/Cargo.toml is a symlink"));
    // A leftover of an interrupted swap linked to a complete runtime
    // elsewhere, with vendor/ecp-runtime missing: it would be renamed into
    // place (and the old copy deleted).
    let dir = fresh("linked-leftover");
    copy_tree(
        &dir.join("vendor/ecp-runtime"),
        &outside.join("complete-runtime"),
    );
    std::fs::rename(
        dir.join("vendor/ecp-runtime"),
        dir.join("vendor/.ecp-runtime-old-Qw3rTy"),
    )
    .unwrap();
    link(
        &outside.join("complete-runtime"),
        &dir.join("vendor/.ecp-runtime-new-As4dFg"),
    );
    cases.push((
        dir,
        "linked-leftover/vendor/.ecp-runtime-new-As4dFg is a symlink",
    ));
    // The copied layout (0.1.0): src/runtime linked, and tests/ linked
    // (its sources are read to keep the dependencies they use).
    let dir = temp.path().join("copied-linked-runtime");
    copy_tree(&fixture(), &dir);
    std::fs::rename(dir.join("src/runtime"), outside.join("copied-runtime")).unwrap();
    link(&outside.join("copied-runtime"), &dir.join("src/runtime"));
    cases.push((dir, "copied-linked-runtime/src/runtime is a symlink"));
    let dir = temp.path().join("copied-linked-tests");
    copy_tree(&fixture(), &dir);
    std::fs::rename(dir.join("tests"), outside.join("copied-tests")).unwrap();
    link(&outside.join("copied-tests"), &dir.join("tests"));
    cases.push((dir, "copied-linked-tests/tests is a symlink"));

    let outside_before = snapshot(&outside);
    for (dir, says) in &cases {
        let before = snapshot(dir);
        for args in [&[][..], &["--force"][..], &["--force", "--json"][..]] {
            let output = upgrade_capped(dir, args);
            let said = text(&output);
            assert_eq!(output.status.code(), Some(2), "{args:?} {said}");
            assert!(said.contains("error: "), "{args:?} {said}");
            assert!(said.contains(says), "{args:?} {said}");
            assert!(said.contains("= help:"), "{said}");
            assert!(output.stdout.is_empty(), "{args:?} {said}");
        }
        assert_eq!(snapshot(dir), before, "{} changed", dir.display());
    }
    assert_eq!(
        snapshot(&outside),
        outside_before,
        "a link's target changed"
    );
}

/// Finding 5 of issue 28: a FIFO under `vendor/ecp-runtime/` or
/// `contracts/v1/` hung `ecp upgrade`. Every FIFO (or socket) on its way is
/// refused at once, by name (escaped), with and without --force, and the
/// folder is left as it was.
#[test]
fn upgrade_refuses_fifos_at_once_by_name() {
    let temp = tempfile::tempdir().unwrap();
    let fifo_name = "pipe\u{1b}]0;owned\u{7}.rs";
    let cases: Vec<(&str, String, String)> = vec![
        (
            "fifo-runtime",
            "vendor/ecp-runtime/src/pipe.rs".into(),
            "vendor/ecp-runtime/src/pipe.rs is a FIFO".into(),
        ),
        (
            "fifo-contracts",
            "contracts/v1/pipe.json".into(),
            "contracts/v1/pipe.json is a FIFO".into(),
        ),
        (
            "fifo-cargo",
            "Cargo.toml".into(),
            "fifo-cargo/Cargo.toml is a FIFO".into(),
        ),
        (
            "fifo-escaped",
            format!("vendor/ecp-runtime/src/{fifo_name}"),
            "src/pipe\\u{1b}]0;owned\\u{7}.rs is a FIFO".into(),
        ),
        (
            "fifo-leftover",
            "vendor/.ecp-runtime-new-Zx9cVb/src/lib.rs".into(),
            "vendor/.ecp-runtime-new-Zx9cVb/src/lib.rs is a FIFO".into(),
        ),
        (
            "copied-fifo-tests",
            "tests/pipe.rs".into(),
            "copied-fifo-tests/tests/pipe.rs is a FIFO".into(),
        ),
    ];
    for (name, fifo, says) in &cases {
        let dir = temp.path().join(name);
        if name.starts_with("copied") {
            copy_tree(&fixture(), &dir);
        } else {
            assert!(ecp_new(&dir, &[]).status.success());
        }
        if fifo == "Cargo.toml" {
            std::fs::remove_file(dir.join(fifo)).unwrap();
        }
        mkfifo(&dir.join(fifo));
        let before = snapshot(&dir);
        for args in [&[][..], &["--force"][..]] {
            let started = std::time::Instant::now();
            let output = upgrade_capped(&dir, args);
            let said = text(&output);
            assert!(
                started.elapsed() < std::time::Duration::from_secs(10),
                "{name}: {:?}",
                started.elapsed()
            );
            assert_eq!(output.status.code(), Some(2), "{name} {args:?} {said}");
            assert!(said.contains(says.as_str()), "{name} {args:?} {said}");
            assert!(!said.contains('\u{1b}'), "{name}: a raw ESC: {said:?}");
        }
        assert_eq!(snapshot(&dir), before, "{name} changed");
    }
}

/// Finding 6 of issue 28: `ecp upgrade` printed `Cargo.toml` values with
/// terminal escapes intact. The package name, the recorded runtime version
/// and the names of dropped dependencies are shown escaped and bounded, in
/// the summary and in --json.
#[test]
fn upgrade_shows_the_extensions_values_escaped_and_bounded() {
    let temp = tempfile::tempdir().unwrap();
    let long = "x".repeat(5000);
    // TOML escapes: the file is plain ASCII, the values are not.
    let hostile = format!("acme\\u001b]0;owned\\u0007\\u202e{long}");
    let hostile_version = format!("0.1\\u001b[2J\\u202e{long}");
    let hostile_dependency = "evil\\u001b]0;owned\\u0007\\u202e";
    let check = |said: &str, args: &[&str]| {
        assert!(
            !said.contains('\u{1b}') && !said.contains('\u{202e}') && !said.contains('\u{7}'),
            "{args:?}: {said:?}"
        );
        assert!(said.len() < 20_000, "{args:?}: {} bytes", said.len());
    };

    // A vendored extension: its name and its recorded runtime version.
    for args in [&[][..], &["--json"][..]] {
        let dir = temp.path().join(format!("vendored{}", args.len()));
        assert!(ecp_new(&dir, &[]).status.success());
        let cargo_toml = dir.join("Cargo.toml");
        let before = std::fs::read_to_string(&cargo_toml).unwrap();
        let edited = before
            .replacen(
                "name = \"acme-context\"",
                &format!("name = \"{hostile}\""),
                1,
            )
            .replacen(
                &format!("version = \"{}\"\nsha256", vendor::RUNTIME_VERSION),
                &format!("version = \"{hostile_version}\"\nsha256"),
                1,
            );
        assert_eq!(edited.matches("\\u001b").count(), 2, "{edited}");
        std::fs::write(&cargo_toml, edited).unwrap();
        let output = upgrade_capped(&dir, args);
        let said = text(&output);
        assert!(output.status.success(), "{said}");
        check(&said, args);
        let (name, from) = if args.is_empty() {
            (said.clone(), said.clone())
        } else {
            let outcome: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
            (
                outcome["name"].as_str().unwrap().to_owned(),
                outcome["from"].as_str().unwrap().to_owned(),
            )
        };
        assert!(
            name.contains("acme\\u{1b}]0;owned\\u{7}\\u{202e}xxx"),
            "{said}"
        );
        assert!(name.contains("more characters)"), "{said}");
        assert!(from.contains("0.1\\u{1b}[2J\\u{202e}xxx"), "{said}");
        assert!(from.contains("more characters)"), "{said}");
    }

    // The copied layout: a dependency no source uses is dropped and named.
    for args in [&[][..], &["--json"][..]] {
        let dir = temp.path().join(format!("copied{}", args.len()));
        copy_tree(&fixture(), &dir);
        let cargo_toml = dir.join("Cargo.toml");
        let before = std::fs::read_to_string(&cargo_toml).unwrap();
        let edited = before.replacen(
            "[dependencies]\n",
            &format!("[dependencies]\n\"{hostile_dependency}{long}\" = \"1\"\n"),
            1,
        );
        assert_ne!(edited, before);
        std::fs::write(&cargo_toml, edited).unwrap();
        let output = upgrade_capped(&dir, args);
        let said = text(&output);
        assert!(output.status.success(), "{said}");
        check(&said, args);
        let dropped = if args.is_empty() {
            said.clone()
        } else {
            let outcome: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
            let names: Vec<&str> = outcome["dropped"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n.as_str().unwrap())
                .collect();
            names.join(", ")
        };
        assert!(
            dropped.contains("evil\\u{1b}]0;owned\\u{7}\\u{202e}xxx"),
            "{said}"
        );
        assert!(dropped.contains("more characters)"), "{said}");
    }
}

/// The state `replace_vendor` (src/upgrade.rs) leaves when stopped at each
/// point of the swap, in an extension whose runtime is older (0.1.9): it
/// writes the carried runtime into `.ecp-runtime-new-*` (a 0700 tempdir,
/// then 0755), makes an empty `.ecp-runtime-old-*`, renames
/// `vendor/ecp-runtime` onto it, renames the new copy to
/// `vendor/ecp-runtime`, removes the old copy; `Cargo.toml` is written
/// after all that, so it still records 0.1.9 in every state.
#[derive(Debug, Clone, Copy)]
enum Stopped {
    /// While writing the new copy (some files, mode 0700).
    WritingNew,
    /// After making the empty placeholder for the old copy.
    PlaceholderMade,
    /// Between the two renames: no vendor/ecp-runtime.
    BetweenRenames,
    /// Between the renames, the new copy damaged since (not complete).
    BetweenRenamesNewDamaged,
    /// After the second rename, before the old copy was removed.
    AfterSwap,
    /// While removing the old copy (part of it left).
    RemovingOld,
}

fn stop_at(dir: &Path, stopped: Stopped) {
    use std::os::unix::fs::PermissionsExt;
    let runtime = dir.join("vendor/ecp-runtime");
    let new = dir.join("vendor/.ecp-runtime-new-Kq2WzX");
    let old = dir.join("vendor/.ecp-runtime-old-Pm7TbY");
    // The carried runtime, as the new copy is written.
    let write_new = |files: usize| {
        for (path, contents) in vendor::runtime_files().into_iter().take(files) {
            let file = new.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, contents).unwrap();
        }
    };
    let all = vendor::runtime_files().len();
    match stopped {
        Stopped::WritingNew => {
            write_new(all / 2);
            std::fs::set_permissions(&new, std::fs::Permissions::from_mode(0o700)).unwrap();
        }
        Stopped::PlaceholderMade => {
            write_new(all);
            std::fs::create_dir(&old).unwrap();
        }
        Stopped::BetweenRenames | Stopped::BetweenRenamesNewDamaged => {
            write_new(all);
            std::fs::create_dir(&old).unwrap();
            std::fs::rename(&runtime, &old).unwrap();
            if matches!(stopped, Stopped::BetweenRenamesNewDamaged) {
                std::fs::remove_file(new.join("src/lib.rs")).unwrap();
            }
        }
        Stopped::AfterSwap | Stopped::RemovingOld => {
            write_new(all);
            std::fs::create_dir(&old).unwrap();
            std::fs::rename(&runtime, &old).unwrap();
            std::fs::rename(&new, &runtime).unwrap();
            if matches!(stopped, Stopped::RemovingOld) {
                std::fs::remove_dir_all(old.join("src")).unwrap();
            }
        }
    }
}

/// Finding 12 of issue 28: an upgrade interrupted between its two renames
/// failed with a bare "No such file or directory" and left its folders
/// behind. The next run finishes the swap (a complete new copy), undoes it
/// (the old copy back), or removes what was left, says which, and then
/// upgrades; a second run is current.
#[test]
fn an_interrupted_swap_is_finished_or_undone_and_said() {
    let temp = tempfile::tempdir().unwrap();
    let new = "vendor/.ecp-runtime-new-Kq2WzX";
    let old = "vendor/.ecp-runtime-old-Pm7TbY";
    let finished = format!(
        "finished an interrupted upgrade: vendor/ecp-runtime swapped in from {new} (a complete copy of runtime {})",
        vendor::RUNTIME_VERSION
    );
    let undone = format!(
        "undid an interrupted upgrade: vendor/ecp-runtime put back from {old} (no complete new copy was left)"
    );
    let removed = |leftover: &str| format!("removed {leftover}, left by an interrupted upgrade");
    let upgraded = format!("ecp-runtime 0.1.9 -> {}", vendor::RUNTIME_VERSION);
    let cases: Vec<(Stopped, Vec<String>)> = vec![
        (Stopped::WritingNew, vec![removed(new)]),
        (Stopped::PlaceholderMade, vec![removed(new), removed(old)]),
        (
            Stopped::BetweenRenames,
            vec![finished.clone(), removed(old)],
        ),
        (
            Stopped::BetweenRenamesNewDamaged,
            vec![undone.clone(), removed(new)],
        ),
        (Stopped::AfterSwap, vec![removed(old)]),
        (Stopped::RemovingOld, vec![removed(old)]),
    ];
    for (stopped, says) in cases {
        let dir = temp.path().join(format!("{stopped:?}"));
        assert!(ecp_new(&dir, &[]).status.success());
        make_older(&dir);
        stop_at(&dir, stopped);
        for args in [&["--json"][..], &[][..]] {
            let output = upgrade_capped(&dir, args);
            let said = text(&output);
            assert_eq!(output.status.code(), Some(0), "{stopped:?} {said}");
            assert!(!said.contains("No such file"), "{stopped:?} {said}");
            if args.is_empty() {
                // The repair was done by the --json run; this one is current.
                assert!(
                    said.contains("is current; nothing to do"),
                    "{stopped:?} {said}"
                );
                assert!(!said.contains("interrupted"), "{stopped:?} {said}");
                continue;
            }
            let outcome: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
            assert_eq!(outcome["recovered"], serde_json::json!(says), "{stopped:?}");
            assert_eq!(outcome["from"], "0.1.9", "{stopped:?}");
            assert_eq!(outcome["changed"], true, "{stopped:?}");
        }
        assert_carried_runtime(&dir);
        let left: Vec<String> = std::fs::read_dir(dir.join("vendor"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, ["ecp-runtime"], "{stopped:?}");
    }

    // The human summary says the same before it upgrades.
    let dir = temp.path().join("human");
    assert!(ecp_new(&dir, &[]).status.success());
    make_older(&dir);
    stop_at(&dir, Stopped::BetweenRenames);
    let output = upgrade_capped(&dir, &[]);
    let said = text(&output);
    assert!(output.status.success(), "{said}");
    assert!(
        said.contains(&format!("acme-context: {finished}")),
        "{said}"
    );
    assert!(
        said.contains(&format!("acme-context: {}", removed(old))),
        "{said}"
    );
    assert!(said.contains(&upgraded), "{said}");

    // The copied layout (0.1.0) has no old copy: stopped before its one
    // rename, the complete new copy is swapped in and the conversion goes on.
    let dir = temp.path().join("copied");
    copy_tree(&fixture(), &dir);
    for (path, contents) in vendor::runtime_files() {
        let file = dir.join(new).join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, contents).unwrap();
    }
    let output = upgrade_capped(&dir, &[]);
    let said = text(&output);
    assert!(output.status.success(), "{said}");
    assert!(said.contains(&format!("swapped in from {new}")), "{said}");
    assert!(
        said.contains("(copied into src/ by ecp 0.1.0) -> "),
        "{said}"
    );
    assert_carried_runtime(&dir);
    assert!(text(&upgrade_capped(&dir, &[])).contains("is current"));

    // Nothing left to put back (the runtime deleted, or a swap that left
    // neither copy): a refusal that names it, never a bare "No such file";
    // --force writes the carried runtime.
    let dir = temp.path().join("gone");
    assert!(ecp_new(&dir, &[]).status.success());
    make_older(&dir);
    std::fs::remove_dir_all(dir.join("vendor/ecp-runtime")).unwrap();
    let output = upgrade_capped(&dir, &[]);
    let said = text(&output);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(
        said.contains(
            "vendor/ecp-runtime (missing, and no interrupted upgrade left a copy to put back)"
        ),
        "{said}"
    );
    assert!(!said.contains("No such file"), "{said}");
    let output = upgrade_capped(&dir, &["--force"]);
    assert!(output.status.success(), "{}", text(&output));
    assert_carried_runtime(&dir);
    assert!(text(&upgrade_capped(&dir, &[])).contains("is current"));

    // A refusal after a repair still says the repair (on stderr).
    let dir = temp.path().join("repaired-then-refused");
    assert!(ecp_new(&dir, &[]).status.success());
    make_older(&dir);
    stop_at(&dir, Stopped::BetweenRenamesNewDamaged);
    let old_lib = dir.join(old).join("src/lib.rs");
    let mut source = std::fs::read_to_string(&old_lib).unwrap();
    source.push_str("\n// a local change\n");
    std::fs::write(&old_lib, source).unwrap();
    let output = upgrade_capped(&dir, &[]);
    let said = text(&output);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(said.contains(&format!("note: {undone}")), "{said}");
    assert!(
        said.contains("error: the runtime here was edited since ecp wrote it: ")
            && said.contains("vendor/ecp-runtime/src/lib.rs"),
        "{said}"
    );
}

#[test]
fn an_edited_provider_of_an_earlier_generation_is_left_alone_and_told() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("acme-context");
    assert!(ecp_new(&dir, &[]).status.success());
    write_generated_0_2_6(&dir);
    // An unedited provider file, but a test the owner changed: nothing of
    // the four is replaced (the old binding still builds), and it says why.
    let tests = dir.join("tests/provider.rs");
    let edited = std::fs::read_to_string(&tests).unwrap() + "\n// mine\n";
    std::fs::write(&tests, &edited).unwrap();
    let before = snapshot(&dir);
    let output = in_dir(&dir, &["upgrade"]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        text(&output).contains("left as it is because tests/provider.rs was edited"),
        "{}",
        text(&output)
    );
    // The old binding's paths need the runtime's `reqwest` feature (0.6.0):
    // it is turned on in Cargo.toml, and nothing else changes.
    assert!(
        text(&output).contains("ecp-runtime with its reqwest feature"),
        "{}",
        text(&output)
    );
    let but_cargo = |files: Vec<(String, Vec<u8>)>| -> Vec<(String, Vec<u8>)> {
        files
            .into_iter()
            .filter(|(path, _)| !path.ends_with("Cargo.toml"))
            .collect()
    };
    assert_eq!(but_cargo(snapshot(&dir)), but_cargo(before));
    let cargo = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    assert!(cargo.contains("features = [\"reqwest\"]"), "{cargo}");
    let again = in_dir(&dir, &["upgrade"]);
    assert!(
        text(&again).contains("is current; nothing to do"),
        "{}",
        text(&again)
    );

    // An edited provider file: left alone, with what the runtime now offers.
    write_generated_0_2_6(&dir);
    let provider = dir.join("src/provider.rs");
    let mine = std::fs::read_to_string(&provider)
        .unwrap()
        .replace("v1/context/search", "v2/search");
    std::fs::write(&provider, &mine).unwrap();
    let before = snapshot(&dir);
    let output = in_dir(&dir, &["upgrade", "--json"]);
    assert!(output.status.success(), "{}", text(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(
        report["provider"]
            .as_str()
            .is_some_and(|p| p.starts_with("an edited copy of the old V1 binding")
                && p.contains("ecp_runtime::http::Upstream")),
        "{report:#}"
    );
    // Left alone: the runtime's `reqwest` feature is on already (the
    // upgrade above turned it on for the same old paths).
    assert_eq!(report["changed"], false, "{report:#}");
    assert_eq!(snapshot(&dir), before);
    // "It still builds": the old binding's paths (ecp_runtime::proxy,
    // search_response, reqwest, profile::ecmascript) resolve, hidden, and
    // rustc names each deprecated one with what replaces it (cargo replays
    // the warnings of a build it already has).
    let built = Command::new(env!("CARGO"))
        .args(["build", "--offline", "--lib"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", crate::cli::generated_target())
        .envs(crate::cli::LIGHT_RELEASE)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&built.stderr);
    assert!(
        built.status.success(),
        "the edited old binding does not build: {said}"
    );
    for deprecated in [
        "ProxyEnv`: not needed: `ecp_runtime::http::Upstream` takes proxies from the environment itself",
        "ProviderItem`: use `ecp_runtime::ProviderItem`",
        "read_items`: a path of the old V1 binding, gone in 1.0",
        "javascript_compatible`: a path of the old V1 binding, gone in 1.0",
        "install_tls_provider`: not needed: the runtime's HTTP client sets up TLS itself",
    ] {
        assert!(
            said.contains(deprecated),
            "no warning for {deprecated}: {said}"
        );
    }
}

#[test]
fn a_remote_extension_is_told_plainly_it_has_no_runtime() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("acme-remote");
    crate::cli::ecp_new_remote(&dir, "acme-remote");
    let before = snapshot(&dir);
    let output = in_dir(&dir, &["upgrade"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(
        text(&output).contains("is a remote extension: it carries no runtime to upgrade"),
        "{}",
        text(&output)
    );
    assert!(
        !text(&output).contains("run it in the folder"),
        "{}",
        text(&output)
    );
    assert_eq!(snapshot(&dir), before);
}

/// What runtime 0.2.6's `ecp new --template local-ts` wrote
/// (`tests/fixtures/generated-ts-0.2.6.md` says how it was made).
fn typescript_fixture(to: &Path) {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/generated-ts-0.2.6");
    copy_tree(&from, to);
}

/// `npm ARGS` in `dir` ([`crate::local_ts::run`]); it must succeed.
fn npm(dir: &Path, args: &[&str]) -> String {
    let output = crate::local_ts::run(dir, "npm", args);
    assert!(output.status.success(), "npm {args:?}: {}", text(&output));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn a_typescript_extension_of_runtime_0_2_6_becomes_what_ecp_new_writes_today() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("acme-context");
    typescript_fixture(&dir);
    let output = in_dir(&dir, &["upgrade"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let said = text(&output);
    assert!(said.contains("0.2.6 -> "), "{said}");
    assert!(said.contains("src/runtime/http.ts"), "{said}");
    assert!(
        said.contains("an unedited earlier src/provider.ts became the small mapping"),
        "{said}"
    );
    assert!(said.contains("scripts.test"), "{said}");
    // Byte for byte what a fresh `ecp new` writes.
    let fresh = temp.path().join("fresh");
    assert!(
        ecp(&[
            "new",
            "acme-context",
            "--template",
            "local-ts",
            "--yes",
            "--dir",
            fresh.to_str().unwrap()
        ])
        .status
        .success()
    );
    // The manifest, README, workflow and .gitignore are the provider's
    // after `ecp new` (the fixture has today's at the time it was made).
    let owned = |tree: Vec<(String, Vec<u8>)>| -> Vec<(String, Vec<u8>)> {
        let mut tree: Vec<_> = tree
            .into_iter()
            .filter(|(path, _)| {
                !["README.md", "qwen-extension.json", ".gitignore"].contains(&path.as_str())
                    && !path.starts_with(".github")
            })
            .collect();
        tree.sort();
        tree
    };
    let (upgraded, fresh) = (owned(snapshot(&dir)), owned(snapshot(&fresh)));
    let paths =
        |tree: &[(String, Vec<u8>)]| tree.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>();
    assert_eq!(paths(&upgraded), paths(&fresh));
    for ((path, bytes), (_, expected)) in upgraded.iter().zip(&fresh) {
        assert!(bytes == expected, "{path} differs from what ecp new writes");
    }
    // Again: current.
    let output = in_dir(&dir, &["upgrade"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(
        text(&output).contains("is current; nothing to do"),
        "{}",
        text(&output)
    );
    // And its own tests pass with the new runtime.
    npm(&dir, &["ci", "--no-audit", "--no-fund"]);
    let tested = npm(&dir, &["test"]);
    assert!(tested.contains("# fail 0"), "{tested}");
}

#[test]
fn a_typescript_extension_keeps_what_its_provider_wrote() {
    let temp = tempfile::tempdir().unwrap();

    // An edited runtime file stops the upgrade, names the file, and
    // changes nothing; --force replaces it.
    let dir = temp.path().join("edited-runtime");
    typescript_fixture(&dir);
    let index = dir.join("src/runtime/index.ts");
    let mut text_of = std::fs::read_to_string(&index).unwrap();
    text_of.push_str("// a local patch\n");
    std::fs::write(&index, &text_of).unwrap();
    let before = snapshot(&dir);
    let output = in_dir(&dir, &["upgrade"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        text(&output).contains("src/runtime/index.ts"),
        "{}",
        text(&output)
    );
    assert!(
        text(&output).contains("src/provider.ts"),
        "{}",
        text(&output)
    );
    assert_eq!(snapshot(&dir), before);
    let output = in_dir(&dir, &["upgrade", "--force"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(
        text(&output).contains("replaced local edits (--force): src/runtime/index.ts"),
        "{}",
        text(&output)
    );
    assert!(
        !std::fs::read_to_string(&index)
            .unwrap()
            .contains("a local patch")
    );

    // An edited mapping: the runtime is upgraded, the provider's three
    // files stay, and a sentence says what the runtime now offers. A
    // dependency of the provider's own keeps the lockfile as it is.
    let dir = temp.path().join("edited-provider");
    typescript_fixture(&dir);
    let provider = dir.join("src/provider.ts");
    let mapping = std::fs::read_to_string(&provider).unwrap() + "// our mapping\n";
    std::fs::write(&provider, &mapping).unwrap();
    let package = dir.join("package.json");
    let with_own = std::fs::read_to_string(&package).unwrap().replace(
        "\"dependencies\": {",
        "\"dependencies\": {\n    \"left-pad\": \"1.3.0\",",
    );
    std::fs::write(&package, with_own).unwrap();
    let lock = std::fs::read(dir.join("package-lock.json")).unwrap();
    let main = std::fs::read(dir.join("src/main.ts")).unwrap();
    let output = in_dir(&dir, &["upgrade"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let said = text(&output);
    assert!(said.contains("src/provider.ts was edited"), "{said}");
    assert!(said.contains("run `npm install`"), "{said}");
    assert!(said.contains("src/runtime/http.ts"), "{said}");
    assert_eq!(std::fs::read_to_string(&provider).unwrap(), mapping);
    assert_eq!(std::fs::read(dir.join("src/main.ts")).unwrap(), main);
    assert_eq!(std::fs::read(dir.join("package-lock.json")).unwrap(), lock);
    let package: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&package).unwrap()).unwrap();
    assert_eq!(package["dependencies"]["left-pad"], "1.3.0");

    // A linked runtime folder is refused before anything is read.
    let dir = temp.path().join("linked");
    typescript_fixture(&dir);
    let outside = temp.path().join("outside");
    std::fs::rename(dir.join("src/runtime"), &outside).unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("src/runtime")).unwrap();
    let output = in_dir(&dir, &["upgrade"]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(text(&output).contains("a symlink"), "{}", text(&output));
}
