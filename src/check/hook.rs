//! `ecp check --hook`: Qwen's Auto Recall `UserPromptSubmit` command hook,
//! judged as Qwen runs it: one process a prompt, the hook input as one JSON
//! object on stdin, its stdout read as the hook's output.
//!
//! The contract is that of Qwen's own hook (`@qwen-code/external-context-
//! mem0`, `src/auto-recall.ts`; `docs/qwen-client-facts.md`, "Auto
//! Recall"), which ecp's runtimes implement (`ecp_runtime`'s `hook`): only
//! `submitted_prompt` is read, only inside the repository root, without
//! fenced code, the credential and secret shapes, at most 512 code points,
//! one search and no retry, the profile's envelope as `additionalContext`,
//! `{}` and exit 0 on every failure, inside Qwen's 8000 ms hook timeout.
//!
//! Each run is armed on the scripted upstream with its own tag first
//! ([`Upstream::arm`]): the requests it made are told apart by order, so a
//! mapping may rewrite the query's words. Every check is decided only after
//! a baseline prompt found a context through the same upstream.

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    sync::Arc,
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use super::{
    CheckError, CheckReport, CheckResult, CheckSettings, Reach, Status, TOKEN_CANARY,
    catalogue::{Check, FAULTS, Group},
    embedded::Embedded,
    suite::{self, BODY_CANARY},
    target::{DEFAULT_CALL_TIMEOUT, Launch, Target},
    upstream::{SeenRequest, Upstream},
};

/// Qwen Code's timeout of a command hook (the managed registration's 8 s).
pub const QWEN_HOOK_TIMEOUT: Duration = Duration::from_millis(8000);
/// What the hook promises: its whole run inside this.
pub const HOOK_WALL_CLOCK: Duration = crate::runtime::hook::HOOK_WALL_CLOCK;

/// One run of the hook.
#[derive(Debug)]
struct HookRun {
    /// The exit status; `None` when it was killed at Qwen's timeout.
    status: Option<i32>,
    stdout: String,
    stderr: String,
    elapsed: Duration,
    /// The upstream requests it made.
    requests: Vec<SeenRequest>,
}

impl HookRun {
    /// Nothing searched and nothing added (`{}` and exit 0).
    fn quiet(&self) -> bool {
        self.requests.is_empty() && self.added_nothing()
    }

    /// `{}` and exit 0: nothing added, the prompt goes on.
    fn added_nothing(&self) -> bool {
        self.status == Some(0)
            && serde_json::from_str::<Value>(self.stdout.trim())
                .is_ok_and(|v| v.as_object().is_some_and(|o| o.is_empty()))
    }

    /// The `additionalContext` of a well-formed output, with exit 0.
    fn context(&self) -> Option<String> {
        let output: Value = serde_json::from_str(self.stdout.trim()).ok()?;
        let specific = output.get("hookSpecificOutput")?;
        (self.status == Some(0) && specific.get("hookEventName")? == "UserPromptSubmit").then(
            || {
                specific
                    .get("additionalContext")?
                    .as_str()
                    .map(str::to_owned)
            },
        )?
    }

    /// What it did, for a reason: its exit, output and requests, bounded.
    fn said(&self) -> String {
        let exit = match self.status {
            Some(code) => format!("exit {code}"),
            None => format!("killed after {} ms", self.elapsed.as_millis()),
        };
        let stdout: String = self.stdout.trim().chars().take(200).collect();
        format!(
            "{exit}, stdout {stdout:?}, {} upstream request(s)",
            self.requests.len()
        )
    }
}

/// The hook process as ecp starts it, the folder it is configured with,
/// and the scripted upstream it is pointed at.
struct Hook {
    launch: Launch,
    root: PathBuf,
    upstream: Upstream,
    /// Another folder, outside the root.
    outside: tempfile::TempDir,
    /// Keeps a root ecp made alive.
    _made_root: Option<tempfile::TempDir>,
    /// Whether the hook is given a credential (a service without
    /// authentication takes none: then no credential can be stripped).
    takes_credential: bool,
}

