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
        .env("CARGO_TARGET_DIR", generated_target())
        .status()
        .unwrap();
    assert!(status.success(), "cargo test failed in {}", dir.display());
}

/// `ecp package` then `ecp check .`: the upgraded extension conforms.
fn packages_and_conforms(dir: &Path) {
    let packaged = Command::new(env!("CARGO_BIN_EXE_ecp"))
        .args(["package", "--json"])
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", generated_target())
        .env("CARGO_NET_OFFLINE", "true")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(packaged.status.success(), "{}", text(&packaged));
    let checked = Command::new(env!("CARGO_BIN_EXE_ecp"))
        .args(["check", ".", "--format", "json"])
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", generated_target())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let report: serde_json::Value =
        serde_json::from_slice(&checked.stdout).unwrap_or_else(|_| panic!("{}", text(&checked)));
    assert_eq!(report["failed"], 0, "{report:#}");
    assert_eq!(checked.status.code(), Some(0));
}

/// The vendored copy in `dir` is the one this ecp carries, and Cargo.toml
/// records it.
fn assert_carried_runtime(dir: &Path) {
    let vendored = dir.join(vendor::VENDOR_DIR);
    let on_disk = vendor::read_tree(&vendored).unwrap();
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
    assert_eq!(lint_ids(&dir), ["runtime-outdated"]);

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
    packages_and_conforms(&dir);
    no_auth_reads_like_ecp_serve(&generated_target().join("release/acme-context"));
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

#[test]
fn an_older_vendored_runtime_is_upgraded_and_conforms() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("acme-context");
    assert!(ecp_new(&dir, &[]).status.success());
    assert!(text(&in_dir(&dir, &["upgrade"])).contains("is current; nothing to do"));
    // Make it an older release, as an earlier ecp would have vendored it:
    // an older version in the copy, recorded with its own checksum.
    let vendored = dir.join(vendor::VENDOR_DIR);
    let manifest = vendored.join("Cargo.toml");
    let old = std::fs::read_to_string(&manifest).unwrap().replacen(
        &format!("version = \"{}\"", vendor::RUNTIME_VERSION),
        "version = \"0.1.9\"",
        1,
    );
    std::fs::write(&manifest, old).unwrap();
    let stale = vendor::read_tree(&vendored).unwrap();
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
    assert_eq!(lint_ids(&dir), ["runtime-outdated"]);

    let output = in_dir(&dir, &["upgrade"]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        text(&output).contains(&format!("ecp-runtime 0.1.9 -> {}", vendor::RUNTIME_VERSION)),
        "{}",
        text(&output)
    );
    assert_carried_runtime(&dir);
    assert!(lint_ids(&dir).is_empty());
    // No staging folders are left behind.
    let leftovers: Vec<String> = std::fs::read_dir(dir.join("vendor"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(leftovers, ["ecp-runtime"]);
    cargo_test(&dir);
    packages_and_conforms(&dir);
}

#[test]
fn upgrade_refuses_what_ecp_did_not_generate() {
    let temp = tempfile::tempdir().unwrap();
    let remote = temp.path().join("remote");
    assert!(ecp_new(&remote, &["--template", "remote"]).status.success());
    let output = in_dir(&remote, &["upgrade"]);
    assert_eq!(output.status.code(), Some(2));
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

/// Every file under `root` with its bytes, for before/after comparisons.
fn snapshot(root: &Path) -> Vec<(String, Vec<u8>)> {
    files_under(root)
        .into_iter()
        .map(|f| {
            let bytes = std::fs::read(&f).unwrap();
            (relative(root, &f).to_owned(), bytes)
        })
        .collect()
}

/// `ecp upgrade ARGS DIR` under the hostile tests' memory cap and timeout.
fn upgrade_capped(dir: &Path, args: &[&str]) -> std::process::Output {
    let mut all = vec!["upgrade"];
    all.extend_from_slice(args);
    all.push(dir.to_str().unwrap());
    super::hostile::ecp_capped(&all, &[], None)
}

#[test]
fn upgrade_refuses_links_and_special_files_on_its_way_and_changes_nothing() {
    let temp = tempfile::tempdir().unwrap();
    let fresh = |name: &str| {
        let dir = temp.path().join(name);
        assert!(ecp_new(&dir, &[]).status.success());
        dir
    };
    // vendor/ as a link to a folder elsewhere; contracts/ as a link; a
    // linked file inside the runtime.
    let elsewhere = temp.path().join("elsewhere");
    let linked_vendor = fresh("linked-vendor");
    std::fs::rename(linked_vendor.join("vendor"), &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, linked_vendor.join("vendor")).unwrap();
    let linked_contracts = fresh("linked-contracts");
    let contracts_elsewhere = temp.path().join("contracts-elsewhere");
    std::fs::create_dir_all(contracts_elsewhere.join("v1")).unwrap();
    std::fs::write(contracts_elsewhere.join("v1/mine.json"), "{}").unwrap();
    std::os::unix::fs::symlink(&contracts_elsewhere, linked_contracts.join("contracts")).unwrap();
    let linked_file = fresh("linked-file");
    let lib = linked_file.join("vendor/ecp-runtime/src/lib.rs");
    std::fs::rename(&lib, temp.path().join("lib.rs")).unwrap();
    std::os::unix::fs::symlink(temp.path().join("lib.rs"), &lib).unwrap();
    let before = (snapshot(&elsewhere), snapshot(&contracts_elsewhere));
    for (dir, names) in [
        (&linked_vendor, "linked-vendor/vendor is a symlink"),
        (&linked_contracts, "linked-contracts/contracts is a symlink"),
        (&linked_file, "src/lib.rs is a symlink"),
    ] {
        for args in [&[][..], &["--force"][..]] {
            let output = upgrade_capped(dir, args);
            let said = text(&output);
            assert_eq!(output.status.code(), Some(2), "{args:?} {said}");
            assert!(said.contains(names), "{args:?} {said}");
            assert!(said.contains("= help:"), "{said}");
        }
    }
    assert_eq!(
        (snapshot(&elsewhere), snapshot(&contracts_elsewhere)),
        before
    );

    // A FIFO in the runtime or in contracts/v1: refused at once, by name.
    for (name, fifo) in [
        ("fifo-runtime", "vendor/ecp-runtime/src/pipe"),
        ("fifo-contracts", "contracts/v1/pipe.json"),
    ] {
        let dir = fresh(name);
        std::fs::create_dir_all(dir.join(fifo).parent().unwrap()).unwrap();
        let status = Command::new("mkfifo").arg(dir.join(fifo)).status().unwrap();
        assert!(status.success());
        let output = upgrade_capped(&dir, &["--force"]);
        let said = text(&output);
        assert_eq!(output.status.code(), Some(2), "{said}");
        assert!(said.contains(&format!("{fifo} is a FIFO")), "{said}");
    }
}

#[test]
fn upgrade_shows_the_extensions_values_escaped_and_bounded() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("escapes");
    assert!(ecp_new(&dir, &[]).status.success());
    let cargo_toml = dir.join("Cargo.toml");
    let text_before = std::fs::read_to_string(&cargo_toml).unwrap();
    let long = "x".repeat(5000);
    let hostile = format!("acme\\u001b]0;owned\\u0007\\u202e{long}");
    let edited = text_before.replacen(
        "name = \"acme-context\"",
        &format!("name = \"{hostile}\""),
        1,
    );
    assert_ne!(edited, text_before, "no package name to replace");
    std::fs::write(&cargo_toml, edited).unwrap();
    for args in [&[][..], &["--json"][..]] {
        let output = upgrade_capped(&dir, args);
        let said = text(&output);
        assert!(output.status.success(), "{said}");
        assert!(
            !said.contains('\u{1b}') && !said.contains('\u{202e}'),
            "{args:?}"
        );
        let name = if args.is_empty() {
            said.clone()
        } else {
            let outcome: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
            outcome["name"].as_str().unwrap().to_owned()
        };
        assert!(
            name.contains("acme\\u{1b}]0;owned\\u{7}\\u{202e}xxx"),
            "{said}"
        );
        assert!(name.contains("more characters)"), "{said}");
        assert!(said.len() < 2000, "{args:?}: {} bytes", said.len());
    }
}

#[test]
fn an_interrupted_swap_is_finished_or_undone_and_said() {
    let temp = tempfile::tempdir().unwrap();
    let copy_runtime = |dir: &Path, to: &str| {
        copy_tree(
            &dir.join("vendor/ecp-runtime"),
            &dir.join("vendor").join(to),
        );
    };
    // Stopped between the two renames, the new copy complete: finished.
    let dir = temp.path().join("complete");
    assert!(ecp_new(&dir, &[]).status.success());
    copy_runtime(&dir, ".ecp-runtime-new-a1");
    std::fs::rename(
        dir.join("vendor/ecp-runtime"),
        dir.join("vendor/.ecp-runtime-old-b2"),
    )
    .unwrap();
    let output = in_dir(&dir, &["upgrade"]);
    let said = text(&output);
    assert!(output.status.success(), "{said}");
    assert!(
        said.contains("finished an interrupted upgrade: vendor/ecp-runtime swapped in from vendor/.ecp-runtime-new-a1"),
        "{said}"
    );
    assert!(
        said.contains("removed vendor/.ecp-runtime-old-b2"),
        "{said}"
    );
    assert_carried_runtime(&dir);
    let again = in_dir(&dir, &["upgrade"]);
    assert!(text(&again).contains("is current"), "{}", text(&again));
    let vendor_entries: Vec<_> = std::fs::read_dir(dir.join("vendor")).unwrap().collect();
    assert_eq!(vendor_entries.len(), 1);

    // Stopped between the renames with a new copy cut short: the old copy
    // goes back.
    let dir = temp.path().join("partial");
    assert!(ecp_new(&dir, &[]).status.success());
    copy_runtime(&dir, ".ecp-runtime-new-c3");
    std::fs::remove_file(dir.join("vendor/.ecp-runtime-new-c3/src/lib.rs")).unwrap();
    std::fs::rename(
        dir.join("vendor/ecp-runtime"),
        dir.join("vendor/.ecp-runtime-old-d4"),
    )
    .unwrap();
    let output = in_dir(&dir, &["upgrade"]);
    let said = text(&output);
    assert!(output.status.success(), "{said}");
    assert!(said.contains("undid an interrupted upgrade"), "{said}");
    assert!(
        said.contains("removed vendor/.ecp-runtime-new-c3"),
        "{said}"
    );
    assert_carried_runtime(&dir);

    // Stopped while writing the new copy (the runtime still in place), or
    // after the swap (the old copy left behind): the leftovers go.
    let dir = temp.path().join("leftovers");
    assert!(ecp_new(&dir, &[]).status.success());
    copy_runtime(&dir, ".ecp-runtime-new-e5");
    std::fs::remove_file(dir.join("vendor/.ecp-runtime-new-e5/Cargo.toml")).unwrap();
    copy_runtime(&dir, ".ecp-runtime-old-f6");
    let output = in_dir(&dir, &["upgrade"]);
    let said = text(&output);
    assert!(output.status.success(), "{said}");
    assert!(
        said.contains("removed vendor/.ecp-runtime-new-e5"),
        "{said}"
    );
    assert!(
        said.contains("removed vendor/.ecp-runtime-old-f6"),
        "{said}"
    );
    assert!(said.contains("is current"), "{said}");
    assert_eq!(std::fs::read_dir(dir.join("vendor")).unwrap().count(), 1);
}
