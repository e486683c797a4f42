//! The tool surface's canonical form (RFC 8785), held against what no one
//! here wrote: the JavaScript implementation `canonicalize` from npm (by
//! an author of the RFC), its published test data byte for byte, and
//! seeded random JSON texts through both (key orders, number spellings,
//! escapes, characters past the BMP whose UTF-16 order is not their code
//! point order).

use std::{
    path::Path,
    process::{Command, Stdio},
};

use ecp::surface::jcs::canonical;
use serde_json::Value;

const CANONICALIZE: &str = "2.1.0";

#[test]
fn the_published_test_data_canonicalizes_byte_for_byte() {
    let data = crate::npm::package("canonicalize", CANONICALIZE).join("test/testdata");
    let mut checked = 0;
    for entry in std::fs::read_dir(data.join("input")).unwrap() {
        let entry = entry.unwrap();
        let input = std::fs::read_to_string(entry.path()).unwrap();
        let expected =
            std::fs::read_to_string(data.join("output").join(entry.file_name())).unwrap();
        let value: Value = serde_json::from_str(&input).unwrap();
        assert_eq!(
            canonical(&value).unwrap(),
            expected.strip_suffix('\n').unwrap_or(&expected),
            "{}",
            entry.path().display()
        );
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} files of test data");
}

/// A small seeded generator (xorshift64*), so a failure is reproduced.
struct Seeded(u64);

impl Seeded {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn number(&mut self) -> String {
        let digits = |g: &mut Seeded, n: u64| -> String {
            (0..1 + g.below(n))
                .map(|_| char::from(b'0' + g.below(10) as u8))
                .collect()
        };
        let sign = if self.below(3) == 0 { "-" } else { "" };
        let int = digits(self, 22).trim_start_matches('0').to_owned();
        let int = if int.is_empty() { "0".to_owned() } else { int };
        let fraction = match self.below(3) {
            0 => String::new(),
            _ => format!(".{}", digits(self, 17)),
        };
        let exponent = match self.below(4) {
            0 => format!("e{}", self.below(300) as i64 - 150),
            1 => format!("E+{}", self.below(20)),
            _ => String::new(),
        };
        format!("{sign}{int}{fraction}{exponent}")
    }

    fn string(&mut self) -> String {
        const PIECES: &[&str] = &[
            "a",
            "B",
            "0",
            " ",
            "é",
            "\\u00e9",
            "€",
            "\\u20ac",
            "😀",
            "\\ud83d\\ude00",
            "\u{fb33}",
            "\u{43e}",
            "o",
            "\\n",
            "\\t",
            "\\u0001",
            "\\u001f",
            "\\u007f",
            "\\/",
            "\\\"",
            "\\\\",
            "\u{2028}",
            "\u{202e}",
            "\u{ff61}",
            "\u{10000}",
            "</script>",
        ];
        let pieces: String = (0..self.below(6))
            .map(|_| PIECES[self.below(PIECES.len() as u64) as usize])
            .collect();
        format!("\"{pieces}\"")
    }

    fn value(&mut self, depth: u32) -> String {
        match self.below(if depth > 4 { 5 } else { 7 }) {
            0 => "null".to_owned(),
            1 => ["true", "false"][self.below(2) as usize].to_owned(),
            2 | 3 => self.number(),
            4 => self.string(),
            5 => {
                let items: Vec<String> =
                    (0..self.below(4)).map(|_| self.value(depth + 1)).collect();
                format!("[ {} ]", items.join(" , "))
            }
            _ => {
                // Distinct keys (JSON.parse and serde_json agree on those).
                let mut keys: Vec<String> = (0..self.below(5)).map(|_| self.string()).collect();
                keys.sort();
                keys.dedup_by(|a, b| {
                    serde_json::from_str::<String>(a).ok() == serde_json::from_str::<String>(b).ok()
                });
                let members: Vec<String> = keys
                    .into_iter()
                    .map(|key| format!("{key} : {}", self.value(depth + 1)))
                    .collect();
                format!("{{ {} }}", members.join(", "))
            }
        }
    }
}

