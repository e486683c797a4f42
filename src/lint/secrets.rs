//! Secret detection for manifest strings: `Bearer`/`Basic` credentials (the
//! usual scanner rules miss `"Authorization": "Bearer ..."` in JSON), JWTs,
//! PEM private keys, well-known key formats, URLs with user info or
//! token-like query parameters, and high-entropy values under secret-like
//! keys. Placeholders (`${VAR}`, `$VAR`, `<your-token>`, `{{token}}`...) are
//! never secrets.
//!
//! A detection never carries the secret: only a masked preview.

use std::sync::LazyLock;

use regex::Regex;

use super::rules::Rule;

/// A secret found in one string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detection {
    pub rule: Rule,
    /// What was found, e.g. "a GitHub token"; never the value.
    pub what: String,
    /// The first characters and the length, e.g. `ghp_…(40 characters)`.
    pub preview: String,
}

/// The first four characters and the length of `secret`.
pub fn mask(secret: &str) -> String {
    let head: String = secret.chars().take(4).collect();
    format!("{head}…({} characters)", secret.chars().count())
}

/// How a value from the input appears in a message: masked when it holds a
/// secret, else at most 60 characters with control characters escaped.
pub fn shown(value: &str) -> String {
    if !detect(None, value).is_empty() {
        return mask(value);
    }
    let mut out: String = value
        .chars()
        .take(60)
        .flat_map(|c| {
            if c.is_control() {
                c.escape_unicode().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect();
    if value.chars().count() > 60 {
        out.push('…');
    }
    out
}

/// Words that make a command-line option a credential (`--token`,
/// `--api-key`, `--bearer`, `--client-secret`, `--pass`...).
static SECRET_OPTION: LazyLock<Regex> = LazyLock::new(|| {
    regex(r"(?i)(token|secret|pass|pwd|key|auth|bearer|credential|session|cookie|signature)")
});

/// A secret passed on the command line: `--name=value` in one argument, or
/// `--name` then `value` in the next. `name` is the option without dashes.
pub fn detect_option(name: &str, value: &str) -> Vec<Detection> {
    let found = detect(Some(name), value);
    if !found.is_empty() || is_placeholder(value) || value.starts_with('-') {
        return found;
    }
    let value = value.trim();
    let path_like = value.starts_with('/') || value.starts_with('.') || value.starts_with('~');
    let credential_name = SECRET_OPTION.is_match(name);
    let random = value.chars().count() >= 16
        && !value.contains(char::is_whitespace)
        && entropy(value) >= 3.3
        && value.chars().any(|c| c.is_ascii_digit())
        && value.chars().any(|c| c.is_ascii_alphabetic());
    let very_random = random && value.chars().count() >= 24 && entropy(value) >= 4.0;
    if !path_like && ((credential_name && random) || very_random) {
        return vec![Detection {
            rule: Rule::SecretEntropy,
            what: format!("a credential passed as `--{name}`"),
            preview: mask(value),
        }];
    }
    found
}

fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).expect("secret patterns are valid")
}

static PLACEHOLDER_TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"(?x)^(
            \$\{[^}]*\}            # ${VAR}
          | \$[A-Za-z_][A-Za-z0-9_]*  # $VAR
          | <[^<>]*>               # <your-token>
          | \{\{[^{}]*\}\}         # {{token}}
          | %[A-Za-z_][A-Za-z0-9_]*%  # %VAR%
        )$",
    )
});

/// Words that mark a documentation example, not a credential.
const EXAMPLE_WORDS: &[&str] = &[
    "example",
    "placeholder",
    "your-",
    "your_",
    "yourtoken",
    "changeme",
    "change-me",
    "redacted",
    "dummy",
    "xxxx",
    "****",
    "...",
    "…",
    "insert",
    "replace",
    "todo",
    "<",
];

/// Whether `value` is a placeholder or an obvious example rather than a
/// credential.
pub fn is_placeholder(value: &str) -> bool {
    let value = value.trim();
    if value.is_empty() || PLACEHOLDER_TOKEN.is_match(value) {
        return true;
    }
    let lower = value.to_ascii_lowercase();
    EXAMPLE_WORDS.iter().any(|word| lower.contains(word))
        || value.contains("${")
        || value
            .chars()
            .all(|c| c == value.chars().next().unwrap_or(' '))
}

/// Shannon entropy in bits per character.
pub fn entropy(value: &str) -> f64 {
    let mut counts = std::collections::HashMap::new();
    let mut total = 0usize;
    for c in value.chars() {
        *counts.entry(c).or_insert(0usize) += 1;
        total += 1;
    }
    if total == 0 {
        return 0.0;
    }
    counts
        .values()
        .map(|&n| {
            let p = n as f64 / total as f64;
            -p * p.log2()
        })
        .sum()
}

static SECRET_KEY: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"(?i)(token|secret|passw(or)?d|pwd|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credential|auth|session|cookie|signature)",
    )
});

