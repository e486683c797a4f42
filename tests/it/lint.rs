//! `ecp lint`: a corpus of manifests and archives that each break one rule,
//! the clean reference shapes, placeholders that must not be flagged, the
//! three output formats (snapshots, SARIF against its schema) and the exit
//! codes of the command.

use std::{
    collections::BTreeSet,
    io::Write,
    path::{Path, PathBuf},
    process::{Command, Output},
};

use ecp::lint::{self, Report, Severity, report};
use ecp::text::secrets;

use crate::npm;

fn corpus(folder: &str) -> Vec<PathBuf> {
    let dir = Path::new("tests/lint").join(folder);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
}

fn rule_ids(report: &Report) -> BTreeSet<String> {
    report
        .findings
        .iter()
        .map(|f| f.rule.id().to_owned())
        .collect()
}

fn ecp_lint(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ecp"))
        .arg("lint")
        .args(args)
        .env_remove("NO_COLOR")
        .output()
        .unwrap()
}

#[test]
fn each_broken_manifest_breaks_exactly_its_rule() {
    let files = corpus("manifests");
    assert!(files.len() >= 50);
    let mut covered = BTreeSet::new();
    for file in files {
        let stem = file.file_stem().unwrap().to_str().unwrap();
        let expected = stem.split("--").next().unwrap();
        let report = lint::lint_path(&file).unwrap();
        assert_eq!(
            rule_ids(&report),
            BTreeSet::from([expected.to_owned()]),
            "{}:\n{}",
            file.display(),
            report::human(&report, false)
        );
        // Every finding points at a place in the file.
        assert!(report.findings.iter().all(|f| f.position.is_some()));
        covered.insert(expected.to_owned());
    }
    // Every manifest rule has at least one case (folder and archive rules
    // are covered below).
    for rule in lint::Rule::ALL {
        let id = rule.id();
        // The other clients' rules: tests/it/channels.rs.
        let elsewhere = id.starts_with("archive-")
            // Qwen's Mem0 provider files: tests/it/mem0_lint.rs.
            || id.starts_with("mem0-")
            || id.starts_with("client-")
            || matches!(id, "registry-server" | "npm-package")
            || id.starts_with("node-")
            || id.starts_with("release-")
            || matches!(
                id,
                "context-file-missing"
                    | "version-drift"
                    | "entry-point-missing"
                    | "bundle-not-self-contained"
                    | "runtime-outdated"
                    | "runtime-security-fix"
            );
        if !elsewhere {
            assert!(covered.contains(id), "no corpus case for {id}");
        }
    }
}

#[test]
fn the_reference_shapes_are_clean() {
    for file in corpus("clean") {
        let report = lint::lint_path(&file).unwrap();
        assert!(
            report.findings.is_empty(),
            "{}:\n{}",
            file.display(),
            report::human(&report, false)
        );
    }
}

#[test]
fn placeholders_and_look_alikes_are_not_secrets() {
    let lines: Vec<String> = std::fs::read_to_string("tests/lint/not-secrets.txt")
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    for line in &lines {
        for key in [
            None,
            Some("token"),
            Some("Authorization"),
            Some("ACME_CONTEXT_TOKEN"),
        ] {
            assert_eq!(secrets::detect(key, line), [], "{line:?} under {key:?}");
        }
    }
    // And inside a manifest, under secret-like keys.
    let mut manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string("tests/lint/clean/local-reference.json").unwrap(),
    )
    .unwrap();
    let server = &mut manifest["mcpServers"]["acme-context"];
    server["args"] = lines.iter().cloned().collect();
    for (index, line) in lines.iter().enumerate() {
        server["env"][format!("ACME_SECRET_TOKEN_{index}")] = line.clone().into();
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("qwen-extension.json");
    std::fs::write(&path, serde_json::to_string_pretty(&manifest).unwrap()).unwrap();
    let report = lint::lint_path(&path).unwrap();
    let secret_findings: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.rule.id().starts_with("secret-"))
        .collect();
    assert!(secret_findings.is_empty(), "{secret_findings:#?}");
}

