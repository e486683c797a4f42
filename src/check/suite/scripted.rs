//! The scripted upstream every upstream check runs against: the Generic
//! HTTP Search V1 binding answering with the render vectors, or a real
//! upstream's recorded answers replayed; each fault selected by the first
//! word of the query (or by the call's order), and the other host its
//! redirect fault points at.

use super::*;
use crate::check::CheckError;
use crate::check::{
    cassette::Cassette,
    mutate,
    upstream::{ELSEWHERE_HOST, REDIRECTED},
};

/// What the scripted upstream answers with.
#[derive(Debug, Clone)]
pub enum Script {
    /// The Generic HTTP Search V1 binding, with the render vectors.
    V1 { vectors: Vec<(String, String)> },
    /// A real upstream's recorded answers.
    Recorded(Cassette),
}

/// The scripted upstream's settings for a run.
#[derive(Debug, Clone)]
pub struct Scripted {
    pub script: Script,
    /// Seeds the hostile answers.
    pub seed: u64,
    /// How many hostile answers the target meets.
    pub mutations: usize,
}

/// The V1 upstream's answer to a plain call.
fn v1_success() -> String {
    json!({"items": [
        {"id": "ecp-check", "content": "Reference data with <angle> brackets & \"quotes\".", "score": 0.5, "title": "A title", "uri": "https://example.com/doc", "updated_at": "2026-01-01T00:00:00Z"},
        {"id": "ecp-check-2", "content": "Second item.", "updatedAt": "2026-02-01"}
    ]})
    .to_string()
}

impl Scripted {
    /// The answer to a call without a fault: the scripted item, or the
    /// recorded answer to the same request.
    fn success(&self, request: &SeenRequest) -> Reply {
        match &self.script {
            Script::V1 { .. } => Reply::json(v1_success()),
            Script::Recorded(cassette) => match cassette.answer_for(request) {
                Some(tape) => {
                    let recorded = tape.recorded();
                    Reply::Raw {
                        status: recorded.status,
                        content_type: recorded.content_type,
                        body: recorded.body,
                    }
                }
                None => Reply::status(404, "{}"),
            },
        }
    }

    /// The body of a successful answer, to bend into faults.
    fn success_body(&self, request: &SeenRequest) -> Vec<u8> {
        match self.success(request) {
            Reply::Raw { body, .. } | Reply::Body { body, .. } => body,
            _ => Vec::new(),
        }
    }

    /// The document the hostile answers are made from.
    pub fn hostile_source(&self) -> Option<Value> {
        match &self.script {
            Script::V1 { .. } => serde_json::from_str(&v1_success()).ok(),
            Script::Recorded(cassette) => cassette
                .baseline()
                .and_then(|tape| crate::runtime::http::parse_json_like_javascript(&tape.response)),
        }
    }

    /// What to answer `request` with: the marker among its words selects
    /// the fault (see [`crate::check::upstream::markers`]).
    /// A redirect goes to `elsewhere`, an absolute URL on another host.
    pub fn reply_for(
        &self,
        request: &SeenRequest,
        hostile: Option<&Value>,
        elsewhere: &str,
    ) -> Reply {
        if request.path.starts_with(REDIRECTED) {
            return self.success(request);
        }
        let canary_body = format!(r#"{{"error":"{BODY_CANARY}"}}"#);
        let (marker, number) = request.tag.clone().unwrap_or_default();
        match marker.as_str() {
            "fault-timeout" => {
                Reply::After(Duration::from_secs(600), Box::new(self.success(request)))
            }
            "fault-redirect" => Reply::RedirectTo(elsewhere.to_owned()),
            "fault-rate-limit" => Reply::status(429, &canary_body),
            "fault-server-error" => Reply::status(500, &canary_body),
            "fault-malformed" => Reply::json(format!(r#"{{"items":[{{"id":"{BODY_CANARY}""#)),
            "fault-oversized" => Reply::Padded {
                body: self.success_body(request),
                len: MIB + 1,
            },
            "fault-invalid-utf8" => {
                // Inside the first string, with the canary: a reader that
                // replaces bad bytes instead of failing gets a success.
                let mut body = self.success_body(request);
                let at = body.iter().position(|&b| b == b'"').map_or(0, |at| at + 1);
                let bad: Vec<u8> = [BODY_CANARY.as_bytes(), b"\xff"].concat();
                body.splice(at..at, bad);
                Reply::Body { status: 200, body }
            }
            "fault-slow-body" => Reply::Trickle {
                body: self.success_body(request),
                every: Duration::from_secs(2),
            },
            "ecphang" => Reply::Hang,
            "ecpvector" => match (&self.script, number) {
                (Script::V1 { vectors }, Some(index)) if index < vectors.len() => {
                    Reply::json(vectors[index].0.clone())
                }
                _ => Reply::status(404, "{}"),
            },
            "ecpconcurrent" => match &self.script {
                Script::V1 { .. } => Reply::After(
                    Duration::from_millis(100),
                    Box::new(Reply::json(
                        json!({"items": [{"id": request.query(), "content": "concurrent"}]})
                            .to_string(),
                    )),
                ),
                Script::Recorded(_) => {
                    Reply::After(Duration::from_millis(100), Box::new(self.success(request)))
                }
            },
            "ecpmutation" => match hostile {
                Some(document) => Reply::Body {
                    status: 200,
                    body: mutate::hostile(document, self.seed, number.unwrap_or(0) as u64),
                },
                None => self.success(request),
            },
            _ => self.success(request),
        }
    }
}

fn listen(error: std::io::Error) -> CheckError {
    CheckError::Listen {
        what: "the scripted upstream",
        error,
    }
}

/// Starts the scripted upstream for a run, with the upstream on another
/// host its redirect fault points at (it answers every request with a
/// success, so that a client that follows the redirect gets one).
pub async fn start_upstream(scripted: Arc<Scripted>) -> Result<Upstream, CheckError> {
    let hostile = scripted.hostile_source();
    let answer = {
        let scripted = scripted.clone();
        move |request: &SeenRequest| scripted.success(request)
    };
    let elsewhere = match Upstream::try_start_on(ELSEWHERE_HOST, answer.clone()).await {
        Ok(elsewhere) => elsewhere,
        Err(_) => Upstream::try_start(answer).await.map_err(listen)?,
    };
    let location = format!("{}{REDIRECTED}", elsewhere.base_url);
    let mut upstream = Upstream::try_start(move |request| {
        scripted.reply_for(request, hostile.as_ref(), &location)
    })
    .await
    .map_err(listen)?;
    upstream.elsewhere = Some(Box::new(elsewhere));
    Ok(upstream)
}
