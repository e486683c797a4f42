//! Auto Recall: the `UserPromptSubmit` command hooks of the settings that
//! run an External Context provider (an ecp runtime's `--hook
//! user-prompt-submit`, Qwen's own `auto-recall.js`), and what keeps Qwen
//! from running them as their deployment intends: hooks turned off, the
//! same provider's MCP server also active (two searches a prompt), an
//! entry point or configuration missing or writable by others, a
//! repository root that is not one, speculative execution on.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::{Code, ExtensionReport, Finding};
use crate::qwen::machine::{Layer, Machine};

/// The variable Qwen's own hook reads its instance file from.
pub const MEM0_CONFIG_ENV: &str = "QWEN_EXTERNAL_CONTEXT_MEM0_CONFIG";
/// The most of an instance file read (Qwen's package reads 64 KiB).
const MAX_CONFIG_BYTES: u64 = 64 * 1024;

/// One Auto Recall hook Qwen will run here.
#[derive(Debug, Clone, Serialize)]
pub struct AutoRecall {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The settings layer that registers it.
    pub defined_by: String,
    pub file: PathBuf,
    pub command: String,
    /// The file it runs (the script, for `node SCRIPT`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry_point: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repository_root: Option<PathBuf>,
    /// Whether a session in this workspace is searched for.
    pub searches_here: bool,
}

/// The words of a hook's command, as sh (or PowerShell) reads them, with
/// a leading `exec`/`&` and `env NAME=VALUE` assignments left out.
pub fn command_words(command: &str, powershell: bool) -> Vec<String> {
    let mut words = Vec::new();
    let (mut word, mut quote, mut started) = (String::new(), None::<char>, false);
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => {
                // PowerShell doubles a single quote inside single quotes.
                if powershell && q == '\'' && chars.peek() == Some(&'\'') {
                    chars.next();
                    word.push('\'');
                } else {
                    quote = None;
                }
            }
            (Some('"'), '\\') if !powershell => word.extend(chars.next()),
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => (quote, started) = (Some(c), true),
            (None, '\\') if !powershell => {
                (word, started) = (
                    word + &chars.next().map(String::from).unwrap_or_default(),
                    true,
                )
            }
            (None, c) if c.is_whitespace() => {
                if started {
                    words.push(std::mem::take(&mut word));
                }
                started = false;
            }
            (None, c) => (word, started) = (word + &c.to_string(), true),
        }
    }
    if started {
        words.push(word);
    }
    // `exec`, `&`, and `env` (by its file name, `/usr/bin/env` too) with
    // its options and assignments come before the program.
    let mut skip = 0;
    let mut in_env = false;
    for word in &words {
        let is_env = Path::new(word).file_name().is_some_and(|n| n == "env");
        match word.as_str() {
            "exec" | "&" => {}
            _ if is_env => in_env = true,
            _ if in_env && (word.starts_with('-') || is_assignment(word)) => {}
            _ if is_assignment(word) => {}
            _ => break,
        }
        skip += 1;
    }
    words.split_off(skip)
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=')
        .is_some_and(|(name, _)| crate::managed::shell_name(name))
}

/// Whether a command runs an Auto Recall hook, and whose: ecp's runtimes
/// (`--hook user-prompt-submit`) or Qwen's package (`auto-recall.js`).
fn is_auto_recall(words: &[String]) -> bool {
    words
        .windows(2)
        .any(|w| w[0] == "--hook" && w[1] == "user-prompt-submit")
        || words.iter().any(|w| w.ends_with("auto-recall.js"))
}

/// The file a hook runs: the program, or the script `node` runs.
fn entry_point(words: &[String]) -> Option<PathBuf> {
    let program = words.first()?;
    let name = Path::new(program).file_name()?.to_string_lossy();
    let runs = if matches!(name.as_ref(), "node" | "node.exe") {
        // The script is the first word after node's own options.
        words[1..].iter().find(|w| !w.starts_with('-'))?
    } else {
        program
    };
    Some(PathBuf::from(runs)).filter(|p| p.is_absolute())
}

