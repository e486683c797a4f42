//! The manifest rules: a `qwen-extension.json` text in, findings with spans
//! out, plus the facts the folder and archive checks need next.

use super::{
    Finding,
    json::{self, Member, Node, Span, Value},
    rules::Rule,
    secrets,
};
use crate::name::{NameError, validate_name};

/// The profile tool.
const TOOL: &str = "context_search";
/// Programs that install or fetch packages when run.
const INSTALLERS: &[&str] = &[
    "npx", "npm", "pnpm", "pnpx", "yarn", "bunx", "bun", "uvx", "uv", "pip", "pip3", "pipx",
    "docker", "podman", "deno", "go", "cargo",
];
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

/// What the later checks need from a manifest.
#[derive(Debug, Clone, Default)]
pub struct ManifestFacts {
    pub name: Option<String>,
    pub version: Option<String>,
    /// Files named by `contextFileName`, with their spans.
    pub context_files: Vec<(String, Span)>,
    /// The local server's command, when it is the bundled entry point,
    /// relative to the extension root (`dist/main`).
    pub entry_point: Option<(String, Span)>,
}

/// Findings for one manifest text, the byte ranges to mask when it is shown,
/// and its facts.
#[derive(Debug, Default)]
pub struct ManifestCheck {
    pub findings: Vec<Finding>,
    pub redactions: Vec<Span>,
    pub facts: ManifestFacts,
}

struct Checker<'a> {
    file: &'a str,
    text: &'a str,
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
        self.out.findings.push(Finding::new(
            rule, self.file, self.text, span, pointer, message, help,
        ));
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
        text,
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
                "the server has no `timeout`; Qwen then waits 10 minutes per call".into(),
                "add \"timeout\": 8000",
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
        } else if let Some(relative) = text.trim().strip_prefix("${extensionPath}") {
            let relative = relative
                .replace("${/}", "/")
                .replace("${pathSeparator}", "/")
                .trim_start_matches('/')
                .to_owned();
            self.out.facts.entry_point = Some((relative, command.span));
        } else {
            self.report(
                Rule::CommandEntryPoint,
                command.span,
                &command_pointer,
                "`command` is not the bundled entry point under ${extensionPath}".into(),
                "use \"${extensionPath}${/}dist${/}main\"",
            );
        }
        if server.get("cwd").is_none() {
            self.report(
                Rule::CwdMissing,
                opening(server),
                pointer,
                "the local server has no `cwd`".into(),
                "add \"cwd\": \"${extensionPath}\"",
            );
        }
        if let Some(env) = server.get("env").and_then(Node::as_object) {
            for variable in env {
                if let Some(value) = variable.node.as_str()
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
        for name in names {
            if let Some(file) = name.as_str() {
                self.out
                    .facts
                    .context_files
                    .push((file.to_owned(), name.span));
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
                        detection.rule,
                        node.span,
                        pointer,
                        format!("{place} holds {} ({})", detection.what, detection.preview),
                        "remove it, rotate it, and read it from the environment: \"${VAR}\"",
                    );
                }
            }
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
