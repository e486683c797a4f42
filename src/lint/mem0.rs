//! The administrator files of Qwen's own provider,
//! `@qwen-code/external-context-mem0`: its InstanceConfig (v2, v3) and
//! DialectV1, judged by the package's published schemas
//! (`contracts/qwen-mem0/`) and the rules its loader applies beyond them
//! (rules `mem0-*`).
//!
//! A file is recognised by its shape, since the schemas allow no `$schema`:
//! an object with `dialectVersion` is a dialect; one with `schemaVersion`
//! and any of `dialectPath`, `endpoint`, `credentialEnv` is an
//! InstanceConfig, v3 when `schemaVersion` is 3 or it has `autoRecall`.

use std::path::Path;

use serde_json::Value;

use super::{Finding, Report, Rule, Source, json::Node};

/// The provider's published schemas, vendored byte for byte.
pub const INSTANCE_SCHEMA: &str =
    include_str!("../../contracts/qwen-mem0/instance-config.schema.json");
pub const AUTO_RECALL_SCHEMA: &str =
    include_str!("../../contracts/qwen-mem0/auto-recall-instance-config.schema.json");
pub const DIALECT_SCHEMA: &str = include_str!("../../contracts/qwen-mem0/dialect.schema.json");

/// The provider reads at most this much of either file.
pub const MAX_BYTES: usize = 64 * 1024;

/// Which of the provider's files a document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    InstanceV2,
    InstanceV3,
    Dialect,
}

impl Kind {
    fn schema(self) -> (&'static str, &'static str) {
        match self {
            Kind::InstanceV2 => (INSTANCE_SCHEMA, "InstanceConfig v2"),
            Kind::InstanceV3 => (AUTO_RECALL_SCHEMA, "InstanceConfig v3 (Auto Recall)"),
            Kind::Dialect => (DIALECT_SCHEMA, "DialectV1"),
        }
    }
}

/// Which file `root` is, by its shape; `None` for anything else.
pub fn recognise(root: &Node) -> Option<Kind> {
    root.as_object()?;
    if root.get("dialectVersion").is_some() {
        return Some(Kind::Dialect);
    }
    let version = root.get("schemaVersion")?;
    let instance = ["dialectPath", "endpoint", "credentialEnv"]
        .iter()
        .any(|key| root.get(key).is_some());
    if !instance {
        return None;
    }
    let three =
        matches!(&version.value, super::json::Value::Number(n) if n.parse::<f64>() == Ok(3.0));
    Some(
        if three || (root.get("autoRecall").is_some() && !is_two(version)) {
            Kind::InstanceV3
        } else {
            Kind::InstanceV2
        },
    )
}

fn is_two(node: &Node) -> bool {
    matches!(&node.value, super::json::Value::Number(n) if n.parse::<f64>() == Ok(2.0))
}

/// Findings about one file, with the place `pointer` names.
struct File<'a> {
    label: &'a str,
    root: &'a Node,
    report: &'a mut Report,
}

impl File<'_> {
    fn add(&mut self, rule: Rule, pointer: &str, message: String, help: &str) {
        let finding = match self.root.pointer(pointer) {
            Some(node) => Finding::new(rule, self.label, node.span, pointer, message, help),
            None => Finding::about(rule, self.label, message, help),
        };
        self.report.add(finding);
    }

    fn str_at(&self, pointer: &str) -> Option<&str> {
        self.root.pointer(pointer).and_then(Node::as_str)
    }
}

/// Lints `text` (the file `label`, already parsed as `root`, recognised
/// as `kind`).
pub fn lint(label: &str, text: &str, root: &Node, kind: Kind, report: &mut Report) {
    let mut file = File {
        label,
        root,
        report,
    };
    read_rules(&mut file, text);
    schema_rules(&mut file, kind);
    let mut redactions = Vec::new();
    crate::lint::clients::secret_findings(
        label,
        root,
        "a Mem0 configuration file, which the provider reads as data",
        "remove and rotate it; the credential travels only in the variable credentialEnv names",
        &mut redactions,
        file.report,
    );
    match kind {
        Kind::Dialect => dialect_rules(&mut file),
        Kind::InstanceV2 | Kind::InstanceV3 => instance_rules(&mut file, kind),
    }
    report.sources.push(Source {
        file: label.to_owned(),
        text: text.to_owned(),
        redactions,
    });
}

fn read_rules(file: &mut File, text: &str) {
    let help = "save it as plain UTF-8 JSON (no byte-order mark), at most 64 KiB";
    if text.len() > MAX_BYTES {
        let message = format!(
            "it is {} bytes; the provider reads at most {MAX_BYTES}",
            text.len()
        );
        file.report
            .add(Finding::about(Rule::Mem0Read, file.label, message, help));
    }
    if text.starts_with('\u{feff}') {
        let message = "it starts with a byte-order mark, which the provider's JSON.parse refuses";
        file.report.add(Finding::about(
            Rule::Mem0Read,
            file.label,
            message.into(),
            help,
        ));
    }
}

