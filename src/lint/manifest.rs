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

mod local;
mod remote;

pub use remote::reserved_domain;

/// The smallest `timeout` leaving headroom over the default 5000 ms budget.
const MIN_TIMEOUT_MS: u64 = 6000;
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
