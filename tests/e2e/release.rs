//! The release path through Qwen Code 0.24.4's own installer:
//! `qwen extensions install owner/repo` against a stand-in GitHub
//! (`github_standin.py`, HTTPS on 127.0.0.1:443) in a network and mount
//! namespace of the test's own, where the GitHub host names resolve to
//! 127.0.0.1 through a bind-mounted hosts file and Node trusts a test CA
//! (`NODE_EXTRA_CA_CERTS`). Nothing in Qwen is changed and nothing leaves
//! the machine.
//!
//! The releases are `ecp package` output for all five targets (the host's
//! with the real build, the others around stand-in executables whose
//! headers name their target), published in several asset orders.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
};

use serde_json::{Value, json};

use super::{Qwen, ecp, packaged, root, show};

const REPO: &str = "acme/acme-context";
const HOSTS: [&str; 4] = [
    "api.github.com",
    "github.com",
    "objects.githubusercontent.com",
    "raw.githubusercontent.com",
];

/// The stand-in GitHub: a test CA, a server certificate for the GitHub
/// hosts, a hosts file, the state the server reads and its request log.
struct GitHub {
    dir: tempfile::TempDir,
}

fn run_ok(command: &mut Command) {
    let output = command.stdin(Stdio::null()).output().unwrap();
    assert!(output.status.success(), "{command:?}: {}", show(&output));
}

