//! `ecp managed`: what an administrator deploys so that Qwen Code runs one
//! External Context server as pinned, whatever a workspace holds.
//!
//! The design follows what Qwen 0.24.4 does (`docs/qwen-settings-facts.md`):
//! - the server is an `mcpServers` entry of the **system settings**, the
//!   layer that wins over user and workspace settings and the project
//!   `.mcp.json`; it carries `includeTools` naming the one tool, the
//!   manifest's timeout, no `trust`, and fixed values written in literally
//!   (an endpoint), so no `.env` file can change them;
//! - a credential is `${NAME}` in that entry, exported by the **launcher**
//!   from a file the administrator owns before it starts Qwen: a process
//!   variable wins over every `.env` file, and the launcher refuses an
//!   empty one (an empty variable is one a `.env` file may fill);
//! - the launcher exports `QWEN_CODE_FORCE_ENCRYPTED_FILE_STORAGE=true` and
//!   the system settings path, and refuses `--mcp-config`, `--bare` and
//!   `--safe-mode` (each replaces or drops the pinned server) in every
//!   spelling Qwen's yargs parser reads as them: the dashed and the camel
//!   case name (`--safe-mode`, `--safeMode`: camel-case expansion makes
//!   them one option), alone, with `=VALUE`, or in dot notation
//!   (`--safe-mode.x`, `--bare.0`, `--mcp-config.x=`: yargs makes an object
//!   of it, which is truthy, and Qwen then starts in safe mode without the
//!   pinned server, measured). A bare negation (`--no-safe-mode`) sets the
//!   option false and passes; a negation with a value or a dot
//!   (`--no-bare=false`) is refused, since what it sets depends on the
//!   parser's version. Both launchers apply the same rule;
//! - every variable name (the manifest's, `--env`'s, `--credential`'s) is
//!   a POSIX shell name, `[A-Za-z_][A-Za-z0-9_]*`: the launcher writes
//!   `NAME=$(read_secret FILE)`, which sh runs as a command, secret in its
//!   arguments, when NAME starts with a digit;
//! - everything the README asks an administrator to paste into a shell
//!   (the archive's name, the install folder, the program) is quoted for
//!   sh, so a name like `x$(touch pwned).tar.gz` stays a name;
//! - a remote server's entry has no `oauth` block: Qwen discovers the
//!   authorization server from the endpoint and, without the block, also
//!   refreshes a dynamically registered client's token (measured in the
//!   OAuth end-to-end test).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::extension::manifest::ServerFacts;
use crate::qwen::vars::{Filler, Places, names_in};

/// Creates Qwen's encrypted token file (`<QWEN_HOME>/mcp-oauth-tokens-v2.json`)
/// holding no token, when it is missing: Qwen 0.24.4 with encrypted
/// storage forced reads that file for every server it connects, stdio
/// ones included, and fails on a missing one ("Token file does not
/// exist"), so no MCP server starts until a sign-in writes it (measured).
/// The format is Qwen's (`docs/qwen-settings-facts.md`, section 7):
/// AES-256-GCM `iv:tag:ciphertext` in hex, the key scrypt of
/// `qwen-code-oauth` with `<hostname>-<user>-qwen-code`. No quote of
/// either kind inside (JavaScript's back quotes instead): it is embedded in
/// single-quoted shell and PowerShell strings, and Windows PowerShell 5.1
/// drops double quotes from a native program's arguments.
pub const SEED_TOKEN_FILE_JS: &str = concat!(
    "const c=require(`crypto`),o=require(`os`),f=require(`fs`),p=require(`path`);",
    "const file=process.argv[1];",
    "if(!f.existsSync(file)){",
    "const key=c.scryptSync(`qwen-code-oauth`,o.hostname()+`-`+o.userInfo().username+`-qwen-code`,32);",
    "const iv=c.randomBytes(16),x=c.createCipheriv(`aes-256-gcm`,key,iv);",
    "const body=x.update(`{}`,`utf8`,`hex`)+x.final(`hex`);",
    "f.mkdirSync(p.dirname(file),{recursive:true,mode:0o700});",
    "try{f.writeFileSync(file,iv.toString(`hex`)+`:`+x.getAuthTag().toString(`hex`)+`:`+body,{mode:0o600,flag:`wx`})}",
    "catch(e){if(e.code!==`EEXIST`)throw e}}"
);