/// The schema's verdicts, each at the value it is about.
pub fn schema_problems(value: &Value, kind: Kind) -> Vec<(String, String)> {
    let (schema, _) = kind.schema();
    let compiled = serde_json::from_str::<Value>(schema)
        .map_err(|e| e.to_string())
        .and_then(|s| jsonschema::draft7::new(&s).map_err(|e| e.to_string()));
    match compiled {
        Ok(validator) => validator
            .iter_errors(value)
            .map(|error| {
                (
                    error.instance_path().to_string(),
                    error.masked().to_string(),
                )
            })
            .collect(),
        Err(error) => vec![(
            String::new(),
            format!("the vendored schema does not compile: {error}"),
        )],
    }
}

fn schema_rules(file: &mut File, kind: Kind) {
    let (_, name) = kind.schema();
    let value = file.root.to_value();
    let help = format!("write the file as Qwen's {name} schema says (`ecp explain mem0-schema`)");
    for (pointer, message) in schema_problems(&value, kind) {
        let message = format!("Qwen's {name} schema refuses it: {message}");
        file.add(Rule::Mem0Schema, &pointer, message, &help);
    }
}

/// The provider's static path rule; `None` when `path` keeps it.
fn path_problem(path: &str, allow_empty: bool) -> Option<&'static str> {
    if path.is_empty() && allow_empty {
        return None;
    }
    if !path.starts_with('/') {
        return Some("it must start with /");
    }
    let forbidden = ["//", "?", "#", "\\", "%"];
    if forbidden.iter().any(|f| path.contains(f)) {
        return Some("it must not hold //, ?, #, a backslash or %");
    }
    if path.chars().any(|c| (c as u32) <= 0x1f || c as u32 == 0x7f) {
        return Some("it must not hold a control character");
    }
    if path.split('/').any(|s| s == "." || s == "..") {
        return Some("it must not hold a . or .. segment");
    }
    None
}

fn dialect_rules(file: &mut File) {
    if let Some(path) = file.str_at("/search/path")
        && let Some(why) = path_problem(path, false)
    {
        let message = format!("search.path: {why}");
        file.add(
            Rule::Mem0Path,
            "/search/path",
            message,
            "write the operation's static path, e.g. /v2/memories/search/",
        );
    }
    if file.str_at("/search/method") != Some("GET") {
        return;
    }
    for key in [
        "queryLocation",
        "userIdLocation",
        "agentIdLocation",
        "appIdLocation",
    ] {
        let pointer = format!("/search/{key}");
        if file.str_at(&pointer).is_some_and(|l| l.starts_with("json")) {
            file.add(
                Rule::Mem0DialectGet,
                &pointer,
                format!("a GET search has no body, but {key} places a value in JSON"),
                "use `query` (or `omit` for a scope), or make the search a POST",
            );
        }
    }
}

/// Whether `path` is absolute as the provider's host reads it: POSIX
/// (`/etc/...`) or Windows (`C:\...`, `C:/...`, `\\server\...`).
fn is_absolute_anywhere(path: &str) -> bool {
    let bytes = path.as_bytes();
    path.starts_with('/')
        || path.starts_with("\\\\")
        || (bytes.len() >= 3
            && bytes[0].is_ascii_alphabetic()
            && bytes[1] == b':'
            && matches!(bytes[2], b'\\' | b'/'))
}

fn instance_rules(file: &mut File, kind: Kind) {
    endpoint_rules(file);
    if let Some(path) = file.str_at("/endpoint/basePath")
        && let Some(why) = path_problem(path, true)
    {
        file.add(
            Rule::Mem0Path,
            "/endpoint/basePath",
            format!("endpoint.basePath: {why}"),
            "write a static prefix such as /api, or leave it empty",
        );
    }
    if let Some(dialect) = file.str_at("/dialectPath") {
        if is_absolute_anywhere(dialect) {
            scope_rules(file, dialect.to_owned());
        } else {
            file.add(
                Rule::Mem0DialectPath,
                "/dialectPath",
                "dialectPath is relative; the provider reads only an absolute path (not resolved against this file)".into(),
                "write the dialect file's absolute path, e.g. /etc/qwen/external-context/memory.dialect.json",
            );
        }
    }
    if kind == Kind::InstanceV3
        && let Some(root) = file.str_at("/autoRecall/repositoryRoot")
    {
        let trimmed = root.trim_end_matches(['/', '\\']);
        let drive_root = trimmed.len() == 2 && trimmed.ends_with(':');
        if !is_absolute_anywhere(root) || trimmed.is_empty() || drive_root {
            file.add(
                Rule::Mem0RepositoryRoot,
                "/autoRecall/repositoryRoot",
                "autoRecall.repositoryRoot must be an absolute folder that is not a filesystem root".into(),
                "write the repository's absolute path, e.g. /workspace/my-repository",
            );
        }
    }
}

