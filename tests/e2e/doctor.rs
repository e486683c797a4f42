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

    // Encrypted token storage forced before any token was stored: Qwen
    // 0.24.4 starts no MCP server at all, stdio ones included.
    let encrypted = [
        both[0],
        both[1],
        ("QWEN_CODE_FORCE_ENCRYPTED_FILE_STORAGE", "true"),
    ];
    let (_, report) = doctor(&qwen, &workspace, &encrypted, "acme-probe");
    let machine: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert_eq!(machine, ["encrypted-token-file-missing"], "{report:#}");
    assert!(listed(&qwen, &workspace, &encrypted, "acme-probe").ends_with("Disconnected"));
    assert!(!seen.exists(), "Qwen did not start the probe");

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

/// `ecp managed` for the packaged extension, installed as its README says
/// (GNU tar unpacks the archive, the settings and the secret in place):
/// the launcher starts the real Qwen with the server connected, the
/// endpoint and credential from the deployment even though the workspace's
/// `.env` and `.mcp.json` name others, and `ecp doctor` run through the
/// same launcher reports no findings. The POSIX launcher is shellcheck
/// clean.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_managed_deployment_pins_the_server_and_doctor_finds_nothing() {
    let (_, archive) = super::packaged();
    let upstream = ecp::check::upstream::Upstream::start(|_| {
        ecp::check::upstream::Reply::json(super::UPSTREAM_ITEMS)
    })
    .await;
    let elsewhere = ecp::check::upstream::Upstream::start(|_| {
        ecp::check::upstream::Reply::json(r#"{"items":[]}"#)
    })
    .await;
    let model = ecp::check::upstream::Upstream::start(super::fake_model).await;
    let temp = tempfile::tempdir().unwrap();
    let install_dir = temp.path().join("opt/acme-context");
    let settings_path = temp.path().join("etc/qwen-code/settings.json");
    let secret = temp.path().join("etc/qwen-code/acme.secret");
    let qwen_program = qwen_program(&temp.path().join("bin"));
    let deploy = |out: &Path, program: &Path| {
        let output = super::ecp(&[
            "managed",
            "--extension",
            archive.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--install-dir",
            install_dir.to_str().unwrap(),
            "--settings-path",
            settings_path.to_str().unwrap(),
            "--qwen",
            program.to_str().unwrap(),
            "--env",
            &format!("ACME_CONTEXT_BASE_URL={}", upstream.base_url),
            "--credential",
            &format!("ACME_CONTEXT_TOKEN={}", secret.display()),
        ]);
        assert!(output.status.success(), "{}", show(&output));
        out.join("qwen-acme-context")
    };
    let out = temp.path().join("deploy");
    let launcher = deploy(&out, &qwen_program);
    let shellcheck = std::process::Command::new("shellcheck")
        .arg(&launcher)
        .output()
        .expect("shellcheck (Debian's shellcheck package) is on PATH");
    assert!(shellcheck.status.success(), "{}", show(&shellcheck));

    // The administrator's steps, as the deployment's README gives them.
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    assert!(readme.contains("tar -xzf"), "{readme}");
    std::fs::create_dir_all(&install_dir).unwrap();
    let unpacked = std::process::Command::new("tar")
        .arg("-xzf")
        .arg(out.join("linux.x64.acme-context.tar.gz"))
        .arg("-C")
        .arg(&install_dir)
        .status()
        .unwrap();
    assert!(unpacked.success());
    std::fs::create_dir_all(settings_path.parent().unwrap()).unwrap();
    std::fs::copy(out.join("system-settings.json"), &settings_path).unwrap();
    std::fs::write(&secret, "from-the-administrator\n").unwrap();
    chmod(&secret, 0o600);

    // A workspace whose files name another endpoint and credential.
    let workspace = temp.path().join("project");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(
        workspace.join(".env"),
        format!(
            "ACME_CONTEXT_BASE_URL={}\nACME_CONTEXT_TOKEN=from-the-repository\n",
            elsewhere.base_url
        ),
    )
    .unwrap();
    std::fs::write(
        workspace.join(".mcp.json"),
        json!({"mcpServers": {"acme-context": {"command": "python3", "args": ["-c", "pass"]}}})
            .to_string(),
    )
    .unwrap();

    let qwen = Qwen::new();
    let run = |program: &Path, args: &[&str], env: &[(&str, &str)]| {
        let mut command = std::process::Command::new(program);
        command
            .args(args)
            .current_dir(&workspace)
            .env("HOME", qwen.home.path())
            .env_remove("OPENAI_API_KEY")
            .env_remove("DASHSCOPE_API_KEY")
            .stdin(std::process::Stdio::null());
        for name in CLEARED
            .iter()
            .chain(&["ACME_CONTEXT_BASE_URL", "ACME_CONTEXT_TOKEN"])
        {
            command.env_remove(name);
        }
        command.envs(env.iter().copied()).output().unwrap()
    };
    let listed = tokio::task::block_in_place(|| run(&launcher, &["mcp", "list"], &[]));
    let text = String::from_utf8_lossy(&listed.stdout).into_owned();
    let (connected, line) = ecp::qwen::server_state(&text, "acme-context")
        .unwrap_or_else(|| panic!("{}", show(&listed)));
    assert!(
        connected && line.contains(install_dir.to_str().unwrap()),
        "{line}"
    );

    let model_url = format!("{}/v1", model.base_url);
    let model_env = [
        ("OPENAI_API_KEY", "dummy"),
        ("OPENAI_BASE_URL", model_url.as_str()),
        ("OPENAI_MODEL", "fake-model"),
    ];
    let headless = tokio::task::block_in_place(|| {
        run(
            &launcher,
            &[
                "search the handbook",
                "-o",
                "json",
                "--allowed-tools=mcp__acme-context__context_search",
            ],
            &model_env,
        )
    });
    assert!(headless.status.success(), "{}", show(&headless));
    let (_, result) = super::tool_result(&headless);
    let expected = super::expected_envelope();
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .lines()
            .any(|l| l == expected),
        "{}",
        show(&headless)
    );
    let requests = upstream.requests();
    assert_eq!(requests.len(), 1, "the deployment's endpoint answered");
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer from-the-administrator")
    );
    assert!(
        elsewhere.requests().is_empty(),
        "the workspace's endpoint was never called"
    );

    // The launcher refuses what would drop the pinned server, and a
    // secret file others may write.
    let refused = run(&launcher, &["--mcp-config", "{}"], &[]);
    assert_eq!(refused.status.code(), Some(2), "{}", show(&refused));
    chmod(&secret, 0o666);
    let refused = run(&launcher, &["mcp", "list"], &[]);
    assert_eq!(refused.status.code(), Some(1), "{}", show(&refused));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("writable by others"));
    chmod(&secret, 0o600);

    // ecp doctor through the same launcher: the settings' server, clean.
    let doctor_launcher = deploy(
        &temp.path().join("deploy-doctor"),
        Path::new(env!("CARGO_BIN_EXE_ecp")),
    );
    let output = run(&doctor_launcher, &["doctor", "--format", "json"], &[]);
    let report: Value =
        serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {}", show(&output)));
    assert_eq!(output.status.code(), Some(0), "{report:#}");
    let server = &report["extensions"][0]["server"];
    assert_eq!(server["defined_by"], "system settings", "{report:#}");
    assert_eq!(report["token_storage"]["encrypted"], true, "{report:#}");
    // Without the launcher, doctor sees the repository's credential.
    let output = run(
        Path::new(env!("CARGO_BIN_EXE_ecp")),
        &["doctor", "--format", "json"],
        &[(
            "QWEN_CODE_SYSTEM_SETTINGS_PATH",
            settings_path.to_str().unwrap(),
        )],
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        finding_ids(&report),
        ["variable-from-repository"],
        "{report:#}"
    );
}

