//! `ecp doctor --probe-settings`: the seed's installation-to-child-process
//! test as a command. In a scratch Qwen home (never the user's) it installs
//! a probe extension whose server is this `ecp` (`doctor --probe-child`),
//! stores one synthetic value per settings path with the real `qwen
//! extensions settings set`, starts the server through `qwen mcp list`,
//! and reports which values the child received. A value in the
//! environment Qwen starts with is the control: when it does not arrive,
//! the probe measured nothing and says so.
//!
//! Measured on Qwen Code 0.24.4: only the workspace-scope, non-sensitive
//! setting arrives, because Qwen writes it into the workspace `.env`,
//! which a trusted workspace loads; that is a repository file, so no
//! setting is a credential path (`ecp new` templates say so).

use std::{
    io::{BufRead, Write},
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
};

use serde::Serialize;
use serde_json::{Value, json};

const NAME: &str = "ecp-settings-probe";
const CONTROL: &str = "ECP_PROBE_PROCESS";

/// One way a value may reach the server.
#[derive(Debug, Clone, Serialize)]
pub struct Route {
    pub variable: &'static str,
    /// `process` (the control), `user` or `workspace`.
    pub scope: &'static str,
    pub sensitive: bool,
    pub reached: bool,
}

/// What the probe measured.
#[derive(Debug, Clone, Serialize)]
pub struct Probe {
    pub qwen: String,
    pub qwen_version: String,
    pub paths: Vec<Route>,
}

const PATHS: &[(&str, &str, bool)] = &[
    (CONTROL, "process", false),
    ("ECP_PROBE_USER", "user", false),
    ("ECP_PROBE_USER_SECRET", "user", true),
    ("ECP_PROBE_WORKSPACE", "workspace", false),
    ("ECP_PROBE_WORKSPACE_SECRET", "workspace", true),
];

fn marker(variable: &str) -> String {
    format!("synthetic-{}", variable.to_ascii_lowercase())
}

struct Scratch {
    _temp: tempfile::TempDir,
    home: PathBuf,
    workspace: PathBuf,
    extension: PathBuf,
    seen: PathBuf,
}

impl Scratch {
    fn new() -> std::io::Result<Scratch> {
        let temp = tempfile::Builder::new().prefix("ecp-probe-").tempdir()?;
        // The workspace inside the home: Qwen's walk for a project `.env`
        // stops at the home, so no file above the scratch folder counts.
        let scratch = Scratch {
            home: temp.path().join("home"),
            workspace: temp.path().join("home").join("workspace"),
            extension: temp.path().join(NAME),
            seen: temp.path().join("seen.json"),
            _temp: temp,
        };
        for folder in [&scratch.home, &scratch.workspace, &scratch.extension] {
            std::fs::create_dir_all(folder)?;
        }
        Ok(scratch)
    }

    /// `qwen ARGS` with the scratch home, in the scratch workspace, with
    /// none of the caller's Qwen or probe variables.
    fn qwen(&self, qwen: &Path, args: &[&str], stdin: Option<&str>) -> Result<Output, ProbeError> {
        let mut command = Command::new(qwen);
        command
            .args(args)
            .current_dir(&self.workspace)
            .env("HOME", &self.home)
            .env("USERPROFILE", &self.home)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy();
            if name.starts_with("QWEN_") || name.starts_with("ECP_PROBE_") {
                command.env_remove(&*name);
            }
        }
        // No system settings or defaults of this machine (folder trust,
        // servers): files in the scratch folder that do not exist.
        command
            .env(
                "QWEN_CODE_SYSTEM_SETTINGS_PATH",
                self.home.join("system-settings.json"),
            )
            .env(
                "QWEN_CODE_SYSTEM_DEFAULTS_PATH",
                self.home.join("system-defaults.json"),
            );
        if args.first() == Some(&"mcp") {
            command.env(CONTROL, marker(CONTROL));
        }
        let mut child = command.spawn().map_err(|error| ProbeError::Start {
            qwen: qwen.to_owned(),
            error,
        })?;
        if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
            let _ = pipe.write_all(text.as_bytes());
        }
        child.wait_with_output().map_err(|error| ProbeError::Io {
            path: qwen.to_owned(),
            error,
        })
    }
}

/// Why the probe measured nothing.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("cannot make a scratch folder: {0}")]
    Scratch(std::io::Error),
    #[error("cannot start {}: {error}", .qwen.display())]
    Start {
        qwen: std::path::PathBuf,
        error: std::io::Error,
    },
    #[error("{}: {error}", .path.display())]
    Io {
        path: std::path::PathBuf,
        error: std::io::Error,
    },
    /// A Qwen command failed: what it was, its status, the end of its
    /// stderr (escaped and bounded).
    #[error("`{what}` failed ({status}): {said}")]
    Failed {
        what: &'static str,
        status: std::process::ExitStatus,
        said: String,
    },
    #[error("Qwen did not start the probe server: nothing was measured")]
    NotStarted,
    #[error(
        "the control value in Qwen's own environment did not reach the probe: nothing was measured"
    )]
    NoControl,
}

fn succeeded(output: Output, what: &'static str) -> Result<Output, ProbeError> {
    if output.status.success() {
        Ok(output)
    } else {
        Err(ProbeError::Failed {
            what,
            status: output.status,
            said: crate::text::outside::block(&String::from_utf8_lossy(&output.stderr), 10, 300),
        })
    }
}