/// The most of a hook's stdout or stderr kept; the rest is read and
/// dropped, so that a hook that writes without end neither blocks nor
/// fills ecp's memory.
const MAX_OUTPUT_BYTES: u64 = 1024 * 1024;

/// What `pipe` carries, at most [`MAX_OUTPUT_BYTES`] of it, read to its end.
async fn bounded(pipe: Option<impl tokio::io::AsyncRead + Unpin>) -> String {
    use tokio::io::AsyncReadExt;
    let Some(mut pipe) = pipe else {
        return String::new();
    };
    let mut kept = Vec::new();
    let _ = (&mut pipe)
        .take(MAX_OUTPUT_BYTES)
        .read_to_end(&mut kept)
        .await;
    let _ = tokio::io::copy(&mut pipe, &mut tokio::io::sink()).await;
    String::from_utf8_lossy(&kept).into_owned()
}

/// The hook input Qwen Code 0.24.4 writes for a prompt.
fn input(cwd: &Path, prompt: &str, submitted: Option<&str>) -> Vec<u8> {
    let mut input = json!({
        "session_id": "ecp-check",
        "transcript_path": "",
        "cwd": cwd,
        "hook_event_name": "UserPromptSubmit",
        "timestamp": "2026-12-07T00:00:00.000Z",
        "prompt": prompt,
    });
    if let Some(submitted) = submitted {
        input["submitted_prompt"] = json!(submitted);
    }
    input.to_string().into_bytes()
}

impl Hook {
    /// One run with `stdin`, armed as its own call on the upstream (`fault`
    /// selects a fault of the catalogue).
    async fn run(&self, stdin: Vec<u8>, fault: Option<&str>) -> Result<HookRun, CheckError> {
        let marker = fault.unwrap_or("ecphook").to_owned();
        self.upstream.arm(Some((marker, None)));
        let before = self.upstream.requests().len();
        let mut command = self.launch.command(Stdio::piped());
        let started = Instant::now();
        let mut child = command
            .spawn()
            .map_err(|e| CheckError::Target(format!("cannot start the hook: {e}")))?;
        let writer = child.stdin.take();
        let write = async move {
            if let Some(mut writer) = writer {
                // A hook may stop reading (an oversized input): not ecp's failure.
                let _ = writer.write_all(&stdin).await;
            }
        };
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        let ran = async {
            let (_, stdout, stderr) = tokio::join!(write, bounded(stdout), bounded(stderr));
            (child.wait().await, stdout, stderr)
        };
        let waited = tokio::time::timeout(QWEN_HOOK_TIMEOUT, ran).await;
        let elapsed = started.elapsed();
        self.upstream.arm(None);
        let (status, stdout, stderr) = match waited {
            Ok((Ok(status), stdout, stderr)) => (status.code(), stdout, stderr),
            Ok((Err(e), ..)) => {
                return Err(CheckError::Target(format!("cannot run the hook: {e}")));
            }
            // Killed with everything it started, as Qwen kills a hook at
            // its timeout.
            Err(_) => {
                if let Some(pid) = child.id() {
                    crate::children::kill_tree(pid);
                }
                let _ = child.wait().await;
                (None, String::new(), String::new())
            }
        };
        // One run at a time: the requests since it started are its own.
        let requests = self.upstream.requests().split_off(before);
        Ok(HookRun {
            status,
            stdout,
            stderr,
            elapsed,
            requests,
        })
    }

    async fn prompt(&self, submitted: &str) -> Result<HookRun, CheckError> {
        self.run(input(&self.root, submitted, Some(submitted)), None)
            .await
    }
}

/// The results so far, every run kept for the time and redaction checks.
struct Judged<'a> {
    results: Vec<CheckResult>,
    runs: Vec<HookRun>,
    progress: suite::Progress<'a>,
}

