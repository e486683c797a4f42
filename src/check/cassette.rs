//! Recorded exchanges with a provider's real upstream: what `ecp check
//! --upstream URL` records (and `--record FILE` keeps) and `--cassette
//! FILE` replays, so that a mapping of any REST API is checked against the
//! answers of its own API, offline once recorded.
//!
//! A cassette holds, per probe query, the request the target sent (method,
//! target, headers, body) and the answer (status, content type, body).
//! Credentials never reach it: the credential's value is replaced by
//! `<credential>` wherever it appears, and the headers that carry
//! credentials are kept by name only. A cassette is outside input when
//! replayed: it is read bounded and checked field by field.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::upstream::{Exchange, MAX_RECORDED_BODY, Recorded, SeenRequest};

/// The format's version, the first member of every cassette.
pub const FORMAT: u32 = 1;
/// The most a cassette file may hold.
const MAX_FILE: u64 = 64 * 1024 * 1024;
/// The most exchanges a cassette may hold.
const MAX_EXCHANGES: usize = 64;
/// What a credential becomes in a cassette.
pub const REDACTED: &str = "<credential>";

/// Headers that carry credentials by their name alone.
const CREDENTIAL_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "x-api-key",
    "api-key",
];

/// Recorded exchanges, and where under the upstream's origin the target's
/// base URL pointed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Cassette {
    pub ecp_cassette: u32,
    /// The base URL's path (`/` or `/api/...`).
    pub base_path: String,
    /// The header that carried the credential, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential_header: Option<String>,
    pub exchanges: Vec<Tape>,
}

/// One probe call's exchange.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Tape {
    /// The query the target was called with.
    pub query: String,
    pub method: String,
    /// Path and query string, as the target sent them.
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub status: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// The answer's body (as text; bytes that are not UTF-8 read as U+FFFD).
    pub response: String,
}

impl Tape {
    /// The recorded answer, to replay.
    pub fn recorded(&self) -> Recorded {
        Recorded {
            status: self.status,
            content_type: self.content_type.clone(),
            body: self.response.as_bytes().to_vec(),
        }
    }

