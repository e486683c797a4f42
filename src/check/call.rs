//! `ecp call`: one `context_search` call to any target, through the same
//! start as `ecp check` (a fixture corpus or a cassette as its upstream),
//! with every configured secret taken out of what it prints.

use super::*;

/// What `ecp call` got back: the result, and what the server wrote to
/// stderr meanwhile (its redacted category line when the call failed).
#[derive(Debug)]
pub struct CallOutcome {
    pub result: rmcp::model::CallToolResult,
    /// `None` for a URL target (no process to read).
    pub stderr: Option<String>,
}

/// The token a fixture upstream hands out; it is not a secret.
const FIXTURE_TOKEN: &str = "ecp-call-fixture";

/// A Generic HTTP Search V1 endpoint on 127.0.0.1 answering from `corpus`
/// (`ecp call --fixture`): the binding's request in, the corpus's best
/// `limit` items out.
pub async fn fixture_upstream(
    corpus: crate::providers::fixture::FixtureCorpus,
) -> Result<upstream::Upstream, CheckError> {
    upstream::Upstream::try_start(move |request| {
        let body: serde_json::Value = serde_json::from_str(&request.body).unwrap_or_default();
        let limit = body["limit"].as_u64().unwrap_or(5).min(50) as usize;
        let items: Vec<serde_json::Value> = corpus
            .rank(&request.query(), limit)
            .into_iter()
            .map(|item| {
                let mut value = serde_json::json!({"id": item.id, "content": item.content});
                for (key, field) in [
                    ("title", item.title),
                    ("uri", item.uri),
                    ("updated_at", item.updated_at),
                ] {
                    if let Some(field) = field {
                        value[key] = field.into();
                    }
                }
                if let Some(score) = item.score {
                    value["score"] = score.into();
                }
                value
            })
            .collect();
        upstream::Reply::json(serde_json::json!({ "items": items }).to_string())
    })
    .await
    .map_err(|error| CheckError::Listen {
        what: "the fixture endpoint on 127.0.0.1",
        error,
    })
}

/// An upstream of ecp's on 127.0.0.1 that `ecp call` points the target's
/// endpoint and credential variables at: a fixture corpus served as V1
/// (`--fixture`), or a cassette's recorded answers replayed (`--cassette`).
pub struct CallUpstream {
    pub upstream: upstream::Upstream,
    /// Where the target's base URL points on it.
    pub base_path: String,
    /// The credential the target is given.
    pub token: &'static str,
    /// The option that asked for it, for errors.
    pub flag: &'static str,
}

impl CallUpstream {
    /// `ecp call --fixture`.
    pub async fn fixture(
        corpus: crate::providers::fixture::FixtureCorpus,
    ) -> Result<CallUpstream, CheckError> {
        Ok(CallUpstream {
            upstream: fixture_upstream(corpus).await?,
            base_path: "/".into(),
            token: FIXTURE_TOKEN,
            flag: "--fixture",
        })
    }

    /// `ecp call --cassette`: the recorded answer to the same request, else
    /// the baseline's, as `ecp check --cassette` replays them. The target
    /// gets the suite's token, which the replay reads as the recorded
    /// credential wherever the request carries it.
    pub async fn cassette(cassette: cassette::Cassette) -> Result<CallUpstream, CheckError> {
        let base_path = cassette.base_path.clone();
        let upstream =
            upstream::Upstream::try_start(move |request| match cassette.answer_for(request) {
                Some(tape) => {
                    let recorded = tape.recorded();
                    upstream::Reply::Raw {
                        status: recorded.status,
                        content_type: recorded.content_type,
                        body: recorded.body,
                    }
                }
                None => upstream::Reply::status(404, "{}"),
            })
            .await
            .map_err(|error| CheckError::Listen {
                what: "the cassette's replay on 127.0.0.1",
                error,
            })?;
        Ok(CallUpstream {
            upstream,
            base_path,
            token: TOKEN_CANARY,
            flag: "--cassette",
        })
    }
}

/// `ecp call`: one `context_search` call against a target. With an
/// upstream of ecp's ([`CallUpstream`]), the target's endpoint and
/// credential variables point at it.
pub async fn call_once(
    settings: &CheckSettings,
    query: &str,
    served: Option<&CallUpstream>,
) -> Result<CallOutcome, CheckError> {
    let base_url = served.map(|s| format!("{}{}", s.upstream.base_url, s.base_path));
    let endpoint = (served.zip(base_url.as_deref())).map(|(s, url)| (url, Some(s.token)));
    let fixture = served;
    let reach = resolve(settings, endpoint, Duration::from_secs(600))?;
    // The target's answer, failure text and stderr may echo its credential
    // (in the upstream's body, or the request URL it logs).
    let mut secrets = settings.bearer.clone().into_iter().collect::<Vec<_>>();
    let session = match reach {
        Reach::Spawn(launch) => {
            secrets.extend(credential_of(&launch).filter(|_| fixture.is_none()));
            if let Some(served) = fixture
                && launch.binding.is_none()
            {
                return Err(CheckError::Settings(format!(
                    "{} needs a manifest that passes the endpoint and credential in `env` (`*_BASE_URL`, `*_TOKEN`), as `ecp new` writes it",
                    served.flag
                )));
            }
            Session::spawn(&launch).await.map_err(|error| {
                let help = match (&settings.target, &launch.binding, fixture) {
                    (Target::Extension(path), Some(binding), None) => Some(format!(
                        "the server needs {} (a live Generic HTTP Search V1 endpoint); without one, try the built-in example corpus: `ecp call {} {query:?} --fixture example`",
                        match &binding.token {
                            Some(token) => format!("{} and {token}", binding.base_url),
                            None => binding.base_url.clone(),
                        },
                        path.display()
                    )),
                    _ => None,
                };
                CheckError::Start { error, help }
            })?
        }
        Reach::Http {
            url, call_timeout, ..
        } => {
            if let Some(served) = fixture {
                return Err(CheckError::Settings(format!(
                    "{} {}",
                    served.flag,
                    match settings.target {
                        Target::Url(_) => "applies to a local extension or a command, not to --url",
                        _ => "applies to a local extension, not to a remote (httpUrl) one",
                    }
                )));
            }
            Session::connect(&url, settings.bearer.clone(), call_timeout).await?
        }
    };
    let result = session.call(serde_json::json!({ "query": query })).await;
    // A failed call's category line may still be on its way.
    if result.as_ref().is_ok_and(|r| r.is_error == Some(true)) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let stderr = session.is_process().then(|| session.stderr());
    session.close().await;
    let secrets = secret::Secrets::new(secrets.iter().map(String::as_str));
    result
        .map(|result| CallOutcome {
            result: redacted(result, &secrets),
            stderr: stderr.map(|text| secrets.redact(&text)),
        })
        .map_err(|error| CheckError::Target(secrets.redact(&error.to_string())))
}

/// A call's result with `secrets` taken out of its texts and structured
/// content.
fn redacted(
    mut result: rmcp::model::CallToolResult,
    secrets: &secret::Secrets,
) -> rmcp::model::CallToolResult {
    if secrets.is_empty() {
        return result;
    }
    for block in &mut result.content {
        if let rmcp::model::ContentBlock::Text(text) = block {
            text.text = secrets.redact(&text.text);
        }
    }
    if let Some(structured) = &mut result.structured_content {
        secrets.redact_json(structured);
    }
    result
}
