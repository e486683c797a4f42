//! Qwen Code 0.24.4's own MCP OAuth flow against a real authorization
//! server: the npm `oidc-provider` on loopback
//! (`authorization_server.mjs`), three replicas of the packaged
//! `dist/main --listen` behind Debian's nginx with the remote template's
//! `deploy/nginx.conf` (TLS from a test CA), and the remote template's
//! manifest installed as is.
//!
//! Nothing in Qwen is changed. Qwen signs in the way it does for a person:
//! started interactively on a pseudo-terminal (`pty_run.py`) in what looks
//! like a desktop session (`DISPLAY` set, no `CI`), it meets our 401, reads
//! the protected-resource metadata, registers itself, and opens the
//! authorization URL with the command in `BROWSER`. That command
//! (`browser.py`) is the person: it follows the pages, fills in the login
//! form, submits the consent form and lands on Qwen's loopback callback.
//! Headless runs then use the token Qwen stored.

use std::{
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use ecp::check::upstream::{Reply, Upstream};
use serde_json::Value;

use super::{
    Qwen, UPSTREAM_ITEMS, assert_qwen_answers, cache, dist_main, ecp, fake_model, nginx, remote,
    root, show,
};

/// Where the authorization server sends Qwen's callback (fixed by Qwen).
const CALLBACK_PORT: u16 = 7777;
const OTHER_RESOURCE: &str = "https://other.invalid/api";

/// `authorization_server.mjs` running; killed when dropped.
struct AuthorizationServer {
    child: Child,
    issuer: String,
    jwks_uri: String,
    lines: Arc<Mutex<Vec<String>>>,
    ttl_file: PathBuf,
}

impl Drop for AuthorizationServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl AuthorizationServer {
    /// Starts it for `resource`, new access tokens living `ttl` seconds.
    fn start(resource: &str, ttl: u64, dir: &Path) -> AuthorizationServer {
        // Node resolves `oidc-provider` from the script's folder: run a copy
        // beside the e2e cache's node_modules.
        let script = cache().join("npm/authorization_server.mjs");
        std::fs::copy(root().join("tests/e2e/authorization_server.mjs"), &script).unwrap();
        let ttl_file = dir.join("access-token-ttl");
        std::fs::write(&ttl_file, ttl.to_string()).unwrap();
        let mut child = Command::new("node")
            .arg(&script)
            .arg(resource)
            .arg(&ttl_file)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        stdout.read_line(&mut first).unwrap();
        let listening: Value = serde_json::from_str(&first)
            .unwrap_or_else(|_| panic!("authorization server said {first:?}"));
        let lines = Arc::new(Mutex::new(Vec::new()));
        let collected = lines.clone();
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                collected.lock().unwrap().push(line);
            }
        });
        AuthorizationServer {
            child,
            issuer: listening["issuer"].as_str().unwrap().to_owned(),
            jwks_uri: listening["jwks_uri"].as_str().unwrap().to_owned(),
            lines,
            ttl_file,
        }
    }

    fn set_ttl(&self, seconds: u64) {
        std::fs::write(&self.ttl_file, seconds.to_string()).unwrap();
    }

    /// Token requests of `grant_type` that were granted.
    fn granted(&self, grant_type: &str) -> usize {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|e| {
                e["event"] == "token" && e["grant_type"] == grant_type && e["status"] == 200
            })
            .count()
    }

    /// A token from the server's own `client_credentials` grant, for a
    /// client Qwen never sees.
    fn mint(&self, resource: &str, scope: &str) -> String {
        let out = curl(&[
            "-u",
            "ecp-probe:ecp-probe-secret",
            "-d",
            "grant_type=client_credentials",
            "-d",
            &format!("resource={resource}"),
            "-d",
            &format!("scope={scope}"),
            &format!("{}/token", self.issuer),
        ]);
        let body: Value = serde_json::from_str(&out).unwrap_or_else(|_| panic!("{out}"));
        body["access_token"]
            .as_str()
            .unwrap_or_else(|| panic!("{body}"))
            .to_owned()
    }
}

fn curl(args: &[&str]) -> String {
    let output = Command::new("curl")
        .arg("-sS")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("curl (CI installs it)");
    assert!(output.status.success(), "curl {args:?}: {}", show(&output));
    String::from_utf8(output.stdout).unwrap()
}