    /// Whether the upstream answered it with a 2xx.
    pub fn succeeded(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

fn redact(text: &str, secret: Option<&str>) -> String {
    match secret {
        Some(secret) if !secret.is_empty() => text.replace(secret, REDACTED),
        _ => text.to_owned(),
    }
}

impl Cassette {
    /// A cassette from forwarded exchanges, each tagged with the query of
    /// the call that made it; `secret` (the credential's value) is
    /// replaced wherever it appears.
    pub fn from_exchanges(
        base_path: &str,
        exchanges: &[(String, Exchange)],
        secret: Option<&str>,
    ) -> Cassette {
        let secret = secret.map(str::trim).filter(|s| !s.is_empty());
        let mut credential_header = None;
        let tapes = exchanges
            .iter()
            .filter_map(|(query, exchange)| {
                let response = exchange.response.as_ref().ok()?;
                Some(tape(
                    query,
                    &exchange.request,
                    response,
                    secret,
                    &mut credential_header,
                ))
            })
            .collect();
        Cassette {
            ecp_cassette: FORMAT,
            base_path: base_path.to_owned(),
            credential_header,
            exchanges: tapes,
        }
    }

    /// Reads and checks a cassette file.
    pub fn load(path: &Path) -> Result<Cassette, String> {
        let shown = path.display();
        let text = crate::files::read_text(path, None, MAX_FILE)
            .map_err(|e| format!("cannot read the cassette {shown}: {e}"))?;
        Cassette::parse(&text).map_err(|problem| {
            format!(
                "{shown}: {problem}\n  = help: record one with `ecp check . --upstream URL --record {shown}`"
            )
        })
    }

    /// A cassette from its text, checked field by field.
    pub fn parse(text: &str) -> Result<Cassette, String> {
        let cassette: Cassette = serde_json::from_str(text).map_err(|e| {
            format!(
                "not an ecp cassette: {}",
                crate::outside::line(&e.to_string(), 300)
            )
        })?;
        cassette.problem().map_or(Ok(cassette), Err)
    }

    /// What makes the cassette unusable, if anything.
    fn problem(&self) -> Option<String> {
        if self.ecp_cassette != FORMAT {
            return Some(format!(
                "cassette format {} is not {FORMAT}; record it again with this ecp",
                self.ecp_cassette
            ));
        }
        if !self.base_path.starts_with('/') || self.base_path.contains(['?', '#', '\\']) {
            return Some("base_path must be a path starting with /".into());
        }
        if self.exchanges.is_empty() || self.exchanges.len() > MAX_EXCHANGES {
            return Some(format!(
                "it must hold 1 to {MAX_EXCHANGES} exchanges, not {}",
                self.exchanges.len()
            ));
        }
        self.exchanges.iter().enumerate().find_map(|(at, tape)| {
            if tape.response.len() > MAX_RECORDED_BODY {
                Some(format!("exchange {at}: the answer is over 4 MiB"))
            } else if !(100..=599).contains(&tape.status) {
                Some(format!("exchange {at}: status {} is not HTTP", tape.status))
            } else if !tape.target.starts_with('/') {
                Some(format!("exchange {at}: the target must start with /"))
            } else {
                None
            }
        })
    }

    /// Writes the cassette, whole or not at all.
    pub fn save(&self, path: &Path) -> Result<(), String> {
        let mut text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        text.push('\n');
        crate::atomic::write(path, text.as_bytes())
            .map_err(|e| format!("cannot write the cassette {}: {e}", path.display()))
    }

    /// The first exchange the upstream answered with a 2xx, whose query the
    /// suite's baseline call repeats.
    pub fn baseline(&self) -> Option<&Tape> {
        self.exchanges.iter().find(|tape| tape.succeeded())
    }

    /// The recorded answer for a request: the exchange with the same
    /// method, target and body; else the baseline's.
    pub fn answer_for(&self, request: &SeenRequest) -> Option<&Tape> {
        self.exchanges
            .iter()
            .find(|tape| {
                tape.method == request.method
                    && tape.target == request.path
                    && tape.body == request.body
            })
            .or_else(|| self.baseline())
    }
}

fn tape(
    query: &str,
    request: &SeenRequest,
    response: &Recorded,
    secret: Option<&str>,
    credential_header: &mut Option<String>,
) -> Tape {
    let headers = request
        .headers
        .iter()
        .map(|(name, value)| {
            let carries = CREDENTIAL_HEADERS.contains(&name.as_str())
                || secret.is_some_and(|s| value.contains(s));
            if carries {
                credential_header.get_or_insert_with(|| name.clone());
                (name.clone(), REDACTED.to_owned())
            } else {
                (name.clone(), value.clone())
            }
        })
        .filter(|(name, _)| !matches!(name.as_str(), "host" | "content-length"))
        .collect();
    Tape {
        query: query.to_owned(),
        method: request.method.clone(),
        target: redact(&request.path, secret),
        headers,
        body: redact(&request.body, secret),
        status: response.status,
        content_type: response.content_type.clone(),
        response: redact(&String::from_utf8_lossy(&response.body), secret),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exchange(target: &str, auth: &str, body: &str) -> Exchange {
        Exchange {
            request: SeenRequest {
                method: "GET".into(),
                path: target.into(),
                headers: vec![
                    ("host".into(), "127.0.0.1:1".into()),
                    ("authorization".into(), auth.into()),
                    ("x-trace".into(), "s3cret-value in a header".into()),
                ],
                body: String::new(),
            },
            response: Ok(Recorded {
                status: 200,
                content_type: Some("application/json".into()),
                body: body.as_bytes().to_vec(),
            }),
        }
    }

    #[test]
    fn the_credential_never_reaches_a_cassette() {
        let cassette = Cassette::from_exchanges(
            "/api/",
            &[(
                "words".to_owned(),
                exchange(
                    "/api/s?q=words&key=s3cret-value",
                    "Bearer s3cret-value",
                    r#"{"echo":"s3cret-value"}"#,
                ),
            )],
            Some("s3cret-value"),
        );
        let text = serde_json::to_string(&cassette).unwrap();
        assert!(!text.contains("s3cret-value"), "{text}");
        assert_eq!(cassette.credential_header.as_deref(), Some("authorization"));
        assert_eq!(
            cassette.exchanges[0].target,
            "/api/s?q=words&key=<credential>"
        );
        assert!(
            cassette.exchanges[0]
                .headers
                .iter()
                .all(|(n, _)| n != "host")
        );
    }

    #[test]
    fn a_cassette_is_checked_when_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.json");
        let good = Cassette::from_exchanges(
            "/",
            &[("q".to_owned(), exchange("/s?q=q", "Bearer t", "[]"))],
            Some("t"),
        );
        good.save(&path).unwrap();
        assert_eq!(Cassette::load(&path).unwrap(), good);
        for (bad, says) in [
            ("{}", "not an ecp cassette"),
            (
                r#"{"ecp_cassette":2,"base_path":"/","exchanges":[]}"#,
                "format 2",
            ),
            (
                r#"{"ecp_cassette":1,"base_path":"/","exchanges":[]}"#,
                "1 to 64 exchanges",
            ),
            (
                r#"{"ecp_cassette":1,"base_path":"x","exchanges":[]}"#,
                "base_path",
            ),
        ] {
            std::fs::write(&path, bad).unwrap();
            let error = Cassette::load(&path).unwrap_err();
            assert!(error.contains(says), "{bad}: {error}");
        }
    }
}