/// `FOLDER/qwen`: the installed Qwen Code as a program of its own, for
/// what starts `qwen` by name or path (a launcher, `--qwen`).
fn qwen_program(folder: &Path) -> PathBuf {
    let program = folder.join("qwen");
    std::fs::create_dir_all(folder).unwrap();
    let script = format!(
        "#!/bin/sh\nexec node '{}' \"$@\"\n",
        super::qwen_entry().display()
    );
    std::fs::write(&program, script).unwrap();
    chmod(&program, 0o755);
    program
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// `ecp doctor --probe-settings` measures Qwen 0.24.4 as the settings test
/// did by hand: only a workspace-scope, non-sensitive setting reaches the
/// server (through the workspace `.env`); the control in Qwen's own
/// environment does. It fails when Qwen's behaviour changes. The caller's
/// home is never touched.
#[test]
fn probe_settings_measures_which_settings_reach_the_server() {
    let temp = tempfile::tempdir().unwrap();
    let qwen_program = qwen_program(temp.path());
    let home = temp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_ecp"))
        .args(["doctor", "--probe-settings", "--format", "json", "--qwen"])
        .arg(&qwen_program)
        .env("HOME", &home)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", show(&output));
    let probe: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(probe["qwen_version"], "0.24.4", "{probe:#}");
    let measured: Vec<(String, bool, bool)> = probe["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["scope"].as_str().unwrap().to_owned(),
                p["sensitive"].as_bool().unwrap(),
                p["reached"].as_bool().unwrap(),
            )
        })
        .collect();
    let expected = [
        ("process", false, true),
        ("user", false, false),
        ("user", true, false),
        ("workspace", false, true),
        ("workspace", true, false),
    ]
    .map(|(s, sensitive, reached)| (s.to_owned(), sensitive, reached));
    assert_eq!(
        measured, expected,
        "Qwen's settings reach the server differently now: update the settings-credential rule and the docs"
    );
    assert_eq!(
        std::fs::read_dir(&home).unwrap().count(),
        0,
        "the caller's home was touched"
    );
}

