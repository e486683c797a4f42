//! The remote template's production files, judged by the real tools: the
//! Kubernetes manifests against the Kubernetes schemas (kubernetes-validate
//! from PyPI, offline), `nginx -t` and `caddy validate` (Debian) on the
//! proxy configurations; then nginx, with the generated configuration,
//! terminating TLS for three adapter replicas: `ecp check --url` proves the
//! profile through it over https, and a rolling restart of the replicas
//! under steady load cuts no call and runs none twice.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::Command,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use ecp::check::upstream::{Reply, Upstream};
use serde_json::{Value, json};

use crate::cli::{corpus, ecp_new};
use crate::jwt::{ISSUER, Signer, claims, jwks};
use crate::nginx::{Nginx, TestCa, free_port, run, scratch_paths};
use crate::remote::RemoteServer;

/// `ecp new acme-context --template remote --endpoint ENDPOINT` in `parent`.
fn remote_extension(parent: &Path, endpoint: &str) -> PathBuf {
    let dir = parent.join("acme-context");
    let output = ecp_new(&dir, &["--template", "remote", "--endpoint", endpoint]);
    assert!(output.status.success(), "{output:?}");
    dir
}

#[test]
fn kubernetes_manifests_pass_the_schemas_and_keep_the_shutdown_contract() {
    let temp = tempfile::tempdir().unwrap();
    let dir = remote_extension(temp.path(), "https://context.acme.example/mcp");
    let folder = dir.join("deploy/kubernetes");
    let mut files: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "deployment.yaml",
            "hpa.yaml",
            "networkpolicy.yaml",
            "pdb.yaml",
            "service.yaml"
        ]
    );
    let validate = crate::ci_tools::tool("kubernetes-validate");
    let validate = validate.to_str().unwrap();
    // The lifecycle sleep action needs 1.30; the schemas of 1.30 and of the
    // newest release both accept every manifest, strictly (no unknown field).
    for version in ["1.30.0", "1.33.0"] {
        let mut args = vec!["--strict", "-k", version];
        args.extend(files.iter().map(String::as_str));
        let said = run(validate, &args, &folder);
        assert_eq!(said.matches(" passed for resource ").count(), 5, "{said}");
    }
    // A negative control: the validator refuses what the schema does not allow.
    let deployment = std::fs::read_to_string(folder.join("deployment.yaml")).unwrap();
    let broken = temp.path().join("broken.yaml");
    std::fs::write(
        &broken,
        deployment.replace("replicas: 3", "replicas: three"),
    )
    .unwrap();
    let refused = Command::new(validate)
        .args(["--strict", "-k", "1.33.0"])
        .arg(&broken)
        .output()
        .unwrap();
    assert!(!refused.status.success());

    // The shutdown contract in numbers: the grace period covers the
    // preStop pause, the default 5 s budget and the 1 s drain margin.
    let number = |key: &str| -> u64 {
        deployment
            .lines()
            .find_map(|l| l.trim().strip_prefix(key))
            .unwrap_or_else(|| panic!("no {key} in {deployment}"))
            .trim()
            .parse()
            .unwrap()
    };
    let grace = number("terminationGracePeriodSeconds:");
    let pause = number("seconds:");
    assert!(grace > pause + 5 + 1, "grace {grace}, preStop {pause}");
    assert_eq!(number("replicas:"), 3);
    for needle in [
        "readOnlyRootFilesystem: true",
        "runAsNonRoot: true",
        "allowPrivilegeEscalation: false",
        "path: /healthz",
        "- \"https://context.acme.example/mcp\"",
        "secretKeyRef:",
    ] {
        assert!(deployment.contains(needle), "{needle}: {deployment}");
    }
    let policy = std::fs::read_to_string(folder.join("networkpolicy.yaml")).unwrap();
    let ports: Vec<&str> = policy
        .lines()
        .filter_map(|l| l.trim().strip_prefix("port: "))
        .collect();
    assert_eq!(ports, ["8080", "53", "53", "443"], "{policy}");
}

