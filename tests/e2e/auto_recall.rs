//! Auto Recall in the real Qwen Code 0.24.4: `ecp managed --auto-recall`
//! writes the deployment, its launcher starts Qwen, and the generated
//! extension's entry point runs as Qwen's `UserPromptSubmit` hook. A
//! scripted model endpoint records what Qwen sends it; a scripted upstream
//! records what the hook searched.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
};

use ecp::check::upstream::{Reply, SeenRequest, Upstream};
use serde_json::{Value, json};

use super::{UPSTREAM_ITEMS, cache, expected_envelope, packaged, show, stream_body};

/// Qwen's wrapper around a hook's context in the user message.
const WRAPPER: &str = "<qwen:user-prompt-submit-context>";
/// A secret the prompt holds, which must never reach the upstream.
const SECRET: &str = "ecpE2eSecretValue";

/// A model that answers every request with one line of text.
fn text_model(request: &SeenRequest) -> Reply {
    if request.method == "GET" {
        return Reply::json(json!({"object": "list", "data": [{"id": "fake-model"}]}).to_string());
    }
    let message = json!({"role": "assistant", "content": "noted"});
    let body: Value = serde_json::from_str(&request.body).unwrap_or_default();
    if body["stream"] == true {
        return Reply::Typed {
            status: 200,
            content_type: "text/event-stream",
            body: stream_body(&message, "stop"),
        };
    }
    Reply::json(
        json!({"id": "x", "object": "chat.completion", "created": 0, "model": "fake-model",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
        .to_string(),
    )
}

/// The text of the last user message of the model's first chat request.
fn user_message(model: &Upstream) -> String {
    let request = (model.requests().into_iter())
        .find(|r| r.method == "POST")
        .expect("Qwen asked the model");
    let body: Value = serde_json::from_str(&request.body).unwrap();
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let user = messages.iter().rev().find(|m| m["role"] == "user").cloned();
    match user.map(|m| m["content"].clone()) {
        Some(Value::String(text)) => text,
        Some(Value::Array(parts)) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        other => panic!("no user message: {other:?}"),
    }
}

/// The deployment `ecp managed --auto-recall` writes for the packaged
/// extension, unpacked into `install`, pointed at `upstream`.
struct Deployment {
    dir: tempfile::TempDir,
    repository: PathBuf,
}

impl Deployment {
    fn write(upstream: &str) -> Deployment {
        let (_, archive) = packaged();
        let dir = tempfile::tempdir().unwrap();
        let install = dir.path().join("opt/acme-context");
        std::fs::create_dir_all(&install).unwrap();
        let unpacked = Command::new("tar")
            .arg("xzf")
            .arg(archive)
            .arg("-C")
            .arg(&install)
            .status()
            .unwrap();
        assert!(unpacked.success());
        let repository = dir.path().join("repo");
        std::fs::create_dir_all(repository.join("src")).unwrap();
        let secret = dir.path().join("acme.secret");
        std::fs::write(&secret, "e2e-upstream-token\n").unwrap();
        let qwen = dir.path().join("qwen");
        std::fs::write(
            &qwen,
            format!(
                "#!/bin/sh\nexec node '{}' \"$@\"\n",
                super::qwen_entry().display()
            ),
        )
        .unwrap();
        chmod(&qwen, 0o755);
        chmod(&secret, 0o600);
        let out = dir.path().join("deploy");
        let settings = out.join("system-settings.json");
        let managed = Command::new(env!("CARGO_BIN_EXE_ecp"))
            .args(["managed", "--extension"])
            .arg(archive)
            .arg("--out")
            .arg(&out)
            .arg("--install-dir")
            .arg(&install)
            .arg("--settings-path")
            .arg(&settings)
            .arg("--qwen")
            .arg(&qwen)
            .arg(format!("--env=ACME_CONTEXT_BASE_URL={upstream}"))
            .arg(format!(
                "--credential=ACME_CONTEXT_TOKEN={}",
                secret.display()
            ))
            .arg("--auto-recall")
            .arg("--repository-root")
            .arg(&repository)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(managed.status.success(), "{}", show(&managed));
        Deployment { dir, repository }
    }

    /// The launcher runs `qwen -p PROMPT` in `cwd` against `model`.
    fn ask(&self, model: &Upstream, cwd: &Path, prompt: &str) -> Output {
        let home = self.dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let model_url = format!("{}/v1", model.base_url);
        Command::new(self.dir.path().join("deploy/qwen-acme-context"))
            .args(["-p", prompt, "-o", "json"])
            .current_dir(cwd)
            .env("HOME", &home)
            .env("OPENAI_API_KEY", "dummy")
            .env("OPENAI_BASE_URL", model_url)
            .env("OPENAI_MODEL", "fake-model")
            .env_remove("QWEN_HOME")
            .env_remove("ACME_CONTEXT_BASE_URL")
            .env_remove("ACME_CONTEXT_TOKEN")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_managed_hook_adds_the_context_to_the_prompt_qwen_sends_the_model() {
    let _ = cache();
    let upstream = Upstream::start(|_| Reply::json(UPSTREAM_ITEMS)).await;
    let deployment = Deployment::write(&upstream.base_url);
    let settings =
        std::fs::read_to_string(deployment.dir.path().join("deploy/system-settings.json")).unwrap();
    assert!(settings.contains("--hook user-prompt-submit"), "{settings}");

    // Inside the repository root: one search, the secret and the fenced
    // code stripped, and the envelope in Qwen's wrapper in the user message.
    let model = Upstream::start(text_model).await;
    let prompt = format!("how do we deploy? api_key={SECRET}\n```\nfenced ecpFencedCode\n```");
    let cwd = deployment.repository.join("src");
    let asked = tokio::task::block_in_place(|| deployment.ask(&model, &cwd, &prompt));
    assert!(asked.status.success(), "{}", show(&asked));
    let searched = upstream.requests();
    assert_eq!(
        searched.len(),
        1,
        "one prompt, one search: {}",
        show(&asked)
    );
    let query = searched[0].query();
    assert_eq!(query, "how do we deploy?", "the query the hook sent");
    assert!(!searched[0].body.contains(SECRET) && !searched[0].path.contains(SECRET));
    assert_eq!(
        searched[0].header("authorization"),
        Some("Bearer e2e-upstream-token")
    );
    let message = user_message(&model);
    assert!(message.contains(WRAPPER), "no hook context in: {message}");
    assert!(
        message.contains(&expected_envelope()),
        "the envelope is not in the user message: {message}"
    );

    // Outside the repository root: no search, nothing added.
    let elsewhere = tempfile::tempdir().unwrap();
    let model = Upstream::start(text_model).await;
    let asked = tokio::task::block_in_place(|| {
        deployment.ask(&model, elsewhere.path(), "how do we deploy?")
    });
    assert!(asked.status.success(), "{}", show(&asked));
    assert_eq!(
        upstream.requests().len(),
        1,
        "a prompt outside the root searched"
    );
    assert!(!user_message(&model).contains(WRAPPER));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_of_the_upstream_adds_nothing_and_qwen_goes_on() {
    let _ = cache();
    let faults: Vec<(&str, Reply)> = vec![
        ("500", Reply::status(500, "{\"error\":\"down\"}")),
        ("429", Reply::status(429, "{}")),
        ("malformed", Reply::json("{\"items\": [")),
        (
            "slow",
            Reply::After(
                std::time::Duration::from_secs(30),
                Box::new(Reply::json(UPSTREAM_ITEMS)),
            ),
        ),
    ];
    for (what, reply) in faults {
        let upstream = Upstream::start(move |_| reply.clone()).await;
        let deployment = Deployment::write(&upstream.base_url);
        let model = Upstream::start(text_model).await;
        let cwd = deployment.repository.clone();
        let started = std::time::Instant::now();
        let asked =
            tokio::task::block_in_place(|| deployment.ask(&model, &cwd, "how do we deploy?"));
        assert!(asked.status.success(), "{what}: {}", show(&asked));
        assert!(
            !user_message(&model).contains(WRAPPER),
            "{what}: context added"
        );
        assert_eq!(
            upstream.requests().len(),
            1,
            "{what}: one request, no retry"
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "{what}: Qwen waited"
        );
    }
}

/// What Qwen really runs when a user's settings register the hook beside
/// the installed extension, and what `ecp doctor` says of it: both search
/// each prompt (duplicate-retrieval); `mcp.excluded` leaves the hook alone;
/// `disableAllHooks` leaves the tool alone (hooks-disabled).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_names_duplicate_retrieval_and_disabled_hooks_as_qwen_runs_them() {
    let _ = cache();
    let (_, archive) = packaged();
    let qwen = super::Qwen::new();
    qwen.install(archive);
    let upstream = Upstream::start(|_| Reply::json(UPSTREAM_ITEMS)).await;
    let entry = qwen
        .home
        .path()
        .join(".qwen/extensions/acme-context/dist/main");
    let workspace = qwen.home.path().to_owned();
    let settings_path = qwen.home.path().join(".qwen/settings.json");
    let settings = |extra: Value| {
        let mut settings = json!({"hooks": {"UserPromptSubmit": [{"matcher": "*", "hooks": [{
            "type": "command", "timeout": 8, "name": "acme-context-auto-recall",
            "command": format!("exec '{}' --hook user-prompt-submit --repository-root '{}'", entry.display(), workspace.display()),
        }]}]}});
        for (key, value) in extra.as_object().unwrap() {
            settings[key] = value.clone();
        }
        std::fs::write(&settings_path, settings.to_string()).unwrap();
    };
    let env = [
        ("ACME_CONTEXT_BASE_URL", upstream.base_url.as_str()),
        ("ACME_CONTEXT_TOKEN", "e2e-token"),
    ];
    // (settings, searches by the hook, by the tool, doctor's findings)
    let cases = [
        (json!({}), 1, 1, vec!["duplicate-retrieval"]),
        (json!({"mcp": {"excluded": ["acme-context"]}}), 1, 0, vec![]),
        (
            json!({"disableAllHooks": true}),
            0,
            1,
            vec!["hooks-disabled"],
        ),
    ];
    for (extra, by_hook, by_tool, findings) in cases {
        settings(extra.clone());
        let before = upstream.requests().len();
        let model = Upstream::start(super::fake_model).await;
        let asked = tokio::task::block_in_place(|| qwen.ask(&model, &env));
        assert!(asked.status.success(), "{extra}: {}", show(&asked));
        let searched = upstream.requests().split_off(before);
        let count = |query: &str| searched.iter().filter(|r| r.query() == query).count();
        assert_eq!(
            count("search the handbook"),
            by_hook,
            "{extra}: the hook's searches"
        );
        assert_eq!(
            count("deployment policy"),
            by_tool,
            "{extra}: the tool's searches"
        );
        let (_, report) = super::doctor::doctor(&qwen, &workspace, &env, "acme-context");
        let mut ids: Vec<&str> = (report["findings"].as_array().into_iter().flatten())
            .filter_map(|f| f["id"].as_str())
            .collect();
        ids.sort();
        assert_eq!(ids, findings, "{extra}: {report:#}");
    }
}
