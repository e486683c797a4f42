//! Auto Recall: the same provider as Qwen Code's `UserPromptSubmit` command
//! hook (`dist/main --hook user-prompt-submit --repository-root DIR`).
//!
//! Qwen starts the hook once per submitted prompt, writes one JSON object
//! to its stdin (`hook_event_name`, `cwd`, `prompt`, `submitted_prompt`,
//! ...) and appends the `additionalContext` it prints to the user's
//! message. The contract is that of Qwen's own hook
//! (`@qwen-code/external-context-mem0`, `src/auto-recall.ts`):
//!
//! - only `submitted_prompt` is read (what the user typed, never the
//!   expanded `prompt`), from at most 1 MiB of input;
//! - only when `cwd` is inside the repository root (both resolved, the
//!   root a folder that is not a file system root);
//! - the query is the prompt without fenced code, credentials and secret
//!   shapes, at most 512 code points ([`query`]);
//! - one search, never retried, within the provider timeout (100 to 5000
//!   ms, default 1500; `--timeout-ms`), the whole hook within 6500 ms of
//!   Qwen's 8000 ms command timeout;
//! - out: `{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit",
//!   "additionalContext":ENVELOPE}}`, the envelope the `context_search` tool
//!   returns as text (at most 4000 UTF-16 units);
//! - **fails open**: anything else (no items, a failure of any kind, a
//!   command line it cannot use) prints `{}` and exits 0, with one redacted
//!   stderr line for a failure. A hook never blocks a prompt.

pub mod query;

use std::{
    fmt::Display,
    io::Write,
    path::{Path, PathBuf},
    time::Duration,
};

use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

use crate::{Provider, profile::Rendered};

/// The one hook event served.
pub const HOOK_EVENT: &str = "UserPromptSubmit";
/// The `--hook` value that selects it.
pub const HOOK_NAME: &str = "user-prompt-submit";
/// Most bytes of hook input read; more is no input.
pub const MAX_HOOK_INPUT_BYTES: u64 = 1024 * 1024;
/// The whole hook's time, inside Qwen's 8000 ms command timeout.
pub const HOOK_WALL_CLOCK: Duration = Duration::from_millis(6500);
/// The provider timeout when none is given.
pub const DEFAULT_HOOK_TIMEOUT_MS: u64 = 1500;
/// The provider timeout's bounds.
pub const HOOK_TIMEOUT_MS: std::ops::RangeInclusive<u64> = 100..=5000;
/// What a hook prints when it adds nothing.
pub const NOTHING: &str = "{}";

/// The hook's command line after `--hook`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookSettings {
    /// The folder a prompt's `cwd` must be inside.
    pub repository_root: PathBuf,
    /// The provider timeout.
    pub timeout: Duration,
}

impl HookSettings {
    /// Reads `user-prompt-submit --repository-root DIR [--timeout-ms N]`.
    pub fn from_args(args: &[String]) -> Result<HookSettings, String> {
        let mut args = args.iter().map(String::as_str);
        match args.next() {
            Some(HOOK_NAME) => {}
            Some(other) => return Err(format!("--hook {other}: the hook served is {HOOK_NAME}")),
            None => return Err(format!("--hook needs the hook's name: {HOOK_NAME}")),
        }
        let (mut root, mut timeout_ms) = (None, DEFAULT_HOOK_TIMEOUT_MS);
        while let Some(flag) = args.next() {
            let (name, inline) = match flag.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (flag, None),
            };
            let value = inline
                .or_else(|| args.next())
                .ok_or_else(|| format!("{name} needs a value"))?;
            match name {
                "--repository-root" => root = Some(PathBuf::from(value)),
                "--timeout-ms" => {
                    timeout_ms = value
                        .parse()
                        .ok()
                        .filter(|ms| HOOK_TIMEOUT_MS.contains(ms))
                        .ok_or(
                            "--timeout-ms must be a whole number of milliseconds from 100 to 5000",
                        )?;
                }
                _ => return Err(format!("unknown hook flag {name}")),
            }
        }
        let repository_root = root.ok_or("--hook needs --repository-root DIR")?;
        Ok(HookSettings {
            repository_root,
            timeout: Duration::from_millis(timeout_ms),
        })
    }
}

/// What of Qwen's hook input the hook uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookInput {
    /// What the user typed.
    pub submitted_prompt: String,
    /// The session's folder.
    pub cwd: String,
}

impl HookInput {
    /// The input of a `UserPromptSubmit` hook with a non-blank
    /// `submitted_prompt` and a `cwd`; anything else is none.
    pub fn parse(bytes: &[u8]) -> Option<HookInput> {
        let value: Value = serde_json::from_slice(bytes).ok()?;
        let field = |name: &str| value.get(name).and_then(Value::as_str);
        if field("hook_event_name") != Some(HOOK_EVENT) {
            return None;
        }
        let submitted_prompt = field("submitted_prompt")?;
        // JavaScript's `trim` (U+FEFF is white space, U+0085 is not).
        if crate::profile::query::collapse_whitespace(submitted_prompt).is_empty() {
            return None;
        }
        Some(HookInput {
            submitted_prompt: submitted_prompt.to_owned(),
            cwd: field("cwd")?.to_owned(),
        })
    }
}

