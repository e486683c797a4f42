//! Recorded exchanges with a provider's real upstream: what `ecp check
//! --upstream URL` records (and `--record FILE` keeps) and `--cassette
//! FILE` replays, so that a mapping of any REST API is checked against the
//! answers of its own API, offline once recorded.
//!
//! A cassette holds, per probe query, the request the target sent (method,
//! target, headers, body) and the answer (status, content type, body).
//! Credentials never reach it: the credential is replaced by
//! `<credential>` wherever it appears in any form it travels in (encoded
//! in a query, escaped in JSON, in base64: [`super::secret`]), and the
//! headers that carry credentials are kept by name only. A replayed
//! request is compared with the recorded one after the same rule took the
//! suite's own token out of it, so a credential sent in the query still
//! finds its answer.
//!
//! A cassette is outside input when replayed: it is read bounded and
//! checked field by field, and one that leaves nothing to replay (no 2xx
//! answer, a status that is no final answer, a content type that is no
//! header value) is refused: the checks that need a successful call would
//! all be skipped, and a run that skips them decides nothing.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{
    canary::TOKEN_CANARY,
    secret::Secrets,
    upstream::{Exchange, MAX_RECORDED_BODY, Recorded, SeenRequest},
};

/// The format's version, the first member of every cassette.
pub const FORMAT: u32 = 1;
/// The most a cassette file may hold.
const MAX_FILE: u64 = 64 * 1024 * 1024;
/// The most exchanges a cassette may hold.
const MAX_EXCHANGES: usize = 64;
/// What a credential becomes in a cassette.
pub use super::secret::REDACTED;

use crate::text::secrets::CREDENTIAL_HEADERS;

/// What makes a cassette's text unusable: the rule it breaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unusable(String);

/// Why a cassette cannot be read, used or saved.
#[derive(Debug, thiserror::Error)]
pub enum CassetteError {
    #[error("cannot read the cassette {}: {problem}", .path.display())]
    Read {
        path: std::path::PathBuf,
        problem: crate::files::FileProblem,
    },
    #[error("{}: {problem}", .path.display())]
    Invalid {
        path: std::path::PathBuf,
        problem: Unusable,
    },
    #[error("the cassette was not saved: {0}")]
    Save(crate::writes::WriteProblem),
}

impl CassetteError {
    /// What to do about it, when ecp knows.
    pub fn help(&self) -> Option<String> {
        match self {
            CassetteError::Invalid { path, .. } => Some(format!(
                "record one with `ecp check . --upstream URL --record {}`",
                path.display()
            )),
            CassetteError::Save(problem) => problem.help(),
            CassetteError::Read { .. } => None,
        }
    }
}

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
    /// The name of the profile's valid input the call sent
    /// (`contracts/v1/test-vectors.json`), when it was one: the service's
    /// own answers to them judge `valid-inputs`. Never the baseline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
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

/// A replayed request's target and body as a cassette records them: the
/// suite's token (which the target was given in place of the credential)
/// taken out by the rule that took the credential out of the recording.
pub fn as_recorded(request: &SeenRequest) -> (String, String) {
    static CANARY: std::sync::LazyLock<Secrets> =
        std::sync::LazyLock::new(|| Secrets::new([TOKEN_CANARY]));
    (CANARY.redact(&request.path), CANARY.redact(&request.body))
}