/// A `tools/call` with `token` through nginx: the status and the
/// `WWW-Authenticate` header, if any.
fn call_with(url: &str, ca: &Path, token: &str) -> (u16, Option<String>) {
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"context_search","arguments":{"query":"deployment policy"}}}"#;
    let out = curl(&[
        "--cacert",
        ca.to_str().unwrap(),
        "-o",
        "/dev/null",
        "-D",
        "-",
        "-w",
        "%{http_code}",
        "-H",
        &format!("Authorization: Bearer {token}"),
        "-H",
        "Content-Type: application/json",
        "-H",
        "Accept: application/json, text/event-stream",
        "-H",
        "MCP-Protocol-Version: 2025-11-25",
        "--data",
        call,
        url,
    ]);
    let (headers, status) = out.split_at(out.len() - 3);
    let challenge = headers.lines().find_map(|l| {
        l.to_ascii_lowercase()
            .starts_with("www-authenticate:")
            .then(|| l.split_once(':').unwrap().1.trim().to_owned())
    });
    (status.parse().unwrap(), challenge)
}

impl Qwen {
    /// What Qwen stored for `acme-context` in its plain token file.
    fn stored_token(&self) -> Option<Value> {
        let text =
            std::fs::read_to_string(self.home.path().join(".qwen/mcp-oauth-tokens.json")).ok()?;
        let stored: Value = serde_json::from_str(&text).ok()?;
        stored
            .as_array()?
            .iter()
            .find(|c| c["serverName"] == "acme-context")
            .cloned()
    }

