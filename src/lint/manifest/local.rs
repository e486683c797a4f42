//! The rules of a local server: what its command starts (a native entry
//! point inside the extension, or `node` and the bundle, with no option
//! that runs other code), its `cwd`, and `NODE_OPTIONS`.

use super::*;

/// Programs that install or fetch packages when run.
const INSTALLERS: &[&str] = &[
    "npx", "npm", "pnpm", "pnpx", "yarn", "bunx", "bun", "uvx", "uv", "pip", "pip3", "pipx",
    "docker", "podman", "deno", "go", "cargo",
];
/// How Qwen's own starter names the interpreter of its bundle.
const NODE: &[&str] = &["node", "node.exe"];
/// Script extensions `node` runs as a bundle.
const SCRIPT_EXTENSIONS: &[&str] = &[".js", ".mjs", ".cjs"];
/// Node options that load or evaluate code besides the bundle. The long
/// ones match with or without `=value`; `--inspect` matches every
/// `--inspect*` variant.
const NODE_CODE_OPTIONS: &[&str] = &[
    "--eval",
    "--print",
    "--require",
    "--import",
    "--loader",
    "--experimental-loader",
    "--inspect",
];
/// Of those, the one whose value never follows as the next argument (all
/// others, and a short group such as `-pe`, may take the next argument).
const NODE_OPTION_WITHOUT_VALUE: &str = "--inspect";
/// Short Node options that evaluate or load code (`-e`, `-p`, `-r`), alone
/// or in a group such as `-pe`.
const NODE_CODE_SHORT: &[char] = &['e', 'p', 'r'];
/// The option of `arg` that loads or evaluates code, if it is one.
fn node_code_option(arg: &str) -> Option<&str> {
    if let Some(long) = arg.strip_prefix("--") {
        let name = long.split('=').next().unwrap_or(long);
        let option = &arg[..name.len() + 2];
        // Node reads `_` in an option name as `-`.
        let spelled = option.replace('_', "-");
        return NODE_CODE_OPTIONS
            .iter()
            .any(|refused| {
                spelled == *refused || (*refused == "--inspect" && spelled.starts_with(refused))
            })
            .then_some(option);
    }
    let short = arg.strip_prefix('-')?;
    let flags = short.split('=').next().unwrap_or(short);
    flags
        .chars()
        .any(|c| NODE_CODE_SHORT.contains(&c))
        .then_some(&arg[..flags.len() + 1])
}

/// Node options known to run no other code and to take no separate value
/// (a value is written `--name=value`), by name with `-` for `_`. Anything
/// else before the script is refused: an option that takes the next
/// argument as its value (`--title`, `-C`, `--env-file`...) would make the
/// next argument the value and a later one the script.
const NODE_HARMLESS_OPTIONS: &[&str] = &[
    "--enable-source-maps",
    "--no-warnings",
    "--no-deprecation",
    "--trace-warnings",
    "--trace-deprecation",
    "--trace-uncaught",
    "--max-old-space-size",
    "--max-semi-space-size",
    "--stack-size",
    "--unhandled-rejections",
    "--disable-warning",
    "--dns-result-order",
];

/// Whether `arg` (an option) is on [`NODE_HARMLESS_OPTIONS`].
fn node_harmless_option(arg: &str) -> bool {
    let name = arg.split('=').next().unwrap_or(arg).replace('_', "-");
    NODE_HARMLESS_OPTIONS.contains(&name.as_str())
}

