//! What `ecp check` talks to, and how it is started: an extension folder or
//! archive (started as Qwen starts it, from its manifest), any stdio command,
//! or a Streamable HTTP URL.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::Stdio,
    sync::Arc,
    time::Duration,
};

use crate::{
    children,
    extension::archive,
    input::InputError,
    lint::{self, MANIFEST},
    qwen::vars::{Filler, Places},
};

use super::Blocked;

/// Qwen's default MCP call timeout is 10 minutes; a profile manifest sets
/// 8000 ms, which is what a command target is held to.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_millis(8000);

/// What to check.
#[derive(Debug, Clone)]
pub enum Target {
    /// An extension folder or a `.tar.gz`/`.zip` archive.
    Extension(PathBuf),
    /// A stdio server: program and arguments.
    Command(Vec<String>),
    /// A Streamable HTTP endpoint.
    Url(String),
}

/// How the adapter learns about the scripted upstream: the variable of its
/// endpoint, and of its credential when it takes one (a service without
/// authentication passes none: `ecp new --auth none`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindingEnv {
    pub base_url: String,
    pub token: Option<String>,
}

/// A resolved stdio launch.
#[derive(Debug, Clone)]
pub struct Launch {
    pub program: String,
    /// Said on stderr before the run: how the program was found.
    pub note: Option<String>,
    pub args: Vec<String>,
    pub cwd: Option<PathBuf>,
    /// Variables set on top of ecp's own environment.
    pub env: BTreeMap<String, String>,
    pub call_timeout: Duration,
    /// `includeTools` of the manifest, when there is one.
    pub include_tools: Option<Vec<String>>,
    /// The manifest's variables for the V1 binding, when it has them.
    pub binding: Option<BindingEnv>,
    /// Keeps an extracted archive alive for the run.
    pub _extracted: Option<Arc<tempfile::TempDir>>,
    /// Keeps the copy of a configuration file pointed at ecp's upstream
    /// ([`super::config_file`]) alive for the run.
    pub scratch: Option<Arc<tempfile::TempDir>>,
}

impl Launch {
    /// `program` with `args` and `env` on top of ecp's own environment,
    /// held to the profile's MCP timeout.
    pub fn of_command(program: &str, args: &[&str], env: &[(&str, &str)]) -> Launch {
        Launch {
            program: program.to_owned(),
            note: None,
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            cwd: None,
            env: (env.iter())
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            call_timeout: DEFAULT_CALL_TIMEOUT,
            include_tools: None,
            binding: None,
            _extracted: None,
            scratch: None,
        }
    }

    /// The command that starts the server: its program, arguments,
    /// environment and folder, stdin and stdout piped, `stderr` as asked,
    /// in a process group of its own, killed when dropped.
    pub fn command(&self, stderr: Stdio) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(&self.program);
        command
            .args(&self.args)
            .envs(&self.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true);
        children::own_group(&mut command);
        if let Some(cwd) = &self.cwd {
            command.current_dir(cwd);
        }
        command
    }
}

/// What a manifest-started server looks like.
#[derive(Debug, Clone)]
pub enum ManifestServer {
    Local(Launch),
    Remote {
        url: String,
        call_timeout: Duration,
        include_tools: Option<Vec<String>>,
    },
}

/// Fills a manifest string as Qwen does ([`crate::qwen::vars`]): its own
/// variables with the extension's folder, the current folder as the
/// workspace and this platform's separator, then `${VAR}`/`$VAR` from
/// `env`; anything unresolved stays literal.
fn substitute(value: &str, extension_path: &str, env: &BTreeMap<String, String>) -> String {
    let workspace = std::env::current_dir()
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_default();
    let places = Places {
        extension: extension_path,
        workspace: Some(&workspace),
        separator: std::path::MAIN_SEPARATOR_STR,
    };
    let lookup = |name: &str| env.get(name).cloned();
    Filler::manifest(places, &lookup).fill(value)
}

/// Unpacks an archive into a new scratch folder, in memory where the
/// machine has room ([`crate::extension::scratch`]), through the bounded
/// reader of `ecp lint` ([`archive::unpack`]).
fn extract(file: &Path) -> Result<tempfile::TempDir, Blocked> {
    let dir = crate::extension::scratch::unpack_folder()
        .map_err(|e| Blocked::new(format!("cannot make a temporary folder: {e}")))?;
    archive::unpack(file, dir.path()).map_err(|e| {
        let problem = match e {
            archive::ArchiveError::File(_) => e.to_string(),
            other => format!("{}: not a readable archive: {other}", file.display()),
        };
        Blocked::with_help(
            crate::text::outside::value(&problem),
            format!(
                "ecp lint {} says what is wrong with it; package it again with ecp package",
                file.display()
            ),
        )
    })?;
    Ok(dir)
}