impl Judged<'_> {
    fn push(&mut self, check: Check, status: Status, reason: String) {
        let result = CheckResult::new(check, status, reason);
        if let Some(progress) = &self.progress {
            progress(&result);
        }
        self.results.push(result);
    }

    fn not_exercised(&mut self, check: Check, why: String) {
        self.push(check, Status::NotExercised, why);
        if let Some(last) = self.results.last_mut() {
            last.exercise = Some(HOOK_EXERCISE);
        }
    }

    fn decide(&mut self, check: Check, problems: Vec<String>, passed: String) {
        match problems.is_empty() {
            true => self.push(check, Status::Pass, passed),
            false => self.push(check, Status::Fail, problems.join("; ")),
        }
    }
}

/// How often `request`'s target and body hold `text` as sent.
fn occurrences(request: &SeenRequest, text: &str) -> usize {
    request.path.matches(text).count() + request.body.matches(text).count()
}

/// Whether `request` carries `text`: in its target or body as sent, or
/// among its words (percent-decoded, lower-cased: [`SeenRequest::words`]).
fn carries(request: &SeenRequest, text: &str) -> bool {
    request.path.contains(text)
        || request.body.contains(text)
        || request
            .words()
            .iter()
            .any(|w| w == &text.to_ascii_lowercase())
}

/// The hook of `settings`, pointed at `upstream`.
fn hook_of(
    settings: &CheckSettings,
    repository_root: Option<&Path>,
    upstream: Upstream,
    base_path: &str,
) -> Result<Hook, CheckError> {
    let base_url = format!("{}{base_path}", upstream.base_url);
    let reach = super::resolve(
        settings,
        Some((&base_url, Some(TOKEN_CANARY))),
        DEFAULT_CALL_TIMEOUT,
    )?;
    let Reach::Spawn(mut launch) = reach else {
        return Err(CheckError::Settings(
            "--hook needs a hook ecp starts: an extension folder or archive (its entry point with --hook user-prompt-submit), or -- CMD".into(),
        ));
    };
    let temp = |what: &str| {
        tempfile::tempdir().map_err(|e| CheckError::Settings(format!("cannot make {what}: {e}")))
    };
    let (root, made_root) = match (&settings.target, repository_root) {
        (_, Some(root)) => (root.to_owned(), None),
        (Target::Extension(_), None) => {
            let made = temp("a repository root")?;
            (made.path().to_owned(), Some(made))
        }
        _ => {
            return Err(CheckError::Settings(
                "--hook -- CMD needs --repository-root DIR: the folder the hook's command is configured with (its cwd rule is judged against it)".into(),
            ));
        }
    };
    let root = std::fs::canonicalize(&root)
        .map_err(|e| CheckError::Settings(format!("--repository-root {}: {e}", root.display())))?;
    if matches!(settings.target, Target::Extension(_)) {
        let hook = ["--hook", "user-prompt-submit", "--repository-root"];
        launch.args.extend(hook.map(str::to_owned));
        launch.args.push(root.display().to_string());
    }
    let takes_credential = (launch.binding.as_ref()).is_none_or(|b| b.token.is_some());
    Ok(Hook {
        takes_credential,
        launch,
        root,
        upstream,
        outside: temp("a folder outside the repository root")?,
        _made_root: made_root,
    })
}

/// Runs the hook checks against the hook of `settings`.
pub async fn run(
    settings: &CheckSettings,
    repository_root: Option<&Path>,
    progress: suite::Progress<'_>,
) -> Result<CheckReport, CheckError> {
    let embedded = Embedded::get()?;
    if matches!(settings.upstream, super::UpstreamSource::Record { .. }) {
        return Err(CheckError::Settings(
            "--hook takes --cassette FILE, not --upstream: record the mapping's answers with `ecp check --upstream URL --record FILE` (the MCP server), then check its hook with --hook --cassette FILE".into(),
        ));
    }
    let (script, base_path, _) = super::script(settings, embedded).await?;
    let scripted = Arc::new(suite::Scripted {
        script,
        seed: settings.seed,
        mutations: settings.mutations,
    });
    let upstream = suite::start_upstream(scripted).await?;
    let hook = hook_of(settings, repository_root, upstream, &base_path)?;
    let mut judged = Judged {
        results: Vec::new(),
        runs: Vec::new(),
        progress,
    };
    judge(&hook, embedded, &mut judged).await?;
    Ok(CheckReport::of(&settings.target, judged.results, true))
}