/// Whether an ecp runtime's hook command puts `--hook` first after the
/// entry point (and node's options): the runtime reads it nowhere else,
/// and reads other first arguments as `--listen` flags.
fn hook_flag_first(words: &[String]) -> bool {
    let Some(program) = words.first() else {
        return false;
    };
    let node = Path::new(program)
        .file_name()
        .is_some_and(|n| n == "node" || n == "node.exe");
    let mut rest = words[1..].iter().skip_while(|w| node && w.starts_with('-'));
    if node {
        rest.next(); // the script
    }
    rest.next().is_some_and(|w| w == "--hook")
}

/// `--repository-root DIR` of an ecp runtime's hook.
fn root_flag(words: &[String]) -> Option<PathBuf> {
    words
        .iter()
        .enumerate()
        .find_map(|(at, w)| match w.strip_prefix("--repository-root") {
            Some("") => words.get(at + 1).map(PathBuf::from),
            Some(rest) => rest.strip_prefix('=').map(PathBuf::from),
            None => None,
        })
}

/// The Auto Recall hooks of the settings Qwen reads here, in its order.
fn registered(machine: &Machine) -> Vec<(AutoRecall, Vec<String>)> {
    let mut found = Vec::new();
    for layer in [
        Layer::SystemDefaults,
        Layer::User,
        Layer::Workspace,
        Layer::System,
    ] {
        if layer == Layer::Workspace && !machine.trusted {
            continue;
        }
        let Some(file) = machine.settings_file(layer) else {
            continue;
        };
        let groups = file
            .settings
            .get("hooks")
            .and_then(|h| h.get("UserPromptSubmit"));
        let hooks = (groups.and_then(Value::as_array).into_iter().flatten())
            .filter_map(|group| group.get("hooks")?.as_array())
            .flatten();
        for hook in hooks.filter(|h| h.get("type").and_then(Value::as_str) == Some("command")) {
            let command = hook.get("command").and_then(Value::as_str).unwrap_or("");
            let powershell = hook.get("shell").and_then(Value::as_str) == Some("powershell");
            let words = command_words(command, powershell);
            if !is_auto_recall(&words) {
                continue;
            }
            found.push((
                AutoRecall {
                    name: hook.get("name").and_then(Value::as_str).map(str::to_owned),
                    defined_by: layer.describe().to_owned(),
                    file: file.path.clone(),
                    command: crate::text::outside::mask_secrets(command),
                    entry_point: entry_point(&words),
                    repository_root: root_flag(&words),
                    searches_here: false,
                },
                words,
            ));
        }
    }
    found
}

/// The hooks, and the findings about them.
pub fn examine(machine: &Machine, servers: &[ExtensionReport]) -> (Vec<AutoRecall>, Vec<Finding>) {
    let mut hooks = Vec::new();
    let mut findings = Vec::new();
    let off = machine.merged.get("disableAllHooks") == Some(&Value::Bool(true));
    let off = off || !machine.quiet_modes.is_empty();
    for (mut hook, words) in registered(machine) {
        let mem0 = words.iter().any(|w| w.ends_with("auto-recall.js"));
        if mem0 {
            hook.repository_root = mem0_root(machine, &hook, &mut findings);
        }
        if !mem0 && !hook_flag_first(&words) {
            findings.push(Finding {
                id: Code::HookCommand,
                message: format!(
                    "{} runs {} with `--hook` not as its first argument: the runtime then reads its arguments as --listen flags and exits 2, which blocks every prompt",
                    hook.name.as_deref().unwrap_or("the Auto Recall hook"),
                    hook.command
                ),
                fix: "put `--hook user-prompt-submit` right after the entry point, as `ecp managed --auto-recall` writes it".to_owned(),
            });
        }
        root_findings(machine, &mut hook, mem0, &mut findings);
        entry_findings(&hook, &mut findings);
        // A hook Qwen does not run searches nothing twice.
        if !off {
            duplicate_findings(machine, &hook, servers, &mut findings);
        }
        hooks.push(hook);
    }
    if hooks.is_empty() {
        return (hooks, findings);
    }
    if off {
        let why = if machine.quiet_modes.is_empty() {
            "`disableAllHooks` is true in the settings".to_owned()
        } else {
            format!("{} is set", machine.quiet_modes.join(" and "))
        };
        findings.push(Finding {
            id: Code::HooksDisabled,
            message: format!("{why}: Qwen runs no hook, so Auto Recall ({}) never searches", names(&hooks)),
            fix: "remove `disableAllHooks` (or set it false in the system settings, as `ecp managed --auto-recall` writes it), and start Qwen without safe or bare mode".to_owned(),
        });
    }
    if machine
        .merged
        .get("ui")
        .and_then(|u| u.get("enableSpeculation"))
        == Some(&Value::Bool(true))
    {
        findings.push(Finding {
            id: Code::SpeculationOn,
            message: "`ui.enableSpeculation` is on: Qwen runs suggested prompts before they are submitted; the Auto Recall deployment keeps it off".to_owned(),
            fix: "set `ui.enableSpeculation` to false in the system settings (`ecp managed --auto-recall` writes it)".to_owned(),
        });
    }
    (hooks, findings)
}