/// The node-shape folders of `tests/lint/folders`: `<rule>--<case>` breaks
/// exactly that rule (`clean--<case>` none), as a folder and packed as a
/// `.tar.gz` and a `.zip` (where a missing bundle is `archive-entry-point`).
#[test]
fn each_node_shape_folder_breaks_exactly_its_rule() {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("tests/lint/folders")
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    let mut covered = BTreeSet::new();
    for dir in &dirs {
        let name = dir.file_name().unwrap().to_str().unwrap();
        let rule = name.split("--").next().unwrap();
        let expected: BTreeSet<String> = match rule {
            "clean" => BTreeSet::new(),
            rule => BTreeSet::from([rule.to_owned()]),
        };
        let report = lint::lint_path(dir).unwrap();
        assert_eq!(
            rule_ids(&report),
            expected,
            "{name}:\n{}",
            report::human(&report, false)
        );
        // Findings about the server start point at `args` or `env` when
        // the problem is there.
        for finding in &report.findings {
            if matches!(
                rule,
                "node-option" | "node-script" | "entry-point-missing" | "bundle-not-self-contained"
            ) {
                assert!(
                    finding.pointer.contains("/args")
                        || finding.pointer.ends_with("/env/NODE_OPTIONS"),
                    "{name}: {}",
                    finding.pointer
                );
            }
        }
        covered.insert(rule.to_owned());

        let mut items = Vec::new();
        for entry in walk(dir) {
            let relative = entry
                .strip_prefix(dir)
                .unwrap()
                .to_str()
                .unwrap()
                .to_owned();
            if !relative.ends_with(".gitkeep") {
                items.push(file(&relative, &std::fs::read(&entry).unwrap(), 0o644));
            }
        }
        let archived = match rule {
            "entry-point-missing" => BTreeSet::from(["archive-entry-point".to_owned()]),
            // Versions are the source folder's business: an archive holds
            // the manifest, not the build's package.json.
            "version-drift" => BTreeSet::new(),
            // A context file outside the extension is judged by the
            // manifest alone.
            _ => expected.clone(),
        };
        for found in lint_archives(&items, false) {
            assert_eq!(found, archived, "{name} as an archive");
        }
    }
    for rule in [
        "clean",
        "node-option",
        "node-script",
        "entry-point-missing",
        "bundle-not-self-contained",
        "version-drift",
    ] {
        assert!(covered.contains(rule), "no folder case for {rule}");
    }
}