#[test]
fn seeded_random_texts_canonicalize_as_the_reference_does() {
    let package = crate::npm::package("canonicalize", CANONICALIZE);
    let mut seeded = Seeded(0x9E37_79B9_7F4A_7C15);
    let texts: Vec<String> = (0..3000).map(|_| seeded.value(0)).collect();
    let script = r#"
        const canonicalize = require(process.argv[1]);
        const texts = JSON.parse(require("fs").readFileSync(0, "utf8"));
        process.stdout.write(JSON.stringify(texts.map((t) => canonicalize(JSON.parse(t)))));
    "#;
    let theirs: Vec<String> = crate::npm::node_json(script, &package, &texts);
    assert_eq!(theirs.len(), texts.len());
    let mut differ = Vec::new();
    for ((text, theirs), at) in texts.iter().zip(&theirs).zip(0..) {
        let value: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        let ours = canonical(&value).unwrap();
        if &ours != theirs {
            differ.push(format!("#{at} {text}\n  ecp: {ours}\n  js:  {theirs}"));
        }
    }
    assert!(
        differ.is_empty(),
        "{} differ:\n{}",
        differ.len(),
        differ.join("\n")
    );
}

/// `ecp check --format json` with `args`: exit code, report, stderr.
fn ecp_check(args: &[&str]) -> (Option<i32>, Value, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_ecp"))
        .args(["check", "--format", "json"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let report = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    (output.status.code(), report, stderr)
}

fn locked_check(report: &Value) -> (&str, &str) {
    let check = (report["checks"].as_array().unwrap().iter())
        .find(|c| c["id"] == "tools-locked")
        .unwrap_or_else(|| panic!("no tools-locked in {report:#}"));
    (
        check["status"].as_str().unwrap(),
        check["reason"].as_str().unwrap(),
    )
}

#[test]
fn a_lock_written_from_a_python_server_holds_it_and_names_each_drift() {
    let temp = tempfile::tempdir().unwrap();
    let lock = temp.path().join("tools.lock");
    let lock = lock.to_str().unwrap();
    let server = crate::check::python_server();
    // Pinned from the independent Python server (its SDK's own spelling of
    // the definitions), then held to it.
    let (code, report, stderr) = ecp_check(&["--write-lock", lock, "--", "python3", &server]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("pinned 1 tool(s) into"), "{stderr}");
    assert!(!report["checks"].to_string().contains("tools-locked"));
    let pinned: Value = serde_json::from_str(&std::fs::read_to_string(lock).unwrap()).unwrap();
    assert_eq!(pinned["ecpToolsLock"], 1);
    assert!(pinned["tools"]["context_search"]["fields"]["inputSchema"].is_string());
    let (code, report, _) = ecp_check(&["--lock", lock, "--", "python3", &server]);
    assert_eq!(code, Some(0));
    assert_eq!(locked_check(&report).0, "pass", "{report:#}");
    // Each defect changes one part of the surface, and is named by it.
    let runs: Vec<_> = [
        (
            "accepts-2001",
            "its inputSchema differs from the locked one",
        ),
        (
            "extra-item-properties",
            "its outputSchema differs from the locked one",
        ),
        ("destructive", "its annotations differs from the locked one"),
        ("extra-tool", "is not in the lock"),
    ]
    .into_iter()
    .map(|(defect, says)| {
        let (lock, server) = (lock.to_owned(), server.clone());
        std::thread::spawn(move || {
            let args = [
                "--lock", &lock, "--", "python3", &server, "--defect", defect,
            ];
            (defect, says, ecp_check(&args))
        })
    })
    .collect();
    for run in runs {
        let (defect, says, (code, report, _)) = run.join().unwrap();
        let (status, reason) = locked_check(&report);
        assert_eq!(status, "fail", "{defect}: {report:#}");
        assert!(reason.contains(says), "{defect}: {reason}");
        assert_eq!(code, Some(1), "{defect}");
    }
}

#[test]
fn a_lock_that_is_not_one_stops_the_check_before_the_target_starts() {
    let temp = tempfile::tempdir().unwrap();
    let lock = temp.path().join("tools.lock");
    std::fs::write(
        &lock,
        r#"{"ecpToolsLock": 1, "names": "sha256:00", "tools": {}}"#,
    )
    .unwrap();
    let (code, _, stderr) = ecp_check(&[
        "--lock",
        lock.to_str().unwrap(),
        "--",
        "/nonexistent/server",
    ]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("is not a tools lock"), "{stderr}");
    assert!(
        stderr.contains("= help: pin a reviewed server's tools"),
        "{stderr}"
    );
    assert!(!stderr.contains("/nonexistent/server"), "{stderr}");
}

fn verify_live(archive: &Path, command: &[&str]) -> (Option<i32>, Value) {
    let mut args = vec![
        "verify",
        "--format",
        "json",
        archive.to_str().unwrap(),
        "--live",
        "--",
    ];
    args.extend_from_slice(command);
    let output = crate::cli::ecp(&args);
    let report = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("no report: {}", String::from_utf8_lossy(&output.stderr)));
    (output.status.code(), report)
}

/// GNU tar extracts `archive` into `into` (made first).
fn untar(archive: &Path, into: &Path) {
    std::fs::create_dir_all(into).unwrap();
    let status = Command::new("tar")
        .arg("xzf")
        .arg(archive)
        .arg("-C")
        .arg(into)
        .status()
        .unwrap();
    assert!(status.success(), "tar xzf {}", archive.display());
}

fn live_step(report: &Value) -> (String, String) {
    let step = (report["checks"].as_array().unwrap().iter())
        .find(|c| c["id"] == "live")
        .unwrap_or_else(|| panic!("no live step: {report:#}"));
    (
        step["status"].as_str().unwrap().to_owned(),
        step["detail"].as_str().unwrap().to_owned(),
    )
}

/// Kills the process when dropped.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `ecp verify --format json ARCHIVE --live URL EXTRA...` with `env`: the
/// exit status, the report (null when none) and stderr.
fn verify_url(
    archive: &Path,
    url: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (Option<i32>, Value, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_ecp"))
        .args(["verify", "--format", "json"])
        .arg(archive)
        .args(["--live", url])
        .args(extra)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let report = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output.status.code(), report, stderr)
}

/// The release's binary as a remote adapter behind OAuth, held by URL:
/// without a token the listing is refused and the step says what to pass;
/// with `--token-env` proven; a variable that is not set, or
/// `--token-env` with a name, stops the command.
fn live_behind_oauth(temp: &Path, archive: &Path, main: &Path) {
    let signer = crate::jwt::Signer::es256("live");
    let jwks = temp.join("jwks.json");
    std::fs::write(&jwks, crate::jwt::jwks(&[&signer])).unwrap();
    let port = crate::proxy::free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let _adapter = Killed(
        Command::new(main)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(["--authorization-server", crate::jwt::ISSUER, "--jwks"])
            .arg(&jwks)
            .env("ACME_CONTEXT_BASE_URL", "http://127.0.0.1:1/")
            .env("ACME_CONTEXT_TOKEN", "upstream-token")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let started = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed().as_secs() < 30,
            "the adapter never listened"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let (code, report, _) = verify_url(archive, &url, &[], &[]);
    let (status, detail) = live_step(&report);
    assert_eq!((status.as_str(), code), ("failed", Some(1)), "{report:#}");
    assert!(detail.contains("--token-env NAME"), "{detail}");

    let token = signer.token(&crate::jwt::claims(&url));
    let with_token = [("LIVE_TOKEN", token.as_str())];
    let (code, report, _) = verify_url(archive, &url, &["--token-env", "LIVE_TOKEN"], &with_token);
    assert_eq!(live_step(&report).0, "proven", "{report:#}");
    assert_eq!(code, Some(0), "{report:#}");
    assert!(
        !report.to_string().contains(&token),
        "the token is in the report"
    );

    let (code, _, stderr) = verify_url(archive, &url, &["--token-env", "LIVE_UNSET"], &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("LIVE_UNSET is not set"), "{stderr}");
    let (code, _, stderr) = verify_url(
        archive,
        "acme-context",
        &["--token-env", "LIVE_TOKEN"],
        &with_token,
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("--token-env goes with --live URL"),
        "{stderr}"
    );
}

#[test]
fn verify_live_holds_a_running_server_to_the_lock_the_statement_names() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("acme-context");
    assert!(crate::cli::ecp_new(&dir, &[]).status.success());
    let packaged = crate::cli::ecp(&["package", dir.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&packaged.stderr);
    assert!(packaged.status.success(), "{said}");
    assert!(
        said.contains("tools: ") && said.contains("(1 tool(s) pinned)"),
        "{said}"
    );
    let archive = dir.join("dist/linux.x64.acme-context.tar.gz");
    let unpacked = temp.path().join("unpacked");
    untar(&archive, &unpacked);
    let main = unpacked.join("dist/main");
    // The release's own server: proven.
    let (code, report) = verify_live(&archive, &[main.to_str().unwrap()]);
    assert_eq!(live_step(&report).0, "proven", "{report:#}");
    assert_eq!(code, Some(0), "{report:#}");
    live_behind_oauth(temp.path(), &archive, &main);
    // The same release installed for Qwen (unpacked where Qwen's installer
    // puts it), named: proven.
    let home = temp.path().join("home");
    let installed = home.join(".qwen/extensions/acme-context");
    untar(&archive, &installed);
    let output = Command::new(env!("CARGO_BIN_EXE_ecp"))
        .args(["verify", "--format", "json"])
        .arg(&archive)
        .args(["--live", "acme-context"])
        .env("HOME", &home)
        .env_remove("QWEN_HOME")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(live_step(&report).0, "proven", "{report:#}");
    let output = Command::new(env!("CARGO_BIN_EXE_ecp"))
        .args(["verify", "--format", "json"])
        .arg(&archive)
        .args(["--live", "other-context"])
        .env("HOME", &home)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let (status, detail) = live_step(&report);
    assert_eq!(status, "failed");
    assert!(
        detail.contains("no extension `other-context` is installed"),
        "{detail}"
    );
    // Another server (the independent Python one, with a destructive
    // hint, reading the manifest's variables under its own names):
    // failed, naming the field.
    let server = crate::check::python_server();
    let python = format!(
        "PROVIDER_CONTEXT_BASE_URL=$ACME_CONTEXT_BASE_URL PROVIDER_CONTEXT_TOKEN=$ACME_CONTEXT_TOKEN exec python3 {server} --defect destructive"
    );
    let python = ["sh", "-c", python.as_str()];
    let (code, report) = verify_live(&archive, &python);
    let (status, detail) = live_step(&report);
    assert_eq!(status, "failed", "{report:#}");
    assert!(
        detail.contains("context_search`: its annotations differs"),
        "{detail}"
    );
    assert_eq!(code, Some(1));
    // A lock put beside the archive in place of the release's: failed,
    // whatever the server offers.
    let python_lock = temp.path().join("python.lock");
    let (_, _, stderr) = ecp_check(&[
        "--write-lock",
        python_lock.to_str().unwrap(),
        "--",
        "python3",
        &server,
        "--defect",
        "destructive",
    ]);
    assert!(python_lock.is_file(), "{stderr}");
    std::fs::copy(&python_lock, dir.join("dist/tools.lock")).unwrap();
    let (code, report) = verify_live(&archive, &python);
    let (status, detail) = live_step(&report);
    assert_eq!(status, "failed");
    assert!(
        detail.contains("is not the one the statement names"),
        "{detail}"
    );
    assert_eq!(code, Some(1));
}