#[test]
fn nginx_and_caddy_accept_the_shipped_configurations() {
    let temp = tempfile::tempdir().unwrap();
    let dir = remote_extension(temp.path(), "https://context.acme.example/mcp");
    let tls = TestCa::new(temp.path(), "context.acme.example");
    let conf = temp.path().join("nginx.conf");
    let text = std::fs::read_to_string(dir.join("deploy/nginx.conf")).unwrap();
    let text = scratch_paths(&tls.use_in(&text, "context.acme.example"), temp.path());
    std::fs::write(&conf, text).unwrap();
    let said = run(
        "nginx",
        &[
            "-t",
            "-c",
            conf.to_str().unwrap(),
            "-g",
            &format!("pid {}/nginx.pid; error_log stderr;", temp.path().display()),
        ],
        temp.path(),
    );
    assert!(said.contains("test is successful"), "{said}");
    // Caddy reads its own configuration (and would obtain the certificate).
    let home = temp.path().join("caddy-home");
    std::fs::create_dir_all(&home).unwrap();
    let output = Command::new("caddy")
        .args(["validate", "--adapter", "caddyfile", "--config"])
        .arg(dir.join("deploy/Caddyfile"))
        .env("HOME", &home)
        .env("XDG_DATA_HOME", &home)
        .env("XDG_CONFIG_HOME", &home)
        .output()
        .expect("caddy runs (CI installs Debian's caddy)");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{said}");
    assert!(said.contains("Valid configuration"), "{said}");
    let containerfile = std::fs::read_to_string(dir.join("deploy/Containerfile")).unwrap();
    assert!(containerfile.contains("FROM gcr.io/distroless/cc-debian12:nonroot"));
    assert!(containerfile.contains("USER 65532:65532"));
}

/// A JWKS file of `signer` in `dir`.
fn jwks_file(dir: &Path, signer: &Signer) -> PathBuf {
    let path = dir.join("jwks.json");
    std::fs::write(&path, jwks(&[signer])).unwrap();
    path
}

fn https_client(tls: &TestCa) -> reqwest::Client {
    ecp::runtime::install_tls_provider();
    let ca = reqwest::Certificate::from_pem(&std::fs::read(&tls.ca).unwrap()).unwrap();
    reqwest::Client::builder()
        .no_proxy()
        .add_root_certificate(ca)
        .build()
        .unwrap()
}

fn tools_call(
    client: &reqwest::Client,
    url: &str,
    token: &str,
    query: &str,
) -> reqwest::RequestBuilder {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "context_search", "arguments": {"query": query}},
    });
    client
        .post(url)
        .bearer_auth(token)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .body(body.to_string())
}

/// What the TLS tests share: a remote extension generated for
/// `https://localhost:PORT/mcp`, a test CA for localhost, and a signer
/// whose key set the replicas read from `jwks`.
struct Stage {
    temp: tempfile::TempDir,
    port: u16,
    url: String,
    dir: PathBuf,
    tls: TestCa,
    signer: Signer,
    jwks: PathBuf,
}