/// The folder holding the manifest in an extracted archive, by the same
/// rule `ecp lint` applies to the archive's entries
/// ([`archive::manifest_root_of`]).
fn manifest_folder(root: &Path) -> PathBuf {
    let files = crate::extension::runtime::tree_paths(root).unwrap_or_default();
    match archive::manifest_root_of(files.iter().map(String::as_str)) {
        Some(prefix) if !prefix.is_empty() => root.join(prefix.trim_end_matches('/')),
        _ => root.to_owned(),
    }
}

/// Reads an extension's manifest and resolves its one server as Qwen
/// would. `upstream` (base URL, token) fills the variables the manifest
/// passes to the adapter for its endpoint and credential; without a token,
/// the credential comes from ecp's own environment, as Qwen would pass it.
pub fn from_extension(
    path: &Path,
    upstream: Option<(&str, Option<&str>)>,
) -> Result<ManifestServer, Blocked> {
    InputError::check_exists(path).map_err(|e| input_message(&e))?;
    let extracted = if path.is_file() {
        Some(Arc::new(extract(path)?))
    } else {
        None
    };
    let root = extracted
        .as_ref()
        .map_or_else(|| path.to_owned(), |dir| dir.path().to_owned());
    let folder = manifest_folder(&root);
    let folder = folder.canonicalize().unwrap_or(folder);
    // Bounded, a regular file only, not through a link out of the folder.
    let text = match crate::extension::read_manifest(&folder) {
        Ok(Some(text)) => text,
        Ok(None) => {
            return Err(input_message(&InputError::NoManifest {
                path: path.to_owned(),
            }));
        }
        Err(problem) => return Err(Blocked::new(format!("cannot read {problem}"))),
    };
    // The manifest as `ecp lint` reads it: one parser, one model.
    let facts = lint::manifest::check(MANIFEST, &text)
        .map_err(|e| {
            Blocked::new(format!(
                "{MANIFEST} is not JSON: {}; run `ecp lint`",
                e.message
            ))
        })?
        .facts;
    let Some(server) = facts.server else {
        return Err(Blocked::new(format!(
            "{MANIFEST} must declare exactly one MCP server; run `ecp lint`"
        )));
    };
    // Without a `timeout`, Qwen's default MCP call timeout: 10 minutes.
    let call_timeout = server
        .timeout_ms
        .map_or(Duration::from_secs(600), Duration::from_millis);
    let include_tools = server.include_tools.clone();
    let mut process_env: BTreeMap<String, String> = std::env::vars().collect();
    let extension_path = folder.to_string_lossy().into_owned();
    if let Some(url) = &server.http_url {
        return Ok(ManifestServer::Remote {
            url: substitute(url, &extension_path, &process_env),
            call_timeout,
            include_tools,
        });
    }
    let Some(command) = &server.command else {
        return Err(Blocked::new(
            "the server has neither `command` nor `httpUrl`; run `ecp lint`",
        ));
    };
    let (env, binding) = server_env(&server.env, upstream, &extension_path, &mut process_env);
    let args: Vec<String> = server
        .args
        .iter()
        .map(|a| substitute(a, &extension_path, &process_env))
        .collect();
    let cwd = server
        .cwd
        .as_deref()
        .map(|c| PathBuf::from(substitute(c, &extension_path, &process_env)));
    let mut program = substitute(command, &extension_path, &process_env);
    let mut note = None;
    if extracted.is_none() {
        let name = facts.name.as_deref().unwrap_or("");
        (program, note) = entry_in_source_folder(&folder, program, &args, name)?;
    }
    Ok(ManifestServer::Local(Launch {
        program,
        note,
        args,
        cwd,
        env,
        call_timeout,
        include_tools,
        binding,
        _extracted: extracted,
        scratch: None,
    }))
}