impl GitHub {
    fn new() -> GitHub {
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str| dir.path().join(name);
        run_ok(
            Command::new("openssl")
                .args([
                    "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                ])
                .args(["-subj", "/CN=ecp e2e test CA"])
                .args(["-addext", "basicConstraints=critical,CA:TRUE"])
                .args(["-addext", "keyUsage=critical,keyCertSign,cRLSign"])
                .arg("-keyout")
                .arg(at("ca.key"))
                .arg("-out")
                .arg(at("ca.pem")),
        );
        run_ok(
            Command::new("openssl")
                .args([
                    "req",
                    "-newkey",
                    "rsa:2048",
                    "-nodes",
                    "-subj",
                    "/CN=api.github.com",
                ])
                .arg("-keyout")
                .arg(at("server.key"))
                .arg("-out")
                .arg(at("server.csr")),
        );
        let names: Vec<String> = HOSTS.iter().map(|h| format!("DNS:{h}")).collect();
        std::fs::write(
            at("server.ext"),
            format!(
                "subjectAltName={}\nextendedKeyUsage=serverAuth\n",
                names.join(",")
            ),
        )
        .unwrap();
        run_ok(
            Command::new("openssl")
                .args(["x509", "-req", "-days", "2", "-CAcreateserial"])
                .arg("-in")
                .arg(at("server.csr"))
                .arg("-CA")
                .arg(at("ca.pem"))
                .arg("-CAkey")
                .arg(at("ca.key"))
                .arg("-extfile")
                .arg(at("server.ext"))
                .arg("-out")
                .arg(at("server.pem")),
        );
        std::fs::write(
            at("hosts"),
            format!("127.0.0.1 localhost\n127.0.0.1 {}\n", HOSTS.join(" ")),
        )
        .unwrap();
        GitHub { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// What the stand-in serves from now on; the request log starts over.
    fn serve(&self, repos: Value) {
        std::fs::write(
            self.path("state.json"),
            json!({ "repos": repos }).to_string(),
        )
        .unwrap();
        let _ = std::fs::remove_file(self.path("log.jsonl"));
    }

    /// The requests served since the last [`GitHub::serve`].
    fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(self.path("log.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The asset names downloaded (from the objects host).
    fn downloaded(&self) -> Vec<String> {
        self.requests()
            .iter()
            .filter(|r| r["host"] == "objects.githubusercontent.com" && r["status"] == 200)
            .map(|r| {
                r["path"]
                    .as_str()
                    .unwrap()
                    .rsplit('/')
                    .next()
                    .unwrap()
                    .to_owned()
            })
            .collect()
    }

    /// Runs `inner` (its program, arguments, environment and folder) in a
    /// new user, network and mount namespace with the stand-in listening.
    fn run(&self, inner: Command) -> Output {
        self.run_with_input(inner, b"")
    }

    /// [`GitHub::run`] with `input` on stdin (then end of file).
    fn run_with_input(&self, inner: Command, input: &[u8]) -> Output {
        let script = r#"
set -u
export PATH="$PATH:/usr/sbin:/sbin"
ip link set lo up || exit 97
mount --bind "$ECP_E2E_HOSTS" /etc/hosts || exit 97
rm -f "$ECP_E2E_READY"
python3 "$ECP_E2E_STANDIN" "$ECP_E2E_STATE" "$ECP_E2E_CERT" "$ECP_E2E_KEY" \
  "$ECP_E2E_LOG" "$ECP_E2E_READY" 2>>"$ECP_E2E_STANDIN_ERR" &
server=$!
for _ in $(seq 200); do [ -e "$ECP_E2E_READY" ] && break; sleep 0.05; done
if [ ! -e "$ECP_E2E_READY" ]; then
  echo "the stand-in GitHub did not start:" >&2; cat "$ECP_E2E_STANDIN_ERR" >&2; exit 98
fi
"$@"
status=$?
kill "$server"
exit "$status"
"#;
        let mut command = Command::new("unshare");
        command
            .args([
                "--user",
                "--map-root-user",
                "--net",
                "--mount",
                "--",
                "bash",
                "-c",
            ])
            .arg(script)
            .arg("bash")
            .arg(inner.get_program())
            .args(inner.get_args());
        for (key, value) in inner.get_envs() {
            match value {
                Some(value) => command.env(key, value),
                None => command.env_remove(key),
            };
        }
        if let Some(dir) = inner.get_current_dir() {
            command.current_dir(dir);
        }
        command
            .env("ECP_E2E_HOSTS", self.path("hosts"))
            .env("ECP_E2E_READY", self.path("ready"))
            .env(
                "ECP_E2E_STANDIN",
                root().join("tests/e2e/github_standin.py"),
            )
            .env("ECP_E2E_STATE", self.path("state.json"))
            .env("ECP_E2E_CERT", self.path("server.pem"))
            .env("ECP_E2E_KEY", self.path("server.key"))
            .env("ECP_E2E_LOG", self.path("log.jsonl"))
            .env("ECP_E2E_STANDIN_ERR", self.path("standin.err"))
            .env("NODE_EXTRA_CA_CERTS", self.path("ca.pem"))
            .env("CURL_CA_BUNDLE", self.path("ca.pem"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        std::io::Write::write_all(&mut stdin, input).unwrap();
        drop(stdin);
        let output = child.wait_with_output().unwrap();
        assert!(
            !matches!(output.status.code(), Some(97 | 98)),
            "the namespace could not be set up: {}",
            show(&output)
        );
        output
    }
}

/// A file that starts like an executable for a target (what lint reads).
fn stand_in_build(dir: &Path, target: &str) -> PathBuf {
    let mut bytes = vec![0u8; 512];
    match target {
        "aarch64-unknown-linux-gnu" => {
            bytes[..6].copy_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1]);
            bytes[18] = 0xb7;
        }
        "x86_64-apple-darwin" | "aarch64-apple-darwin" => {
            let cpu: u32 = if target.starts_with("x86_64") {
                0x0100_0007
            } else {
                0x0100_000c
            };
            bytes[..4].copy_from_slice(&[0xcf, 0xfa, 0xed, 0xfe]);
            bytes[4..8].copy_from_slice(&cpu.to_le_bytes());
        }
        "x86_64-pc-windows-msvc" => {
            bytes[..2].copy_from_slice(b"MZ");
            bytes[0x3c] = 0x80;
            bytes[0x80..0x84].copy_from_slice(b"PE\0\0");
            bytes[0x84..0x86].copy_from_slice(&0x8664u16.to_le_bytes());
        }
        other => panic!("no stand-in for {other}"),
    }
    let path = dir.join(format!("stand-in-{target}"));
    std::fs::write(&path, bytes).unwrap();
    path
}

/// The host's build of the packaged extension.
fn host_build() -> PathBuf {
    packaged();
    root().join("target/generated/release/acme-context")
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == "dist" || name == "target" {
            continue;
        }
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &to.join(&name));
        } else {
            std::fs::copy(entry.path(), to.join(&name)).unwrap();
        }
    }
}

/// A release folder of `version`: five targets, one SHA256SUMS, checked by
/// `ecp lint` with the tag.
fn release_folder(work: &Path, version: &str) -> PathBuf {
    let (source, _) = packaged();
    let dir = work.join(format!("acme-context-{version}"));
    copy_tree(source, &dir);
    for file in ["qwen-extension.json", "Cargo.toml"] {
        let path = dir.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replacen("0.1.0", version, 1)).unwrap();
    }
    let out = work.join(format!("release-v{version}"));
    for target in [
        "x86_64-unknown-linux-gnu",
        "aarch64-unknown-linux-gnu",
        "x86_64-apple-darwin",
        "aarch64-apple-darwin",
        "x86_64-pc-windows-msvc",
    ] {
        let binary = if target == "x86_64-unknown-linux-gnu" {
            host_build()
        } else {
            stand_in_build(work, target)
        };
        let output = ecp(&[
            "package",
            dir.to_str().unwrap(),
            "--binary",
            binary.to_str().unwrap(),
            "--target",
            target,
            "--out-dir",
            out.to_str().unwrap(),
        ]);
        assert!(output.status.success(), "{}", show(&output));
    }
    let tag = format!("v{version}");
    let lint = ecp(&[
        "lint",
        out.to_str().unwrap(),
        "--deny-warnings",
        "--release-tag",
        &tag,
    ]);
    assert!(lint.status.success(), "{}", show(&lint));
    out
}

fn assets(folder: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// `qwen extensions install SOURCE --consent` in the namespace.
fn install(github: &GitHub, qwen: &Qwen, source: &str) -> Output {
    github.run(qwen.command(&["extensions", "install", source, "--consent"]))
}

fn installed_tag(qwen: &Qwen) -> Value {
    let text = std::fs::read_to_string(
        qwen.home
            .path()
            .join(".qwen/extensions/acme-context/.qwen-extension-install.json"),
    )
    .unwrap_or_else(|e| panic!("no install metadata: {e}"));
    serde_json::from_str::<Value>(&text).unwrap()["releaseTag"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qwen_installs_owner_repo_from_a_release_in_every_asset_order_and_updates() {
    let work = tempfile::tempdir().unwrap();
    let github = GitHub::new();
    let v1 = release_folder(work.path(), "0.1.0");
    let v2 = release_folder(work.path(), "0.2.0");
    let names = assets(&v1);
    // Ten archives, SHA256SUMS, one provenance statement per target and
    // the tool surface's lock (written by the host's run): Qwen's lookup
    // must never take a statement or the lock for an archive, in any order.
    assert_eq!(names.len(), 17, "{names:?}");
    assert!(names.iter().any(|n| n == "tools.lock"), "{names:?}");
    assert_eq!(
        names.iter().filter(|n| n.ends_with(".intoto.json")).count(),
        5,
        "{names:?}"
    );
    let host_archives = [
        "linux.x64.acme-context.tar.gz",
        "linux.x64.acme-context.zip",
    ];

    let sums_first: Vec<String> = names.clone();
    assert_eq!(sums_first[0], "SHA256SUMS");
    let mut zip_first = names.clone();
    zip_first.retain(|n| !n.starts_with("linux.x64."));
    zip_first.insert(0, "linux.x64.acme-context.zip".into());
    zip_first.insert(1, "linux.x64.acme-context.tar.gz".into());
    let mut host_last: Vec<String> = names
        .iter()
        .filter(|n| !n.starts_with("linux.x64."))
        .rev()
        .cloned()
        .collect();
    host_last.extend(host_archives.iter().map(|n| n.to_string()));
    let built = std::fs::read(host_build()).unwrap();

    let mut last = None;
    for (label, order) in [
        ("sums first", &sums_first),
        ("zip before tar.gz", &zip_first),
        ("every other platform first", &host_last),
    ] {
        github.serve(json!({ REPO: {
            "latest": "v0.1.0",
            "releases": { "v0.1.0": { "dir": v1, "assets": order } },
        }}));
        let qwen = Qwen::new();
        let output = tokio::task::block_in_place(|| install(&github, &qwen, REPO));
        assert!(output.status.success(), "{label}: {}", show(&output));
        let downloaded = github.downloaded();
        assert_eq!(downloaded.len(), 1, "{label}: {downloaded:?}");
        let expected = order.iter().find(|n| n.starts_with("linux.x64.")).unwrap();
        assert_eq!(
            &downloaded[0], expected,
            "{label}: the first linux.x64 asset"
        );
        // The host's own build is what Qwen unpacked.
        let main = qwen
            .home
            .path()
            .join(".qwen/extensions/acme-context/dist/main");
        assert!(std::fs::read(&main).unwrap() == built, "{label}: {main:?}");
        assert_eq!(installed_tag(&qwen), "v0.1.0");
        last = Some(qwen);
    }
    let qwen = last.unwrap();

    // The installed release connects and the envelope reaches the model.
    let upstream = super::answers_through_qwen(&qwen, "dist").await;
    assert_eq!(upstream.requests().len(), 1);

    // A newer tag becomes latest: `qwen extensions update` moves to it.
    github.serve(json!({ REPO: {
        "latest": "v0.2.0",
        "releases": {
            "v0.1.0": { "dir": v1, "assets": sums_first },
            "v0.2.0": { "dir": v2, "assets": assets(&v2) },
        },
    }}));
    // It asks again (the consent text names the download folder), and
    // `update` has no --consent: answer as a person would.
    let update = tokio::task::block_in_place(|| {
        github.run_with_input(
            qwen.command(&["extensions", "update", "acme-context"]),
            b"y\n",
        )
    });
    let said = String::from_utf8_lossy(&update.stdout).to_string()
        + &String::from_utf8_lossy(&update.stderr);
    assert!(
        said.contains("successfully updated: 0.1.0 → 0.2.0"),
        "{}",
        show(&update)
    );
    assert_eq!(installed_tag(&qwen), "v0.2.0");
    assert_eq!(github.downloaded(), ["linux.x64.acme-context.tar.gz"]);
    let list = qwen.run(&["extensions", "list"], &[]);
    assert!(
        String::from_utf8_lossy(&list.stdout).contains("acme-context (0.2.0)"),
        "{}",
        show(&list)
    );
}

#[test]
fn a_release_that_trips_qwen_is_refused_by_ecp_lint_and_an_archive_url_installs() {
    let work = tempfile::tempdir().unwrap();
    let github = GitHub::new();
    let good = release_folder(work.path(), "0.1.0");

    // A per-archive checksum named like the archive, first in the list:
    // ecp lint refuses the folder, and Qwen would indeed take it.
    let bad = work.path().join("bad");
    std::fs::create_dir(&bad).unwrap();
    for name in assets(&good) {
        std::fs::copy(good.join(&name), bad.join(&name)).unwrap();
    }
    let trap = "linux.x64.acme-context.tar.gz.sha256";
    std::fs::write(
        bad.join(trap),
        format!("{}  linux.x64.acme-context.tar.gz\n", "0".repeat(64)),
    )
    .unwrap();
    let lint = ecp(&["lint", bad.to_str().unwrap()]);
    assert_eq!(lint.status.code(), Some(1), "{}", show(&lint));
    assert!(
        String::from_utf8_lossy(&lint.stdout).contains("error[release-asset]"),
        "{}",
        show(&lint)
    );
    let mut order = vec![trap.to_owned()];
    order.extend(assets(&good));
    github.serve(json!({ REPO: {
        "latest": "v0.1.0",
        "releases": { "v0.1.0": { "dir": bad, "assets": order } },
    }}));
    let qwen = Qwen::new();
    let output = install(&github, &qwen, REPO);
    assert!(!output.status.success(), "{}", show(&output));
    assert_eq!(
        github.downloaded(),
        [trap],
        "Qwen downloaded the checksum file"
    );
    assert!(
        !qwen
            .home
            .path()
            .join(".qwen/extensions/acme-context")
            .exists()
    );

    // An archive URL installs the archive itself.
    github.serve(json!({ REPO: {
        "latest": "v0.1.0",
        "releases": { "v0.1.0": { "dir": good, "assets": assets(&good) } },
    }}));
    let qwen = Qwen::new();
    let url = format!(
        "https://objects.githubusercontent.com/{REPO}/v0.1.0/linux.x64.acme-context.tar.gz"
    );
    let output = install(&github, &qwen, &url);
    assert!(output.status.success(), "{}", show(&output));
    let list = qwen.run(&["extensions", "list"], &[]);
    assert!(
        String::from_utf8_lossy(&list.stdout).contains("acme-context (0.1.0)"),
        "{}",
        show(&list)
    );
}

#[test]
fn the_action_install_script_checks_the_sums_of_ecps_release() {
    let work = tempfile::tempdir().unwrap();
    let github = GitHub::new();
    let version = env!("CARGO_PKG_VERSION");
    let build = work.path().join("ecp");
    std::fs::write(&build, format!("#!/bin/sh\necho ecp {version}\n")).unwrap();
    let out = work.path().join("ecp-release");
    let dist = Command::new(root().join("scripts/dist.sh"))
        .args([
            "x86_64-unknown-linux-gnu",
            build.to_str().unwrap(),
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(dist.status.success(), "{}", show(&dist));
    let archive = format!("ecp-v{version}-x86_64-unknown-linux-gnu.tar.gz");
    let sums = Command::new("sha256sum")
        .arg(&archive)
        .current_dir(&out)
        .output()
        .unwrap();
    std::fs::write(out.join("SHA256SUMS"), &sums.stdout).unwrap();
    let tag = format!("v{version}");
    let serve = |dir: &Path| {
        github.serve(json!({ "ecp-toolchain/ecp": {
            "latest": tag,
            "releases": { tag.clone(): { "dir": dir, "assets": ["SHA256SUMS", archive] } },
        }}));
    };
    let install = |install_dir: &Path| {
        let github_path = work.path().join("github-path");
        let _ = std::fs::remove_file(&github_path);
        let mut command = Command::new("bash");
        command
            .arg(root().join("scripts/install-ecp.sh"))
            .env("ECP_VERSION", version)
            .env("RUNNER_OS", "Linux")
            .env("RUNNER_ARCH", "X64")
            .env("ECP_INSTALL_DIR", install_dir)
            .env("GITHUB_PATH", &github_path);
        (
            github.run(command),
            std::fs::read_to_string(&github_path).unwrap_or_default(),
        )
    };

    serve(&out);
    let (output, path) = install(&work.path().join("installed"));
    assert!(output.status.success(), "{}", show(&output));
    let bin = PathBuf::from(path.trim());
    let ran = Command::new(bin.join("ecp")).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&ran.stdout),
        format!("ecp {version}\n")
    );

    // The same name with other bytes: refused, nothing on PATH.
    let tampered = work.path().join("tampered");
    std::fs::create_dir(&tampered).unwrap();
    std::fs::copy(out.join("SHA256SUMS"), tampered.join("SHA256SUMS")).unwrap();
    let mut bytes = std::fs::read(out.join(&archive)).unwrap();
    bytes.extend_from_slice(b"\0");
    std::fs::write(tampered.join(&archive), bytes).unwrap();
    serve(&tampered);
    let (output, path) = install(&work.path().join("refused"));
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("but the release's SHA256SUMS says"),
        "{}",
        show(&output)
    );
    assert!(path.is_empty());
}
