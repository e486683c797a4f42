//! `ecp doctor` against the real Qwen Code 0.24.4: for each finding, a
//! configuration that produces it, and what Qwen itself then runs (`qwen
//! mcp list`, and the environment the server it really starts records)
//! agreeing with doctor's answer.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{Qwen, root, show};

/// The names doctor may see; everything else of the test's own
/// environment that could change the answer is removed.
const CLEARED: &[&str] = &[
    "ACME_PROBE_URL",
    "ACME_PROBE_TOKEN",
    "QWEN_HOME",
    "QWEN_CODE_FORCE_ENCRYPTED_FILE_STORAGE",
    "QWEN_CODE_SYSTEM_SETTINGS_PATH",
    "QWEN_CODE_SYSTEM_DEFAULTS_PATH",
    "QWEN_CODE_TRUSTED_FOLDERS_PATH",
];

/// `ecp doctor NAME --format json` as Qwen's user in `workspace`.
pub fn doctor(qwen: &Qwen, workspace: &Path, env: &[(&str, &str)], name: &str) -> (i32, Value) {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_ecp"));
    command
        .args(["doctor", name, "--format", "json", "--workspace"])
        .arg(workspace)
        .env("HOME", qwen.home.path());
    for name in CLEARED {
        command.env_remove(name);
    }
    let output = command.envs(env.iter().copied()).output().unwrap();
    let report =
        serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {}", show(&output)));
    (output.status.code().unwrap(), report)
}

/// The finding IDs of the one extension in a doctor report.
pub fn finding_ids(report: &Value) -> Vec<String> {
    report["extensions"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_owned())
        .collect()
}

/// `qwen mcp list` in `workspace`: the line of `server`, without colour.
fn listed(qwen: &Qwen, workspace: &Path, env: &[(&str, &str)], server: &str) -> String {
    let mut command = qwen.command(&["mcp", "list"]);
    for name in CLEARED {
        command.env_remove(name);
    }
    let output = command
        .current_dir(workspace)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    ecp::qwen::server_state(&text, server)
        .map(|(_, line)| line)
        .unwrap_or_else(|| panic!("{server} not listed: {}", show(&output)))
}

/// The environment the probe recorded when Qwen started it (and forget it).
fn recorded(seen: &Path) -> Value {
    let text = std::fs::read_to_string(seen).expect("Qwen started the probe");
    std::fs::remove_file(seen).unwrap();
    serde_json::from_str::<Value>(&text).unwrap()["env"].clone()
}

/// An extension folder whose server is the recording probe.
fn probe_extension(parent: &Path, name: &str, server: &str, seen: &Path) -> PathBuf {
    let folder = parent.join(name);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::copy(
        root().join("tests/e2e/settings_probe.py"),
        folder.join("probe.py"),
    )
    .unwrap();
    let manifest = json!({
        "name": name,
        "version": "0.1.0",
        "mcpServers": {server: {
            "command": "${extensionPath}${/}probe.py",
            "args": [seen],
            "env": {"ACME_PROBE_URL": "${ACME_PROBE_URL}", "ACME_PROBE_TOKEN": "${ACME_PROBE_TOKEN}"},
            "timeout": 8000,
            "includeTools": ["context_search"]
        }}
    });
    std::fs::write(folder.join("qwen-extension.json"), manifest.to_string()).unwrap();
    folder
}

