//! The manifest rules: a `qwen-extension.json` text in, findings with spans
//! out, plus the facts the folder and archive checks need next.

use super::{
    Finding,
    json::{self, Member, Node, Span, Value},
    paths,
    rules::Rule,
};
pub use crate::extension::manifest::{EntryKind, EntryPoint, ManifestFacts, ServerFacts};
use crate::name::{NameError, validate_name};
use crate::profile::TOOL_NAME as TOOL;
use crate::text::secrets;

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
/// The smallest `timeout` leaving headroom over the default 5000 ms budget.
const MIN_TIMEOUT_MS: u64 = 6000;
/// Header names that carry credentials.
const CREDENTIAL_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "x-api-key",
    "api-key",
    "x-auth-token",
    "x-access-token",
];

/// Findings for one manifest text, the byte ranges to mask when it is shown,
/// and its facts.
#[derive(Debug, Default)]
pub struct ManifestCheck {
    pub findings: super::Findings,
    pub redactions: Vec<Span>,
    pub facts: ManifestFacts,
}

struct Checker<'a> {
    file: &'a str,
    out: ManifestCheck,
}

impl Checker<'_> {
    fn report(
        &mut self,
        rule: Rule,
        span: Span,
        pointer: &str,
        message: String,
        help: impl Into<String>,
    ) {
        let file = self.file;
        self.out.findings.add_with(rule, || {
            Finding::new(rule, file, span, pointer, message, help)
        });
    }
}

fn pointer_push(pointer: &str, key: &str) -> String {
    format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1"))
}

/// Checks a manifest text. `Err` when it is not JSON at all.
pub fn check(file: &str, text: &str) -> Result<ManifestCheck, json::SyntaxError> {
    let root = json::parse(text)?;
    let mut checker = Checker {
        file,
        out: ManifestCheck::default(),
    };
    checker.root(&root);
    checker.secrets(&root, None, "");
    Ok(checker.out)
}

/// The span of the first character of a node (where to point when a member
/// is missing from it).
fn opening(node: &Node) -> Span {
    Span {
        start: node.span.start,
        end: node.span.start + 1,
    }
}

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

fn is_variable_reference(value: &str) -> bool {
    value.contains("${") || value.trim_start().starts_with('$')
}