/// The profile's one tool.
use crate::profile::TOOL_NAME as TOOL;

/// The PowerShell launcher's pattern of a refused argument: the POSIX
/// launcher's `case` in .NET's regular expressions.
const DROPPING_PS: &str = r"^--((bare|safe-mode|safeMode|mcp-config|mcpConfig)($|[=.])|no-(bare|safe-mode|safeMode|mcp-config|mcpConfig)[=.])";

/// Whether `name` is a POSIX shell variable name, `[A-Za-z_][A-Za-z0-9_]*`.
pub fn shell_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// What to deploy.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The extension's (and server's) name.
    pub name: String,
    pub server: ServerFacts,
    /// Where the administrator unpacks the release archive on each machine.
    pub install_dir: PathBuf,
    /// Where the system settings file goes.
    pub settings_path: PathBuf,
    /// The program the launcher starts.
    pub qwen: String,
    /// Fixed values, written into the settings entry.
    pub values: Vec<(String, String)>,
    /// Credentials: the variable and the file the launcher reads it from.
    pub credentials: Vec<(String, PathBuf)>,
    /// Auto Recall instead of the MCP server: the extension's entry point
    /// as Qwen's `UserPromptSubmit` hook, for this repository root.
    pub auto_recall: Option<PathBuf>,
}

/// The hook's registration name suffix and what Qwen shows while it runs.
const HOOK_STATUS: &str = "Retrieving external context";
/// Qwen's timeout of the hook, in seconds: the runtime's 6500 ms wall
/// clock inside it (Qwen's own example registration says 8).
const HOOK_TIMEOUT_SECONDS: u64 = 8;

/// Why a plan cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("the manifest's server needs ${{{0}}}, and neither --env nor --credential gives it")]
    Missing(String),
    #[error("`{0}` is given, but the manifest's server does not use it")]
    Unused(String),
    #[error("`{0}` is given twice")]
    Twice(String),
    /// Auto Recall runs the entry point on each machine: a remote server
    /// has none.
    #[error(
        "Auto Recall runs the extension's own entry point as a hook on each machine; {0} is a remote server"
    )]
    HookOfRemote(String),
    /// The hook inherits Qwen's environment: a variable the manifest maps
    /// from another name would not reach it.
    #[error(
        "the manifest's server takes {0} from ${{{1}}}; the hook inherits Qwen's environment by name"
    )]
    HookRenamed(String, String),
    /// Not a name sh can assign: the launcher line would be a command.
    #[error("`{}` is not a shell variable name: the launcher exports each variable by name, and sh would run `{}=...` as a command", crate::text::outside::value(.0), crate::text::outside::value(.0))]
    NotAName(String),
}

impl PlanError {
    pub fn help(&self) -> String {
        match self {
            PlanError::Missing(name) => format!(
                "a fixed value goes in the settings: --env {name}=VALUE; a secret is read by the launcher: --credential {name}=/etc/qwen-code/{}.secret",
                name.to_ascii_lowercase()
            ),
            PlanError::Unused(_) | PlanError::Twice(_) => {
                "give each variable of the manifest's server once".to_owned()
            }
            PlanError::HookOfRemote(_) => "deploy the remote server with `ecp managed` without --auto-recall, or its provider's release archive with it".to_owned(),
            PlanError::HookRenamed(name, _) => format!("give the variable as `{name}` itself: in the manifest, \"{name}\": \"${{{name}}}\""),
            PlanError::NotAName(_) => "a variable name is letters, digits and `_`, and does not start with a digit ([A-Za-z_][A-Za-z0-9_]*): rename the variable in the manifest's server and give it under that name".to_owned(),
        }
    }
}