/// The manifest's `env` as Qwen resolves it, with the upstream in the
/// endpoint and credential slots (`*BASE_URL`, `*TOKEN`); and those slots'
/// names when the manifest has both. The base URL given is also what later
/// substitutions see as that variable.
fn server_env(
    declared: &[(String, String)],
    upstream: Option<(&str, Option<&str>)>,
    extension_path: &str,
    process_env: &mut BTreeMap<String, String>,
) -> (BTreeMap<String, String>, Option<BindingEnv>) {
    let mut env = BTreeMap::new();
    let mut binding = (None, None);
    for (key, value) in declared {
        let upper = key.to_ascii_uppercase();
        if upper.ends_with("BASE_URL") {
            binding.0 = Some(key.clone());
            if let Some((base_url, _)) = upstream {
                process_env.insert(key.clone(), base_url.to_owned());
                env.insert(key.clone(), base_url.to_owned());
                continue;
            }
        } else if upper.ends_with("TOKEN") {
            binding.1 = Some(key.clone());
            if let Some((_, Some(token))) = upstream {
                env.insert(key.clone(), token.to_owned());
                continue;
            }
        }
        env.insert(key.clone(), substitute(value, extension_path, process_env));
    }
    let binding = binding.0.map(|base_url| BindingEnv {
        base_url,
        token: binding.1,
    });
    (env, binding)
}

fn input_message(error: &InputError) -> Blocked {
    Blocked::with_help(error.to_string(), error.help())
}

/// An extension's source folder has no `dist/main` until it is staged into
/// an archive, so `ecp check .` (and `ecp call .`) build the crate's binary
/// with cargo's dev profile, `cargo build --bin BIN` (a no-op when nothing
/// changed, and the dependencies are the ones `cargo test` built), and run
/// it, saying which: the check always meets the current code, seconds after
/// a one-line edit. A build failure stops the command with the compiler's
/// last lines. A TypeScript extension's bundle is built by `npm run build`
/// when it is older than the sources, or refused when it cannot be
/// ([`crate::extension::build::bundle_for_check`]): a check never judges a
/// stale bundle.
fn entry_in_source_folder(
    folder: &Path,
    program: String,
    args: &[String],
    name: &str,
) -> Result<(String, Option<String>), Blocked> {
    use crate::extension::build;
    let native = folder.join("dist").join("main");
    if Path::new(&program) == native && !native.exists() {
        if !folder.join("Cargo.toml").is_file() {
            return Err(Blocked::with_help(
                format!("{} does not exist", native.display()),
                format!(
                    "put the extension's executable there, or pass its release archive (dist/<platform>.{name}.tar.gz)"
                ),
            ));
        }
        let (bin, _) = build::binary_target(folder, name)
            .map_err(|e| Blocked::with_help(e.to_string(), "pass the release archive instead"))?;
        let progress = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let built = build::build_for_check(folder, &bin, progress).map_err(|e| {
            Blocked::with_help(
                e.to_string(),
                format!(
                    "fix the code and run this again (`cargo build` shows every error), or pass a release archive (dist/<platform>.{name}.tar.gz)"
                ),
            )
        })?;
        let note = format!(
            "note: running {}, cargo's dev build of the current code (`ecp package` builds the release one)",
            built.display()
        );
        return Ok((built.display().to_string(), Some(note)));
    }
    if let Some(script) = args.first()
        && Path::new(script).starts_with(folder)
        && ["js", "mjs", "cjs"]
            .iter()
            .any(|ext| script.ends_with(&format!(".{ext}")))
    {
        let built = build::bundle_for_check(folder, Path::new(script)).map_err(|e| {
            let help = e.help().unwrap_or_else(|| {
                "fix the code and run this again (`npm run build` shows every error)".to_owned()
            });
            Blocked::with_help(e.to_string(), help)
        })?;
        if !Path::new(script).exists() {
            return Err(Blocked::with_help(
                format!("the bundle {script} does not exist"),
                "build it first (for example `npm run build`), or pass the release archive",
            ));
        }
        let note = match built {
            Some(why) => format!(
                "note: running {script}, built now by `npm run build` ({why}; `ecp package` builds the release one)"
            ),
            None => format!("note: running {script}, the bundle of the current code"),
        };
        return Ok((program, Some(note)));
    }
    Ok((program, None))
}

/// Points `launch` at `endpoint` through a copy of `config`: the copy is
/// written into a scratch folder the launch keeps, the file's variable
/// names the copy, the credential variable gets the token when one is
/// given, and those two variables become the launch's binding.
pub fn point_config(
    launch: &mut Launch,
    config: &super::config_file::ConfigFile,
    endpoint: (&str, Option<&str>),
) -> Result<(), Blocked> {
    let scratch = tempfile::Builder::new()
        .prefix("ecp-config-")
        .tempdir()
        .map_err(|e| Blocked::new(format!("cannot make a temporary folder: {e}")))?;
    let copy = config.write_copy(scratch.path(), endpoint.0)?;
    launch
        .env
        .insert(config.var.clone(), copy.to_string_lossy().into_owned());
    if let Some(token) = endpoint.1 {
        launch
            .env
            .insert(config.credential_env.clone(), token.to_owned());
    }
    launch.binding = Some(BindingEnv {
        base_url: config.var.clone(),
        token: Some(config.credential_env.clone()),
    });
    launch.scratch = Some(Arc::new(scratch));
    Ok(())
}