impl Checker<'_> {
    fn root(&mut self, root: &Node) {
        if root.as_object().is_none() {
            self.report(
                Rule::ManifestShape,
                root.span,
                "",
                format!("the manifest is {}, not an object", root.type_name()),
                "write one JSON object: {\"name\": \"acme-context\", \"version\": \"0.1.0\", \"mcpServers\": {...}}",
            );
            return;
        }
        let name = self.name(root);
        self.version(root);
        if let Some(member) = root.member("trust") {
            self.trust(member, "");
        }
        self.servers(root, name.as_deref());
        self.settings(root);
        self.context_files(root);
        self.out.facts.name = name;
    }

    fn name(&mut self, root: &Node) -> Option<String> {
        let Some(node) = root.get("name") else {
            self.report(
                Rule::NameMissing,
                opening(root),
                "",
                "the manifest has no `name`".into(),
                "add a stable, distinctive name: \"name\": \"<org>-context\"",
            );
            return None;
        };
        let Some(name) = node.as_str() else {
            self.report(
                Rule::NameMissing,
                node.span,
                "/name",
                format!("`name` is {}, not a string", node.type_name()),
                "write the name as a string: \"name\": \"<org>-context\"",
            );
            return None;
        };
        if let Err(error) = validate_name(name) {
            self.report(
                Rule::NameFormat,
                node.span,
                "/name",
                format!("the name `{name}` {error}"),
                format!("try `{}`", NameError::suggestion(name)),
            );
        }
        Some(name.to_owned())
    }

    fn version(&mut self, root: &Node) {
        match root.get("version") {
            None => self.report(
                Rule::VersionMissing,
                opening(root),
                "",
                "the manifest has no `version`; Qwen lists it as (undefined)".into(),
                "add \"version\": \"0.1.0\"",
            ),
            Some(node) => match node.as_str() {
                Some(version) if semver::Version::parse(version).is_ok() => {
                    self.out.facts.version = Some(version.to_owned());
                    self.out.facts.version_span = Some(node.span);
                }
                _ => self.report(
                    Rule::VersionSemver,
                    node.span,
                    "/version",
                    "`version` is not a semantic version".into(),
                    "use MAJOR.MINOR.PATCH, e.g. \"0.1.0\"",
                ),
            },
        }
    }

    fn trust(&mut self, member: &Member, pointer: &str) {
        self.report(
            Rule::Trust,
            member.key_span,
            &pointer_push(pointer, "trust"),
            "`trust` is set; Qwen 0.24 honours it and runs the tool without approval".into(),
            "remove `trust` whatever its value",
        );
    }

    fn servers(&mut self, root: &Node, name: Option<&str>) {
        let Some(node) = root.get("mcpServers") else {
            self.report(
                Rule::ServerCount,
                opening(root),
                "",
                "the manifest declares no MCP server".into(),
                "add \"mcpServers\": {\"<name>\": {...}} with the one context_search server",
            );
            return;
        };
        let Some(servers) = node.as_object() else {
            self.report(
                Rule::ServerCount,
                node.span,
                "/mcpServers",
                format!("`mcpServers` is {}, not an object", node.type_name()),
                "write \"mcpServers\": {\"<name>\": {...}}",
            );
            return;
        };
        if servers.len() != 1 {
            self.report(
                Rule::ServerCount,
                node.span,
                "/mcpServers",
                format!(
                    "the manifest declares {} MCP servers; a profile extension has exactly one",
                    servers.len()
                ),
                "keep the one server that offers context_search; publish others separately",
            );
        }
        if let [only] = servers {
            self.out.facts.server = Some(ServerFacts::read(&only.key, &only.node));
        }
        for server in servers {
            let pointer = pointer_push("/mcpServers", &server.key);
            if let Some(name) = name
                && server.key != name
            {
                self.report(
                    Rule::ServerKey,
                    server.key_span,
                    &pointer,
                    format!(
                        "the MCP server is keyed `{}`, not the extension name `{name}`",
                        server.key
                    ),
                    format!("rename the key to \"{name}\""),
                );
            }
            self.server(&server.node, &pointer);
        }
    }

    fn server(&mut self, node: &Node, pointer: &str) {
        if node.as_object().is_none() {
            self.report(
                Rule::ManifestShape,
                node.span,
                pointer,
                format!("the server entry is {}, not an object", node.type_name()),
                "write the server as an object with command or httpUrl",
            );
            return;
        }
        if let Some(member) = node.member("trust") {
            self.trust(member, pointer);
        }
        self.tools(node, pointer);
        self.timeout(node, pointer);
        let command = node.get("command");
        let http_url = node.get("httpUrl");
        let legacy = node.member("url").or_else(|| node.member("tcp"));
        match (command, http_url, legacy) {
            (_, _, Some(member)) => self.report(
                Rule::ServerTransport,
                member.key_span,
                &pointer_push(pointer, &member.key),
                format!("the server uses `{}`, which is not a profile transport", member.key),
                "use `httpUrl` (Streamable HTTP) for a remote server, `command` for a local one",
            ),
            (Some(_), Some(url), None) => self.report(
                Rule::ServerTransport,
                url.span,
                &pointer_push(pointer, "httpUrl"),
                "the server sets both `command` and `httpUrl`".into(),
                "keep `command` for a local adapter or `httpUrl` for a remote one",
            ),
            (None, None, None) => self.report(
                Rule::ServerTransport,
                opening(node),
                pointer,
                "the server sets neither `command` nor `httpUrl`".into(),
                "set \"command\": \"${extensionPath}${/}dist${/}main\" or \"httpUrl\": \"https://...\"",
            ),
            _ => {}
        }
        if let Some(command) = command {
            self.local(node, command, pointer);
        } else if let Some(url) = http_url {
            self.remote(node, url, pointer);
        }
    }

    fn tools(&mut self, node: &Node, pointer: &str) {
        let include_pointer = pointer_push(pointer, "includeTools");
        match node.get("includeTools") {
            None => self.report(
                Rule::IncludeTools,
                opening(node),
                pointer,
                "the server has no `includeTools`, so every tool it offers is installed".into(),
                "add \"includeTools\": [\"context_search\"]",
            ),
            Some(include) => {
                let exact = include
                    .as_array()
                    .is_some_and(|tools| tools.len() == 1 && tools[0].as_str() == Some(TOOL));
                if !exact {
                    self.report(
                        Rule::IncludeTools,
                        include.span,
                        &include_pointer,
                        "`includeTools` is not exactly [\"context_search\"]".into(),
                        "write \"includeTools\": [\"context_search\"]",
                    );
                }
            }
        }
        if let Some(tools) = node.get("excludeTools").and_then(Node::as_array) {
            for (index, tool) in tools.iter().enumerate() {
                if tool.as_str() == Some(TOOL) {
                    self.report(
                        Rule::ExcludeTools,
                        tool.span,
                        &format!("{pointer}/excludeTools/{index}"),
                        "`excludeTools` lists context_search, and exclusion wins over inclusion"
                            .into(),
                        "remove \"context_search\" from excludeTools",
                    );
                }
            }
        }
    }

    fn timeout(&mut self, node: &Node, pointer: &str) {
        let Some(timeout) = node.get("timeout") else {
            self.report(
                Rule::TimeoutMissing,
                opening(node),
                pointer,
                "the server has no `timeout`; Qwen then waits up to 10 minutes per call".into(),
                "add a `timeout` a little above the provider's budget (\"timeout\": 8000 for the default 5000 ms budget)",
            );
            return;
        };
        let millis = match &timeout.value {
            Value::Number(literal) => literal.parse::<u64>().ok(),
            _ => None,
        };
        if millis.is_none_or(|ms| ms < MIN_TIMEOUT_MS) {
            self.report(
                Rule::TimeoutHeadroom,
                timeout.span,
                &pointer_push(pointer, "timeout"),
                format!(
                    "`timeout` must be an integer of at least {MIN_TIMEOUT_MS} ms to leave headroom over the 5000 ms provider budget"
                ),
                "use \"timeout\": 8000",
            );
        }
    }

    /// An `env` value that is a literal rather than a `${VAR}` placeholder
    /// (and no secret, which `secrets` reports).
    fn env_literals(&mut self, server: &Node, pointer: &str) {
        if let Some(env) = server.get("env").and_then(Node::as_object) {
            for variable in env {
                // NODE_OPTIONS configures the runtime, not the provider;
                // `node-option` judges it.
                if let Some(value) = variable.node.as_str()
                    && variable.key != "NODE_OPTIONS"
                    && !is_variable_reference(value)
                    && secrets::detect(Some(&variable.key), value).is_empty()
                {
                    self.report(
                        Rule::EnvLiteral,
                        variable.node.span,
                        &pointer_push(&pointer_push(pointer, "env"), &variable.key),
                        format!(
                            "`env.{}` is a literal, not a ${{VAR}} placeholder",
                            variable.key
                        ),
                        format!(
                            "write \"{0}\": \"${{{0}}}\" and export it at run time",
                            variable.key
                        ),
                    );
                }
            }
        }
    }

    fn local(&mut self, server: &Node, command: &Node, pointer: &str) {
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

    fn remote(&mut self, server: &Node, url: &Node, pointer: &str) {
        let url_text = url.as_str().unwrap_or("");
        if !url_text.trim().to_ascii_lowercase().starts_with("https://") {
            self.report(
                Rule::RemoteHttps,
                url.span,
                &pointer_push(pointer, "httpUrl"),
                "`httpUrl` is not an https URL".into(),
                "publish the endpoint over TLS: \"https://context.acme.example/mcp\"",
            );
        }
        if let Some(domain) = reserved_domain(url_text) {
            self.report(
                Rule::RemotePlaceholder,
                url.span,
                &pointer_push(pointer, "httpUrl"),
                format!("`httpUrl` is a placeholder: {domain} is reserved and reaches no provider's service"),
                "set the deployed endpoint in `httpUrl` and `oauth.audiences`, or run `ecp new NAME --template remote --endpoint URL` again",
            );
        }
        let oauth_pointer = pointer_push(pointer, "oauth");
        match server.get("oauth") {
            None => self.report(
                Rule::RemoteOauth,
                opening(server),
                pointer,
                "the remote server has no `oauth`".into(),
                "add \"oauth\": {\"enabled\": true, \"scopes\": [\"context.read\"], \"audiences\": [\"<httpUrl>\"]}",
            ),
            Some(oauth) => {
                let enabled = matches!(oauth.get("enabled").map(|n| &n.value), Some(Value::Bool(true)));
                let non_empty = |key: &str| {
                    oauth
                        .get(key)
                        .and_then(Node::as_array)
                        .is_some_and(|list| list.iter().any(|n| n.as_str().is_some_and(|s| !s.is_empty())))
                };
                let missing: Vec<&str> = [
                    (!enabled).then_some("`enabled: true`"),
                    (!non_empty("scopes")).then_some("a scope"),
                    (!non_empty("audiences")).then_some("an audience"),
                ]
                .into_iter()
                .flatten()
                .collect();
                if !missing.is_empty() {
                    self.report(
                        Rule::RemoteOauth,
                        oauth.span,
                        &oauth_pointer,
                        format!("`oauth` lacks {}", missing.join(", ")),
                        "use {\"enabled\": true, \"scopes\": [\"context.read\"], \"audiences\": [\"<httpUrl>\"]}",
                    );
                }
            }
        }
        if let Some(headers) = server.get("headers").and_then(Node::as_object) {
            for header in headers {
                let lower = header.key.to_ascii_lowercase();
                if CREDENTIAL_HEADERS.contains(&lower.as_str()) || secrets::is_secret_key(&lower) {
                    self.report(
                        Rule::RemoteCredentialHeader,
                        header.key_span,
                        &pointer_push(&pointer_push(pointer, "headers"), &header.key),
                        format!("header `{}` carries a credential", header.key),
                        "remove the header; the remote path authenticates with OAuth",
                    );
                }
            }
        }
    }

    fn settings(&mut self, root: &Node) {
        let Some(settings) = root.get("settings").and_then(Node::as_array) else {
            return;
        };
        for (index, setting) in settings.iter().enumerate() {
            let sensitive = matches!(
                setting.get("sensitive").map(|n| &n.value),
                Some(Value::Bool(true))
            );
            let credential_like = setting
                .get("envVar")
                .and_then(Node::as_str)
                .is_some_and(secrets::is_secret_key);
            if sensitive || credential_like {
                self.report(
                    Rule::SettingsCredential,
                    setting.span,
                    &format!("/settings/{index}"),
                    "a setting is declared as the credential path, but Qwen 0.24 does not pass setting values to the MCP server".into(),
                    "document an environment variable instead (see `ecp explain settings-credential`)",
                );
            }
        }
    }

    fn context_files(&mut self, root: &Node) {
        let Some(node) = root.get("contextFileName") else {
            return;
        };
        let names: Vec<&Node> = match &node.value {
            Value::String(_) => vec![node],
            Value::Array(items) => items.iter().collect(),
            _ => Vec::new(),
        };
        for (index, name) in names.into_iter().enumerate() {
            let Some(file) = name.as_str() else {
                continue;
            };
            match paths::context_file(file) {
                Ok(relative) if !relative.is_empty() => {
                    self.out.facts.context_files.push((relative, name.span));
                }
                Ok(_) => {}
                Err(problem) => {
                    let pointer = match &node.value {
                        Value::Array(_) => format!("/contextFileName/{index}"),
                        _ => "/contextFileName".to_owned(),
                    };
                    self.report(
                        Rule::PathEscape,
                        name.span,
                        &pointer,
                        format!("context file `{file}` {problem}"),
                        "name a file inside the extension, relative to the manifest: \"QWEN.md\"",
                    );
                }
            }
        }
    }

    /// `args`: every string on its own, and `--name=value` / `--name value`
    /// pairs as options whose name says what the value is.
    fn argument_secrets(&mut self, items: &[Node], pointer: &str) {
        for (index, item) in items.iter().enumerate() {
            let at = format!("{pointer}/{index}");
            let Some(text) = item.as_str() else {
                self.secrets(item, Some("args"), &at);
                continue;
            };
            let option = text.strip_prefix("--").or_else(|| text.strip_prefix('-'));
            let (name, value) = match option.map(|o| o.split_once('=')) {
                Some(Some((name, value))) => (Some(name), Some((value, item, at.clone()))),
                Some(None) => {
                    // A next argument that is a secret by itself is
                    // reported on its own turn.
                    let next = items
                        .get(index + 1)
                        .and_then(|n| n.as_str().map(|v| (v, n)))
                        .filter(|(v, _)| secrets::detect(Some("args"), v).is_empty());
                    (
                        option,
                        next.map(|(value, node)| (value, node, format!("{pointer}/{}", index + 1))),
                    )
                }
                None => (None, None),
            };
            let mut detections = secrets::detect(Some("args"), text);
            let mut place = (item, at.clone());
            if detections.is_empty()
                && let (Some(name), Some((value, node, value_at))) = (name, value)
            {
                detections = secrets::detect_option(name, value);
                place = (node, value_at);
            }
            if detections.is_empty() {
                continue;
            }
            let (node, at) = place;
            if !self.out.redactions.contains(&node.span) {
                self.out.redactions.push(node.span);
            }
            for detection in detections {
                self.report(
                    detection.kind.into(),
                    node.span,
                    &at,
                    format!("`args` holds {} ({})", detection.what, detection.preview),
                    "remove it, rotate it, and pass it through `env` as a \"${VAR}\" placeholder",
                );
            }
        }
    }

    /// Walks every string and reports secrets in it.
    fn secrets(&mut self, node: &Node, key: Option<&str>, pointer: &str) {
        match &node.value {
            Value::String(text) => {
                let detections = secrets::detect(key, text);
                if !detections.is_empty() {
                    self.out.redactions.push(node.span);
                }
                for detection in detections {
                    let place = key
                        .map(|k| format!("`{k}`"))
                        .unwrap_or_else(|| "a value".into());
                    self.report(
                        detection.kind.into(),
                        node.span,
                        pointer,
                        format!("{place} holds {} ({})", detection.what, detection.preview),
                        "remove it, rotate it, and read it from the environment: \"${VAR}\"",
                    );
                }
            }
            Value::Array(items) if key == Some("args") => self.argument_secrets(items, pointer),
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    self.secrets(item, key, &format!("{pointer}/{index}"));
                }
            }
            Value::Object(members) => {
                for member in members {
                    let child = pointer_push(pointer, &member.key);
                    self.secrets(&member.node, Some(&member.key), &child);
                }
            }
            _ => {}
        }
    }
}

