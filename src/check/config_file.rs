//! A target that takes its endpoint and credential from a configuration
//! file named by a variable (`--config-file VAR=PATH`), as Qwen's own
//! provider `@qwen-code/external-context-mem0` reads its InstanceConfig
//! from `QWEN_EXTERNAL_CONTEXT_MEM0_CONFIG`.
//!
//! Before the run the file is read (bounded, [`crate::files`]), parsed by
//! the one JSON reader ([`crate::json`]) and its endpoint located: a Qwen
//! InstanceConfig (v2 or v3) by its shape, any other file by
//! `--endpoint-pointer`. Each time the target is started, a copy with the
//! endpoint replaced by ecp's loopback upstream is written into a scratch
//! folder and the variable points at the copy; the variable the file
//! names for the credential gets ecp's canary token. Nothing else in the
//! file changes, so the target meets the administrator's own dialect,
//! scope and timeout.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::Blocked;

/// The variable Qwen's provider reads its InstanceConfig path from.
pub const QWEN_MEM0_CONFIG_ENV: &str = "QWEN_EXTERNAL_CONTEXT_MEM0_CONFIG";

/// Qwen's provider reads at most 64 KiB of either file.
pub const QWEN_MAX_CONFIG_BYTES: u64 = 64 * 1024;

/// Where the endpoint of a configuration file is, and which variable
/// carries its credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// Qwen's InstanceConfig: `endpoint.origin`, `endpoint.basePath`,
    /// `endpoint.allowInsecureHttp`; the credential in `credentialEnv`.
    QwenInstance,
    /// Any file: the endpoint URL is the string at this JSON pointer.
    Pointer(String),
}

/// A configuration file the target reads its endpoint from.
#[derive(Debug, Clone)]
pub struct ConfigFile {
    /// The variable that names the file.
    pub var: String,
    /// The administrator's file (never written).
    pub source: PathBuf,
    /// The variable the credential travels in.
    pub credential_env: String,
    pub shape: Shape,
    document: Value,
}

/// What stops the run, and what to do about it.
fn refusal(message: String, help: &str) -> Blocked {
    Blocked::with_help(message, help)
}

/// Whether `root` is Qwen's InstanceConfig (v2, v3), by the one
/// recogniser lint uses too (`crate::lint::mem0::recognise`).
fn is_qwen_instance(root: &crate::json::Node) -> bool {
    use crate::lint::mem0::{Kind, recognise};
    recognise(root).is_some_and(|kind| kind != Kind::Dialect)
}

impl ConfigFile {
    /// Reads `--config-file VAR=PATH` (with `--endpoint-pointer` and
    /// `--token-env`, when given) and locates the endpoint; every problem
    /// is said before anything is started or written.
    pub fn open(
        spec: &str,
        pointer: Option<&str>,
        token_env: Option<&str>,
    ) -> Result<ConfigFile, Blocked> {
        let Some((var, path)) = spec
            .split_once('=')
            .filter(|(v, p)| valid_var(v) && !p.is_empty())
        else {
            return Err(refusal(
                format!(
                    "--config-file {}: not VAR=PATH",
                    crate::text::outside::value(spec)
                ),
                "name the variable the target reads the file's path from, then the file: --config-file QWEN_EXTERNAL_CONTEXT_MEM0_CONFIG=/etc/qwen/memory.instance.json",
            ));
        };
        Self::read(var, Path::new(path), pointer, token_env)
    }

    /// The file `path` named by `var`, as [`ConfigFile::open`] reads it.
    pub fn read(
        var: &str,
        path: &Path,
        pointer: Option<&str>,
        token_env: Option<&str>,
    ) -> Result<ConfigFile, Blocked> {
        let max = if var == QWEN_MEM0_CONFIG_ENV {
            QWEN_MAX_CONFIG_BYTES
        } else {
            crate::files::MAX_TEXT_BYTES
        };
        let text = crate::files::read_text(path, None, max).map_err(|problem| {
            refusal(
                format!("--config-file {var}: {problem}"),
                "give the configuration file the target reads (a regular file)",
            )
        })?;
        let source = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
        Self::from_text(var, &source, &text, pointer, token_env)
    }