fn stage() -> Stage {
    let temp = tempfile::tempdir().unwrap();
    let port = free_port();
    let url = format!("https://localhost:{port}/mcp");
    let dir = remote_extension(temp.path(), &url);
    let tls = TestCa::new(temp.path(), "localhost");
    let signer = Signer::es256("deploy");
    let jwks = jwks_file(temp.path(), &signer);
    Stage {
        temp,
        port,
        url,
        dir,
        tls,
        signer,
        jwks,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nginx_terminates_tls_for_three_replicas_and_the_profile_holds_through_it() {
    let Stage {
        temp,
        port,
        url,
        dir,
        tls,
        signer,
        jwks,
    } = stage();
    let corpus = corpus();
    let jwks_arg = jwks.to_str().unwrap();
    let args = [
        "--fixture",
        corpus.as_str(),
        "--resource-url",
        url.as_str(),
        "--authorization-server",
        ISSUER,
        "--jwks",
        jwks_arg,
    ];
    let mut replicas = Vec::new();
    for _ in 0..3 {
        replicas.push(RemoteServer::start(&args, &[]).await);
    }
    let addresses: Vec<String> = replicas
        .iter()
        .map(|r| r.origin.trim_start_matches("http://").to_owned())
        .collect();
    let _nginx = Nginx::start(
        &dir.join("deploy/nginx.conf"),
        temp.path(),
        port,
        &addresses,
        &tls,
    );

    // The whole profile, over https through nginx, with a token.
    let token = signer.token(&claims(&url));
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_ecp"))
        .args([
            "check",
            "--url",
            &url,
            "--token-env",
            "ECP_DEPLOY_TOKEN",
            "--format",
            "json",
        ])
        .env("ECP_DEPLOY_TOKEN", &token)
        .env("SSL_CERT_FILE", &tls.ca)
        .env_remove("HTTPS_PROXY")
        .env_remove("https_proxy")
        .output()
        .await
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| {
        panic!(
            "ecp check printed no report: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    // Every check a URL allows passes; the ones that need the upstream
    // ecp cannot set behind a URL are not exercised, so conformance is
    // not established (exit 2), never claimed.
    assert_eq!(report["failed"], 0, "{report:#}");
    assert_eq!(report["verdict"], "not-established", "{report:#}");
    assert_eq!(output.status.code(), Some(2), "{report:#}");

    // Without a token: the challenge names the metadata at the public
    // https origin, and nginx serves that metadata from the replicas.
    let client = https_client(&tls);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let refused = client
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let challenge = refused.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned();
    let metadata_url = format!("https://localhost:{port}/.well-known/oauth-protected-resource/mcp");
    assert!(
        challenge.contains(&format!("resource_metadata=\"{metadata_url}\"")),
        "{challenge}"
    );
    let metadata: Value = client
        .get(&metadata_url)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(metadata["resource"], url.as_str());
    // Anything else is not passed on.
    let other = client
        .get(format!("https://localhost:{port}/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 404);

    // Round robin reached every replica.
    for replica in &replicas {
        replica.settle().await;
        let mcp = replica
            .events("request")
            .iter()
            .filter(|e| e["route"] == "mcp")
            .count();
        assert!(mcp > 0, "a replica served nothing:\n{}", replica.stderr());
    }
}

/// What a call through the proxy came to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Answered,
    /// An HTTP status the client can see, before any provider work.
    Refused(u16),
    /// The transport failed or the answer was not a whole result.
    Cut(String),
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_restart_behind_nginx_cuts_no_call_and_runs_none_twice() {
    let Stage {
        temp,
        port,
        url,
        dir,
        tls,
        signer,
        jwks,
    } = stage();
    // A provider API that takes 150 ms, so calls are in flight when a
    // replica is told to stop; it answers with the query it was asked.
    let upstream = Upstream::start(|request| {
        let query = request.query();
        Reply::After(
            Duration::from_millis(150),
            Box::new(Reply::json(
                json!({"items": [{"id": "1", "content": query}]}).to_string(),
            )),
        )
    })
    .await;
    let jwks_arg = jwks.to_str().unwrap().to_owned();
    let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    // Every replica, first or replacement, runs with these.
    let args = [
        "--http",
        "--resource-url",
        url.as_str(),
        "--authorization-server",
        ISSUER,
        "--jwks",
        jwks_arg.as_str(),
    ];
    let env = [
        ("PROVIDER_CONTEXT_BASE_URL", upstream.base_url.as_str()),
        ("PROVIDER_CONTEXT_TOKEN", "upstream-token"),
    ];
    let mut replicas = Vec::new();
    for &port in &ports {
        replicas.push(RemoteServer::start_on(&args, &env, &format!("127.0.0.1:{port}")).await);
    }
    let addresses: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    let _nginx = Nginx::start(
        &dir.join("deploy/nginx.conf"),
        temp.path(),
        port,
        &addresses,
        &tls,
    );

    // Steady load: eight clients, one call after another, each query
    // unique: about three calls in flight on each replica at any moment.
    let client = https_client(&tls);
    let token = signer.token(&claims(&url));
    let outcomes: Arc<Mutex<BTreeMap<String, Outcome>>> = Arc::default();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut load = Vec::new();
    for worker in 0..8 {
        let (client, url, token) = (client.clone(), url.clone(), token.clone());
        let (outcomes, stop) = (outcomes.clone(), stop.clone());
        load.push(tokio::spawn(async move {
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                n += 1;
                let query = format!("call {worker}-{n}");
                let outcome = match tools_call(&client, &url, &token, &query).send().await {
                    Err(error) => Outcome::Cut(error.to_string()),
                    Ok(response) if response.status() != 200 => {
                        Outcome::Refused(response.status().as_u16())
                    }
                    Ok(response) => match response.json::<Value>().await {
                        Err(error) => Outcome::Cut(error.to_string()),
                        Ok(reply) => {
                            let content = &reply["result"]["structuredContent"]
                                ["untrusted_external_context"]["items"][0]["content"];
                            if content == query.as_str() && reply["result"]["isError"] != true {
                                Outcome::Answered
                            } else {
                                Outcome::Cut(reply.to_string())
                            }
                        }
                    },
                };
                outcomes.lock().unwrap().insert(query, outcome);
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;

    // Replace the replicas one at a time: SIGTERM, a new one on the same
    // address, ready when /healthz says so, the old one gone.
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let mut in_flight_at_stop = 0;
    for (index, &replica_port) in ports.iter().enumerate() {
        replicas[index].terminate();
        let mut new = None;
        let deadline = Instant::now() + Duration::from_secs(10);
        while new.is_none() {
            // The old listener is closed at once; until then the address
            // is taken, and the new process says so and exits.
            match RemoteServer::try_start_on(&args, &env, &format!("127.0.0.1:{replica_port}"))
                .await
            {
                Some(server) => new = Some(server),
                None => {
                    assert!(
                        Instant::now() < deadline,
                        "the old replica kept its address"
                    );
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
        let health = format!("http://127.0.0.1:{replica_port}/healthz");
        let ready_by = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(response) = http.get(&health).send().await
                && response.status() == 200
            {
                break;
            }
            assert!(
                Instant::now() < ready_by,
                "the new replica never became ready"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let status = replicas[index].wait(Duration::from_secs(10)).await;
        assert!(
            status.is_some_and(|s| s.success()),
            "{}",
            replicas[index].stderr()
        );
        replicas[index].settle().await;
        in_flight_at_stop += replicas[index]
            .events("draining")
            .first()
            .and_then(|e| e["in_flight"].as_u64())
            .unwrap_or_else(|| panic!("no draining event:\n{}", replicas[index].stderr()));
        replicas[index] = new.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    for task in load {
        task.await.unwrap();
    }

    let outcomes = outcomes.lock().unwrap().clone();
    let mut upstream_calls: BTreeMap<String, usize> = BTreeMap::new();
    for request in upstream.requests() {
        *upstream_calls.entry(request.query()).or_default() += 1;
    }
    let answered = outcomes
        .values()
        .filter(|o| **o == Outcome::Answered)
        .count();
    let refused: Vec<(&String, &Outcome)> = outcomes
        .iter()
        .filter(|(_, o)| matches!(o, Outcome::Refused(_)))
        .collect();
    let cut: Vec<(&String, &Outcome)> = outcomes
        .iter()
        .filter(|(_, o)| matches!(o, Outcome::Cut(_)))
        .collect();
    let twice: Vec<(&String, &usize)> = upstream_calls.iter().filter(|(_, n)| **n > 1).collect();
    let mut refusals: BTreeMap<String, usize> = BTreeMap::new();
    for (_, outcome) in &refused {
        *refusals.entry(format!("{outcome:?}")).or_default() += 1;
    }
    eprintln!(
        "rolling restart: {} calls, {in_flight_at_stop} in flight at the three SIGTERMs, {answered} answered, {} refused {refusals:?}, {} cut, {} run twice upstream",
        outcomes.len(),
        refused.len(),
        cut.len(),
        twice.len()
    );
    assert!(cut.is_empty(), "calls cut: {cut:?}");
    assert!(twice.is_empty(), "calls run twice upstream: {twice:?}");
    // A refusal came before any provider work.
    for (query, _) in &refused {
        assert!(
            !upstream_calls.contains_key(*query),
            "{query} was refused after reaching the provider"
        );
    }
    // Every answered call reached the provider exactly once.
    for (query, outcome) in &outcomes {
        if *outcome == Outcome::Answered {
            assert_eq!(upstream_calls.get(query), Some(&1), "{query}");
        }
    }
    assert!(answered >= 20, "only {answered} calls answered");
    // The drain was exercised: calls were running when replicas stopped.
    assert!(
        in_flight_at_stop > 0,
        "no call was in flight at any SIGTERM"
    );
}