/// The reserved or placeholder domain `url` points at, as it reads in a
/// finding: the `.example`, `.test`, `.invalid` and `.localhost` names
/// (RFC 2606, RFC 6761), `localhost`, and `example.com`, `.net`, `.org`;
/// and a loopback or unspecified IP address (`127.0.0.1`, `[::1]`).
pub fn reserved_domain(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url.trim()).ok()?;
    // Like `localhost`: an address that is this machine (or none) on every
    // user's machine reaches no provider's service.
    let this_machine = |loopback: bool, unspecified: bool| {
        (loopback || unspecified).then(|| {
            let host = parsed.host_str().unwrap_or_default();
            format!("`{host}` (a loopback address)")
        })
    };
    let host = match parsed.host()? {
        url::Host::Ipv4(ip) => return this_machine(ip.is_loopback(), ip.is_unspecified()),
        url::Host::Ipv6(ip) => return this_machine(ip.is_loopback(), ip.is_unspecified()),
        url::Host::Domain(host) => host,
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let under = |domain: &str| host == domain || host.ends_with(&format!(".{domain}"));
    ["example", "test", "invalid", "localhost"]
        .iter()
        .find(|tld| under(tld))
        .map(|tld| match host == *tld {
            true => format!("`{host}`"),
            false => format!("`{host}` (under .{tld})"),
        })
        .or_else(|| {
            ["example.com", "example.net", "example.org"]
                .iter()
                .find(|domain| under(domain))
                .map(|domain| format!("`{host}` (under {domain})"))
        })
}