    /// The file `source` named by `var`, from its text.
    pub fn from_text(
        var: &str,
        source: &Path,
        text: &str,
        pointer: Option<&str>,
        token_env: Option<&str>,
    ) -> Result<ConfigFile, Blocked> {
        let path = source;
        let root = crate::json::parse(text).map_err(|e| {
            refusal(
                format!(
                    "--config-file {var}: {} is not JSON: {}",
                    path.display(),
                    e.message
                ),
                &format!("`ecp lint {}` shows where", path.display()),
            )
        })?;
        let document = root.to_value();
        let instance = is_qwen_instance(&root);
        let (shape, credential_env) = locate(var, source, &document, instance, pointer, token_env)?;
        if shape == Shape::QwenInstance {
            lint_first_error(var, source, text, &root)?;
        }
        Ok(ConfigFile {
            var: var.to_owned(),
            source: source.to_owned(),
            credential_env,
            shape,
            document,
        })
    }

    /// Writes the copy pointed at `base_url` into `folder` and returns its
    /// path.
    pub fn write_copy(&self, folder: &Path, base_url: &str) -> Result<PathBuf, Blocked> {
        let copy = self.pointed_copy(base_url)?;
        let name = self.source.file_name().map_or_else(
            || "config.json".into(),
            |n| n.to_string_lossy().into_owned(),
        );
        let path = folder.join(name);
        let text = serde_json::to_string_pretty(&copy).unwrap_or_default();
        std::fs::write(&path, text).map_err(|e| {
            Blocked::new(format!(
                "cannot write the copy of {}: {e}",
                self.source.display()
            ))
        })?;
        Ok(path)
    }

    /// The document with its endpoint replaced by `base_url`.
    pub fn pointed_copy(&self, base_url: &str) -> Result<Value, Blocked> {
        let mut copy = self.document.clone();
        match &self.shape {
            Shape::QwenInstance => {
                let url = url::Url::parse(base_url).map_err(|e| {
                    Blocked::new(format!("the upstream {base_url} is not a URL: {e}"))
                })?;
                let origin = url.origin().ascii_serialization();
                let base_path = url.path().trim_end_matches('/').to_owned();
                if let Some(endpoint) = copy.get_mut("endpoint").and_then(Value::as_object_mut) {
                    endpoint.insert("origin".into(), Value::String(origin));
                    endpoint.insert("basePath".into(), Value::String(base_path));
                    // ecp's upstream is plain HTTP on loopback.
                    endpoint.insert(
                        "allowInsecureHttp".into(),
                        Value::Bool(url.scheme() == "http"),
                    );
                }
            }
            Shape::Pointer(pointer) => {
                if let Some(slot) = copy.pointer_mut(pointer) {
                    *slot = Value::String(base_url.to_owned());
                }
            }
        }
        Ok(copy)
    }
}

/// Refuses a Qwen InstanceConfig `ecp lint` finds an error in (the
/// provider would not start with it): the first error, and where to see
/// them all.
fn lint_first_error(
    var: &str,
    source: &Path,
    text: &str,
    root: &crate::json::Node,
) -> Result<(), Blocked> {
    use crate::lint::{Report, Severity, mem0};
    let Some(kind) = mem0::recognise(root) else {
        return Ok(());
    };
    let mut report = Report::default();
    mem0::lint(&source.display().to_string(), text, root, kind, &mut report);
    match report
        .findings
        .iter()
        .find(|f| f.severity == Severity::Error)
    {
        Some(finding) => Err(refusal(
            format!(
                "--config-file {var}: {}: {} [{}]; Qwen's provider would not start with it",
                source.display(),
                finding.message,
                finding.rule
            ),
            &format!("`ecp lint {}` shows every finding", source.display()),
        )),
        None => Ok(()),
    }
}