impl Plan {
    /// The variables the manifest's server uses, each given once.
    pub fn check(&self) -> Result<(), PlanError> {
        let used = self.used_variables();
        let names = used
            .iter()
            .map(String::as_str)
            .chain(self.values.iter().map(|(n, _)| n.as_str()))
            .chain(self.credentials.iter().map(|(n, _)| n.as_str()));
        for name in names {
            if !shell_name(name) {
                return Err(PlanError::NotAName(name.to_owned()));
            }
        }
        let mut given: Vec<&str> = Vec::new();
        for name in self
            .values
            .iter()
            .map(|(n, _)| n.as_str())
            .chain(self.credentials.iter().map(|(n, _)| n.as_str()))
        {
            if given.contains(&name) {
                return Err(PlanError::Twice(name.to_owned()));
            }
            if !used.iter().any(|u| u == name) {
                return Err(PlanError::Unused(name.to_owned()));
            }
            given.push(name);
        }
        if let Some(missing) = used.into_iter().find(|u| !given.contains(&u.as_str())) {
            return Err(PlanError::Missing(missing));
        }
        if self.auto_recall.is_some() {
            self.hook_env()?;
        }
        Ok(())
    }

    /// The hook's `env`: each manifest variable with a fixed value; a
    /// credential is inherited from the launcher's environment by name.
    fn hook_env(&self) -> Result<Map<String, Value>, PlanError> {
        if self.server.http_url.is_some() {
            return Err(PlanError::HookOfRemote(self.name.clone()));
        }
        let mut env = Map::new();
        for (name, value) in &self.server.env {
            let filled = self.resolve(value);
            let names = names_in(&filled);
            match names.as_slice() {
                [] => {
                    env.insert(name.clone(), filled.into());
                }
                [only] if only == name && filled == format!("${{{name}}}") => {}
                [other, ..] => return Err(PlanError::HookRenamed(name.clone(), other.clone())),
            }
        }
        Ok(env)
    }

    /// The entry point and its arguments, filled for this machine.
    fn entry_point(&self) -> Vec<String> {
        let server = &self.server;
        (server.command.iter().chain(&server.args))
            .map(|part| self.resolve(part))
            .collect()
    }

    /// The hook's flags after the entry point.
    fn hook_flags(&self, root: &Path, quote: fn(&str) -> String) -> String {
        format!(
            "--hook user-prompt-submit --repository-root {}",
            quote(&root.to_string_lossy())
        )
    }

    /// The settings of Auto Recall: the hook, hooks kept on, speculation
    /// off, and the extension's own MCP server excluded (never both: two
    /// searches for one prompt). `windows`: the PowerShell command.
    pub fn hook_settings(&self, root: &Path, windows: bool) -> Value {
        let entry = self.entry_point();
        let command = if windows {
            let words: Vec<String> = entry.iter().map(|w| ps_quote(w)).collect();
            format!("& {} {}", words.join(" "), self.hook_flags(root, ps_quote))
        } else {
            let words: Vec<String> = entry.iter().map(|w| sh_quote(w)).collect();
            format!(
                "exec {} {}",
                words.join(" "),
                self.hook_flags(root, sh_quote)
            )
        };
        let mut hook = json!({
            "type": "command",
            "command": command,
            "timeout": HOOK_TIMEOUT_SECONDS,
            "name": format!("{}-auto-recall", self.name),
            "statusMessage": HOOK_STATUS,
        });
        let env = self.hook_env().unwrap_or_default();
        if !env.is_empty() {
            hook["env"] = env.into();
        }
        if windows {
            hook["shell"] = "powershell".into();
        }
        json!({
            "$version": 4,
            "disableAllHooks": false,
            "ui": { "enableSpeculation": false },
            "mcp": { "excluded": [&self.name] },
            "hooks": { "UserPromptSubmit": [{ "matcher": "*", "hooks": [hook] }] },
        })
    }