fn names(hooks: &[AutoRecall]) -> String {
    let names: Vec<&str> = hooks
        .iter()
        .map(|h| h.name.as_deref().unwrap_or("unnamed"))
        .collect();
    names.join(", ")
}

fn root_findings(
    machine: &Machine,
    hook: &mut AutoRecall,
    mem0: bool,
    findings: &mut Vec<Finding>,
) {
    let label = hook
        .name
        .clone()
        .unwrap_or_else(|| "the Auto Recall hook".to_owned());
    let problem = match &hook.repository_root {
        None if mem0 => return,
        None => Some("has no --repository-root: it searches for no session".to_owned()),
        Some(root) if !root.is_absolute() => Some(format!(
            "has the relative repository root {}",
            root.display()
        )),
        Some(root) => match std::fs::canonicalize(root) {
            Ok(resolved) if resolved.is_dir() && resolved.parent().is_some() => {
                let workspace = std::fs::canonicalize(&machine.workspace).unwrap_or_default();
                hook.searches_here = workspace.starts_with(&resolved);
                None
            }
            Ok(_) => Some(format!(
                "has the repository root {}, which is a file system root or no folder",
                root.display()
            )),
            Err(_) => Some(format!(
                "has the repository root {}, which does not exist here: it searches for no session",
                root.display()
            )),
        },
    };
    if let Some(problem) = problem {
        findings.push(Finding {
            id: Code::HookRepositoryRoot,
            message: format!("{label} {problem}"),
            fix: "give the hook the absolute folder of the repository whose sessions it serves (`ecp managed --auto-recall --repository-root DIR`)".to_owned(),
        });
    }
}

/// Whether `path` can be written by its group or others (Unix).
#[cfg(unix)]
fn writable_by_others(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o022 != 0)
}

#[cfg(not(unix))]
fn writable_by_others(_: &Path) -> bool {
    false
}

fn entry_findings(hook: &AutoRecall, findings: &mut Vec<Finding>) {
    let Some(entry) = &hook.entry_point else {
        return;
    };
    let label = hook
        .name
        .clone()
        .unwrap_or_else(|| "the Auto Recall hook".to_owned());
    if !entry.is_file() {
        findings.push(Finding {
            id: Code::HookEntryMissing,
            message: format!("{label} runs {}, which does not exist here: every prompt's hook fails", entry.display()),
            fix: "unpack the release archive where the hook's command points (the managed README says where)".to_owned(),
        });
        return;
    }
    let folder = entry.parent().unwrap_or(Path::new("/"));
    if let Some(open) = [entry.as_path(), folder]
        .into_iter()
        .find(|p| writable_by_others(p))
    {
        findings.push(Finding {
            id: Code::HookEntryWritable,
            message: format!("{label} runs {}, and {} can be written by others: whoever writes it runs code with every prompt", entry.display(), open.display()),
            fix: format!("make it root-owned and not group- or world-writable (`chmod go-w {}`)", open.display()),
        });
    }
}