#[test]
fn doctor_says_what_qwen_really_runs() {
    let temp = tempfile::tempdir().unwrap();
    let seen = temp.path().join("seen.json");
    let source = probe_extension(temp.path(), "acme-probe", "acme-probe", &seen);
    let workspace = temp.path().join("project");
    std::fs::create_dir_all(&workspace).unwrap();
    let qwen = Qwen::new();
    qwen.install(&source);
    let url = ("ACME_PROBE_URL", "https://search.acme.example");
    let both = [url, ("ACME_PROBE_TOKEN", "from-the-launcher")];

    // Everything from the environment Qwen starts with: no finding, and
    // the server Qwen starts gets both values.
    let (code, report) = doctor(&qwen, &workspace, &both, "acme-probe");
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(
        report["extensions"][0]["server"]["defined_by"],
        "the extension"
    );
    assert!(listed(&qwen, &workspace, &both, "acme-probe").ends_with("Connected"));
    assert_eq!(recorded(&seen)["ACME_PROBE_TOKEN"], "from-the-launcher");

    // The credential only in the workspace's .env: doctor names the file,
    // and Qwen hands the repository's value to the server.
    std::fs::write(
        workspace.join(".env"),
        "ACME_PROBE_TOKEN=from-the-repository\n",
    )
    .unwrap();
    let (code, report) = doctor(&qwen, &workspace, &[url], "acme-probe");
    assert_eq!(code, 1);
    assert_eq!(
        finding_ids(&report),
        ["variable-from-repository"],
        "{report:#}"
    );
    let variable = &report["extensions"][0]["variables"][1];
    assert_eq!(variable["name"], "ACME_PROBE_TOKEN");
    assert_eq!(variable["from"], "project-env");
    listed(&qwen, &workspace, &[url], "acme-probe");
    assert_eq!(recorded(&seen)["ACME_PROBE_TOKEN"], "from-the-repository");
    // The environment wins over the file, in doctor and in Qwen.
    let (code, _) = doctor(&qwen, &workspace, &both, "acme-probe");
    assert_eq!(code, 0);
    listed(&qwen, &workspace, &both, "acme-probe");
    assert_eq!(recorded(&seen)["ACME_PROBE_TOKEN"], "from-the-launcher");
    std::fs::remove_file(workspace.join(".env")).unwrap();

    // Set nowhere: the server gets the literal placeholder.
    let (_, report) = doctor(&qwen, &workspace, &[url], "acme-probe");
    assert_eq!(finding_ids(&report), ["variable-unset"], "{report:#}");
    listed(&qwen, &workspace, &[url], "acme-probe");
    assert_eq!(recorded(&seen)["ACME_PROBE_TOKEN"], "${ACME_PROBE_TOKEN}");

    // A same-named server in user settings replaces the extension's whole
    // (no includeTools, no timeout there): doctor says so, and Qwen starts
    // that one.
    let other_seen = temp.path().join("other-seen.json");
    let probe = root().join("tests/e2e/settings_probe.py");
    let settings = json!({"mcpServers": {"acme-probe": {
        "command": "python3", "args": [probe, other_seen]
    }}});
    let user_settings = qwen.home.path().join(".qwen/settings.json");
    std::fs::write(&user_settings, settings.to_string()).unwrap();
    let (_, report) = doctor(&qwen, &workspace, &both, "acme-probe");
    assert_eq!(
        finding_ids(&report),
        ["shadowed", "tools-exposed", "timeout"],
        "{report:#}"
    );
    assert_eq!(
        report["extensions"][0]["server"]["defined_by"],
        "user settings"
    );
    let line = listed(&qwen, &workspace, &both, "acme-probe");
    assert!(line.contains("python3"), "{line}");
    assert!(
        other_seen.is_file() && !seen.exists(),
        "Qwen ran the settings' server"
    );
    std::fs::remove_file(&user_settings).unwrap();

    // Another extension that comes first in Qwen's load order and declares
    // the same server name wins it.
    let first_seen = temp.path().join("first-seen.json");
    let first = probe_extension(temp.path(), "aaa-probe", "acme-probe", &first_seen);
    qwen.install(&first);
    let (_, report) = doctor(&qwen, &workspace, &both, "acme-probe");
    assert_eq!(finding_ids(&report), ["shadowed"], "{report:#}");
    assert_eq!(
        report["extensions"][0]["server"]["defined_by"],
        "extension:aaa-probe"
    );
    listed(&qwen, &workspace, &both, "acme-probe");
    assert!(
        first_seen.is_file() && !seen.exists(),
        "Qwen ran aaa-probe's server"
    );
    let removed = qwen.run(&["extensions", "uninstall", "aaa-probe"], &[]);
    assert!(removed.status.success(), "{}", show(&removed));

    // The entry point gone from the installed folder: doctor says it is
    // missing, and Qwen cannot connect.
    let installed = qwen
        .home
        .path()
        .join(".qwen/extensions/acme-probe/probe.py");
    std::fs::remove_file(&installed).unwrap();
    let (_, report) = doctor(&qwen, &workspace, &both, "acme-probe");
    assert_eq!(finding_ids(&report), ["entry-point"], "{report:#}");
    assert!(
        report["extensions"][0]["entry_point"]["state"]
            .as_str()
            .unwrap()
            .starts_with("missing")
    );
    assert!(listed(&qwen, &workspace, &both, "acme-probe").ends_with("Disconnected"));
}