    fn used_variables(&self) -> Vec<String> {
        let server = &self.server;
        let mut texts: Vec<&str> = server.args.iter().map(String::as_str).collect();
        texts.extend(server.command.as_deref());
        texts.extend(server.cwd.as_deref());
        texts.extend(server.http_url.as_deref());
        texts.extend(server.env.iter().map(|(_, v)| v.as_str()));
        let mut names = Vec::new();
        for text in texts {
            for name in names_in(text) {
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
        names
    }

    /// A manifest string for the settings, filled as Qwen fills it
    /// ([`crate::qwen::vars`]): `${extensionPath}` is the install folder,
    /// `${/}` the separator, the fixed values filled in; the rest (the
    /// credentials) is left for Qwen to fill from the launcher's
    /// environment.
    fn resolve(&self, text: &str) -> String {
        let install_dir = self.install_dir.to_string_lossy();
        let places = Places {
            extension: &install_dir,
            workspace: None,
            separator: "/",
        };
        let lookup = |name: &str| {
            let value = self.values.iter().find(|(n, _)| n == name);
            value.map(|(_, v)| v.clone())
        };
        Filler::manifest(places, &lookup).fill(text)
    }

    /// The system settings file (POSIX's, for Auto Recall).
    pub fn settings(&self) -> Value {
        if let Some(root) = &self.auto_recall {
            return self.hook_settings(root, false);
        }
        let server = &self.server;
        let mut entry = Map::new();
        if let Some(url) = &server.http_url {
            entry.insert("httpUrl".into(), self.resolve(url).into());
        } else {
            if let Some(command) = &server.command {
                entry.insert("command".into(), self.resolve(command).into());
            }
            if !server.args.is_empty() {
                let args: Vec<String> = server.args.iter().map(|a| self.resolve(a)).collect();
                entry.insert("args".into(), args.into());
            }
            if let Some(cwd) = &server.cwd {
                entry.insert("cwd".into(), self.resolve(cwd).into());
            }
        }
        if !server.env.is_empty() {
            let env: Map<String, Value> = server
                .env
                .iter()
                .map(|(k, v)| (k.clone(), self.resolve(v).into()))
                .collect();
            entry.insert("env".into(), env.into());
        }
        entry.insert("timeout".into(), server.timeout_ms.unwrap_or(8000).into());
        entry.insert("includeTools".into(), json!([TOOL]));
        json!({
            "$version": 4,
            "mcpServers": { &self.name: entry },
        })
    }

    /// The POSIX launcher.
    pub fn launcher_sh(&self) -> String {
        let mut out = format!(
            "#!/bin/sh\n# Written by `ecp managed` for {name}: starts Qwen Code with the pinned\n# system settings, encrypted OAuth token storage{creds}.\nset -eu\n\n",
            name = self.name,
            creds = if self.credentials.is_empty() {
                String::new()
            } else {
                " and the credential from an\n# administrator-owned file".to_owned()
            },
        );
        out += &format!(
            "QWEN_CODE_SYSTEM_SETTINGS_PATH={}\nexport QWEN_CODE_SYSTEM_SETTINGS_PATH\nQWEN_CODE_FORCE_ENCRYPTED_FILE_STORAGE=true\nexport QWEN_CODE_FORCE_ENCRYPTED_FILE_STORAGE\n# Bare and safe mode drop the pinned server.\nunset QWEN_CODE_SIMPLE QWEN_CODE_SAFE_MODE\n# Qwen 0.24.4 starts no MCP server while its encrypted token file is\n# missing: create it, holding no token (the back quotes are JavaScript's).\n# shellcheck disable=SC2016\nnode -e {seed} \"${{QWEN_HOME:-$HOME/.qwen}}/mcp-oauth-tokens-v2.json\"\n\n",
            sh_quote(&self.settings_path.to_string_lossy()),
            seed = sh_quote(SEED_TOKEN_FILE_JS),
        );
        out += &format!(
            "# Every spelling Qwen's argument parser reads as one of these flags:\n# dashed or camel case, alone, with a value, or in dot notation; a\n# negation only when it carries a value.\nfor arg in \"$@\"; do\n  case $arg in\n    --no-*=* | --no-*.*) flag=--${{arg#--no-}} ;;\n    *) flag=$arg ;;\n  esac\n  case $flag in\n    --mcp-config | --mcp-config[=.]* | --mcpConfig | --mcpConfig[=.]* | --bare | --bare[=.]* | --safe-mode | --safe-mode[=.]* | --safeMode | --safeMode[=.]*)\n      echo \"{launcher}: $arg would replace or drop the pinned {name} server; run without it\" >&2\n      exit 2\n      ;;\n  esac\ndone\n\n",
            launcher = launcher_name(&self.name),
            name = self.name
        );
        if !self.credentials.is_empty() {
            out += &format!(
                "# The first line of FILE; refuses a file that is missing, empty, not\n# owned by root or the user, or writable by others.\nread_secret() {{\n  if [ ! -f \"$1\" ] || [ -L \"$1\" ]; then\n    echo \"{launcher}: $1 is missing: ask your administrator\" >&2\n    exit 1\n  fi\n  owner=$(stat -c %u \"$1\" 2>/dev/null || stat -f %u \"$1\")\n  mode=$(stat -c %a \"$1\" 2>/dev/null || stat -f %Lp \"$1\")\n  if [ \"$owner\" != 0 ] && [ \"$owner\" != \"$(id -u)\" ]; then\n    echo \"{launcher}: $1 is not owned by root or you: refused\" >&2\n    exit 1\n  fi\n  case $mode in\n    *[2367]? | *[2367])\n      echo \"{launcher}: $1 is writable by others (mode $mode): refused\" >&2\n      exit 1\n      ;;\n  esac\n  secret=\n  IFS= read -r secret < \"$1\" || true\n  if [ -z \"$secret\" ]; then\n    echo \"{launcher}: $1 is empty or cannot be read: ask your administrator\" >&2\n    exit 1\n  fi\n  printf '%s' \"$secret\"\n}}\n\n",
                launcher = launcher_name(&self.name)
            );
            for (name, file) in &self.credentials {
                out += &format!(
                    "{name}=$(read_secret {file})\nexport {name}\n",
                    file = sh_quote(&file.to_string_lossy())
                );
            }
            out.push('\n');
        }
        out += &format!("exec {} \"$@\"\n", sh_quote(&self.qwen));
        out
    }

    /// The PowerShell launcher (Windows; not run here: no PowerShell on
    /// this machine). The same settings, modes and refusals; a credential
    /// file must exist and hold a line, and its ACL is the administrator's
    /// to set (the owner and mode checks of the POSIX launcher are not
    /// repeated).
    pub fn launcher_ps1(&self) -> String {
        let launcher = ps_quote(&launcher_name(&self.name));
        let mut out = format!(
            "# Written by `ecp managed` for {name}: starts Qwen Code with the pinned\n# system settings, encrypted OAuth token storage and the credentials\n# from administrator-owned files.\n$launcher = {launcher}\nfunction Stop-Launcher([string]$message, [int]$code) {{\n  [Console]::Error.WriteLine($launcher + ': ' + $message)\n  exit $code\n}}\n$env:QWEN_CODE_SYSTEM_SETTINGS_PATH = {settings}\n$env:QWEN_CODE_FORCE_ENCRYPTED_FILE_STORAGE = 'true'\nRemove-Item Env:QWEN_CODE_SIMPLE, Env:QWEN_CODE_SAFE_MODE -ErrorAction SilentlyContinue\n$qwenHome = if ($env:QWEN_HOME) {{ $env:QWEN_HOME }} else {{ Join-Path $HOME '.qwen' }}\n& node -e {seed} (Join-Path $qwenHome 'mcp-oauth-tokens-v2.json')\nif ($LASTEXITCODE -ne 0) {{ Stop-Launcher 'cannot create the encrypted token file Qwen needs' 1 }}\nforeach ($arg in $args) {{\n  if ($arg -match '{DROPPING_PS}') {{\n    Stop-Launcher ($arg + ' would replace or drop the pinned ' + {name_quoted} + ' server; run without it') 2\n  }}\n}}\n",
            name = self.name,
            name_quoted = ps_quote(&self.name),
            settings = ps_quote(&self.settings_path.to_string_lossy()),
            seed = ps_quote(SEED_TOKEN_FILE_JS),
        );
        for (name, file) in &self.credentials {
            let file = ps_quote(&file.to_string_lossy());
            out += &format!(
                "if (-not (Test-Path -LiteralPath {file} -PathType Leaf)) {{ Stop-Launcher ({file} + ' is missing: ask your administrator') 1 }}\n$secret = Get-Content -LiteralPath {file} -TotalCount 1\nif ([string]::IsNullOrEmpty($secret)) {{ Stop-Launcher ({file} + ' is empty: ask your administrator') 1 }}\n$env:{name} = $secret\n"
            );
        }
        out += &format!("& {} @args\nexit $LASTEXITCODE\n", ps_quote(&self.qwen));
        out
    }

    /// The deployment's README: what goes where.
    pub fn readme(&self, archive: Option<&str>) -> String {
        let launcher = launcher_name(&self.name);
        let mut out = format!(
            "# Managed deployment of {name}\n\nWritten by `ecp managed`. On each machine:\n\n",
            name = self.name
        );
        if let Some(archive) = archive {
            out += &format!(
                "1. Unpack the release archive where the settings point:\n   `mkdir -p {dir} && tar -xzf {archive} -C {dir}` (owned by root, not writable by users).\n",
                dir = sh_word(&self.install_dir.to_string_lossy()),
                archive = sh_word(archive),
            );
        } else {
            out += "1. Nothing to unpack: the server is remote.\n";
        }
        out += &format!(
            "2. Install `system-settings.json` as `{settings}` (root-owned, mode 0644).\n3. Install `{launcher}` (and `{launcher}.ps1` on Windows) on users' PATH; it\n   starts `{qwen}`.\n",
            settings = sh_word(&self.settings_path.to_string_lossy()),
            qwen = sh_word(&self.qwen),
        );
        if let Some(root) = &self.auto_recall {
            out += &format!(
                "   On Windows, install `system-settings.windows.json` instead (its hook runs in\n   PowerShell; adjust the install folder in its command).\n\n\
                 Auto Recall: before each prompt typed in a session whose folder is inside\n`{root}`, Qwen Code runs {name}'s entry point as its `UserPromptSubmit` hook\n\
                 (`--hook user-prompt-submit`). It sends at most 512 code points of what the user\n\
                 typed, without fenced code, the credential and secret shapes, in one request\n\
                 that is never retried, and adds what it finds to the prompt as untrusted\n\
                 reference data; anything else (a failure, a timeout, nothing found) adds nothing\n\
                 and never blocks the prompt. The settings keep hooks on (`disableAllHooks`),\n\
                 speculative execution off (`ui.enableSpeculation`) and {name}'s MCP server\n\
                 excluded (`mcp.excluded`): one search a prompt, never two.\n\n",
                root = sh_word(&root.to_string_lossy()),
                name = self.name,
            );
        }
        for (name, file) in &self.credentials {
            out += &format!(
                "4. Write the credential `{name}` to `{}` (one line; root-owned, mode 0640 with a group of the users, or per user 0600).\n",
                sh_word(&file.to_string_lossy())
            );
        }
        let name = &self.name;
        let shows = match self.auto_recall {
            Some(_) => format!(
                "Then a prompt typed under the repository root in `{launcher}` carries {name}'s\ncontext, and `ecp doctor` run through the"
            ),
            None => format!(
                "Then `{launcher} mcp list` shows {name} connected, and `ecp doctor` run through the"
            ),
        };
        out += &format!(
            "\n{shows}\nlauncher (`{launcher}` starts ecp when generated with `--qwen ecp`) reports no findings.\n"
        );
        out
    }
}

/// The launcher's file name: `qwen-NAME`.
pub fn launcher_name(name: &str) -> String {
    format!("qwen-{name}")
}

fn sh_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// `text` as one word for a line a reader pastes into sh: as it is when
/// every character is plain, else [`sh_quote`]d.
fn sh_word(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_./-:+,@%".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text.to_owned()
    } else {
        sh_quote(text)
    }
}

/// `text` in PowerShell's single quotes. PowerShell ends such a string at
/// any single quotation mark, the typographic ones (U+2018 to U+201B)
/// too, and reads each doubled as one: every one is doubled.
fn ps_quote(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('\'');
    for c in text.chars() {
        if matches!(c, '\'' | '\u{2018}'..='\u{201b}') {
            quoted.push(c);
        }
        quoted.push(c);
    }
    quoted.push('\'');
    quoted
}

/// Writes the deployment into `out` (which must not exist): the settings,
/// both launchers, the README, and the archive when there is one. Written
/// into a temporary folder beside it first, so nothing half-written is
/// left; the rename into place never follows a link (one that appeared at
/// `out` makes it fail), and the folder that holds `out` is the user's
/// (see [`crate::writes`]).
pub fn write(out: &Path, plan: &Plan, archive: Option<&Path>) -> std::io::Result<Vec<PathBuf>> {
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)?;
    let staging = tempfile::Builder::new()
        .prefix(".ecp-managed-")
        .tempdir_in(parent)?;
    let launcher = launcher_name(&plan.name);
    let settings = serde_json::to_string_pretty(&plan.settings()).unwrap_or_default() + "\n";
    let archive_name = archive
        .and_then(|a| a.file_name())
        .map(|n| n.to_string_lossy().into_owned());
    let mut files = vec![
        (
            "system-settings.json".to_owned(),
            settings.into_bytes(),
            0o644,
        ),
        (launcher.clone(), plan.launcher_sh().into_bytes(), 0o755),
        (
            format!("{launcher}.ps1"),
            plan.launcher_ps1().into_bytes(),
            0o644,
        ),
        (
            "README.md".to_owned(),
            plan.readme(archive_name.as_deref()).into_bytes(),
            0o644,
        ),
    ];
    if let Some(root) = &plan.auto_recall {
        let windows = serde_json::to_string_pretty(&plan.hook_settings(root, true));
        let windows = windows.unwrap_or_default() + "\n";
        files.push((
            "system-settings.windows.json".to_owned(),
            windows.into_bytes(),
            0o644,
        ));
    }
    if let (Some(archive), Some(name)) = (archive, &archive_name) {
        files.push((name.clone(), std::fs::read(archive)?, 0o644));
    }
    let mut written = Vec::new();
    for (name, bytes, mode) in files {
        let path = staging.path().join(&name);
        std::fs::write(&path, bytes)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))?;
        }
        let _ = mode;
        written.push(out.join(name));
    }
    let staged = staging.keep();
    if let Err(e) = std::fs::rename(&staged, out) {
        let _ = std::fs::remove_dir_all(&staged);
        return Err(e);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        Plan {
            name: "acme-context".into(),
            server: ServerFacts {
                key: "acme-context".into(),
                command: Some("${extensionPath}${/}dist${/}main".into()),
                args: vec![],
                env: vec![
                    (
                        "ACME_CONTEXT_BASE_URL".into(),
                        "${ACME_CONTEXT_BASE_URL}".into(),
                    ),
                    ("ACME_CONTEXT_TOKEN".into(), "${ACME_CONTEXT_TOKEN}".into()),
                ],
                cwd: Some("${extensionPath}".into()),
                timeout_ms: Some(8000),
                include_tools: Some(vec!["context_search".into()]),
                http_url: None,
            },
            install_dir: "/opt/qwen-extensions/acme-context".into(),
            settings_path: "/etc/qwen-code/settings.json".into(),
            qwen: "qwen".into(),
            values: vec![(
                "ACME_CONTEXT_BASE_URL".into(),
                "https://kb.acme.example".into(),
            )],
            credentials: vec![(
                "ACME_CONTEXT_TOKEN".into(),
                "/etc/qwen-code/acme.secret".into(),
            )],
            auto_recall: None,
        }
    }

    #[test]
    fn auto_recall_registers_the_hook_with_the_endpoint_and_excludes_the_server() {
        let mut plan = plan();
        plan.auto_recall = Some("/srv/acme repo".into());
        plan.check().unwrap();
        let settings = plan.settings();
        let hook = &settings["hooks"]["UserPromptSubmit"][0]["hooks"][0];
        assert_eq!(
            hook["command"],
            "exec '/opt/qwen-extensions/acme-context/dist/main' --hook user-prompt-submit --repository-root '/srv/acme repo'"
        );
        assert_eq!(hook["timeout"], 8);
        // The endpoint is fixed; the credential is the launcher's.
        assert_eq!(
            hook["env"],
            json!({"ACME_CONTEXT_BASE_URL": "https://kb.acme.example"})
        );
        assert_eq!(settings["disableAllHooks"], false);
        assert_eq!(settings["ui"]["enableSpeculation"], false);
        assert_eq!(settings["mcp"]["excluded"], json!(["acme-context"]));
        assert!(
            settings.get("mcpServers").is_none(),
            "never both: {settings}"
        );
        let windows = plan.hook_settings(Path::new("C:\\repo's"), true);
        let hook = &windows["hooks"]["UserPromptSubmit"][0]["hooks"][0];
        assert_eq!(hook["shell"], "powershell");
        assert_eq!(
            hook["command"],
            "& '/opt/qwen-extensions/acme-context/dist/main' --hook user-prompt-submit --repository-root 'C:\\repo''s'"
        );
        // PowerShell ends a single-quoted string at a typographic quote too.
        assert_eq!(
            ps_quote("C:\\O\u{2019}Brien's"),
            "'C:\\O\u{2019}\u{2019}Brien''s'"
        );
        plan.server.http_url = Some("https://kb.example/mcp".into());
        assert!(matches!(plan.check(), Err(PlanError::HookOfRemote(_))));
    }

    #[test]
    fn the_settings_pin_the_server_with_the_endpoint_written_in() {
        let plan = plan();
        plan.check().unwrap();
        assert_eq!(
            plan.settings(),
            json!({"$version": 4, "mcpServers": {"acme-context": {
                "command": "/opt/qwen-extensions/acme-context/dist/main",
                "cwd": "/opt/qwen-extensions/acme-context",
                "env": {"ACME_CONTEXT_BASE_URL": "https://kb.acme.example",
                        "ACME_CONTEXT_TOKEN": "${ACME_CONTEXT_TOKEN}"},
                "timeout": 8000,
                "includeTools": ["context_search"]
            }}})
        );
    }

    #[test]
    fn every_variable_is_given_once() {
        let mut missing = plan();
        missing.credentials.clear();
        assert!(matches!(missing.check(), Err(PlanError::Missing(n)) if n == "ACME_CONTEXT_TOKEN"));
        let mut unused = plan();
        unused.values.push(("OTHER".into(), "x".into()));
        assert!(matches!(unused.check(), Err(PlanError::Unused(_))));
        let mut twice = plan();
        twice.values.push(("ACME_CONTEXT_TOKEN".into(), "x".into()));
        assert!(matches!(twice.check(), Err(PlanError::Twice(_))));
        let mut digit = plan();
        digit.credentials[0].0 = "1ACME_CONTEXT_TOKEN".into();
        assert!(matches!(digit.check(), Err(PlanError::NotAName(n)) if n == "1ACME_CONTEXT_TOKEN"));
        assert_eq!(sh_word("/opt/a-b/c.tar.gz"), "/opt/a-b/c.tar.gz");
        assert_eq!(sh_word("x$(id)'.tar.gz"), "'x$(id)'\\''.tar.gz'");
        for (name, ok) in [
            ("_A1", true),
            ("a", true),
            ("1A", false),
            ("A-B", false),
            ("", false),
            ("É", false),
        ] {
            assert_eq!(shell_name(name), ok, "{name}");
        }
    }

    #[test]
    fn bare_names_are_replaced_only_whole() {
        let mut plan = plan();
        plan.values = vec![("A".into(), "x".into())];
        assert_eq!(plan.resolve("$A/$AB/$A"), "x/$AB/x");
    }
}