    /// Qwen started interactively, as a person would in a terminal on a
    /// desktop, until its browser has been through the sign-in and Qwen
    /// has stored a token (`stored` says where it looks); then stopped.
    /// Returns what the browser saw.
    fn sign_in(&self, env: &[(&str, &str)], stored: impl Fn(&Qwen) -> bool) -> Value {
        let work = self.home.path();
        let browser_log = work.join("browser.json");
        let screen = work.join("screen.log");
        let browser = format!("python3 {}", root().join("tests/e2e/browser.py").display());
        let mut interactive = Command::new("python3")
            .arg(root().join("tests/e2e/pty_run.py"))
            .arg(&screen)
            .arg("node")
            .arg(super::qwen_entry())
            .env("HOME", work)
            .env("DISPLAY", ":0")
            .env("TERM", "xterm-256color")
            .env("BROWSER", &browser)
            .env("ECP_BROWSER_LOG", &browser_log)
            .env_remove("CI")
            .env_remove("DEBIAN_FRONTEND")
            .env_remove("OPENAI_API_KEY")
            .env_remove("DASHSCOPE_API_KEY")
            .envs(env.iter().copied())
            .current_dir(work)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        let signed_in = loop {
            if browser_log.is_file() && stored(self) {
                break true;
            }
            if started.elapsed() > Duration::from_secs(60)
                || interactive.try_wait().unwrap().is_some()
            {
                break false;
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        // Qwen connects again with the new token right after; let it.
        std::thread::sleep(Duration::from_secs(2));
        let _ = Command::new("kill")
            .args(["-TERM", &interactive.id().to_string()])
            .status();
        let _ = interactive.wait();
        let seen = std::fs::read_to_string(&browser_log).unwrap_or_default();
        assert!(
            signed_in,
            "Qwen did not sign in within 60 s\n--- browser\n{seen}\n--- screen\n{}",
            String::from_utf8_lossy(&std::fs::read(&screen).unwrap_or_default())
        );
        serde_json::from_str(&seen).unwrap()
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// The whole OAuth path of the seed: Qwen discovers the authorization
/// server from our 401 and metadata, registers itself (DCR), signs in with
/// PKCE S256 and the `resource` indicator, gets a JWT access token bound to
/// the endpoint with `context.read`, and calls `context_search` with it;
/// once the token has expired, Qwen refreshes it (for a server entry
/// without `oauth`: see the measured limit below). Tokens the same server
/// minted for another audience, or without the scope, are refused before
/// any provider work. With `QWEN_CODE_FORCE_ENCRYPTED_FILE_STORAGE=true`
/// the stored token file holds no token in the clear.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qwen_signs_in_through_its_own_oauth_flow_and_refreshes_the_token() {
    assert!(
        std::net::TcpListener::bind(("127.0.0.1", CALLBACK_PORT)).is_ok(),
        "Qwen's OAuth callback port {CALLBACK_PORT} is taken"
    );
    let upstream = Upstream::start(|_| Reply::json(UPSTREAM_ITEMS)).await;
    let model = Upstream::start(fake_model).await;
    let work = tempfile::tempdir().unwrap();
    let port = nginx::free_port();
    let url = format!("https://localhost:{port}/mcp");
    let remote_dir = work.path().join("acme-context-remote");
    let made = ecp(&[
        "new",
        "acme-context",
        "--template",
        "remote",
        "--endpoint",
        &url,
        "--yes",
        "--dir",
        remote_dir.to_str().unwrap(),
    ]);
    assert!(made.status.success(), "{}", show(&made));
    let tls = nginx::TestCa::new(work.path(), "localhost");
    // Access tokens of 2 s, so that the test can wait for a real expiry
    // (the adapter allows 30 s of clock skew past `exp`).
    let auth = AuthorizationServer::start(&url, 2, work.path());
    let args = [
        "--resource-url",
        &url,
        "--authorization-server",
        &auth.issuer,
        "--jwks",
        &auth.jwks_uri,
    ];
    let env = [
        ("ACME_CONTEXT_BASE_URL", upstream.base_url.as_str()),
        ("ACME_CONTEXT_TOKEN", "e2e-token"),
    ];
    let mut replicas = Vec::new();
    for _ in 0..3 {
        replicas.push(remote::RemoteServer::start_program(&dist_main(), &args, &env).await);
    }
    let addresses: Vec<String> = replicas
        .iter()
        .map(|r| r.origin.trim_start_matches("http://").to_owned())
        .collect();
    let _nginx = nginx::Nginx::start(
        &remote_dir.join("deploy/nginx.conf"),
        work.path(),
        port,
        &addresses,
        &tls,
    );
    let ca = tls.ca.to_str().unwrap().to_owned();
    let model_url = format!("{}/v1", model.base_url);
    let desktop = [
        ("NODE_EXTRA_CA_CERTS", ca.as_str()),
        ("OPENAI_API_KEY", "dummy"),
        ("OPENAI_BASE_URL", model_url.as_str()),
        ("OPENAI_MODEL", "fake-model"),
    ];
    let trust = [("NODE_EXTRA_CA_CERTS", ca.as_str())];

    // Sign in through the remote template's manifest, installed as is.
    let qwen = Qwen::new();
    qwen.install(&remote_dir);
    let seen =
        tokio::task::block_in_place(|| qwen.sign_in(&desktop, |q| q.stored_token().is_some()));
    assert_eq!(seen["callback_status"], 200, "{seen:#}");
    assert!(
        seen["callback_page"]
            .as_str()
            .is_some_and(|p| p.contains("Authentication Successful")),
        "{seen:#}"
    );
    let opened = url::Url::parse(seen["opened"].as_str().unwrap()).unwrap();
    let query: std::collections::HashMap<_, _> = opened.query_pairs().into_owned().collect();
    assert_eq!(query["code_challenge_method"], "S256", "{opened}");
    assert_eq!(query["resource"], url, "{opened}");
    assert_eq!(query["scope"], "context.read", "{opened}");
    assert_eq!(auth.granted("authorization_code"), 1);

    // ecp doctor sees the tokens Qwen just stored in plain text, and the
    // file's mode.
    let workspace = tempfile::tempdir().unwrap();
    let (_, report) = super::doctor::doctor(&qwen, workspace.path(), &[], "acme-context");
    let ids = super::doctor::finding_ids(&report);
    for id in ["tokens-plain-text", "tokens-stored-plain"] {
        assert!(ids.contains(&id.to_owned()), "{id}: {report:#}");
    }
    assert_eq!(report["token_storage"]["file_mode"], "0600", "{report:#}");

    // Wait until the stored token has really expired, clock skew allowance
    // included; the adapter refuses it.
    let stored = qwen.stored_token().unwrap();
    let expires = stored["token"]["expiresAt"].as_u64().unwrap();
    let wait = (expires + 31_000).saturating_sub(now_ms());
    assert!(wait < 40_000, "{stored:#}");
    tokio::time::sleep(Duration::from_millis(wait)).await;
    let expired = stored["token"]["accessToken"].as_str().unwrap();
    let (status, challenge) = call_with(&url, &tls.ca, expired);
    assert_eq!(status, 401, "{challenge:?}");
    assert!(challenge.unwrap().contains("invalid_token"));

    // Measured: with the manifest's `oauth` block (the reference shape)
    // and a dynamically registered client, Qwen 0.24.4 does not refresh.
    // It looks for the client id in the manifest's `oauth`, finds none and
    // gives up: the server is Disconnected until the next sign-in.
    let refreshed = auth.granted("refresh_token");
    let listed = tokio::task::block_in_place(|| qwen.run(&["mcp", "list"], &trust));
    let listed_text = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed_text
            .lines()
            .any(|l| l.contains("acme-context") && l.contains("Disconnected")),
        "{}",
        show(&listed)
    );
    assert_eq!(auth.granted("refresh_token"), refreshed);

    // The same server as a user-settings entry without `oauth` (which
    // replaces the extension's entry whole): Qwen refreshes the stored
    // token and the model gets the profile text byte for byte.
    let settings = serde_json::json!({"mcpServers": {"acme-context": {
        "httpUrl": url, "timeout": 8000, "includeTools": ["context_search"],
    }}});
    std::fs::write(
        qwen.home.path().join(".qwen/settings.json"),
        settings.to_string(),
    )
    .unwrap();
    assert_qwen_answers(&qwen, &model, &trust, "acme-context");
    assert!(auth.granted("refresh_token") > refreshed);
    let (_, report) = super::doctor::doctor(&qwen, workspace.path(), &[], "acme-context");
    assert_eq!(
        report["extensions"][0]["server"]["defined_by"], "user settings",
        "{report:#}"
    );
    assert_eq!(auth.granted("authorization_code"), 1, "no new sign-in");
    let fresh = qwen.stored_token().unwrap();
    assert_ne!(
        fresh["token"]["accessToken"],
        stored["token"]["accessToken"]
    );

    // Tokens from the same server: another audience, no context.read; both
    // refused before any provider work. One for us with the scope passes.
    let provider_calls = upstream.requests().len();
    let other = auth.mint(OTHER_RESOURCE, "context.read");
    let (status, challenge) = call_with(&url, &tls.ca, &other);
    assert_eq!(status, 401, "another audience: {challenge:?}");
    assert!(challenge.unwrap().contains("invalid_token"));
    let unscoped = auth.mint(&url, "other.read");
    let (status, challenge) = call_with(&url, &tls.ca, &unscoped);
    assert_eq!(status, 403, "no context.read: {challenge:?}");
    assert!(challenge.unwrap().contains("insufficient_scope"));
    assert_eq!(
        upstream.requests().len(),
        provider_calls,
        "no provider work"
    );
    let scoped = auth.mint(&url, "context.read");
    assert_eq!(call_with(&url, &tls.ca, &scoped).0, 200);
    assert_eq!(upstream.requests().len(), provider_calls + 1);

    // Encrypted storage, as the seed tells administrators of shared machines.
    auth.set_ttl(3600);
    let encrypted = [("QWEN_CODE_FORCE_ENCRYPTED_FILE_STORAGE", "true")];
    let shared = Qwen::new();
    shared.install(&remote_dir);
    let token_file = shared.home.path().join(".qwen/mcp-oauth-tokens-v2.json");
    tokio::task::block_in_place(|| {
        shared.sign_in(&[&desktop[..], &encrypted[..]].concat(), |_| {
            token_file.is_file()
        })
    });
    let stored = std::fs::read_to_string(&token_file).unwrap();
    let parts: Vec<&str> = stored.trim().split(':').collect();
    assert_eq!(parts.len(), 3, "iv:tag:ciphertext, got {stored}");
    assert!(
        parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_hexdigit())),
        "{stored}"
    );
    assert!(!stored.contains("eyJ") && !stored.contains("accessToken"));
    assert!(
        !shared
            .home
            .path()
            .join(".qwen/mcp-oauth-tokens.json")
            .exists()
    );
    assert_qwen_answers(
        &shared,
        &model,
        &[&trust[..], &encrypted[..]].concat(),
        "acme-context",
    );
    let (_, report) = super::doctor::doctor(&shared, workspace.path(), &encrypted, "acme-context");
    assert_eq!(report["token_storage"]["encrypted"], true, "{report:#}");
    let ids = super::doctor::finding_ids(&report);
    assert!(!ids.iter().any(|id| id.starts_with("token")), "{report:#}");

    for replica in &replicas {
        assert!(!replica.stderr().contains(expired), "no token in the logs");
    }
}