/// Runs the probe with the Qwen program `qwen`, starting `ecp` as the
/// server.
pub fn run(qwen: &Path, ecp: &Path) -> Result<Probe, ProbeError> {
    let scratch = Scratch::new().map_err(ProbeError::Scratch)?;
    let version = scratch.qwen(qwen, &["--version"], None)?;
    let qwen_version = String::from_utf8_lossy(&version.stdout).trim().to_owned();
    let env: serde_json::Map<String, Value> = PATHS
        .iter()
        .map(|(v, _, _)| ((*v).to_owned(), format!("${{{v}}}").into()))
        .collect();
    let mut manifest = json!({
        "name": NAME,
        "version": "0.0.0",
        "mcpServers": {NAME: {
            "command": ecp,
            "args": ["doctor", "--probe-child", scratch.seen],
            "env": env,
            "timeout": 8000
        }}
    });
    let write = |path: &Path, value: &Value| {
        std::fs::write(path, value.to_string()).map_err(|error| ProbeError::Io {
            path: path.to_owned(),
            error,
        })
    };
    write(&scratch.extension.join("qwen-extension.json"), &manifest)?;
    // Installed without settings (Qwen would prompt for each at install),
    // then the installed manifest declares them, as a reinstall would.
    let extension = scratch.extension.to_string_lossy().into_owned();
    succeeded(
        scratch.qwen(
            qwen,
            &["extensions", "install", &extension, "--consent"],
            None,
        )?,
        "qwen extensions install",
    )?;
    manifest["settings"] = PATHS[1..]
        .iter()
        .map(|(variable, scope, sensitive)| {
            json!({"name": variable, "description": format!("a synthetic {scope} value"),
                   "envVar": variable, "sensitive": sensitive})
        })
        .collect();
    let installed = scratch.home.join(".qwen/extensions").join(NAME);
    write(&installed.join("qwen-extension.json"), &manifest)?;
    for (variable, scope, _) in &PATHS[1..] {
        let args = [
            "extensions",
            "settings",
            "set",
            "--scope",
            scope,
            NAME,
            variable,
        ];
        let value = format!("{}\n", marker(variable));
        succeeded(
            scratch.qwen(qwen, &args, Some(&value))?,
            "qwen extensions settings set",
        )?;
    }
    scratch.qwen(qwen, &["mcp", "list"], None)?;
    let seen: Value = std::fs::read_to_string(&scratch.seen)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .ok_or(ProbeError::NotStarted)?;
    let paths: Vec<Route> = PATHS
        .iter()
        .map(|(variable, scope, sensitive)| Route {
            variable,
            scope,
            sensitive: *sensitive,
            reached: seen.get(*variable).and_then(Value::as_str) == Some(&marker(variable)),
        })
        .collect();
    if !paths[0].reached {
        return Err(ProbeError::NoControl);
    }
    Ok(Probe {
        qwen: qwen.display().to_string(),
        qwen_version,
        paths,
    })
}

/// The probe's server: records the `ECP_PROBE_*` variables it was started
/// with into `seen` and answers `initialize` and `tools/list` until stdin
/// ends.
pub fn child(seen: &Path) -> std::io::Result<()> {
    let recorded: serde_json::Map<String, Value> = PATHS
        .iter()
        .filter_map(|(v, _, _)| Some(((*v).to_owned(), std::env::var(v).ok()?.into())))
        .collect();
    std::fs::write(seen, Value::Object(recorded).to_string())?;
    let stdout = std::io::stdout();
    for line in std::io::stdin().lock().lines() {
        let Ok(message) = serde_json::from_str::<Value>(&line?) else {
            continue;
        };
        let Some(id) = message.get("id").cloned() else {
            continue;
        };
        let reply = match message.get("method").and_then(Value::as_str) {
            Some("initialize") => json!({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": NAME, "version": "0"}}}),
            Some("tools/list") => json!({"jsonrpc": "2.0", "id": id, "result": {"tools": []}}),
            _ => {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "not found"}})
            }
        };
        let mut out = stdout.lock();
        writeln!(out, "{reply}")?;
        out.flush()?;
    }
    Ok(())
}

/// The human report.
pub fn human(probe: &Probe) -> String {
    let mut out = format!(
        "Qwen Code {} ({}), in a scratch home: does a value reach the MCP server?\n",
        crate::text::outside::line(&probe.qwen_version, 80),
        crate::text::outside::line(&probe.qwen, 300)
    );
    for path in &probe.paths {
        let what = match (path.scope, path.sensitive) {
            ("process", _) => "the environment Qwen starts with (control)".to_owned(),
            (scope, true) => format!("a {scope}-scope setting, sensitive"),
            (scope, false) => format!("a {scope}-scope setting"),
        };
        let answer = if path.reached {
            "reaches the server"
        } else {
            "does not reach it"
        };
        out += &format!("  {what:<45} {answer}\n");
    }
    let reached: Vec<&Route> = probe.paths[1..].iter().filter(|p| p.reached).collect();
    out += match reached.as_slice() {
        [] => "No setting reaches the server: settings are not a credential path.\n",
        [only] if only.scope == "workspace" && !only.sensitive => {
            "Only a workspace-scope, non-sensitive setting arrives, through the workspace .env Qwen writes it to (a repository file): settings are not a credential path.\n"
        }
        _ => {
            "This differs from Qwen Code 0.24.4, where only a workspace-scope, non-sensitive setting arrived: review ecp lint's settings-credential rule.\n"
        }
    };
    out
}
