//! Extension name rules, shared by `ecp new` and `ecp lint`: a provider's
//! extension and MCP server name must be stable and globally distinctive.
//!
//! Lower-case ASCII letters, digits and single dashes, 3 to 64 characters, at
//! least two dash-separated words (`acme-context`), and not a generic name
//! that would collide with other providers or with Qwen's own integrations.

use std::fmt;

/// Names taken by the private reference integration or too generic to be
/// anyone's.
const GENERIC_NAMES: &[&str] = &[
    "external-context",
    "context",
    "context-search",
    "search",
    "search-context",
    "mcp",
    "mcp-server",
    "knowledge",
    "knowledge-base",
    "docs",
    "rag",
    "retrieval",
    "provider",
    "provider-context",
];

/// Why a name is refused. `Display` says why; [`NameError::suggestion`]
/// offers a form that would pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameError {
    Length(usize),
    Characters,
    Dashes,
    OneWord,
    Generic,
    QwenPrefix,
    GenericSuffix(&'static str),
}

impl fmt::Display for NameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NameError::Length(n) => write!(f, "is {n} characters long; a name has 3 to 64"),
            NameError::Characters => {
                f.write_str("may only hold lower-case ASCII letters, digits and dashes")
            }
            NameError::Dashes => f.write_str(
                "must not start or end with a dash or hold two dashes in a row",
            ),
            NameError::OneWord => f.write_str(
                "is a single word; use at least two dash-separated words so it is globally distinctive",
            ),
            NameError::Generic => f.write_str(
                "is generic and would collide with other providers or Qwen's own external-context integration",
            ),
            NameError::QwenPrefix => f.write_str("must not start with `qwen-`: that prefix is Qwen's own"),
            NameError::GenericSuffix(suffix) => write!(
                f,
                "ends in `{suffix}`, which says nothing about the provider; name the organisation and the capability"
            ),
        }
    }
}

impl std::error::Error for NameError {}

impl NameError {
    /// A name of the recommended form, built from what was given.
    pub fn suggestion(name: &str) -> String {
        let word: String = name
            .to_ascii_lowercase()
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| {
                !w.is_empty()
                    && !matches!(
                        *w,
                        "qwen" | "mcp" | "extension" | "context" | "external" | "search"
                    )
            })
            .collect::<Vec<_>>()
            .join("-");
        if word.is_empty() {
            "<org>-context".to_owned()
        } else {
            format!("{}-context", word.chars().take(55).collect::<String>())
        }
    }
}

/// Checks an extension (and MCP server) name.
pub fn validate_name(name: &str) -> Result<(), NameError> {
    let length = name.chars().count();
    if !(3..=64).contains(&length) {
        return Err(NameError::Length(length));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Err(NameError::Characters);
    }
    if name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        return Err(NameError::Dashes);
    }
    if GENERIC_NAMES.contains(&name) {
        return Err(NameError::Generic);
    }
    if name.starts_with("qwen-") {
        return Err(NameError::QwenPrefix);
    }
    for suffix in ["-mcp", "-extension", "-server"] {
        if name.ends_with(suffix) {
            return Err(NameError::GenericSuffix(suffix));
        }
    }
    if !name.contains('-') {
        return Err(NameError::OneWord);
    }
    Ok(())
}

/// The environment-variable prefix a name implies: `acme-context` ->
/// `ACME_CONTEXT`.
pub fn env_prefix(name: &str) -> String {
    name.to_ascii_uppercase().replace('-', "_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_distinctive_names() {
        for name in [
            "acme-context",
            "acme-docs-search",
            "a1-b2",
            "globex-kb-2026",
        ] {
            assert_eq!(validate_name(name), Ok(()), "{name}");
        }
    }

    #[test]
    fn refuses_with_a_reason() {
        let cases = [
            ("ab", NameError::Length(2)),
            (&"a-".repeat(33), NameError::Length(66)),
            ("Acme-Context", NameError::Characters),
            ("acme_context", NameError::Characters),
            ("acme--context", NameError::Dashes),
            ("-acme", NameError::Dashes),
            ("acme", NameError::OneWord),
            ("external-context", NameError::Generic),
            ("context", NameError::Generic),
            ("search", NameError::Generic),
            ("mcp", NameError::Generic),
            ("qwen-acme", NameError::QwenPrefix),
            ("acme-mcp", NameError::GenericSuffix("-mcp")),
            ("acme-extension", NameError::GenericSuffix("-extension")),
        ];
        for (name, error) in cases {
            assert_eq!(validate_name(name), Err(error), "{name}");
        }
    }

    #[test]
    fn suggests_the_org_context_form() {
        assert_eq!(NameError::suggestion("Acme_MCP"), "acme-context");
        assert_eq!(NameError::suggestion("external-context"), "<org>-context");
        assert_eq!(env_prefix("acme-context"), "ACME_CONTEXT");
    }
}