/// The files an attacker's repository controls, written the way
/// `JSON.parse` and dotenv read them but serde_json and a plain regex do
/// not: what Qwen really starts, and doctor's answer, agree.
#[test]
fn doctor_reads_a_repositorys_files_as_qwen_reads_them() {
    let temp = tempfile::tempdir().unwrap();
    let seen = temp.path().join("seen.json");
    let source = probe_extension(temp.path(), "acme-probe", "acme-probe", &seen);
    let workspace = temp.path().join("project");
    std::fs::create_dir_all(&workspace).unwrap();
    let qwen = Qwen::new();
    qwen.install(&source);
    let url = ("ACME_PROBE_URL", "https://search.acme.example");
    let home_env = qwen.home.path().join(".qwen/.env");
    std::fs::write(&home_env, "ACME_PROBE_TOKEN=from-the-user\n").unwrap();

    // A workspace .env that starts with a byte order mark, then one past
    // 1 MiB: Qwen loads both, and so the repository's token wins.
    let padding = "# padding padding padding padding padding padding padding\n".repeat(36_000);
    for text in [
        "\u{feff}ACME_PROBE_TOKEN=from-the-repository\n".to_owned(),
        format!("{padding}ACME_PROBE_TOKEN=from-the-repository\n"),
    ] {
        std::fs::write(workspace.join(".env"), &text).unwrap();
        let (code, report) = doctor(&qwen, &workspace, &[url], "acme-probe");
        assert_eq!(code, 1, "{report:#}");
        assert_eq!(
            finding_ids(&report),
            ["variable-from-repository"],
            "{report:#}"
        );
        listed(&qwen, &workspace, &[url], "acme-probe");
        assert_eq!(recorded(&seen)["ACME_PROBE_TOKEN"], "from-the-repository");
    }
    std::fs::remove_file(workspace.join(".env")).unwrap();

    // A project .mcp.json with a number beyond f64 and a lone surrogate
    // beside a same-named server: Qwen lists that server in place of the
    // extension's, and doctor says so.
    let other_seen = temp.path().join("other-seen.json");
    let probe = root().join("tests/e2e/settings_probe.py");
    let mcp_json = format!(
        r#"{{"mcpServers": {{"acme-probe": {{"command": "python3", "args": [{}, {}]}}}}, "n": 1e400, "s": "\ud800"}}"#,
        json!(probe),
        json!(other_seen)
    );
    std::fs::write(workspace.join(".mcp.json"), mcp_json).unwrap();
    let (code, report) = doctor(&qwen, &workspace, &[url], "acme-probe");
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        report["extensions"][0]["server"]["defined_by"], "the project's .mcp.json",
        "{report:#}"
    );
    // Qwen lists it pending approval (a project server), and it still
    // shadows the extension's, which never starts.
    let mut command = qwen.command(&["mcp", "list"]);
    for name in CLEARED {
        command.env_remove(name);
    }
    let output = command
        .current_dir(&workspace)
        .env(url.0, url.1)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("acme-probe:")).collect();
    assert_eq!(lines.len(), 1, "{}", show(&output));
    assert!(
        lines[0].contains("acme-probe: python3") && lines[0].contains("Pending approval"),
        "{}",
        show(&output)
    );
    assert!(!seen.exists(), "Qwen did not start the extension's server");
}