/// Whether a key names a secret (`ACME_TOKEN`, `apiKey`, `Authorization`).
pub fn is_secret_key(key: &str) -> bool {
    SECRET_KEY.is_match(key)
}

static BEARER: LazyLock<Regex> = LazyLock::new(|| regex(r"(?i)\bbearer\s+([A-Za-z0-9\-._~+/]+=*)"));
static BASIC: LazyLock<Regex> = LazyLock::new(|| regex(r"(?i)\bbasic\s+([A-Za-z0-9+/]{6,}={0,2})"));
static JWT: LazyLock<Regex> =
    LazyLock::new(|| regex(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"));
static PRIVATE_KEY: LazyLock<Regex> = LazyLock::new(|| {
    regex(r"-----BEGIN ((RSA|EC|DSA|OPENSSH|ENCRYPTED|PGP) )?PRIVATE KEY( BLOCK)?-----")
});

/// Well-known credential formats, by provider.
static KNOWN_FORMATS: LazyLock<Vec<(&'static str, Regex)>> = LazyLock::new(|| {
    [
        ("a GitHub token", r"\bgh[pousr]_[A-Za-z0-9]{36,}\b"),
        (
            "a GitHub fine-grained token",
            r"\bgithub_pat_[A-Za-z0-9_]{40,}\b",
        ),
        ("an Anthropic API key", r"\bsk-ant-[A-Za-z0-9_-]{20,}"),
        (
            "an OpenAI API key",
            r"\bsk-(proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
        ),
        (
            "an AWS access key ID",
            r"\b(AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b",
        ),
        ("a Google API key", r"\bAIza[0-9A-Za-z_-]{35}\b"),
        ("a Google OAuth access token", r"\bya29\.[0-9A-Za-z_-]{20,}"),
        ("a Slack token", r"\bxox[abposr]-[0-9A-Za-z-]{10,}"),
        (
            "a Slack webhook",
            r"https://hooks\.slack\.com/services/T[0-9A-Za-z]+/B[0-9A-Za-z]+/[0-9A-Za-z]+",
        ),
        ("a Stripe key", r"\b[sr]k_(live|test)_[0-9A-Za-z]{16,}"),
        ("a GitLab token", r"\bglpat-[0-9A-Za-z_-]{20,}"),
        ("an npm token", r"\bnpm_[A-Za-z0-9]{36}\b"),
        ("a Hugging Face token", r"\bhf_[A-Za-z]{30,}\b"),
    ]
    .into_iter()
    .map(|(what, pattern)| (what, regex(pattern)))
    .collect()
});

const SECRET_QUERY_PARAMETERS: &[&str] = &[
    "access_token",
    "token",
    "api_key",
    "apikey",
    "key",
    "secret",
    "client_secret",
    "password",
    "sig",
    "signature",
    "auth",
    "code",
];

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%'
            && let Some(byte) = s
                .get(at + 1..at + 3)
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
        {
            out.push(byte);
            at += 3;
            continue;
        }
        out.push(bytes[at]);
        at += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn url_detections(value: &str, found: &mut Vec<Detection>) {
    let trimmed = value.trim();
    if !(trimmed.starts_with("http://") || trimmed.starts_with("https://")) {
        return;
    }
    let Ok(url) = url::Url::parse(trimmed) else {
        return;
    };
    let user = percent_decode(url.username());
    let password = url.password().map(percent_decode);
    let secret_userinfo = match &password {
        Some(password) => !is_placeholder(password),
        None => !user.is_empty() && !is_placeholder(&user) && user.len() >= 16,
    };
    if secret_userinfo {
        found.push(Detection {
            rule: Rule::SecretUrlUserinfo,
            what: "a URL with user info".into(),
            preview: mask(password.as_deref().unwrap_or(&user)),
        });
    }
    for (name, value) in url.query_pairs() {
        let lower = name.to_ascii_lowercase();
        if SECRET_QUERY_PARAMETERS.contains(&lower.as_str()) && !is_placeholder(&value) {
            found.push(Detection {
                rule: Rule::SecretUrlQuery,
                what: format!("a URL with a `{name}` query parameter"),
                preview: mask(&value),
            });
        }
    }
}

/// Every secret in `value`, a string found under `key` (the member name, or
/// the array's key for an element).
pub fn detect(key: Option<&str>, value: &str) -> Vec<Detection> {
    let mut found = Vec::new();
    if PRIVATE_KEY.is_match(value) {
        found.push(Detection {
            rule: Rule::SecretPrivateKey,
            what: "a PEM private key".into(),
            preview: "-----BEGIN…".into(),
        });
    }
    for captures in BEARER.captures_iter(value) {
        let token = &captures[1];
        if token.len() >= 8 && !is_placeholder(token) {
            found.push(Detection {
                rule: Rule::SecretBearer,
                what: "a Bearer credential".into(),
                preview: format!("Bearer {}", mask(token)),
            });
        }
    }
    for captures in BASIC.captures_iter(value) {
        let encoded = &captures[1];
        if !is_placeholder(encoded) && decodes_to_user_password(encoded) {
            found.push(Detection {
                rule: Rule::SecretBasic,
                what: "a Basic credential".into(),
                preview: format!("Basic {}", mask(encoded)),
            });
        }
    }
    for m in JWT.find_iter(value) {
        found.push(Detection {
            rule: Rule::SecretJwt,
            what: "a JSON Web Token".into(),
            preview: mask(m.as_str()),
        });
    }
    // Formats overlap (`sk-ant-...` is also `sk-...`): the first, most
    // specific pattern claims a range.
    let mut claimed: Vec<std::ops::Range<usize>> = Vec::new();
    for (what, pattern) in KNOWN_FORMATS.iter() {
        for m in pattern.find_iter(value) {
            let overlaps = claimed
                .iter()
                .any(|r| r.start < m.end() && m.start() < r.end);
            if !overlaps && !is_placeholder(m.as_str()) {
                claimed.push(m.range());
                found.push(Detection {
                    rule: Rule::SecretKnownFormat,
                    what: (*what).to_owned(),
                    preview: mask(m.as_str()),
                });
            }
        }
    }
    url_detections(value, &mut found);
    if found.is_empty()
        && key.is_some_and(is_secret_key)
        && looks_random(value)
        && !is_placeholder(value)
    {
        found.push(Detection {
            rule: Rule::SecretEntropy,
            what: "a high-entropy value".into(),
            preview: mask(value),
        });
    }
    found
}

/// Long enough, without spaces, and random-looking.
fn looks_random(value: &str) -> bool {
    let value = value.trim();
    value.chars().count() >= 16 && !value.contains(char::is_whitespace) && entropy(value) >= 3.5
}

fn decodes_to_user_password(encoded: &str) -> bool {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut bits = 0u32;
    let mut count = 0;
    let mut out = Vec::new();
    for byte in encoded.bytes().take_while(|b| *b != b'=') {
        let Some(value) = ALPHABET.iter().position(|a| *a == byte) else {
            return false;
        };
        bits = (bits << 6) | value as u32;
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
            bits &= (1 << count) - 1;
        }
    }
    std::str::from_utf8(&out).is_ok_and(|s| s.contains(':') && !s.starts_with(':') && s.len() >= 3)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(key: Option<&str>, value: &str) -> Vec<Rule> {
        detect(key, value).into_iter().map(|d| d.rule).collect()
    }

    #[test]
    fn finds_each_kind() {
        assert_eq!(
            rules(Some("Authorization"), "Bearer 9f8e7d6c5b4a39281706f5e4"),
            [Rule::SecretBearer]
        );
        assert_eq!(
            rules(Some("Authorization"), "Basic YWxhZGRpbjpvcGVuc2VzYW1l"),
            [Rule::SecretBasic]
        );
        assert_eq!(
            rules(
                None,
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
            ),
            [Rule::SecretJwt]
        );
        assert_eq!(
            rules(None, "-----BEGIN RSA PRIVATE KEY-----\nMIIE"),
            [Rule::SecretPrivateKey]
        );
        assert_eq!(
            rules(None, "ghp_0123456789abcdefghijABCDEFGHIJ012345"),
            [Rule::SecretKnownFormat]
        );
        assert_eq!(
            rules(None, "AKIAZ7QW2XKLMNOPQRST"),
            [Rule::SecretKnownFormat]
        );
        assert_eq!(
            rules(None, "https://bob:s3cr3t-pass@ctx.acme.dev/mcp"),
            [Rule::SecretUrlUserinfo]
        );
        assert_eq!(
            rules(None, "https://ctx.acme.dev/mcp?access_token=abc123def456"),
            [Rule::SecretUrlQuery]
        );
        assert_eq!(
            rules(Some("ACME_CONTEXT_TOKEN"), "q8Zr2LmX0vT7yWn4Kp1s"),
            [Rule::SecretEntropy]
        );
    }

    #[test]
    fn placeholders_are_not_secrets() {
        for value in [
            "${ACME_CONTEXT_TOKEN}",
            "$ACME_CONTEXT_TOKEN",
            "<your-token>",
            "{{token}}",
            "Bearer ${ACME_CONTEXT_TOKEN}",
            "Bearer <token>",
            "Bearer your-token-here",
            "https://${USER}:${PASSWORD}@ctx.acme.dev/",
            "https://ctx.acme.dev/search?token=${TOKEN}",
            "AKIAIOSFODNN7EXAMPLE",
        ] {
            assert!(detect(Some("token"), value).is_empty(), "{value}");
        }
    }

    #[test]
    fn masks_never_show_the_whole_secret() {
        let d = &detect(None, "Bearer 9f8e7d6c5b4a39281706f5e4")[0];
        assert_eq!(d.preview, "Bearer 9f8e…(24 characters)");
    }
}
