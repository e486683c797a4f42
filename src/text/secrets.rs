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

/// The kinds of secret found; `ecp lint` gives each its own rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SecretKind {
    /// `Bearer <token>`.
    Bearer,
    /// `Basic <base64 user:password>`.
    Basic,
    /// A JSON Web Token.
    Jwt,
    /// A PEM private key block.
    PrivateKey,
    /// A well-known key format (GitHub, AWS, Slack...).
    KnownFormat,
    /// A random-looking value under a secret-like key or option.
    Entropy,
    /// A URL with a password in its user info.
    UrlUserinfo,
    /// A URL with a token-like query parameter.
    UrlQuery,
}

/// A secret found in one string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detection {
    pub kind: SecretKind,
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

/// Header names that carry a credential by their name alone (lower case).
pub const CREDENTIAL_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "x-api-key",
    "api-key",
    "x-auth-token",
    "x-access-token",
];

/// File names that hold secrets by convention.
pub fn is_secret_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    let templates = [".env.example", ".env.sample", ".env.template"];
    if name == ".env" || (name.starts_with(".env.") && !templates.contains(&name.as_str())) {
        return true;
    }
    let exact = [
        "id_rsa",
        "id_dsa",
        "id_ecdsa",
        "id_ed25519",
        ".npmrc",
        ".pypirc",
        ".netrc",
        ".git-credentials",
        "credentials.json",
        "service-account.json",
    ];
    let extensions = [".pem", ".key", ".p12", ".pfx", ".jks", ".keystore"];
    exact.contains(&name.as_str()) || extensions.iter().any(|ext| name.ends_with(ext))
}

/// Words that make a command-line option a credential (`--token`,
/// `--api-key`, `--bearer`, `--client-secret`, `--pass`...).
const SECRET_OPTION_WORDS: &[&str] = &[
    "token",
    "secret",
    "pass",
    "pwd",
    "key",
    "auth",
    "bearer",
    "credential",
    "session",
    "cookie",
    "signature",
];

/// Whether `text`, lower-cased, holds one of `words`.
fn holds_word(text: &str, words: &[&str]) -> bool {
    let lower = text.to_ascii_lowercase();
    words.iter().any(|word| lower.contains(word))
}

/// A pattern compiled only when the text holds one of its cues, literals
/// that every match contains: compiling every pattern costs milliseconds,
/// more than the rest of a manifest's lint, and most texts hold no cue.
struct Cued {
    cues: &'static [&'static str],
    /// Cues are compared with the text lower-cased (ASCII).
    ignore_case: bool,
    regex: LazyLock<Regex>,
}

impl Cued {
    fn may_match(&self, text: &str, lower: &str) -> bool {
        let haystack = if self.ignore_case { lower } else { text };
        self.cues.iter().any(|cue| haystack.contains(cue))
    }
}

macro_rules! cued {
    ($cues:expr, $ignore_case:expr, $pattern:expr) => {
        Cued {
            cues: $cues,
            ignore_case: $ignore_case,
            regex: LazyLock::new(|| regex($pattern)),
        }
    };
}

/// A secret passed on the command line: `--name=value` in one argument, or
/// `--name` then `value` in the next. `name` is the option without dashes.
pub fn detect_option(name: &str, value: &str) -> Vec<Detection> {
    let found = detect(Some(name), value);
    if !found.is_empty() || is_placeholder(value) || value.starts_with('-') {
        return found;
    }
    let value = value.trim();
    let path_like = value.starts_with('/') || value.starts_with('.') || value.starts_with('~');
    let credential_name = holds_word(name, SECRET_OPTION_WORDS);
    let random = value.chars().count() >= 16
        && !value.contains(char::is_whitespace)
        && entropy(value) >= 3.3
        && value.chars().any(|c| c.is_ascii_digit())
        && value.chars().any(|c| c.is_ascii_alphabetic());
    let very_random = random && value.chars().count() >= 24 && entropy(value) >= 4.0;
    if !path_like && ((credential_name && random) || very_random) {
        return vec![Detection {
            kind: SecretKind::Entropy,
            what: format!("a credential passed as `--{name}`"),
            preview: mask(value),
        }];
    }
    found
}

fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).expect("secret patterns are valid")
}

/// `${VAR}`, `$VAR`, `<your-token>`, `{{token}}` or `%VAR%`, the whole value.
fn is_placeholder_token(value: &str) -> bool {
    let identifier = |name: &str| {
        let mut chars = name.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let between = |open: &str, close: &str, forbidden: &[char]| {
        value
            .strip_prefix(open)
            .and_then(|rest| rest.strip_suffix(close))
            .is_some_and(|inner| !inner.contains(forbidden))
    };
    between("${", "}", &['}'])
        || value.strip_prefix('$').is_some_and(identifier)
        || between("<", ">", &['<', '>'])
        || between("{{", "}}", &['{', '}'])
        || value
            .strip_prefix('%')
            .and_then(|rest| rest.strip_suffix('%'))
            .is_some_and(identifier)
}

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
    if value.is_empty() || is_placeholder_token(value) {
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

const SECRET_KEY_WORDS: &[&str] = &[
    "token",
    "secret",
    "password",
    "passwd",
    "pwd",
    "api_key",
    "api-key",
    "apikey",
    "access_key",
    "access-key",
    "accesskey",
    "private_key",
    "private-key",
    "privatekey",
    "credential",
    "auth",
    "session",
    "cookie",
    "signature",
];

/// Whether a key names a secret (`ACME_TOKEN`, `apiKey`, `Authorization`).
pub fn is_secret_key(key: &str) -> bool {
    holds_word(key, SECRET_KEY_WORDS)
}

static BEARER: Cued = cued!(&["bearer"], true, r"(?i)\bbearer\s+([A-Za-z0-9\-._~+/]+=*)");
static BASIC: Cued = cued!(&["basic"], true, r"(?i)\bbasic\s+([A-Za-z0-9+/]{6,}={0,2})");
static JWT: Cued = cued!(
    &["eyJ"],
    false,
    r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"
);
static PRIVATE_KEY: Cued = cued!(
    &["-----BEGIN "],
    false,
    r"-----BEGIN ((RSA|EC|DSA|OPENSSH|ENCRYPTED|PGP) )?PRIVATE KEY( BLOCK)?-----"
);

/// Well-known credential formats, by provider; the most specific first.
static KNOWN_FORMATS: [(&str, Cued); 13] = [
    (
        "a GitHub token",
        cued!(
            &["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
            false,
            r"\bgh[pousr]_[A-Za-z0-9]{36,}\b"
        ),
    ),
    (
        "a GitHub fine-grained token",
        cued!(&["github_pat_"], false, r"\bgithub_pat_[A-Za-z0-9_]{40,}\b"),
    ),
    (
        "an Anthropic API key",
        cued!(&["sk-ant-"], false, r"\bsk-ant-[A-Za-z0-9_-]{20,}"),
    ),
    (
        "an OpenAI API key",
        cued!(
            &["sk-"],
            false,
            r"\bsk-(proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"
        ),
    ),
    (
        "an AWS access key ID",
        cued!(
            &["AKIA", "ASIA", "ABIA", "ACCA"],
            false,
            r"\b(AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b"
        ),
    ),
    (
        "a Google API key",
        cued!(&["AIza"], false, r"\bAIza[0-9A-Za-z_-]{35}\b"),
    ),
    (
        "a Google OAuth access token",
        cued!(&["ya29."], false, r"\bya29\.[0-9A-Za-z_-]{20,}"),
    ),
    (
        "a Slack token",
        cued!(
            &["xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-"],
            false,
            r"\bxox[abposr]-[0-9A-Za-z-]{10,}"
        ),
    ),
    (
        "a Slack webhook",
        cued!(
            &["https://hooks.slack.com/services/T"],
            false,
            r"https://hooks\.slack\.com/services/T[0-9A-Za-z]+/B[0-9A-Za-z]+/[0-9A-Za-z]+"
        ),
    ),
    (
        "a Stripe key",
        cued!(
            &["sk_live_", "sk_test_", "rk_live_", "rk_test_"],
            false,
            r"\b[sr]k_(live|test)_[0-9A-Za-z]{16,}"
        ),
    ),
    (
        "a GitLab token",
        cued!(&["glpat-"], false, r"\bglpat-[0-9A-Za-z_-]{20,}"),
    ),
    (
        "an npm token",
        cued!(&["npm_"], false, r"\bnpm_[A-Za-z0-9]{36}\b"),
    ),
    (
        "a Hugging Face token",
        cued!(&["hf_"], false, r"\bhf_[A-Za-z]{30,}\b"),
    ),
];

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
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
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
            kind: SecretKind::UrlUserinfo,
            what: "a URL with user info".into(),
            preview: mask(password.as_deref().unwrap_or(&user)),
        });
    }
    for (name, value) in url.query_pairs() {
        let lower = name.to_ascii_lowercase();
        if SECRET_QUERY_PARAMETERS.contains(&lower.as_str()) && !is_placeholder(&value) {
            found.push(Detection {
                kind: SecretKind::UrlQuery,
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
    let lower = value.to_ascii_lowercase();
    let cued = |pattern: &'static Cued| pattern.may_match(value, &lower).then(|| &*pattern.regex);
    if cued(&PRIVATE_KEY).is_some_and(|regex| regex.is_match(value)) {
        found.push(Detection {
            kind: SecretKind::PrivateKey,
            what: "a PEM private key".into(),
            preview: "-----BEGIN…".into(),
        });
    }
    for captures in cued(&BEARER)
        .into_iter()
        .flat_map(|r| r.captures_iter(value))
    {
        let token = &captures[1];
        if token.len() >= 8 && !is_placeholder(token) {
            found.push(Detection {
                kind: SecretKind::Bearer,
                what: "a Bearer credential".into(),
                preview: format!("Bearer {}", mask(token)),
            });
        }
    }
    for captures in cued(&BASIC)
        .into_iter()
        .flat_map(|r| r.captures_iter(value))
    {
        let encoded = &captures[1];
        if !is_placeholder(encoded) && decodes_to_user_password(encoded) {
            found.push(Detection {
                kind: SecretKind::Basic,
                what: "a Basic credential".into(),
                preview: format!("Basic {}", mask(encoded)),
            });
        }
    }
    for m in cued(&JWT).into_iter().flat_map(|r| r.find_iter(value)) {
        found.push(Detection {
            kind: SecretKind::Jwt,
            what: "a JSON Web Token".into(),
            preview: mask(m.as_str()),
        });
    }
    // Formats overlap (`sk-ant-...` is also `sk-...`): the first, most
    // specific pattern claims a range.
    let mut claimed: Vec<std::ops::Range<usize>> = Vec::new();
    for (what, pattern) in &KNOWN_FORMATS {
        for m in cued(pattern).into_iter().flat_map(|r| r.find_iter(value)) {
            let overlaps = claimed
                .iter()
                .any(|r| r.start < m.end() && m.start() < r.end);
            if !overlaps && !is_placeholder(m.as_str()) {
                claimed.push(m.range());
                found.push(Detection {
                    kind: SecretKind::KnownFormat,
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
            kind: SecretKind::Entropy,
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
    use base64::Engine as _;
    // Padding is optional in what people paste; trailing bits are not checked.
    const LENIENT: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent)
            .with_decode_allow_trailing_bits(true),
    );
    LENIENT.decode(encoded).ok().is_some_and(|bytes| {
        std::str::from_utf8(&bytes)
            .is_ok_and(|s| s.contains(':') && !s.starts_with(':') && s.len() >= 3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(key: Option<&str>, value: &str) -> Vec<SecretKind> {
        detect(key, value).into_iter().map(|d| d.kind).collect()
    }

    #[test]
    fn finds_each_kind() {
        assert_eq!(
            rules(Some("Authorization"), "Bearer 9f8e7d6c5b4a39281706f5e4"),
            [SecretKind::Bearer]
        );
        assert_eq!(
            rules(Some("Authorization"), "Basic YWxhZGRpbjpvcGVuc2VzYW1l"),
            [SecretKind::Basic]
        );
        assert_eq!(
            rules(
                None,
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
            ),
            [SecretKind::Jwt]
        );
        assert_eq!(
            rules(None, "-----BEGIN RSA PRIVATE KEY-----\nMIIE"),
            [SecretKind::PrivateKey]
        );
        assert_eq!(
            rules(None, "ghp_0123456789abcdefghijABCDEFGHIJ012345"),
            [SecretKind::KnownFormat]
        );
        assert_eq!(
            rules(None, "AKIAZ7QW2XKLMNOPQRST"),
            [SecretKind::KnownFormat]
        );
        assert_eq!(
            rules(None, "https://bob:s3cr3t-pass@ctx.acme.dev/mcp"),
            [SecretKind::UrlUserinfo]
        );
        assert_eq!(
            rules(None, "https://ctx.acme.dev/mcp?access_token=abc123def456"),
            [SecretKind::UrlQuery]
        );
        assert_eq!(
            rules(Some("ACME_CONTEXT_TOKEN"), "q8Zr2LmX0vT7yWn4Kp1s"),
            [SecretKind::Entropy]
        );
    }

    #[test]
    fn every_known_format_is_found_through_its_cue() {
        let samples = [
            "ghp_0123456789abcdefghijABCDEFGHIJ012345",
            "github_pat_0123456789abcdefghijABCDEFGHIJ0123456789",
            "sk-ant-0123456789abcdefghij0123",
            "sk-proj-0123456789abcdefghij0123",
            "AKIAZ7QW2XKLMNOPQRST",
            "AIzaSyA0123456789abcdefghijklmnopqrstuv",
            "ya29.0123456789abcdefghijklmn",
            "xoxb-0123456789-abcdef",
            "https://hooks.slack.com/services/T0123/B0123/abcdef0123",
            "sk_live_0123456789abcdefgh",
            "glpat-0123456789abcdefghij",
            "npm_0123456789abcdefghijABCDEFGHIJ012345",
            "hf_abcdefghijklmnopqrstuvwxyzABCDEF",
        ];
        assert_eq!(samples.len(), KNOWN_FORMATS.len());
        for (sample, (what, pattern)) in samples.iter().zip(&KNOWN_FORMATS) {
            assert!(
                pattern.may_match(sample, &sample.to_ascii_lowercase()),
                "{what}"
            );
            assert!(pattern.regex.is_match(sample), "{what}: {sample}");
            let found = detect(None, &format!("x {sample} y"));
            assert!(
                found.iter().any(|d| d.what == *what),
                "{what}: {sample}: {found:?}"
            );
        }
        // A text without any cue compiles nothing and finds nothing.
        assert!(detect(Some("description"), "Acme handbook search").is_empty());
        assert!(is_secret_key("X-Api-Key") && is_secret_key("ACME_TOKEN"));
        assert!(!is_secret_key("ACME_CONTEXT_BASE_URL"));
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
            "%ACME_TOKEN%",
        ] {
            assert!(detect(Some("token"), value).is_empty(), "{value}");
        }
        for (value, placeholder) in [
            ("${A}", true),
            ("${}", true),
            ("${A}}", false),
            ("$A_1", true),
            ("$1A", false),
            ("$", false),
            ("<x y>", true),
            ("<<x>", false),
            ("{{t}}", true),
            ("{{t}", false),
            ("%A%", true),
            ("%%", false),
        ] {
            assert_eq!(is_placeholder_token(value), placeholder, "{value}");
        }
    }

    #[test]
    fn masks_never_show_the_whole_secret() {
        let d = &detect(None, "Bearer 9f8e7d6c5b4a39281706f5e4")[0];
        assert_eq!(d.preview, "Bearer 9f8e…(24 characters)");
    }
}
