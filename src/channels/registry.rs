//! `server.json` for the MCP registry (schema 2025-12-11, vendored in
//! `contracts/mcp-registry/`): a remote extension is listed by its URL
//! (`remotes`), a local one by the MCP Bundle `ecp package` built
//! (`packages` of type `mcpb` with the bundle's download URL and
//! `fileSha256`). ecp validates what it writes against the published schema
//! and adds the rules the schema cannot say.

use serde_json::{Map, Value, json};

use super::{DeriveError, ServerKind};
use crate::text::secrets;

/// The schema's URL, written as `$schema`.
pub const SCHEMA_URL: &str =
    "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json";

/// The published schema, byte for byte.
pub const SCHEMA: &str = include_str!("../../contracts/mcp-registry/server.schema.2025-12-11.json");

/// The file name the registry's publisher reads.
pub const FILE: &str = "server.json";

/// The key of the publisher's own metadata in `_meta`.
const PUBLISHER_META: &str = "io.modelcontextprotocol.registry/publisher-provided";

/// A registry name: `io.github.acme/context` (the schema's pattern).
pub fn valid_name(name: &str) -> bool {
    let Some((namespace, server)) = name.split_once('/') else {
        return false;
    };
    let ok = |s: &str, extra: &[u8]| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || extra.contains(&b))
    };
    (3..=200).contains(&name.len()) && ok(namespace, b".-") && ok(server, b"._-")
}

/// The MCP Bundle a local extension is listed with.
#[derive(Debug, Clone)]
pub struct Bundle {
    /// Where it is downloaded from (a GitHub or GitLab release asset).
    pub url: String,
    pub sha256: String,
}

/// The `server.json` of `manifest` under the registry name `name`.
pub fn server_json(
    name: &str,
    manifest: &Value,
    bundle: Option<&Bundle>,
) -> Result<Value, DeriveError> {
    if !valid_name(name) {
        return Err(DeriveError(format!(
            "{name:?} is not a registry name: it is `namespace/server` in reverse DNS, like io.github.acme/context (letters, digits, `.` and `-`, then `/`)"
        )));
    }
    let (_, version, description) = super::identity(manifest)?;
    let description = description.unwrap_or_default();
    if description.is_empty() || description.chars().count() > 100 {
        return Err(DeriveError(format!(
            "the registry needs a description of 1 to 100 characters; qwen-extension.json's has {}",
            description.chars().count()
        )));
    }
    let server = super::server(manifest)?;
    let mut out = Map::new();
    out.insert("$schema".into(), json!(SCHEMA_URL));
    out.insert("name".into(), json!(name));
    out.insert("description".into(), json!(description));
    out.insert("version".into(), json!(version));
    let mut meta = Map::new();
    meta.insert("tools".into(), json!([crate::profile::TOOL_NAME]));
    match server.kind {
        ServerKind::Remote => {
            let url = server.url();
            out.insert(
                "remotes".into(),
                json!([{ "type": "streamable-http", "url": url }]),
            );
            if let Some(oauth) = server.body.get("oauth").and_then(Value::as_object) {
                let mut kept = Map::new();
                for key in ["scopes", "audiences"] {
                    if let Some(value) = oauth.get(key) {
                        kept.insert(key.into(), value.clone());
                    }
                }
                meta.insert("oauth".into(), Value::Object(kept));
            }
        }
        ServerKind::Node | ServerKind::Binary => {
            let Some(bundle) = bundle else {
                return Err(DeriveError(
                    "a local extension is listed in the registry by its MCP Bundle: add `--clients mcpb` and `--download-url URL` (where the release's assets are downloaded from)".into(),
                ));
            };
            let environment: Vec<Value> = super::env_of(server.body)
                .filter_map(|(var, value)| super::reference(value).map(|_| var))
                .map(|var| {
                    json!({
                        "name": var,
                        "description": format!("The value of {var}"),
                        "isRequired": true,
                        "isSecret": secrets::is_secret_key(var),
                    })
                })
                .collect();
            let mut package = Map::new();
            package.insert("registryType".into(), json!("mcpb"));
            package.insert("identifier".into(), json!(bundle.url));
            package.insert("version".into(), json!(version));
            package.insert("fileSha256".into(), json!(bundle.sha256));
            package.insert("transport".into(), json!({ "type": "stdio" }));
            if !environment.is_empty() {
                package.insert("environmentVariables".into(), Value::Array(environment));
            }
            out.insert("packages".into(), json!([package]));
        }
    }
    out.insert("_meta".into(), json!({ PUBLISHER_META: meta }));
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vendored_schema_is_the_published_file() {
        assert_eq!(
            crate::digest::sha256(SCHEMA.as_bytes()),
            "3fba09590c99f61735d234822279f4223fab9e300c0a81e81c91ab62a4114de0"
        );
    }

    fn local() -> Value {
        json!({"name": "acme-context", "version": "0.1.0", "description": "ACME search",
            "mcpServers": {"acme-context": {"command": "node", "args": ["${extensionPath}${/}dist${/}main.js"],
            "env": {"ACME_TOKEN": "${ACME_TOKEN}"}}}})
    }

    #[test]
    fn names_and_descriptions_are_the_registry_s() {
        assert!(valid_name("io.github.acme/context"));
        for bad in ["acme", "/x", "a/", "a b/c", "a/b/c"] {
            assert!(!valid_name(bad), "{bad}");
        }
        let mut long = local();
        long["description"] = json!("x".repeat(101));
        assert!(server_json("io.github.acme/context", &long, None).is_err());
        assert!(
            server_json("io.github.acme/context", &local(), None).is_err(),
            "a local one needs its bundle"
        );
    }
}