/// The repository root resolved: an existing folder that is not a file
/// system root.
fn resolved_root(root: &Path) -> Option<PathBuf> {
    if !root.is_absolute() {
        return None;
    }
    let resolved = std::fs::canonicalize(root).ok()?;
    (resolved.is_dir() && resolved.parent().is_some()).then_some(resolved)
}

/// Whether `cwd` resolves to a folder inside `root` (resolved).
pub fn is_within(root: &Path, cwd: &str) -> bool {
    let cwd = Path::new(cwd);
    cwd.is_absolute()
        && std::fs::canonicalize(cwd).is_ok_and(|cwd| cwd.is_dir() && cwd.starts_with(root))
}

/// Why a hook run added nothing, for its one stderr line (never the
/// prompt, the query, the endpoint or the credential).
enum Nothing {
    /// Not a prompt for this hook, or outside the repository: no line.
    Quiet,
    /// A failure worth one line.
    Failed(String),
}

/// The hook's output for one run: `{}` or the context.
fn output(context: Option<String>) -> String {
    match context {
        None => NOTHING.to_owned(),
        Some(text) => json!({
            "hookSpecificOutput": {
                "hookEventName": HOOK_EVENT,
                "additionalContext": text,
            }
        })
        .to_string(),
    }
}

/// Runs the hook: reads stdin, prints the output, always succeeds (fail
/// open); `args` are those after `--hook`. A panic anywhere (the mapping's
/// constructor included) is one anonymous stderr line and `{}`.
#[allow(clippy::print_stderr)]
pub(crate) fn run<P, E>(name: &str, args: &[String], provider: impl FnOnce() -> Result<P, E>)
where
    P: Provider,
    E: Display,
{
    crate::install_panic_hook(name, crate::log::LogFormat::Plain);
    let recalled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        recall_in_time(args, provider)
    }));
    let context = match recalled.unwrap_or_else(|_| Err(Nothing::Failed("internal error".into()))) {
        Ok(context) => context,
        Err(Nothing::Quiet) => None,
        Err(Nothing::Failed(reason)) => {
            eprintln!("{name}: auto recall added nothing: {reason}");
            None
        }
    };
    let mut stdout = std::io::stdout().lock();
    // Nothing is left to do when stdout is gone.
    let _ = stdout.write_all(output(context).as_bytes());
    let _ = stdout.flush();
}

/// [`recall`] within the wall clock. The search runs on a worker thread of
/// its own, so that a mapping that blocks its thread (a bug, but the
/// promise holds) cannot stop the clocks; the process ends without waiting
/// for it.
fn recall_in_time<P, E>(
    args: &[String],
    provider: impl FnOnce() -> Result<P, E>,
) -> Result<Option<String>, Nothing>
where
    P: Provider,
    E: Display,
{
    let settings = HookSettings::from_args(args).map_err(Nothing::Failed)?;
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|error| Nothing::Failed(format!("cannot start the async runtime: {error}")))?;
    let recalled = tokio.block_on(async {
        tokio::time::timeout(HOOK_WALL_CLOCK, recall(&settings, provider))
            .await
            .unwrap_or_else(|_| Err(Nothing::Failed("the hook ran out of time".into())))
    });
    // A blocking stdin read or a blocked mapping may still be parked.
    tokio.shutdown_background();
    recalled
}

/// One Auto Recall: the context for this prompt, if any.
async fn recall<P, E>(
    settings: &HookSettings,
    provider: impl FnOnce() -> Result<P, E>,
) -> Result<Option<String>, Nothing>
where
    P: Provider,
    E: Display,
{
    let mut bytes = Vec::new();
    let read = tokio::io::stdin()
        .take(MAX_HOOK_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .await;
    if read.is_err() || bytes.len() as u64 > MAX_HOOK_INPUT_BYTES {
        return Err(Nothing::Quiet);
    }
    let input = HookInput::parse(&bytes).ok_or(Nothing::Quiet)?;
    let root = resolved_root(&settings.repository_root).ok_or_else(|| {
        Nothing::Failed("the repository root is not an absolute path to a folder".into())
    })?;
    if !is_within(&root, &input.cwd) {
        return Err(Nothing::Quiet);
    }
    let provider =
        provider().map_err(|error| Nothing::Failed(format!("configuration error: {error}")))?;
    let credentials = crate::client::configured_credentials();
    let Some(query) = query::auto_recall_query(&input.submitted_prompt, &credentials) else {
        return Err(Nothing::Quiet);
    };
    let query = crate::profile::query::normalize_query(&query).map_err(|_| Nothing::Quiet)?;
    let provider = std::sync::Arc::new(provider);
    let search = tokio::spawn(async move {
        provider
            .search(&query, crate::profile::PROVIDER_LIMIT)
            .await
    });
    let mut items = match tokio::time::timeout(settings.timeout, search).await {
        Err(_) => return Err(Nothing::Failed(crate::ProviderError::Timeout.to_string())),
        Ok(Err(_panicked)) => {
            return Err(Nothing::Failed(crate::ProviderError::Internal.to_string()));
        }
        Ok(Ok(Err(error))) => return Err(Nothing::Failed(format!("the search failed: {error}"))),
        Ok(Ok(Ok(items))) => items,
    };
    crate::profile::retain_valid(&mut items);
    if items.is_empty() {
        return Ok(None);
    }
    Ok(Some(Rendered::from_items(items).text().to_owned()))
}

#[cfg(test)]
mod tests;