/// `^[A-Za-z_][A-Za-z0-9_]*$`: a name a process environment carries.
fn valid_var(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Where `document`'s endpoint is and which variable carries its
/// credential: a pointer when given, else a Qwen InstanceConfig.
fn locate(
    var: &str,
    source: &Path,
    document: &Value,
    instance: bool,
    pointer: Option<&str>,
    token_env: Option<&str>,
) -> Result<(Shape, String), Blocked> {
    let named = document["credentialEnv"].as_str().filter(|n| valid_var(n));
    let shown = source.display();
    if let Some(pointer) = pointer {
        if !document.pointer(pointer).is_some_and(Value::is_string) {
            return Err(refusal(
                format!(
                    "--endpoint-pointer {}: {shown} has no string there",
                    crate::text::outside::value(pointer)
                ),
                "give the JSON pointer of the endpoint URL in the file, e.g. /endpoint/url",
            ));
        }
        let Some(credential) = token_env.or(named) else {
            return Err(refusal(
                format!(
                    "--config-file {var}: ecp does not know which variable carries the credential"
                ),
                "name it with --token-env NAME",
            ));
        };
        return Ok((Shape::Pointer(pointer.to_owned()), credential.to_owned()));
    }
    if !instance {
        return Err(refusal(
            format!("--config-file {var}: ecp does not know where the endpoint is in {shown}"),
            "name the endpoint URL's place with --endpoint-pointer /json/pointer (a Qwen InstanceConfig, schemaVersion 2 or 3, is known)",
        ));
    }
    qwen_instance(var, source, document, named)
}

/// A Qwen InstanceConfig's credential variable, once its endpoint and
/// dialect path are as Qwen's provider reads them.
fn qwen_instance(
    var: &str,
    source: &Path,
    document: &Value,
    named: Option<&str>,
) -> Result<(Shape, String), Blocked> {
    let lint = format!("`ecp lint {}` checks the whole file", source.display());
    if !document["endpoint"]["origin"].is_string() {
        return Err(refusal(
            format!(
                "--config-file {var}: {} has no endpoint.origin",
                source.display()
            ),
            &lint,
        ));
    }
    // The provider reads only an absolute dialectPath; a relative one is
    // not resolved against the instance file, so it refuses to start.
    let dialect = document["dialectPath"].as_str().unwrap_or("");
    if !Path::new(dialect).is_absolute() {
        return Err(refusal(
            format!(
                "--config-file {var}: dialectPath {} in {} is not absolute; Qwen's provider refuses a relative one",
                crate::text::outside::value(dialect),
                source.display()
            ),
            "write the dialect file's absolute path",
        ));
    }
    let Some(credential) = named else {
        return Err(refusal(
            format!(
                "--config-file {var}: {} has no credentialEnv variable name",
                source.display()
            ),
            &lint,
        ));
    };
    Ok((Shape::QwenInstance, credential.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instance(dir: &Path) -> PathBuf {
        let path = dir.join("memory.instance.json");
        let document = serde_json::json!({"schemaVersion": 2,
            "dialectPath": "/etc/qwen/memory.dialect.json",
            "endpoint": {"origin": "https://memory.example.com", "basePath": "", "allowInsecureHttp": false},
            "credentialEnv": "MEMORY_API_KEY", "scope": {"userId": "u"}, "timeoutMs": 5000});
        std::fs::write(&path, document.to_string()).unwrap();
        path
    }

    #[test]
    fn a_qwen_instance_is_pointed_at_the_upstream_and_nothing_else_changes() {
        let dir = tempfile::tempdir().unwrap();
        let path = instance(dir.path());
        let spec = format!("{QWEN_MEM0_CONFIG_ENV}={}", path.display());
        let config = ConfigFile::open(&spec, None, None).unwrap();
        assert_eq!(config.credential_env, "MEMORY_API_KEY");
        let out = tempfile::tempdir().unwrap();
        let copy = config
            .write_copy(out.path(), "http://127.0.0.1:4100/api/")
            .unwrap();
        let written: Value = serde_json::from_str(&std::fs::read_to_string(copy).unwrap()).unwrap();
        assert_eq!(
            written["endpoint"],
            serde_json::json!({"origin": "http://127.0.0.1:4100", "basePath": "/api", "allowInsecureHttp": true})
        );
        assert_eq!(written["scope"]["userId"], "u");
        assert_eq!(written["dialectPath"], "/etc/qwen/memory.dialect.json");
    }

    #[test]
    fn what_ecp_cannot_place_is_refused_with_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let other = dir.path().join("other.json");
        std::fs::write(&other, r#"{"server": {"url": "https://x.example"}}"#).unwrap();
        let spec = format!("ACME_CONFIG={}", other.display());
        let error = ConfigFile::open(&spec, None, None).unwrap_err();
        let help = error.help.unwrap_or_default();
        assert!(help.contains("--endpoint-pointer"), "{help}");
        let error = ConfigFile::open(&spec, Some("/server/url"), None).unwrap_err();
        let help = error.help.unwrap_or_default();
        assert!(help.contains("--token-env"), "{help}");
        let ok = ConfigFile::open(&spec, Some("/server/url"), Some("ACME_KEY")).unwrap();
        assert_eq!(ok.shape, Shape::Pointer("/server/url".into()));
        assert!(ConfigFile::open("=x", None, None).is_err());
        assert!(ConfigFile::open("1A=x", None, None).is_err());
    }
}