/// The Qwen InstanceConfig a manifest-started server reads: the one its
/// manifest's `env` names in `QWEN_EXTERNAL_CONTEXT_MEM0_CONFIG`, or, for
/// a server with no endpoint variable of its own (Qwen's own provider
/// passes none; it inherits Qwen's environment), the one ecp's own
/// environment names.
pub fn qwen_config_of(launch: &Launch) -> Result<Option<super::config_file::ConfigFile>, Blocked> {
    use super::config_file::{ConfigFile, QWEN_MEM0_CONFIG_ENV};
    let path = match launch.env.get(QWEN_MEM0_CONFIG_ENV) {
        Some(path) => Some(path.clone()),
        None if launch.binding.is_none() => std::env::var(QWEN_MEM0_CONFIG_ENV).ok(),
        None => None,
    };
    match path {
        Some(path) if !path.trim().is_empty() && !path.starts_with("${") => {
            ConfigFile::read(QWEN_MEM0_CONFIG_ENV, Path::new(&path), None, None).map(Some)
        }
        _ => Ok(None),
    }
}

/// The loopback names the scripted upstream is reached by.
/// Loopback, with the other host the redirect fault sends a client to
/// ([`super::upstream::ELSEWHERE_HOST`]).
const LOOPBACK: &[&str] = &["127.0.0.1", "localhost", "::1", "127.0.0.2"];

/// Adds loopback to the target's `NO_PROXY` and `no_proxy` (keeping what
/// the caller's environment or the manifest put there), so that a caller's
/// `HTTP_PROXY` does not send the target's calls to the scripted upstream
/// through a proxy. The reference honours `NO_PROXY`, and so does every
/// common HTTP stack (undici, reqwest, Python's urllib, curl, Go).
pub fn reach_loopback_directly(env: &mut BTreeMap<String, String>) {
    for name in ["NO_PROXY", "no_proxy"] {
        let existing = env
            .get(name)
            .cloned()
            .or_else(|| std::env::var(name).ok())
            .unwrap_or_default();
        let mut entries: Vec<&str> = existing
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .collect();
        for host in LOOPBACK {
            if !entries.contains(host) {
                entries.push(host);
            }
        }
        env.insert(name.to_owned(), entries.join(","));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Qwen fills `${CLAUDE_PLUGIN_ROOT}` with the extension's folder, as
    /// `${extensionPath}`, in every field of the server it starts.
    #[test]
    fn starts_claude_plugin_root_filled() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().canonicalize().unwrap();
        std::fs::create_dir(folder.join("dist")).unwrap();
        std::fs::write(folder.join("dist/main.js"), "").unwrap();
        let manifest = serde_json::json!({"name": "acme-context", "version": "1.0.0",
            "mcpServers": {"acme-context": {"command": "node",
                "args": ["${CLAUDE_PLUGIN_ROOT}${/}dist${/}main.js"],
                "cwd": "${CLAUDE_PLUGIN_ROOT}",
                "env": {"ACME_ROOT": "${CLAUDE_PLUGIN_ROOT}"}, "timeout": 8000}}});
        std::fs::write(folder.join(MANIFEST), manifest.to_string()).unwrap();
        let Ok(ManifestServer::Local(launch)) = from_extension(&folder, None) else {
            panic!("not a local server");
        };
        let main = folder.join("dist").join("main.js");
        assert_eq!(launch.args, [main.to_string_lossy()]);
        assert_eq!(launch.cwd.as_deref(), Some(folder.as_path()));
        assert_eq!(launch.env["ACME_ROOT"], folder.to_string_lossy());
    }

    #[test]
    fn substitutes_like_qwen() {
        let env = BTreeMap::from([("HOME".to_owned(), "/home/a".to_owned())]);
        assert_eq!(
            substitute("${extensionPath}${/}dist${/}main", "/x", &env),
            "/x/dist/main"
        );
        assert_eq!(
            substitute("$HOME/a ${HOME}/b", "/x", &env),
            "/home/a/a /home/a/b"
        );
        assert_eq!(
            substitute("${MISSING} $ $MISSING ${", "/x", &env),
            "${MISSING} $ $MISSING ${"
        );
    }
}
