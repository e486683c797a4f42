//! What `ecp lint` says of a `server.json` for the MCP registry: what the
//! published schema (2025-12-11, vendored by [`crate::channels::registry`])
//! refuses, a literal secret in it, and the rules the schema cannot say
//! (https URLs, an mcpb package's download URL and `fileSha256`, which must
//! match the bundle beside it).

use serde_json::Value;

use super::{Finding, Report, Rule, Source, json as spans};
use crate::channels::registry::{SCHEMA, SCHEMA_URL};

/// What is wrong with a `server.json` by the published schema and by the
/// rules it cannot say; `bundles` are the `(file name, sha256)` of MCP
/// Bundles beside it, which an `mcpb` package naming one must match.
pub fn problems(value: &Value, bundles: &[(String, String)]) -> Vec<(String, String)> {
    let mut found = Vec::new();
    match schema_validator() {
        Ok(validator) => {
            for error in validator.iter_errors(value) {
                // Masked: the plain message quotes the value, which may be
                // a secret.
                let message = format!("the 2025-12-11 schema refuses it: {}", error.masked());
                found.push((error.instance_path().to_string(), message));
            }
        }
        Err(error) => found.push((
            String::new(),
            format!("the vendored schema does not compile: {error}"),
        )),
    }
    if value.get("$schema").and_then(Value::as_str) != Some(SCHEMA_URL) {
        found.push((
            "/$schema".into(),
            format!("$schema must be {SCHEMA_URL} (the schema ecp checks)"),
        ));
    }
    for (n, remote) in value
        .get("remotes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        if let Some(url) = remote.get("url").and_then(Value::as_str)
            && !url.starts_with("https://")
        {
            found.push((
                format!("/remotes/{n}/url"),
                "a remote server's URL must be https".into(),
            ));
        }
    }
    for (n, package) in value
        .get("packages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        if package.get("registryType").and_then(Value::as_str) != Some("mcpb") {
            continue;
        }
        let identifier = package
            .get("identifier")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !identifier.starts_with("https://") {
            found.push((
                format!("/packages/{n}/identifier"),
                "an mcpb package is an https download URL".into(),
            ));
        }
        let sha = package.get("fileSha256").and_then(Value::as_str);
        if sha.is_none() {
            found.push((
                format!("/packages/{n}"),
                "an mcpb package needs fileSha256 (the registry requires it)".into(),
            ));
        }
        let file = identifier.rsplit('/').next().unwrap_or_default();
        if let (Some(sha), Some((_, built))) = (sha, bundles.iter().find(|(name, _)| name == file))
            && sha != built
        {
            found.push((
                format!("/packages/{n}/fileSha256"),
                format!("fileSha256 is {sha} but the bundle {file} here has {built}: clients refuse the download"),
            ));
        }
    }
    found
}

fn schema_validator() -> Result<jsonschema::Validator, String> {
    let schema: Value = serde_json::from_str(SCHEMA).map_err(|e| e.to_string())?;
    jsonschema::draft7::new(&schema).map_err(|e| e.to_string())
}

/// Lints a `server.json` text shown as `label`.
pub fn lint(label: &str, text: &str, bundles: &[(String, String)], report: &mut Report) {
    let root = match spans::parse(text) {
        Ok(root) => root,
        Err(error) => {
            report.add(Finding::about(
                Rule::RegistryServer,
                label,
                format!("it is not JSON: {}", error.message),
                "`ecp package --registry NAME` writes it",
            ));
            return;
        }
    };
    let value: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    let mut redactions = Vec::new();
    let help =
        "remove and rotate it; a secret is an input the user gives (`isSecret: true`, no value)";
    let published = "server.json, which the registry publishes";
    super::clients::secret_findings(label, &root, published, help, &mut redactions, report);
    for (pointer, message) in problems(&value, bundles) {
        let node = root.pointer(&pointer);
        let help = "`ecp package --registry NAME` writes a server.json the schema accepts";
        report.add(match node {
            Some(node) => Finding::new(
                Rule::RegistryServer,
                label,
                node.span,
                &pointer,
                message,
                help,
            ),
            None => Finding::about(Rule::RegistryServer, label, message, help),
        });
    }
    report.sources.push(Source {
        file: label.to_owned(),
        text: text.to_owned(),
        redactions,
    });
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::channels::registry::{Bundle, server_json};

    fn local() -> Value {
        json!({"name": "acme-context", "version": "0.1.0", "description": "ACME search",
            "mcpServers": {"acme-context": {"command": "node", "args": ["${extensionPath}${/}dist${/}main.js"],
            "env": {"ACME_TOKEN": "${ACME_TOKEN}"}}}})
    }

    #[test]
    fn what_ecp_writes_validates_and_a_wrong_digest_does_not() {
        let bundle = Bundle {
            url: "https://github.com/acme/ctx/releases/download/v0.1.0/acme-context.mcpb".into(),
            sha256: "a".repeat(64),
        };
        let value = server_json("io.github.acme/context", &local(), Some(&bundle)).unwrap();
        assert_eq!(problems(&value, &[]), Vec::<(String, String)>::new());
        assert_eq!(
            value["packages"][0]["environmentVariables"][0]["isSecret"],
            true
        );
        let other = [("acme-context.mcpb".to_owned(), "b".repeat(64))];
        assert_eq!(problems(&value, &other).len(), 1);
        let mut broken = value.clone();
        broken["name"] = json!("no slash");
        broken["packages"][0]["fileSha256"] = json!("XYZ");
        let found = problems(&broken, &[]);
        assert!(found.iter().any(|(p, _)| p == "/name"), "{found:?}");
        assert!(
            found.iter().any(|(p, _)| p == "/packages/0/fileSha256"),
            "{found:?}"
        );
    }
}
