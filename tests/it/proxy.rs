//! The V1 binding behind a real forward proxy: Debian's tinyproxy (installed
//! by `.ci/run`), started on loopback by the test with Basic credentials.
//! The adapter (`ecp serve --http`, the runtime every generated extension
//! copies) never sends a plain-http loopback endpoint (and its token)
//! through a proxy, whatever the variables say. An `https` upstream
//! (nginx with a test CA in front of the recording upstream) is reached
//! directly and through tinyproxy's `CONNECT` tunnel, and refused when its
//! certificate is not trusted: by the Rust runtime here, and by the
//! TypeScript runtime's built bundle in `local_ts` (the same scenario,
//! [`https_upstream_through_tinyproxy`]).

use std::{
    net::TcpStream,
    process::{Child, Command, Output, Stdio},
    time::{Duration, Instant},
};

use ecp::{
    check::upstream::{Reply, Upstream},
    profile::SEARCH_FAILED,
};

use crate::nginx::{Nginx, TestCa};

const PROXY_USER: &str = "proxyuser";
const PROXY_PASSWORD: &str = "s3cretProxyPassword7f";

struct Tinyproxy {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Tinyproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port nothing listens on (a dead proxy, or one to start on).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start_tinyproxy() -> Tinyproxy {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let config = dir.path().join("tinyproxy.conf");
    std::fs::write(
        &config,
        format!(
            "Port {port}\nListen 127.0.0.1\nTimeout 30\nLogLevel Info\nMaxClients 20\n\
             Allow 127.0.0.1\nBasicAuth {PROXY_USER} {PROXY_PASSWORD}\nDisableViaHeader No\n"
        ),
    )
    .unwrap();
    let child = Command::new("tinyproxy")
        .args(["-d", "-c"])
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("tinyproxy runs (.ci/run installs Debian's tinyproxy)");
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "tinyproxy did not listen"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Tinyproxy {
        child,
        port,
        _dir: dir,
    }
}

/// The adapter `ecp call` starts: the Rust runtime's (`ecp serve --http`)
/// or a TypeScript extension's built `dist/main.js` (named `acme-context`).
#[derive(Clone, Copy)]
pub enum Adapter<'a> {
    Rust,
    TypeScript(&'a std::path::Path),
}

/// `ecp call` against `ecp serve --http` with the binding pointed at
/// `base_url` and the given proxy variables (nothing inherited).
async fn call_through(base_url: &str, proxy_env: &[(&str, String)]) -> Output {
    call_with(Adapter::Rust, base_url, proxy_env, None).await
}

/// `ecp call` against `adapter`, pointed at `base_url` with the given
/// proxy variables (nothing inherited), trusting the test CA at `ca` when
/// one is given (the Rust platform verifier reads `SSL_CERT_FILE` on
/// Linux, Node `NODE_EXTRA_CA_CERTS`).
async fn call_with(
    adapter: Adapter<'_>,
    base_url: &str,
    proxy_env: &[(&str, String)],
    ca: Option<&std::path::Path>,
) -> Output {
    let ecp = env!("CARGO_BIN_EXE_ecp");
    let mut command = Command::new(ecp);
    let prefix = match adapter {
        Adapter::Rust => {
            command.args(["call", "release train", "--", ecp, "serve", "--http"]);
            "PROVIDER_CONTEXT"
        }
        Adapter::TypeScript(bundle) => {
            command
                .args(["call", "release train", "--", "node"])
                .arg(bundle);
            "ACME_CONTEXT"
        }
    };
    command
        .env(format!("{prefix}_BASE_URL"), base_url)
        .env(format!("{prefix}_TOKEN"), "upstream-token-1234")
        .stdin(Stdio::null());
    for name in [
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "NO_PROXY",
        "no_proxy",
        "ALL_PROXY",
    ] {
        command.env_remove(name);
    }
    for (name, value) in proxy_env {
        command.env(name, value);
    }
    command
        .env_remove("SSL_CERT_FILE")
        .env_remove("SSL_CERT_DIR")
        .env_remove("NODE_EXTRA_CA_CERTS");
    if let Some(ca) = ca {
        command
            .env("SSL_CERT_FILE", ca)
            .env("NODE_EXTRA_CA_CERTS", ca);
    }
    tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap()
}

fn all_output(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loopback_http_endpoint_never_goes_through_a_proxy() {
    let proxy = start_tinyproxy();
    let upstream = Upstream::start(|_| {
        Reply::json(r#"{"items":[{"id":"release-train","content":"Trains leave on Tuesdays."}]}"#)
    })
    .await;
    let with_credentials = format!(
        "http://{PROXY_USER}:{PROXY_PASSWORD}@127.0.0.1:{}",
        proxy.port
    );

    // A plain http endpoint on loopback is never proxied (runtime 0.4.3):
    // its bearer token would cross a network in clear text. Whatever the
    // variables name (tinyproxy with its credentials, lower or upper case,
    // a proxy that refuses, one that is not there, NO_PROXY or not), the
    // request arrives directly: no Via, and the result comes back.
    let wrong = format!(
        "http://{PROXY_USER}:wrong-{PROXY_PASSWORD}@127.0.0.1:{}",
        proxy.port
    );
    let dead = format!(
        "http://{PROXY_USER}:{PROXY_PASSWORD}@127.0.0.1:{}",
        free_port()
    );
    let settings: Vec<Vec<(&str, String)>> = vec![
        vec![("HTTP_PROXY", with_credentials.clone())],
        vec![("http_proxy", with_credentials.clone())],
        vec![("HTTP_PROXY", wrong)],
        vec![("HTTP_PROXY", dead)],
        vec![
            ("HTTP_PROXY", with_credentials.clone()),
            ("NO_PROXY", "127.0.0.1".to_owned()),
        ],
        vec![
            ("HTTP_PROXY", with_credentials.clone()),
            ("HTTPS_PROXY", with_credentials.clone()),
            ("NO_PROXY", "other.example".to_owned()),
        ],
    ];
    let before = upstream.requests().len();
    for env in &settings {
        let output = call_through(&upstream.base_url, env).await;
        let shown = all_output(&output);
        assert!(output.status.success(), "{env:?}: {shown}");
        assert!(shown.contains("Trains leave on Tuesdays."), "{shown}");
        assert!(!shown.contains(PROXY_PASSWORD), "{shown}");
    }
    let direct = upstream.requests();
    assert_eq!(direct.len(), before + settings.len());
    assert!(
        direct[before..].iter().all(|r| r.header("via").is_none()
            && r.header("authorization") == Some("Bearer upstream-token-1234")),
        "direct, with the token: {:?}",
        direct[before..]
            .iter()
            .map(|r| &r.headers)
            .collect::<Vec<_>>()
    );
}

/// nginx terminating TLS for `localhost` (a certificate of the test CA) on
/// a free loopback port, in front of `upstream`.
fn https_front(dir: &std::path::Path, upstream: &Upstream) -> (Nginx, TestCa, u16) {
    let tls = TestCa::new(dir, "localhost");
    let port = crate::nginx::free_port();
    let origin = upstream.base_url.trim_end_matches('/');
    let conf = format!(
        "events {{}}\nhttp {{\n    access_log off;\n    server {{\n        listen 127.0.0.1:{port} ssl;\n        \
         ssl_certificate {};\n        ssl_certificate_key {};\n        \
         location / {{ proxy_pass {origin}; }}\n    }}\n}}\n",
        tls.cert.display(),
        tls.key.display()
    );
    let nginx = Nginx::run(&conf, dir, port);
    (nginx, tls, port)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_upstream_is_reached_directly_and_through_a_connect_tunnel() {
    https_upstream_through_tinyproxy(Adapter::Rust).await;
}

/// `adapter` against an https upstream: direct and trusted, refused
/// untrusted, through tinyproxy's tunnel with its credentials (and not
/// with wrong ones or a dead proxy), through `HTTP_PROXY` when
/// `HTTPS_PROXY` is unset, and direct past a dead proxy by `NO_PROXY`.
pub async fn https_upstream_through_tinyproxy(adapter: Adapter<'_>) {
    let dir = tempfile::tempdir().unwrap();
    let upstream = Upstream::start(|_| {
        Reply::json(r#"{"items":[{"id":"release-train","content":"Trains leave on Tuesdays."}]}"#)
    })
    .await;
    let (_nginx, tls, port) = https_front(dir.path(), &upstream);
    let base_url = format!("https://localhost:{port}");
    let proxy = start_tinyproxy();
    let tunnel = format!(
        "http://{PROXY_USER}:{PROXY_PASSWORD}@127.0.0.1:{}",
        proxy.port
    );
    let succeeded = |output: &Output| {
        assert!(output.status.success(), "{}", all_output(output));
        assert!(all_output(output).contains("Trains leave on Tuesdays."));
    };
    let failed = |output: &Output| {
        let shown = all_output(output);
        assert_eq!(output.status.code(), Some(1), "{shown}");
        assert!(shown.contains(SEARCH_FAILED), "{shown}");
        assert!(!shown.contains(PROXY_PASSWORD), "{shown}");
    };

    // Direct, trusting the test CA: TLS with SNI `localhost`, the request
    // arrives (through nginx) with the credential.
    succeeded(&call_with(adapter, &base_url, &[], Some(&tls.ca)).await);
    let seen = upstream.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].header("authorization"),
        Some("Bearer upstream-token-1234")
    );

    // Not trusting it (the system's roots only): refused before a request.
    failed(&call_with(adapter, &base_url, &[], None).await);
    assert_eq!(upstream.requests().len(), 1, "no request without trust");

    // Through tinyproxy's CONNECT tunnel: its credentials on the CONNECT
    // (wrong ones or a dead proxy fail, so the tunnel is really the path),
    // TLS end to end inside it.
    succeeded(
        &call_with(
            adapter,
            &base_url,
            &[("HTTPS_PROXY", tunnel.clone())],
            Some(&tls.ca),
        )
        .await,
    );
    assert_eq!(upstream.requests().len(), 2);
    let wrong = format!(
        "http://{PROXY_USER}:wrong-{PROXY_PASSWORD}@127.0.0.1:{}",
        proxy.port
    );
    let dead = format!("http://127.0.0.1:{}", free_port());
    for proxy_url in [wrong, dead] {
        failed(
            &call_with(
                adapter,
                &base_url,
                &[("HTTPS_PROXY", proxy_url)],
                Some(&tls.ca),
            )
            .await,
        );
    }
    assert_eq!(
        upstream.requests().len(),
        2,
        "a refused tunnel sends nothing"
    );
    // The HTTP proxy serves https when HTTPS_PROXY is unset; NO_PROXY
    // sends the request direct past a dead one.
    succeeded(&call_with(adapter, &base_url, &[("HTTP_PROXY", tunnel)], Some(&tls.ca)).await);
    let dead = format!("http://127.0.0.1:{}", free_port());
    succeeded(
        &call_with(
            adapter,
            &base_url,
            &[("HTTPS_PROXY", dead), ("NO_PROXY", "localhost".to_owned())],
            Some(&tls.ca),
        )
        .await,
    );
    assert_eq!(upstream.requests().len(), 4);
}