/// The baseline, then every check.
async fn judge(
    hook: &Hook,
    embedded: &Embedded,
    judged: &mut Judged<'_>,
) -> Result<(), CheckError> {
    let baseline = hook.prompt("ecphook what is the deploy procedure").await?;
    let Some(context) = baseline.context() else {
        let why = format!(
            "the baseline prompt found no context through ecp's upstream ({}; stderr {:?})",
            baseline.said(),
            baseline.stderr.trim().chars().take(300).collect::<String>()
        );
        for check in Check::in_group(Group::Hook) {
            judged.not_exercised(check, why.clone());
        }
        judged.runs.push(baseline);
        return Ok(());
    };
    context_check(embedded, &context, judged);
    judged.runs.push(baseline);
    reads_submitted_prompt(hook, judged).await?;
    other_input(hook, judged).await?;
    repository_root(hook, judged).await?;
    // A mapping may send the credential in its request as it is meant to
    // (a query parameter): only more of it than the baseline sent is a leak.
    let baseline = judged
        .runs
        .first()
        .map(|b| b.requests.as_slice())
        .unwrap_or_default();
    let sent = baseline.iter().map(|r| occurrences(r, TOKEN_CANARY)).sum();
    // A hook that never sends the credential it is given (a service
    // without authentication, a command with no credential variable) has
    // none to strip.
    let uses_credential = baseline.iter().any(|r| {
        occurrences(r, TOKEN_CANARY) > 0 || r.headers.iter().any(|(_, v)| v.contains(TOKEN_CANARY))
    });
    let takes_credential = hook.takes_credential && uses_credential;
    stripping(hook, sent, takes_credential, judged).await?;
    query_bound(hook, judged).await?;
    faults(hook, judged).await?;
    in_time(judged);
    redaction(judged);
    Ok(())
}

/// How to exercise the hook checks when the baseline found nothing.
const HOOK_EXERCISE: &str = "point the hook at ecp's upstream: an extension folder or archive, or -- CMD that reads its endpoint and credential from *_BASE_URL and *_TOKEN (--base-url-env, --token-env) and the repository root given with --repository-root; --cassette FILE for another API";

fn context_check(embedded: &Embedded, context: &str, judged: &mut Judged<'_>) {
    let structured = crate::runtime::http::parse_json_like_javascript(context);
    let mut result =
        rmcp::model::CallToolResult::success(vec![rmcp::model::ContentBlock::text(context)]);
    result.structured_content = structured;
    let problems: Vec<String> = if result.structured_content.is_none() {
        vec!["additionalContext is not JSON".to_owned()]
    } else {
        suite::success_problems(&embedded.output_validator, &result)
            .into_iter()
            .map(|(check, problem)| format!("{problem} ({check})"))
            .collect()
    };
    judged.decide(
        Check::HookContext,
        problems,
        "the baseline's additionalContext is the profile's envelope text, schema-valid, escaped and bounded".into(),
    );
}

async fn reads_submitted_prompt(hook: &Hook, judged: &mut Judged<'_>) -> Result<(), CheckError> {
    let both = input(
        &hook.root,
        "ecpexpanded @file expansion",
        Some("ecpsubmitted what I typed"),
    );
    let both = hook.run(both, None).await?;
    let expanded_only = input(&hook.root, "ecpexpanded only the expansion", None);
    let expanded_only = hook.run(expanded_only, None).await?;
    let mut problems = Vec::new();
    if both.requests.iter().any(|r| carries(r, "ecpexpanded")) {
        problems.push("the expanded prompt's words reached the upstream".to_owned());
    }
    if !both.requests.iter().any(|r| carries(r, "ecpsubmitted")) {
        problems.push(format!(
            "the submitted prompt's words never reached the upstream ({})",
            both.said()
        ));
    }
    if !expanded_only.quiet() {
        problems.push(format!(
            "an input without submitted_prompt (a retry or continuation) was searched: {}",
            expanded_only.said()
        ));
    }
    judged.decide(
        Check::HookSubmittedPrompt,
        problems,
        "the submitted prompt was searched, the expanded one never, and no submitted_prompt added nothing".into(),
    );
    judged.runs.extend([both, expanded_only]);
    Ok(())
}