impl Cassette {
    /// A cassette from forwarded exchanges, each tagged with the query of
    /// the call that made it; `secret` (the credential's value) is
    /// replaced wherever it appears, in any of its forms.
    pub fn from_exchanges(
        base_path: &str,
        exchanges: &[(String, Exchange)],
        secret: Option<&str>,
    ) -> Cassette {
        let secret = Secrets::new(secret);
        let secret = &secret;
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
    pub fn load(path: &Path) -> Result<Cassette, CassetteError> {
        let text = crate::files::read_text(path, None, MAX_FILE).map_err(|problem| {
            CassetteError::Read {
                path: path.to_owned(),
                problem,
            }
        })?;
        Cassette::parse(&text).map_err(|problem| CassetteError::Invalid {
            path: path.to_owned(),
            problem,
        })
    }

    /// A cassette from its text, checked field by field; else what is
    /// wrong with it.
    pub fn parse(text: &str) -> Result<Cassette, Unusable> {
        let cassette: Cassette = serde_json::from_str(text).map_err(|e| {
            Unusable(format!(
                "not an ecp cassette: {}",
                crate::text::outside::line(&e.to_string(), 300)
            ))
        })?;
        cassette
            .problem()
            .map_or(Ok(cassette), |problem| Err(Unusable(problem)))
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
        let problem = self.exchanges.iter().enumerate().find_map(|(at, tape)| {
            let header_value = |value: &str| value.bytes().all(|b| b == b'\t' || !b.is_ascii_control());
            if tape.response.len() > MAX_RECORDED_BODY {
                Some(format!("exchange {at}: the answer is over 4 MiB"))
            } else if !(200..=599).contains(&tape.status) {
                Some(format!(
                    "exchange {at}: status {} is not a final HTTP answer (200 to 599)",
                    tape.status
                ))
            } else if !tape.content_type.as_deref().is_none_or(header_value) {
                Some(format!(
                    "exchange {at}: content_type holds a control character (a line break ends a header): it is no header value"
                ))
            } else if !tape.target.starts_with('/') {
                Some(format!("exchange {at}: the target must start with /"))
            } else {
                None
            }
        });
        problem.or_else(|| {
            self.baseline().is_none().then(|| {
                "no exchange of a --query call has a 2xx answer (the valid inputs' never count), so no check that needs a successful call could run; record it again with --query words the service finds".to_owned()
            })
        })
    }

    /// Writes the cassette, whole or not at all, by the one write rule
    /// ([`crate::writes`]): `path` is replaced only when it is a regular
    /// file (never a link, a FIFO or a device).
    pub fn save(&self, path: &Path) -> Result<(), CassetteError> {
        let mut text = serde_json::to_string_pretty(self)
            .unwrap_or_else(|_| unreachable!("a cassette is strings and numbers"));
        text.push('\n');
        crate::writes::Place::destination(path)
            .write(text.as_bytes())
            .map_err(CassetteError::Save)
    }

    /// The first exchange of a probe query the upstream answered with a
    /// 2xx, whose query the suite's baseline call repeats.
    pub fn baseline(&self) -> Option<&Tape> {
        (self.exchanges.iter()).find(|tape| tape.succeeded() && tape.input.is_none())
    }

    /// The recorded answer for a request: the exchange with the same
    /// method, target and body (read [`as_recorded`]); else the baseline's.
    pub fn answer_for(&self, request: &SeenRequest) -> Option<&Tape> {
        self.recorded_for(request).or_else(|| self.baseline())
    }

    /// The exchange recorded for this very request, if there is one.
    pub fn recorded_for(&self, request: &SeenRequest) -> Option<&Tape> {
        let (target, body) = as_recorded(request);
        self.exchanges.iter().find(|tape| {
            tape.method == request.method && tape.target == target && tape.body == body
        })
    }

    /// Whether it holds the service's answers to the profile's valid
    /// inputs (recorded by this ecp; older cassettes do not).
    pub fn has_inputs(&self) -> bool {
        self.exchanges.iter().any(|tape| tape.input.is_some())
    }

    /// Adds the exchanges of the calls with the profile's valid inputs:
    /// (query, input name, exchange), up to the most a cassette holds.
    pub fn add_inputs(&mut self, exchanges: &[(String, String, Exchange)], secret: Option<&str>) {
        let pairs: Vec<(String, Exchange)> = (exchanges.iter())
            .map(|(query, _, exchange)| (query.clone(), exchange.clone()))
            .collect();
        let names = exchanges.iter().filter(|(_, _, e)| e.response.is_ok());
        let added = Cassette::from_exchanges(&self.base_path, &pairs, secret);
        if self.credential_header.is_none() {
            self.credential_header = added.credential_header;
        }
        let room = MAX_EXCHANGES.saturating_sub(self.exchanges.len());
        let tapes = added.exchanges.into_iter().zip(names).take(room);
        self.exchanges
            .extend(tapes.map(|(tape, (_, name, _))| Tape {
                input: Some(name.clone()),
                ..tape
            }));
    }
}

fn tape(
    query: &str,
    request: &SeenRequest,
    response: &Recorded,
    secret: &Secrets,
    credential_header: &mut Option<String>,
) -> Tape {
    let headers = request
        .headers
        .iter()
        .filter(|(name, _)| !matches!(name.as_str(), "host" | "content-length"))
        .map(|(name, value)| {
            let carries = CREDENTIAL_HEADERS.contains(&name.as_str()) || secret.holds(value);
            if carries {
                credential_header.get_or_insert_with(|| name.clone());
                (name.clone(), REDACTED.to_owned())
            } else {
                (name.clone(), secret.redact(value))
            }
        })
        .collect();
    Tape {
        query: query.to_owned(),
        input: None,
        method: request.method.clone(),
        target: secret.redact(&request.path),
        headers,
        body: secret.redact(&request.body),
        status: response.status,
        content_type: (response.content_type.as_deref()).map(|t| secret.redact(t)),
        response: secret.redact(&String::from_utf8_lossy(&response.body)),
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
                tag: None,
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
        // Encoded in the query, escaped in the answer, in a Basic pair.
        let secret = "sig Kq3/x+Yz9w==";
        let mut encoded = exchange(
            "/api/s?q=words&sig=sig+Kq3%2fx%2BYz9w%3D%3D",
            "Basic a2ItdXNlcjpzaWcgS3EzL3grWXo5dz09",
            r#"{"echo":"\u0073ig Kq3\/x\u002bYz9w==","url":"\/api\/s?sig=sig+Kq3%2Fx%2BYz9w%3D%3D"}"#,
        );
        encoded.request.headers[2].1 = "trace sig%20Kq3%2Fx%2BYz9w%3D%3D".into();
        let encoded = Cassette::from_exchanges("/", &[("words".into(), encoded)], Some(secret));
        let tape = &encoded.exchanges[0];
        assert_eq!(tape.target, "/api/s?q=words&sig=<credential>");
        assert_eq!(
            tape.response,
            r#"{"echo":"<credential>","url":"\/api\/s?sig=<credential>"}"#
        );
        assert!(
            tape.headers.iter().all(|(_, v)| v == REDACTED),
            "{:?}",
            tape.headers
        );
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

    /// The valid inputs' exchanges are kept, marked with the input, and
    /// answer their own requests; none of them is ever the baseline, which
    /// stays the first probe query the service answered with a 2xx.
    #[test]
    fn the_valid_inputs_answers_are_kept_but_never_the_baseline() {
        let mut cassette = Cassette::from_exchanges(
            "/",
            &[("words".to_owned(), exchange("/s?q=words", "", "[1]"))],
            None,
        );
        assert!(!cassette.has_inputs());
        cassette.add_inputs(
            &[
                (
                    "x".into(),
                    "one character".into(),
                    exchange("/s?q=x", "", "[2]"),
                ),
                ("y".into(), "other".into(), exchange("/s?q=y", "", "[3]")),
            ],
            None,
        );
        assert!(cassette.has_inputs());
        assert_eq!(cassette.exchanges.len(), 3);
        assert_eq!(
            cassette.exchanges[1].input.as_deref(),
            Some("one character")
        );
        assert_eq!(cassette.baseline().unwrap().query, "words");
        let asked = |path: &str| SeenRequest {
            method: "GET".into(),
            path: path.into(),
            headers: Vec::new(),
            body: String::new(),
            tag: None,
        };
        assert_eq!(
            cassette.answer_for(&asked("/s?q=x")).unwrap().response,
            "[2]"
        );
        assert!(cassette.recorded_for(&asked("/s?q=z")).is_none());
        assert_eq!(
            cassette.answer_for(&asked("/s?q=z")).unwrap().response,
            "[1]"
        );

        // Only inputs answered with a 2xx: no baseline, refused when read.
        let mut only_inputs = Cassette::from_exchanges("/", &[], None);
        only_inputs.add_inputs(
            &[(
                "x".into(),
                "one character".into(),
                exchange("/s?q=x", "", "[2]"),
            )],
            None,
        );
        assert!(only_inputs.baseline().is_none());
        let text = serde_json::to_string(&only_inputs).unwrap();
        assert!(
            Cassette::parse(&text)
                .unwrap_err()
                .to_string()
                .contains("no exchange of a --query call has a 2xx answer")
        );
    }

    #[test]
    fn a_replayed_request_with_the_suites_token_in_its_query_finds_its_answer() {
        let recorded = Cassette::from_exchanges(
            "/",
            &[
                ("a".into(), exchange("/s?q=a&key=k%2Fsecret", "", "[1]")),
                ("b".into(), exchange("/s?q=b&key=k%2Fsecret", "", "[2]")),
            ],
            Some("k/secret"),
        );
        let replayed = SeenRequest {
            method: "GET".into(),
            path: format!("/s?q=b&key={TOKEN_CANARY}"),
            headers: Vec::new(),
            body: String::new(),
            tag: None,
        };
        assert_eq!(recorded.answer_for(&replayed).unwrap().response, "[2]");
    }

    #[test]
    fn a_cassette_is_checked_when_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.json");
        let good = Cassette::from_exchanges(
            "/",
            &[("q".to_owned(), exchange("/s?q=q", "Bearer tok3n", "[]"))],
            Some("tok3n"),
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
            let error = Cassette::load(&path).unwrap_err().to_string();
            assert!(error.contains(says), "{bad}: {error}");
        }
        // One edit that leaves no answer to replay.
        let text = serde_json::to_string(&good).unwrap();
        for (bad, says) in [
            (
                text.replace(r#""status":200"#, r#""status":101"#),
                "status 101 is not a final HTTP answer",
            ),
            (
                text.replace(r#""status":200"#, r#""status":100"#),
                "status 100",
            ),
            (
                text.replace(r#""status":200"#, r#""status":404"#),
                "no exchange of a --query call has a 2xx answer",
            ),
            (
                text.replace("application/json", "application/json\\r\\nx-injected: 1"),
                "content_type holds a control character",
            ),
        ] {
            assert_ne!(bad, text);
            std::fs::write(&path, &bad).unwrap();
            let error = Cassette::load(&path).unwrap_err().to_string();
            assert!(error.contains(says), "{bad}: {error}");
        }
    }
}