/// Every file under `dir`, sorted.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// Credentials passed in `args`, as `--name=value` and as `--name value`,
/// are found and masked in every output format.
#[test]
fn secrets_in_args_are_found_and_masked_in_every_format() {
    const INLINE: &str = "Zx8KqL2mW9pR4tY7uB3nV6cX1sD5fG0h";
    const NEXT: &str = "3f9a1c7e5b2d8f4a6c0e9b1d3f5a7c9e2b4d6f8a";
    const SHORT: &str = "q7Lm2Vx9Rt4Kp8Wz";
    let mut manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string("tests/lint/clean/local-reference.json").unwrap(),
    )
    .unwrap();
    manifest["mcpServers"]["acme-context"]["args"] = serde_json::json!([
        format!("--token={INLINE}"),
        "--api-key",
        NEXT,
        "-p",
        SHORT,
        "--log-level=debug",
        "--index",
        "engineering-handbook",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("qwen-extension.json");
    std::fs::write(&path, serde_json::to_string_pretty(&manifest).unwrap()).unwrap();
    let report = lint::lint_path(&path).unwrap();
    let pointers: BTreeSet<&str> = report
        .findings
        .iter()
        .filter(|f| f.rule.id().starts_with("secret-"))
        .map(|f| f.pointer.as_str())
        .collect();
    assert_eq!(
        pointers,
        BTreeSet::from([
            "/mcpServers/acme-context/args/0",
            "/mcpServers/acme-context/args/2",
        ]),
        "{}",
        report::human(&report, false)
    );
    for format in ["human", "json", "sarif"] {
        let output = ecp_lint(&[path.to_str().unwrap(), "--format", format]);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(output.status.code(), Some(1), "{format}");
        for secret in [INLINE, NEXT] {
            assert!(
                !stdout.contains(secret),
                "{format} shows {secret}:\n{stdout}"
            );
            assert!(
                !stdout.contains(&secret[8..24]),
                "{format} shows part of {secret}"
            );
        }
        assert!(stdout.contains("secret-"), "{format}: {stdout}");
    }
}

/// A folder with a manifest and the given files.
fn folder(manifest: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("qwen-extension.json"), manifest).unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

fn reference_with(extra: &str) -> String {
    std::fs::read_to_string("tests/lint/clean/local-reference.json")
        .unwrap()
        .replacen(
            "\"version\": \"0.1.0\",",
            &format!("\"version\": \"0.1.0\",{extra}"),
            1,
        )
}

const CARGO_TOML: &str =
    "[package]\nname = \"acme-context\"\nversion = \"0.1.0\"\nedition = \"2024\"\n";

#[test]
fn folder_rules_check_context_files_and_the_crate_version() {
    let manifest = reference_with(r#" "contextFileName": ["QWEN.md", "docs/ACME.md"],"#);
    let dir = folder(
        &manifest,
        &[("QWEN.md", "# Acme"), ("Cargo.toml", CARGO_TOML)],
    );
    let report = lint::lint_path(dir.path()).unwrap();
    assert_eq!(
        rule_ids(&report),
        BTreeSet::from(["context-file-missing".to_owned()])
    );
    assert!(report.findings[0].message.contains("docs/ACME.md"));

    let dir = folder(
        &reference_with(""),
        &[("Cargo.toml", &CARGO_TOML.replace("0.1.0", "0.2.0"))],
    );
    let report = lint::lint_path(dir.path()).unwrap();
    assert_eq!(
        rule_ids(&report),
        BTreeSet::from(["version-drift".to_owned()])
    );

    let dir = folder(
        &reference_with(r#" "contextFileName": "QWEN.md","#),
        &[("QWEN.md", "# Acme"), ("Cargo.toml", CARGO_TOML)],
    );
    assert!(lint::lint_path(dir.path()).unwrap().findings.is_empty());
}

/// One archive entry to write.
#[derive(Clone)]
struct Item {
    path: String,
    data: Vec<u8>,
    mode: u32,
    kind: Kind,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    File,
    Symlink,
}

fn file(path: &str, data: &[u8], mode: u32) -> Item {
    Item {
        path: path.to_owned(),
        data: data.to_vec(),
        mode,
        kind: Kind::File,
    }
}

fn good_tree() -> Vec<Item> {
    let manifest = std::fs::read("tests/lint/clean/local-reference.json").unwrap();
    vec![
        file("qwen-extension.json", &manifest, 0o644),
        file("dist/main", b"\x7fELF fake binary", 0o755),
        file("README.md", b"# acme-context\n", 0o644),
    ]
}

fn write_tar_gz(path: &Path, items: &[Item]) {
    let encoder = flate2::write::GzEncoder::new(
        std::fs::File::create(path).unwrap(),
        flate2::Compression::default(),
    );
    let mut builder = tar::Builder::new(encoder);
    for item in items {
        let mut header = tar::Header::new_gnu();
        header.set_mode(item.mode);
        header.set_mtime(0);
        // Raw names, so that unsafe paths can be written too.
        let name = &mut header.as_old_mut().name;
        name[..item.path.len()].copy_from_slice(item.path.as_bytes());
        match item.kind {
            Kind::File => {
                header.set_entry_type(tar::EntryType::Regular);
                header.set_size(item.data.len() as u64);
                header.set_cksum();
                builder.append(&header, item.data.as_slice()).unwrap();
            }
            Kind::Symlink => {
                header.set_entry_type(tar::EntryType::Symlink);
                header.set_size(0);
                header.set_link_name("/etc/passwd").unwrap();
                header.set_cksum();
                builder.append(&header, std::io::empty()).unwrap();
            }
        }
    }
    builder.into_inner().unwrap().finish().unwrap();
}

fn write_zip(path: &Path, items: &[Item]) {
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    for item in items {
        let options = zip::write::SimpleFileOptions::default().unix_permissions(item.mode);
        match item.kind {
            Kind::File => {
                zip.start_file(item.path.as_str(), options).unwrap();
                zip.write_all(&item.data).unwrap();
            }
            Kind::Symlink => zip
                .add_symlink(item.path.as_str(), "/etc/passwd", options)
                .unwrap(),
        }
    }
    zip.finish().unwrap();
}

/// The rule IDs found in a `.tar.gz` and (unless `tar_only`) a `.zip` of
/// `items`.
fn lint_archives(items: &[Item], tar_only: bool) -> Vec<BTreeSet<String>> {
    let dir = tempfile::tempdir().unwrap();
    let tar = dir.path().join("linux.x64.acme-context.tar.gz");
    write_tar_gz(&tar, items);
    let mut paths = vec![tar];
    if !tar_only {
        let zip = dir.path().join("linux.x64.acme-context.zip");
        write_zip(&zip, items);
        paths.push(zip);
    }
    paths
        .iter()
        .map(|path| rule_ids(&lint::lint_path(path).unwrap()))
        .collect()
}

#[test]
fn archive_rules() {
    let none = BTreeSet::new();
    assert_eq!(
        lint_archives(&good_tree(), false),
        [none.clone(), none.clone()]
    );

    let mut nested: Vec<Item> = good_tree();
    for item in &mut nested {
        item.path = format!("acme-context/{}", item.path);
    }
    assert_eq!(
        lint_archives(&nested, false),
        [none.clone(), none],
        "one top-level folder is fine"
    );

    let cases: Vec<(&str, Vec<Item>)> = vec![
        (
            "archive-entry-point",
            good_tree()
                .into_iter()
                .filter(|i| i.path != "dist/main")
                .collect(),
        ),
        (
            "archive-entry-point",
            good_tree()
                .into_iter()
                .map(|mut i| {
                    if i.path == "dist/main" {
                        i.mode = 0o644;
                    }
                    i
                })
                .collect(),
        ),
        (
            "archive-secret-file",
            [
                good_tree(),
                vec![file(".env", b"ACME_CONTEXT_TOKEN=x", 0o644)],
            ]
            .concat(),
        ),
        (
            "archive-secret-file",
            [good_tree(), vec![file("keys/server.pem", b"-", 0o600)]].concat(),
        ),
        (
            "archive-link",
            [
                good_tree(),
                vec![Item {
                    path: "link".to_owned(),
                    data: Vec::new(),
                    mode: 0o777,
                    kind: Kind::Symlink,
                }],
            ]
            .concat(),
        ),
        (
            "archive-path",
            [good_tree(), vec![file("../evil", b"x", 0o644)]].concat(),
        ),
        (
            "archive-duplicate",
            [good_tree(), vec![file("README.md", b"again", 0o644)]].concat(),
        ),
        (
            "archive-manifest",
            good_tree()
                .into_iter()
                .filter(|i| i.path != "qwen-extension.json")
                .collect(),
        ),
    ];
    for (rule, items) in cases {
        // zip writers refuse `..` and duplicate names; tar proves those.
        let tar_only = matches!(rule, "archive-path" | "archive-duplicate");
        for (format, found) in ["tar.gz", "zip"]
            .iter()
            .zip(lint_archives(&items, tar_only))
        {
            assert_eq!(
                found,
                BTreeSet::from([rule.to_owned()]),
                "{rule} ({format})"
            );
        }
    }
}

#[test]
fn exit_codes_and_could_not_run_diagnostics() {
    let clean = ecp_lint(&["tests/lint/clean/local-reference.json"]);
    assert_eq!(clean.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&clean.stdout).contains("ecp lint: clean"));

    let broken = ecp_lint(&["tests/lint/manifests/trust--server.json"]);
    assert_eq!(broken.status.code(), Some(1));

    let warning = ecp_lint(&["tests/lint/manifests/cwd-missing.json"]);
    assert_eq!(warning.status.code(), Some(0), "warnings alone pass");
    let warning = ecp_lint(&["tests/lint/manifests/cwd-missing.json", "--deny-warnings"]);
    assert_eq!(warning.status.code(), Some(1));

    // Without `timeout`, Qwen's 10-minute default still outlasts the
    // provider budget: a warning, not an error.
    let no_timeout = ecp_lint(&["tests/lint/manifests/timeout-missing.json"]);
    assert_eq!(no_timeout.status.code(), Some(0), "timeout-missing warns");
    let human = String::from_utf8_lossy(&no_timeout.stdout);
    assert!(human.contains("warning[timeout-missing]"), "{human}");
    let no_timeout = ecp_lint(&[
        "tests/lint/manifests/timeout-missing.json",
        "--deny-warnings",
    ]);
    assert_eq!(no_timeout.status.code(), Some(1));
    // A timeout that does not fit the budget stays an error.
    let headroom = ecp_lint(&["tests/lint/manifests/timeout-headroom--equal-to-budget.json"]);
    assert_eq!(headroom.status.code(), Some(1));

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("qwen-extension.json");
    std::fs::write(
        &path,
        "{\n  \"name\": \"acme-context\",\n  \"version\": \"0.1.0\",\n}\n",
    )
    .unwrap();
    let not_json = ecp_lint(&[path.to_str().unwrap()]);
    assert_eq!(not_json.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&not_json.stderr);
    assert!(
        stderr.contains(&format!("{}:4:1", path.display())),
        "{stderr}"
    );
    assert!(stderr.contains("trailing commas"), "{stderr}");

    let missing = ecp_lint(&["does/not/exist"]);
    assert_eq!(missing.status.code(), Some(2));
    let empty = ecp_lint(&[dir.path().join("nothing").to_str().unwrap()]);
    assert_eq!(empty.status.code(), Some(2));

    let explain = Command::new(env!("CARGO_BIN_EXE_ecp"))
        .args(["explain", "trust"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&explain.stdout).contains("honours `trust: true`"));
    let explain = Command::new(env!("CARGO_BIN_EXE_ecp"))
        .args(["explain", "timeout-missing"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&explain.stdout);
    assert!(
        text.contains("10 minutes") && text.contains("mem0") && text.contains("timeout-headroom"),
        "{text}"
    );
    let unknown = Command::new(env!("CARGO_BIN_EXE_ecp"))
        .args(["explain", "nope"])
        .output()
        .unwrap();
    assert_eq!(unknown.status.code(), Some(2));
}

const SNAPSHOT: &str = "tests/lint/snapshot/qwen-extension.json";
const SECRET: &str = "9f8e7d6c5b4a39281706f5e4abcd";

fn snapshot_output(format: &str) -> String {
    let output = ecp_lint(&[SNAPSHOT, "--format", format, "--color", "never"]);
    assert_eq!(output.status.code(), Some(1));
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(!text.contains(SECRET), "{format} output shows the secret");
    text
}

#[test]
fn human_output_snapshot() {
    insta::assert_snapshot!(snapshot_output("human"));
}

#[test]
fn json_output_snapshot() {
    let text = snapshot_output("json");
    let document: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(document["counts"]["error"], 6);
    assert_eq!(document["counts"]["warning"], 3);
    insta::assert_snapshot!(text);
}

#[test]
fn sarif_output_snapshot_validates_against_sarif_2_1_0() {
    let text = snapshot_output("sarif").replace(
        &format!("\"semanticVersion\": \"{}\"", env!("CARGO_PKG_VERSION")),
        "\"semanticVersion\": \"[version]\"",
    );
    insta::assert_snapshot!(text);

    let schema_path = npm::package("@microsoft/jest-sarif", "1.0.0-beta.0")
        .join("lib/schemas/sarif-2.1.0-rtm.5.json");
    let mut schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path).unwrap()).unwrap();
    // The published schema has one malformed regex (a stray `]` in the
    // `language` patterns) that a strict validator refuses to compile;
    // repair that pattern only, as its intent is plain.
    let mut repaired = 0;
    for pointer in [
        "/definitions/run/properties/language/pattern",
        "/definitions/toolComponent/properties/language/pattern",
    ] {
        let language = schema.pointer_mut(pointer).unwrap();
        assert_eq!(language, "^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$");
        *language = "^[a-zA-Z]{2}(-[a-zA-Z]{2})?$".into();
        repaired += 1;
    }
    assert_eq!(repaired, 2);
    let validator = jsonschema::validator_for(&schema).unwrap();
    for format_input in [SNAPSHOT, "tests/lint/clean/remote-reference.json"] {
        let output = ecp_lint(&[format_input, "--format", "sarif"]);
        let sarif: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&sarif)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{format_input}: {errors:#?}");
    }
    // The validator does reject a broken log.
    let output = ecp_lint(&[SNAPSHOT, "--format", "sarif"]);
    let mut broken: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    broken["runs"][0]["results"][0]["level"] = "fatal".into();
    assert!(!validator.is_valid(&broken));
}

#[test]
fn color_follows_the_flag_and_no_color() {
    let always = ecp_lint(&[SNAPSHOT, "--color", "always"]);
    assert!(String::from_utf8_lossy(&always.stdout).contains("\u{1b}["));
    let never = ecp_lint(&[SNAPSHOT, "--color", "never"]);
    assert!(!String::from_utf8_lossy(&never.stdout).contains("\u{1b}["));
    let auto = Command::new(env!("CARGO_BIN_EXE_ecp"))
        .args(["lint", SNAPSHOT])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&auto.stdout).contains("\u{1b}["));
    let _ = Severity::Error;
}