/// Qwen's hook: its instance file (`QWEN_EXTERNAL_CONTEXT_MEM0_CONFIG`),
/// which must exist, not be writable by others, and name the root.
fn mem0_root(machine: &Machine, hook: &AutoRecall, findings: &mut Vec<Finding>) -> Option<PathBuf> {
    let label = hook
        .name
        .clone()
        .unwrap_or_else(|| "Qwen's Auto Recall hook".to_owned());
    let path = machine
        .process_env
        .iter()
        .any(|n| n == MEM0_CONFIG_ENV)
        .then(|| std::env::var_os(MEM0_CONFIG_ENV).map(PathBuf::from))
        .flatten();
    let Some(path) = path.filter(|p| p.is_absolute() && p.is_file()) else {
        findings.push(Finding {
            id: Code::HookConfigMissing,
            message: format!("{label} reads its instance file from {MEM0_CONFIG_ENV}, which does not name an absolute file here: it adds nothing to any prompt"),
            fix: format!("export {MEM0_CONFIG_ENV} (an absolute path to a schemaVersion 3 instance file) in the environment Qwen starts with"),
        });
        return None;
    };
    if writable_by_others(&path) {
        findings.push(Finding {
            id: Code::HookEntryWritable,
            message: format!("{label}'s instance file {} can be written by others: whoever writes it picks the endpoint every prompt goes to", path.display()),
            fix: format!("chmod go-w {}", path.display()),
        });
    }
    let text = crate::files::read_text(&path, None, MAX_CONFIG_BYTES).ok()?;
    let value: Value = serde_json::from_str(&text).ok()?;
    value
        .pointer("/autoRecall/repositoryRoot")
        .and_then(Value::as_str)
        .map(PathBuf::from)
}

fn duplicate_findings(
    machine: &Machine,
    hook: &AutoRecall,
    servers: &[ExtensionReport],
    findings: &mut Vec<Finding>,
) {
    let excluded = machine.strings("/mcp/excluded");
    let running = servers.iter().filter(|s| s.active && s.server.is_some());
    for server in running {
        let name = server.server.as_ref().map_or(&server.name, |s| &s.name);
        if excluded.iter().any(|e| e == name) {
            continue;
        }
        let named = hook.name.as_deref() == Some(&format!("{name}-auto-recall"));
        let inside = !server.folder.as_os_str().is_empty()
            && hook
                .entry_point
                .as_ref()
                .is_some_and(|e| e.starts_with(&server.folder));
        if named || inside {
            findings.push(Finding {
                id: Code::DuplicateRetrieval,
                message: format!(
                    "{} and the MCP server {name} of the same provider are both active: each prompt is searched twice (the hook before it, the tool when the model calls it)",
                    hook.name.as_deref().unwrap_or("the Auto Recall hook")
                ),
                fix: format!("run one of them: exclude the server (`\"mcp\": {{\"excluded\": [\"{name}\"]}}` in the system settings, as `ecp managed --auto-recall` writes it), or remove the hook"),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_read_as_their_shell_reads_them() {
        let words = command_words(
            "exec '/opt/acme ctx/dist/main' --hook user-prompt-submit --repository-root '/srv/it'\\''s'",
            false,
        );
        assert_eq!(
            words,
            [
                "/opt/acme ctx/dist/main",
                "--hook",
                "user-prompt-submit",
                "--repository-root",
                "/srv/it's"
            ]
        );
        assert!(is_auto_recall(&words));
        assert_eq!(
            entry_point(&words),
            Some(PathBuf::from("/opt/acme ctx/dist/main"))
        );
        assert_eq!(root_flag(&words), Some(PathBuf::from("/srv/it's")));
        let words = command_words("& 'C:\\node.exe' 'C:\\x''s\\auto-recall.js'", true);
        assert_eq!(words, ["C:\\node.exe", "C:\\x's\\auto-recall.js"]);
        assert!(is_auto_recall(&words));
        let words = command_words(
            "exec env A=1 \"/usr/bin/node\" /opt/m/dist/auto-recall.js",
            false,
        );
        assert_eq!(
            entry_point(&words),
            Some(PathBuf::from("/opt/m/dist/auto-recall.js"))
        );
        assert!(!is_auto_recall(&command_words("echo --hook stop", false)));
        let words = command_words(
            "exec /usr/bin/env -i A=1 node --no-warnings /opt/m/dist/main.js --hook user-prompt-submit",
            false,
        );
        assert_eq!(
            entry_point(&words),
            Some(PathBuf::from("/opt/m/dist/main.js"))
        );
        assert!(hook_flag_first(&words));
        let first = "exec '/opt/a/dist/main' --hook user-prompt-submit --repository-root /r";
        assert!(hook_flag_first(&command_words(first, false)));
        let later = "exec /opt/a/dist/main --repository-root /r --hook user-prompt-submit";
        assert!(!hook_flag_first(&command_words(later, false)));
    }
}