fn endpoint_rules(file: &mut File) {
    let Some(origin) = file.str_at("/endpoint/origin") else {
        return;
    };
    let insecure_allowed = file
        .root
        .pointer("/endpoint/allowInsecureHttp")
        .is_some_and(|n| n.value == super::json::Value::Bool(true));
    let help = "write only the scheme and authority, e.g. https://memory.example.com; a shared path goes in endpoint.basePath";
    let url = match url::Url::parse(origin) {
        Ok(url) => url,
        Err(_) => {
            let message = "endpoint.origin is not an absolute URL".into();
            file.add(Rule::Mem0Endpoint, "/endpoint/origin", message, help);
            return;
        }
    };
    let why = if !url.username().is_empty() || url.password().is_some() {
        Some("it holds user info")
    } else if url.query().is_some() || url.fragment().is_some() {
        Some("it holds a query or fragment")
    } else if !matches!(url.path(), "" | "/") {
        Some("it holds a path")
    } else {
        match url.scheme() {
            "https" => None,
            "http" if insecure_allowed => None,
            "http" => Some("it is http without allowInsecureHttp: true"),
            _ => Some("its scheme is neither https nor http"),
        }
    };
    if let Some(why) = why {
        let message = format!("endpoint.origin: {why}");
        file.add(Rule::Mem0Endpoint, "/endpoint/origin", message, help);
    } else if url.scheme() == "http" && !is_private_host(&url) {
        file.add(
            Rule::Mem0InsecureHttp,
            "/endpoint/origin",
            "the credential would travel over plain http to a host that is not loopback or a private address".into(),
            "use https (or keep plain http to loopback and private-network addresses)",
        );
    }
}

/// Loopback, `localhost`, or a private (RFC 1918, unique local) address.
fn is_private_host(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(name)) => {
            name.eq_ignore_ascii_case("localhost")
                || name.to_ascii_lowercase().ends_with(".localhost")
        }
        Some(url::Host::Ipv4(ip)) => ip.is_loopback() || ip.is_private(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback() || (ip.segments()[0] & 0xfe00) == 0xfc00,
        None => false,
    }
}

/// The scope rule, when the dialect `path` names is readable here.
fn scope_rules(file: &mut File, path: String) {
    // Without a scope object the schema has said it.
    if file
        .root
        .pointer("/scope")
        .and_then(Node::as_object)
        .is_none()
    {
        return;
    }
    let Ok(text) = crate::files::read_text(Path::new(&path), None, MAX_BYTES as u64) else {
        return;
    };
    let Ok(dialect) = super::json::parse(&text) else {
        return;
    };
    for (key, field) in [
        ("userId", "userIdLocation"),
        ("agentId", "agentIdLocation"),
        ("appId", "appIdLocation"),
    ] {
        let Some(location) = dialect
            .pointer(&format!("/search/{field}"))
            .and_then(Node::as_str)
        else {
            continue;
        };
        let present = file.root.pointer(&format!("/scope/{key}")).is_some();
        let message = match (location == "omit", present) {
            (true, true) => format!("scope.{key} is set, but the dialect omits it ({field}: omit)"),
            (false, false) => {
                format!("the dialect sends {key} ({field}: {location}), but scope has none")
            }
            _ => continue,
        };
        let pointer = if present {
            format!("/scope/{key}")
        } else {
            "/scope".to_owned()
        };
        file.add(
            Rule::Mem0Scope,
            &pointer,
            message,
            "give exactly the scope values the dialect sends, and no other",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vendored_schemas_are_the_published_files() {
        for (text, digest) in [
            (
                INSTANCE_SCHEMA,
                "b8cf30550b962f0dd0260f480d65654eb5d9c7a935f684760c612766ef0c3418",
            ),
            (
                AUTO_RECALL_SCHEMA,
                "8abc514b9a4fe8e5c8ca2b326daee4b610fab9e5819107a7a5a78506ec692fb8",
            ),
            (
                DIALECT_SCHEMA,
                "4ae341ed165a2f2df83a3a1f4a011dee0d0c7d6c477862654f46c55d6f91b486",
            ),
        ] {
            assert_eq!(crate::digest::sha256(text.as_bytes()), digest);
        }
    }

    #[test]
    fn static_paths_as_the_provider_reads_them() {
        assert_eq!(path_problem("", true), None);
        assert_eq!(path_problem("/v2/memories/search/", false), None);
        for bad in [
            "", "v2", "/a//b", "/a?b", "/a#b", "/a\\b", "/a%2e", "/a/../b", "/./a", "/a\u{7f}",
        ] {
            assert!(path_problem(bad, false).is_some(), "{bad:?}");
        }
    }
}