/// A real esbuild bundle of an MCP TypeScript SDK server (the composition
/// of Qwen's own starter: the SDK, zod, and Ajv's code generator, whose
/// strings hold `require("ajv/dist/runtime/...")`) lints clean in the node
/// shape, as a folder and as the archive `ecp package` writes for it; the
/// same server unbundled is `bundle-not-self-contained`.
#[test]
fn a_real_esbuild_bundle_is_self_contained_and_packages_platform_independent() {
    let esbuild = npm::package("esbuild", "0.25.12");
    let sdk = npm::package("@modelcontextprotocol/sdk", "1.32.2");
    let node_modules = sdk.parent().unwrap().parent().unwrap().to_owned();
    let esbuild_bin = esbuild.parent().unwrap().join(".bin/esbuild");

    let temp = tempfile::tempdir().unwrap();
    let source = temp.path().join("src");
    std::fs::create_dir_all(&source).unwrap();
    std::fs::copy("tests/bench/reference-server.mjs", source.join("main.mjs")).unwrap();
    std::fs::copy("xtask/contracts/render.mjs", source.join("render.mjs")).unwrap();
    let dir = temp.path().join("acme-context");
    std::fs::create_dir_all(dir.join("dist")).unwrap();
    let manifest = std::fs::read_to_string("contracts/qwen-v1/manifests/local.qwen-extension.json")
        .unwrap()
        .replace("provider-context-local-example", "acme-context");
    std::fs::write(dir.join("qwen-extension.json"), manifest).unwrap();
    std::fs::write(dir.join("README.md"), "# acme-context\n").unwrap();
    let status = Command::new(&esbuild_bin)
        .arg(source.join("main.mjs"))
        .args([
            "--bundle",
            "--platform=node",
            "--format=esm",
            "--target=node20",
            "--log-level=warning",
        ])
        .arg(format!("--outfile={}", dir.join("dist/main.js").display()))
        .env("NODE_PATH", &node_modules)
        .status()
        .unwrap();
    assert!(status.success());
    let bundle = std::fs::read_to_string(dir.join("dist/main.js")).unwrap();
    assert!(
        bundle.contains("require(\"ajv/dist/runtime/equal\")"),
        "Ajv's code generator is in the bundle"
    );

    let report = lint::lint_path(&dir).unwrap();
    assert!(
        report.findings.is_empty(),
        "{}",
        report::human(&report, false)
    );

    // Packaged: one platform-independent archive holding the bundle.
    let out = temp.path().join("out");
    let package = Command::new(env!("CARGO_BIN_EXE_ecp"))
        .args([
            "package",
            dir.to_str().unwrap(),
            "--json",
            "--out-dir",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        package.status.success(),
        "{}",
        String::from_utf8_lossy(&package.stderr)
    );
    let archive = out.join("linux.acme-context.tar.gz");
    assert!(
        archive.is_file(),
        "{}",
        String::from_utf8_lossy(&package.stdout)
    );
    let report = lint::lint_path(&archive).unwrap();
    assert!(
        report.findings.is_empty(),
        "{}",
        report::human(&report, false)
    );
    let listing = Command::new("tar")
        .arg("-tzf")
        .arg(&archive)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&listing.stdout)
            .lines()
            .any(|l| l == "dist/main.js")
    );
    crate::hostile::assert_same_entries_as_extractors(&archive);

    // Unbundled, the same server needs node_modules.
    std::fs::copy("tests/bench/reference-server.mjs", dir.join("dist/main.js")).unwrap();
    let report = lint::lint_path(&dir).unwrap();
    assert_eq!(
        rule_ids(&report),
        BTreeSet::from(["bundle-not-self-contained".to_owned()])
    );
    assert!(
        report.findings[0]
            .message
            .contains("@modelcontextprotocol/sdk/server/mcp.js")
    );
}

/// Every module this Node.js calls built-in is self-contained to the scan.
#[test]
fn every_node_builtin_counts_as_self_contained() {
    let output = Command::new("node")
        .args([
            "-e",
            "process.stdout.write(JSON.stringify(require('module').builtinModules))",
        ])
        .output()
        .expect("node runs");
    let builtins: Vec<String> = serde_json::from_slice(&output.stdout).unwrap();
    assert!(builtins.len() > 40);
    for builtin in &builtins {
        assert!(lint::bundle::is_self_contained(builtin), "{builtin}");
    }
    assert!(!lint::bundle::is_self_contained("zod"));
    assert!(!lint::bundle::is_self_contained("fsevents"));
}