async fn other_input(hook: &Hook, judged: &mut Judged<'_>) -> Result<(), CheckError> {
    let mut other_event: Value =
        serde_json::from_slice(&input(&hook.root, "x", Some("ecphook x"))).unwrap_or_default();
    other_event["hook_event_name"] = json!("Stop");
    let oversized = input(
        &hook.root,
        "x",
        Some(&format!("ecphook {}", "a ".repeat(600 * 1024))),
    );
    let cases = [
        ("another event (Stop)", other_event.to_string().into_bytes()),
        ("input that is not JSON", b"{\"hook_event_name\": \"UserPromptSubmit\", \"cwd\"".to_vec()),
        ("a blank submitted_prompt", input(&hook.root, "x", Some(" \n\t"))),
        ("over 1 MiB of input", oversized),
        ("an input without cwd", json!({"hook_event_name": "UserPromptSubmit", "submitted_prompt": "ecphook x", "prompt": "x"}).to_string().into_bytes()),
    ];
    let problems = each_quiet(hook, cases, judged).await?;
    judged.decide(
        Check::HookOtherInput,
        problems,
        "another event, input that is not JSON, a blank prompt, over 1 MiB and no cwd each printed {} and searched nothing".into(),
    );
    Ok(())
}

/// Runs the hook on each input, every run kept; what each that was not
/// [`HookRun::quiet`] did, named.
async fn each_quiet(
    hook: &Hook,
    cases: impl IntoIterator<Item = (&'static str, Vec<u8>)>,
    judged: &mut Judged<'_>,
) -> Result<Vec<String>, CheckError> {
    let mut problems = Vec::new();
    for (what, stdin) in cases {
        let run = hook.run(stdin, None).await?;
        if !run.quiet() {
            problems.push(format!("{what}: {}", run.said()));
        }
        judged.runs.push(run);
    }
    Ok(problems)
}

async fn repository_root(hook: &Hook, judged: &mut Judged<'_>) -> Result<(), CheckError> {
    let parent = hook.root.join("..");
    let cases = [
        ("cwd a folder outside it", hook.outside.path().to_owned()),
        ("cwd its parent (root/..)", parent),
        ("cwd a relative path", PathBuf::from(".")),
        (
            "cwd a folder that does not exist",
            hook.root.join("ecp-missing-folder"),
        ),
    ];
    let cases = cases.map(|(what, cwd)| {
        let stdin = input(&cwd, "ecphook x", Some("ecphook outside"));
        (what, stdin)
    });
    let problems = each_quiet(hook, cases, judged).await?;
    judged.decide(
        Check::HookRepositoryRoot,
        problems,
        "a cwd outside the root, its parent, a relative and a missing one each printed {} and searched nothing".into(),
    );
    Ok(())
}

/// The secret shapes of the stripping check: what the prompt holds, and
/// the marker no request may carry.
const SECRET_SHAPES: &[(&str, &str, &str)] = &[
    ("fenced code", "```\nlet ecpfenced = 1;\n```", "ecpfenced"),
    ("an unclosed fence", "~~~ ecpunclosed tail", "ecpunclosed"),
    (
        "an assignment of a token",
        "api_key=ecpassigned",
        "ecpassigned",
    ),
    ("a bearer token", "Bearer ecpbearer.abc", "ecpbearer"),
    (
        "a JWT-like string",
        "ecpjwtaaaa.bbbbbbbbbb.cccccccccc",
        "ecpjwtaaaa",
    ),
    (
        "a 32-character token",
        "ecplongtoken0123456789abcdefghijklmn",
        "ecplongtoken0123456789abcdefghijklmn",
    ),
];

async fn stripping(
    hook: &Hook,
    sent: usize,
    takes_credential: bool,
    judged: &mut Judged<'_>,
) -> Result<(), CheckError> {
    let mut problems = Vec::new();
    let mut searched = 0;
    let with_credential = format!("ecphook deploy key {TOKEN_CANARY} rotation");
    let shapes = SECRET_SHAPES.iter().map(|(what, text, marker)| {
        (
            *what,
            format!("ecphook deploy {text} notes"),
            marker.to_string(),
        )
    });
    let credential =
        takes_credential.then(|| ("the credential", with_credential, TOKEN_CANARY.to_owned()));
    let cases = credential.into_iter().chain(shapes);
    for (what, prompt, marker) in cases {
        let run = hook.prompt(&prompt).await?;
        searched += usize::from(!run.requests.is_empty());
        let leaked = match marker == TOKEN_CANARY {
            true => {
                run.requests
                    .iter()
                    .map(|r| occurrences(r, &marker))
                    .sum::<usize>()
                    > sent
            }
            false => run.requests.iter().any(|r| carries(r, &marker)),
        };
        if leaked {
            problems.push(format!("{what} reached the upstream"));
        }
        judged.runs.push(run);
    }
    if searched == 0 && problems.is_empty() {
        let why = "no prompt of this check was searched, so what the hook sends could not be seen";
        judged.not_exercised(Check::HookStripping, why.into());
        return Ok(());
    }
    judged.decide(
        Check::HookStripping,
        problems,
        match takes_credential {
            true => format!("the credential and {} secret shapes never reached the upstream ({searched} of {} prompts searched the rest)", SECRET_SHAPES.len(), SECRET_SHAPES.len() + 1),
            false => format!("{} secret shapes never reached the upstream ({searched} of {} prompts searched the rest); the hook sent no credential in its own request, so none was offered", SECRET_SHAPES.len(), SECRET_SHAPES.len()),
        },
    );
    Ok(())
}

async fn query_bound(hook: &Hook, judged: &mut Judged<'_>) -> Result<(), CheckError> {
    let words: Vec<String> = (0..200).map(|n| format!("ecpw{n:03}")).collect();
    let prompt = format!("ecphook {}", words.join(" "));
    // The query keeps the first 512 code points: "ecphook " then words of
    // 7 and a space; a word that starts at 512 or later is never sent.
    let kept = crate::runtime::hook::auto_recall_query(&prompt, &[]).unwrap_or_default();
    let beyond: Vec<&String> = words
        .iter()
        .filter(|w| !kept.split(' ').any(|k| k.starts_with(w.as_str())))
        .collect();
    let run = hook.prompt(&prompt).await?;
    let mut problems = Vec::new();
    // The first word must be seen for the absence of the last to mean anything.
    match run.requests.first().filter(|r| carries(r, &words[0])) {
        None => {
            let why = format!(
                "the long prompt's first word never reached the upstream as a word ({}), so the bound could not be seen",
                run.said()
            );
            judged.not_exercised(Check::HookQueryBound, why);
            judged.runs.push(run);
            return Ok(());
        }
        Some(request) => {
            let sent: Vec<&&String> = beyond.iter().filter(|w| carries(request, w)).collect();
            if let (Some(first), Some(last)) = (sent.first(), sent.last()) {
                problems.push(format!(
                    "{} words past the first 512 code points reached the upstream ({first} to {last})",
                    sent.len()
                ));
            }
        }
    }
    judged.decide(
        Check::HookQueryBound,
        problems,
        format!(
            "a prompt of {} code points was searched with no word past the first 512",
            prompt.chars().count()
        ),
    );
    judged.runs.push(run);
    Ok(())
}

async fn faults(hook: &Hook, judged: &mut Judged<'_>) -> Result<(), CheckError> {
    let (mut open, mut retried, mut unserved) = (Vec::new(), Vec::new(), Vec::new());
    for (check, what) in FAULTS {
        let prompt = format!("{} what is the deploy procedure", check.id());
        let run = hook
            .run(input(&hook.root, &prompt, Some(&prompt)), Some(check.id()))
            .await?;
        if !run.added_nothing() {
            open.push(format!("{what}: {}", run.said()));
        }
        match run.requests.len() {
            0 => unserved.push(*what),
            1 => {}
            n => retried.push(format!("{what}: {n} requests")),
        }
        judged.runs.push(run);
    }
    // Whatever else a prompt met, the hook never blocks it: exit 0 with
    // `{}` or a context (exit 2 would block the prompt).
    let blocking = (judged.runs.iter())
        .filter(|r| r.status.is_some() && !r.added_nothing() && r.context().is_none())
        .map(|r| format!("a prompt of the other checks: {}", r.said()))
        .take(3);
    open.extend(blocking);
    let unserved_reason = (!unserved.is_empty()).then(|| {
        format!(
            "the hook made no request for {} (the fault is served only to a request): it could not be judged",
            unserved.join(", ")
        )
    });
    let passed = format!("each of {} faults was met with one request", FAULTS.len());
    decide_served(
        judged,
        Check::HookNoRetry,
        retried,
        passed,
        &unserved_reason,
    );
    let passed = format!(
        "each of {} faults (timeout, redirect, 429, 500, malformed, over 1 MiB, invalid UTF-8, slow body) printed {{}} and exited 0, as every other run exited 0 with {{}} or a context",
        FAULTS.len()
    );
    decide_served(judged, Check::HookFailOpen, open, passed, &unserved_reason);
    Ok(())
}

/// [`Judged::decide`], but not exercised when a fault was never served
/// and nothing failed.
fn decide_served(
    judged: &mut Judged<'_>,
    check: Check,
    problems: Vec<String>,
    passed: String,
    unserved: &Option<String>,
) {
    match unserved {
        Some(why) if problems.is_empty() => judged.not_exercised(check, why.clone()),
        _ => judged.decide(check, problems, passed),
    }
}

fn in_time(judged: &mut Judged<'_>) {
    let slowest = judged
        .runs
        .iter()
        .map(|r| r.elapsed)
        .max()
        .unwrap_or_default();
    let late: Vec<String> = (judged.runs.iter())
        .filter(|r| r.status.is_none())
        .map(|_| {
            format!(
                "a run was killed at Qwen's {} ms timeout",
                QWEN_HOOK_TIMEOUT.as_millis()
            )
        })
        .take(1)
        .collect();
    let passed = format!(
        "{} runs, the slowest {} ms (Qwen kills a hook at 8000 ms)",
        judged.runs.len(),
        slowest.as_millis()
    );
    judged.decide(Check::HookInTime, late, passed);
    if slowest > HOOK_WALL_CLOCK
        && let Some(last) = judged.results.last_mut()
        && last.status == Status::Pass
    {
        last.status = Status::Warn;
        last.reason = format!(
            "{}; over the 6500 ms the contract gives a hook",
            last.reason
        );
    }
}

fn redaction(judged: &mut Judged<'_>) {
    let secrets = [
        ("the credential", TOKEN_CANARY),
        ("an upstream body", BODY_CANARY),
        ("a prompt", "ecpsubmitted"),
        ("a secret of the prompt", "ecpassigned"),
    ];
    let mut problems = Vec::new();
    for (what, secret) in secrets {
        let place = judged.runs.iter().find_map(|run| {
            if run.stderr.contains(secret) {
                Some("stderr")
            } else if run.stdout.contains(secret) {
                Some("stdout")
            } else {
                None
            }
        });
        if let Some(place) = place {
            problems.push(format!("{what} appeared on {place}"));
        }
    }
    judged.decide(
        Check::HookRedaction,
        problems,
        format!(
            "{} runs: no prompt, credential or upstream body on stdout or stderr",
            judged.runs.len()
        ),
    );
}