impl Checker<'_> {
    pub(super) fn local(&mut self, server: &Node, command: &Node, pointer: &str) {
        let command_pointer = pointer_push(pointer, "command");
        let Some(text) = command.as_str() else {
            self.report(
                Rule::ServerTransport,
                command.span,
                &command_pointer,
                format!("`command` is {}, not a string", command.type_name()),
                "write \"command\": \"${extensionPath}${/}dist${/}main\"",
            );
            return;
        };
        if text.trim().contains(char::is_whitespace) && server.get("args").is_none() {
            self.report(
                Rule::CommandSpaces,
                command.span,
                &command_pointer,
                "`command` holds spaces but there are no `args`; Qwen does not split it".into(),
                "put the program in `command` and each argument in `args`",
            );
        }
        let program = text.split_whitespace().next().unwrap_or("");
        let base = program.rsplit(['/', '\\']).next().unwrap_or(program);
        let base = base
            .strip_suffix(".exe")
            .or_else(|| base.strip_suffix(".cmd"))
            .unwrap_or(base);
        if INSTALLERS.contains(&base) {
            self.report(
                Rule::CommandInstaller,
                command.span,
                &command_pointer,
                format!("`command` runs `{base}`, which installs or fetches packages"),
                "ship a self-contained entry point and run \"${extensionPath}${/}dist${/}main\"",
            );
        } else if NODE.contains(&text.trim()) {
            self.node(server, pointer);
        } else if paths::starts_at_extension(text.trim()) {
            match paths::inside_extension(text.trim()) {
                Ok(relative) if !relative.is_empty() => {
                    self.out.facts.entry_point = Some(EntryPoint {
                        path: relative,
                        span: command.span,
                        pointer: command_pointer,
                        kind: EntryKind::Native,
                    });
                }
                Ok(_) => self.report(
                    Rule::CommandEntryPoint,
                    command.span,
                    &command_pointer,
                    "`command` is the extension folder itself, not a program in it".into(),
                    "use \"${extensionPath}${/}dist${/}main\"",
                ),
                Err(problem) => self.report(
                    Rule::PathEscape,
                    command.span,
                    &command_pointer,
                    format!("`command` {problem}"),
                    "run the entry point the extension ships: \"${extensionPath}${/}dist${/}main\"",
                ),
            }
        } else {
            self.report(
                Rule::CommandEntryPoint,
                command.span,
                &command_pointer,
                "`command` is neither the bundled entry point under ${extensionPath} nor `node`".into(),
                "use \"${extensionPath}${/}dist${/}main\", or \"node\" with \"args\": [\"${extensionPath}${/}dist${/}main.js\"]",
            );
        }
        self.node_options_env(server, pointer);
        self.cwd(server, pointer);
        self.env_literals(server, pointer);
    }

    /// `command` is `node`: the options before the script, then the script.
    /// Judges one option `node` is given before its script; whether it
    /// takes the next argument as its value.
    fn node_option(&mut self, arg: &Node, text: &str, at: &str) -> bool {
        if let Some(option) = node_code_option(text) {
            self.report(
                Rule::NodeOption,
                arg.span,
                at,
                format!(
                    "`node` is given `{option}`, which loads or evaluates code besides the bundle"
                ),
                "remove the option and bundle what it loaded into dist/main.js",
            );
            let short_group = !text.starts_with("--") && !text.contains('=');
            return short_group
                || (NODE_CODE_OPTIONS.contains(&text) && text != NODE_OPTION_WITHOUT_VALUE);
        }
        if !node_harmless_option(text) {
            self.report(
                Rule::NodeOption,
                arg.span,
                at,
                format!(
                    "`node` is given `{}`, which ecp does not know to be harmless (an option that takes the next argument as its value would run another script)",
                    crate::text::outside::shown(text)
                ),
                format!("remove it, or use one of {} with `=value`", NODE_HARMLESS_OPTIONS.join(", ")),
            );
        }
        false
    }

    fn node(&mut self, server: &Node, pointer: &str) {
        let args_pointer = pointer_push(pointer, "args");
        let args = server
            .get("args")
            .and_then(Node::as_array)
            .unwrap_or_default();
        let mut index = 0;
        let script = loop {
            let Some(arg) = args.get(index) else {
                break None;
            };
            let text = arg.as_str().unwrap_or("");
            if !text.starts_with('-') || text == "-" {
                break Some((index, arg, text));
            }
            if text == "--" {
                index += 1;
                break args
                    .get(index)
                    .map(|a| (index, a, a.as_str().unwrap_or("")));
            }
            if self.node_option(arg, text, &format!("{args_pointer}/{index}")) {
                index += 1;
            }
            index += 1;
        };
        let Some((index, arg, text)) = script else {
            let (span, at) = match server.get("args") {
                Some(node) => (node.span, args_pointer.clone()),
                None => (opening(server), pointer.to_owned()),
            };
            self.report(
                Rule::NodeScript,
                span,
                &at,
                "`node` is started without a script to run".into(),
                "add \"args\": [\"${extensionPath}${/}dist${/}main.js\"]",
            );
            return;
        };
        let at = format!("{args_pointer}/{index}");
        let problem = match paths::inside_extension(text) {
            Ok(relative) if SCRIPT_EXTENSIONS.iter().any(|ext| relative.ends_with(ext)) => {
                self.out.facts.entry_point = Some(EntryPoint {
                    path: relative,
                    span: arg.span,
                    pointer: at,
                    kind: EntryKind::Script,
                });
                return;
            }
            Ok(_) => "is not a .js, .mjs or .cjs script".to_owned(),
            Err(outside) => outside.to_string(),
        };
        self.report(
            Rule::NodeScript,
            arg.span,
            &at,
            format!("the script `node` runs ({}) {problem}", crate::text::outside::shown(text)),
            "run the bundle the extension ships: \"args\": [\"${extensionPath}${/}dist${/}main.js\"]",
        );
    }

    /// `env.NODE_OPTIONS` passes the same options to every `node` started.
    fn node_options_env(&mut self, server: &Node, pointer: &str) {
        let Some(env) = server.get("env").and_then(Node::as_object) else {
            return;
        };
        for variable in env.iter().filter(|v| v.key == "NODE_OPTIONS") {
            let Some(value) = variable.node.as_str() else {
                continue;
            };
            let unknown = value.contains(['"', '\'', '\\'])
                || value
                    .split_whitespace()
                    .any(|t| node_code_option(t).is_none() && !node_harmless_option(t));
            if unknown {
                self.report(
                    Rule::NodeOption,
                    variable.node.span,
                    &pointer_push(&pointer_push(pointer, "env"), "NODE_OPTIONS"),
                    "`env.NODE_OPTIONS` holds quotes or options ecp does not know to be harmless"
                        .into(),
                    format!(
                        "keep NODE_OPTIONS to {} (with `=value`), unquoted",
                        NODE_HARMLESS_OPTIONS.join(", ")
                    ),
                );
            } else if let Some(option) = value.split_whitespace().find_map(node_code_option) {
                self.report(
                    Rule::NodeOption,
                    variable.node.span,
                    &pointer_push(&pointer_push(pointer, "env"), "NODE_OPTIONS"),
                    format!("`env.NODE_OPTIONS` holds `{option}`, which loads or evaluates code besides the bundle"),
                    "remove the option from NODE_OPTIONS",
                );
            }
        }
    }

    fn cwd(&mut self, server: &Node, pointer: &str) {
        match server.get("cwd") {
            None => self.report(
                Rule::CwdMissing,
                opening(server),
                pointer,
                "the local server has no `cwd`".into(),
                "add \"cwd\": \"${extensionPath}\"",
            ),
            Some(cwd) => {
                let Some(text) = cwd.as_str() else {
                    return;
                };
                if let Err(problem) = paths::inside_extension(text) {
                    self.report(
                        Rule::PathEscape,
                        cwd.span,
                        &pointer_push(pointer, "cwd"),
                        format!("`cwd` {problem}"),
                        "use \"cwd\": \"${extensionPath}\"",
                    );
                }
            }
        }
    }
}