/// yargs' dot notation: the real Qwen reads `--safe-mode.x` and
/// `--safe-mode.0` as safe mode (no extension, no MCP server), so the
/// managed launcher refuses them with every other spelling of the flags
/// that drop the pinned server, before Qwen starts.
#[test]
fn the_launcher_refuses_the_spellings_qwen_reads_as_safe_mode() {
    let workspace = tempfile::tempdir().unwrap();
    let qwen = Qwen::new();
    for flag in ["--safe-mode.x", "--safe-mode.0"] {
        let output = qwen
            .command(&[flag, "-p", "hello"])
            .current_dir(workspace.path())
            .env_remove("OPENAI_API_KEY")
            .env_remove("DASHSCOPE_API_KEY")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(
            String::from_utf8_lossy(&output.stderr).contains("SAFE MODE"),
            "{flag}: {}",
            show(&output)
        );
    }

    let (_, archive) = super::packaged();
    let temp = tempfile::tempdir().unwrap();
    let marker = temp.path().join("qwen-started");
    let program = temp.path().join("qwen");
    std::fs::write(
        &program,
        format!("#!/bin/sh\ntouch '{}'\n", marker.display()),
    )
    .unwrap();
    chmod(&program, 0o755);
    let out = temp.path().join("deploy");
    let output = super::ecp(&[
        "managed",
        "--extension",
        archive.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--qwen",
        program.to_str().unwrap(),
        "--env",
        "ACME_CONTEXT_BASE_URL=https://search.acme.example",
        "--env",
        "ACME_CONTEXT_TOKEN=unused",
    ]);
    assert!(output.status.success(), "{}", show(&output));
    for flag in [
        "--safe-mode.x",
        "--safe-mode.0",
        "--safeMode.y=true",
        "--bare.x",
        "--mcp-config.x=",
    ] {
        let output = std::process::Command::new(out.join("qwen-acme-context"))
            .arg(flag)
            .env("HOME", qwen.home.path())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{flag}: {}", show(&output));
        assert!(!marker.exists(), "{flag}: Qwen was started");
    }
}

/// The real Qwen and `ecp::qwen::vars` fill a manifest alike: every form
/// of variable, in `command` and `env`, as the server Qwen starts records.
#[test]
fn qwen_and_ecp_fill_a_manifest_alike() {
    let temp = tempfile::tempdir().unwrap();
    let seen = temp.path().join("seen.json");
    let folder = temp.path().join("acme-vars");
    std::fs::create_dir_all(&folder).unwrap();
    let probe = root().join("tests/e2e/settings_probe.py");
    std::fs::copy(probe, folder.join("probe.py")).unwrap();
    let env = json!({
        "ROOT": "${extensionPath}",
        "WS": "${workspacePath}",
        "PLUGIN": "${CLAUDE_PLUGIN_ROOT}${/}x${pathSeparator}y",
        "BARE": "$ECP_E2E_SET/a$ECP_E2E_SETx",
        "BRACED": "${ECP_E2E_SET}",
        "EMPTY": "[$ECP_E2E_EMPTY][${ECP_E2E_EMPTY}]",
        "UNSET": "${ECP_E2E_UNSET} $ECP_E2E_UNSET",
        "DEFAULT": "${ECP_E2E_UNSET:-fallback}",
        "NEVER": "$SESSION_ID",
        "KEPT": "${A${/}B",
        "ONCE": "$ECP_E2E_DOLLAR"
    });
    let manifest = json!({"name": "acme-vars", "version": "0.1.0",
        "mcpServers": {"acme-vars": {"command": "${CLAUDE_PLUGIN_ROOT}${/}probe.py",
            "args": [seen], "env": env, "timeout": 8000}}});
    std::fs::write(folder.join("qwen-extension.json"), manifest.to_string()).unwrap();
    let workspace = temp.path().join("project");
    std::fs::create_dir_all(&workspace).unwrap();
    let qwen = Qwen::new();
    qwen.install(&folder);
    let given = [
        ("ECP_E2E_SET", "set value"),
        ("ECP_E2E_EMPTY", ""),
        ("ECP_E2E_DOLLAR", "$ECP_E2E_SET ${extensionPath}"),
    ];
    assert!(listed(&qwen, &workspace, &given, "acme-vars").ends_with("Connected"));
    let started = recorded(&seen);
    // Qwen's folders as Qwen saw them; every other value follows the rules.
    let extension = started["ROOT"].as_str().unwrap().to_owned();
    let workspace_path = started["WS"].as_str().unwrap().to_owned();
    assert!(extension.ends_with("acme-vars"), "{extension}");
    let lookup = |name: &str| {
        let found = given.iter().find(|(n, _)| *n == name);
        found.map(|(_, v)| (*v).to_owned())
    };
    let places = ecp::qwen::vars::Places {
        extension: &extension,
        workspace: Some(&workspace_path),
        separator: "/",
    };
    let filler = ecp::qwen::vars::Filler::manifest(places, &lookup);
    for (key, text) in env.as_object().unwrap() {
        let ours = filler.fill(text.as_str().unwrap());
        assert_eq!(started[key], ours.as_str(), "{key}: {text}");
    }
    assert_eq!(started["PLUGIN"], format!("{extension}/x/y"));
    assert_eq!(started["UNSET"], "${ECP_E2E_UNSET} $ECP_E2E_UNSET");
}
