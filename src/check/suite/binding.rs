//! The Generic HTTP Search V1 binding against the scripted upstream: the
//! request, the render vectors byte for byte, every fault (at once), no
//! retry, cancellation.

use super::{output::text_of, *};

pub(super) fn reply_for(request: &SeenRequest, vectors: &[(String, String)]) -> Reply {
    let query = request.query();
    let first = query.split(' ').next().unwrap_or("");
    let canary_body = format!(r#"{{"error":"{BODY_CANARY}"}}"#);
    match (Check::from_id(first), first) {
        (Some(Check::FaultTimeout), _) => Reply::After(Duration::from_secs(600), Box::new(Reply::json(r#"{"items":[]}"#))),
        (Some(Check::FaultRedirect), _) => Reply::Redirect,
        (Some(Check::FaultRateLimit), _) => Reply::status(429, &canary_body),
        (Some(Check::FaultServerError), _) => Reply::status(500, &canary_body),
        (Some(Check::FaultMalformed), _) => Reply::json(format!(r#"{{"items":[{{"id":"{BODY_CANARY}""#)),
        (Some(Check::FaultOversized), _) => Reply::ChunkedJson { len: MIB + 1 },
        (Some(Check::FaultInvalidUtf8), _) => Reply::Body {
            status: 200,
            body: [br#"{"items":[{"id":"a","content":""#.as_slice(), BODY_CANARY.as_bytes(), b"\xff\"}]}"].concat(),
        },
        (Some(Check::FaultSlowBody), _) => Reply::Trickle {
            body: br#"{"items":[]}"#.to_vec(),
            every: Duration::from_secs(2),
        },
        (_, "hang") => Reply::Hang,
        (_, "vector") => {
            let index: usize = query.split(' ').nth(1).and_then(|n| n.parse().ok()).unwrap_or(usize::MAX);
            match vectors.get(index) {
                Some((body, _)) => Reply::json(body.clone()),
                None => Reply::status(404, "{}"),
            }
        }
        (_, "concurrent") => Reply::After(
            Duration::from_millis(100),
            Box::new(Reply::json(json!({"items": [{"id": query, "content": "concurrent"}]}).to_string())),
        ),
        _ => Reply::json(
            json!({"items": [{"id": "ecp-check", "content": "Reference data with <angle> brackets & \"quotes\".", "score": 0.5}]})
                .to_string(),
        ),
    }
}

/// Starts the scripted upstream for a run.
pub async fn start_upstream(embedded: &'static Embedded) -> Result<Upstream, String> {
    let vectors = Arc::new(embedded.render_vectors.clone());
    Upstream::try_start(move |request| reply_for(request, &vectors))
        .await
        .map_err(|e| format!("cannot start the scripted upstream: {e}"))
}

/// What is wrong with the probe request, if anything.
pub(super) fn request_problem(request: &SeenRequest) -> Option<String> {
    if request.method != "POST" || request.path != "/v1/context/search" {
        return Some(format!(
            "{} {} instead of POST /v1/context/search",
            request.method, request.path
        ));
    }
    if request.header("authorization") != Some(&format!("Bearer {TOKEN_CANARY}")) {
        return Some("the authorization header is not `Bearer <token>`".into());
    }
    if !request
        .header("content-type")
        .is_some_and(|v| v.starts_with("application/json"))
    {
        return Some("content-type is not application/json".into());
    }
    let body: Value = serde_json::from_str(&request.body).unwrap_or_default();
    if body != json!({"query": "ecp probe", "limit": 5}) {
        return Some(format!(
            "the body is {} instead of {{\"query\":\"ecp probe\",\"limit\":5}} (normalized query, limit 5)",
            request.body
        ));
    }
    None
}

impl Suite<'_> {
    /// Whether the target talks to the scripted upstream.
    pub(super) async fn binding(&mut self) -> Result<(), String> {
        let Some(upstream) = self.upstream else {
            return Err(skip::NO_BINDING.into());
        };
        let before = upstream.requests().len();
        let result = self.call(json!({"query": "  ecp   probe  "})).await;
        let seen = upstream
            .wait_until(Duration::from_secs(2), |r, _| r.len() > before)
            .await;
        if !seen {
            return Err(match result {
                Ok(_) => "the target never called the scripted upstream: it does not speak the Generic HTTP Search V1 binding".into(),
                Err(error) => format!("the probe call failed ({error}) without reaching the upstream"),
            });
        }
        Ok(())
    }

    pub(super) async fn upstream_checks(&mut self) {
        let Some(upstream) = self.upstream else {
            return;
        };
        // The probe's request.
        let probe = upstream
            .requests()
            .into_iter()
            .find(|r| r.query().contains("probe"));
        self.record(
            Check::UpstreamRequest,
            match probe {
                None => Err("no probe request".into()),
                Some(request) => request_problem(&request).map_or_else(
                    || Ok("POST /v1/context/search, bearer, {query, limit: 5}".into()),
                    Err,
                ),
            },
        );

        // Render vectors, byte for byte.
        let vectors = &self.embedded.render_vectors;
        let mut mismatch = None;
        for (index, (_, expected)) in vectors.iter().enumerate() {
            match self.call(json!({"query": format!("vector {index}")})).await {
                Ok(result) if text_of(&result) == Some(expected.as_str()) => {}
                Ok(_) => {
                    mismatch.get_or_insert(format!(
                        "vector {index}: the text differs from render-vectors.json"
                    ));
                }
                Err(error) => {
                    mismatch.get_or_insert(format!("vector {index}: {error}"));
                }
            }
        }
        self.record(
            Check::RenderVectors,
            mismatch.map_or_else(|| Ok(format!("{} vectors", vectors.len())), Err),
        );

        // Faults: each gives the same stable error, before the MCP timeout.
        // They run at once (each upstream request on its own connection), so
        // the two that wait out the budget cost one budget, not two.
        let session = self.session;
        let calls = FAULTS.iter().map(|(id, _)| async move {
            let arguments = json!({"query": format!("{id} {QUERY_CANARY}")});
            let started = std::time::Instant::now();
            let result = session.call(arguments.clone()).await;
            (arguments, result, started.elapsed())
        });
        let mut answers = futures_util::future::join_all(calls).await;
        // A server that answers one call at a time cannot meet the timeout
        // for the second waiting fault; such a fault is tried again alone
        // (another query, so that no-retry still counts one request each),
        // and passing then is a warning.
        let mut alone = vec![false; answers.len()];
        for (index, (id, _)) in FAULTS.iter().enumerate() {
            if answers[index]
                .1
                .as_ref()
                .is_err_and(|e| e.contains("MCP timeout"))
            {
                let arguments = json!({"query": format!("{id} {QUERY_CANARY} alone")});
                let started = std::time::Instant::now();
                let result = session.call(arguments.clone()).await;
                if result.is_ok() {
                    alone[index] = true;
                    answers[index] = (arguments, result, started.elapsed());
                }
            }
        }
        let mut stable: Option<String> = None;
        for (((id, what), (arguments, result, elapsed)), alone) in
            FAULTS.iter().zip(answers).zip(alone)
        {
            let outcome = match self.observe(&arguments, result) {
                Err(error) => Err(error),
                Ok(result) if result.is_error != Some(true) => {
                    Err(format!("{what} gave a success"))
                }
                Ok(result) if result.structured_content.is_some() => {
                    Err("the error carries structuredContent".into())
                }
                Ok(result) => match text_of(&result) {
                    None => Err("the error is not one text block".into()),
                    Some(text) => match &stable {
                        Some(first) if first != text => Err(format!(
                            "the error text differs from the other faults': {text:?}"
                        )),
                        _ => {
                            stable.get_or_insert(text.to_owned());
                            Ok(format!("stable error in {} ms", elapsed.as_millis()))
                        }
                    },
                },
            };

            match outcome {
                Ok(reason) if alone => self.warn(
                    *id,
                    format!(
                        "{reason} when called alone; beside the other faults it took longer than the MCP timeout: the server answers one call at a time, and Qwen may send calls at once"
                    ),
                ),
                outcome => self.record(*id, outcome),
            }
        }

        // No retry: one upstream request per call.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let requests = upstream.requests();
        let retried: Vec<String> = FAULTS
            .iter()
            .map(|(check, _)| check.id())
            .chain(["vector"])
            .filter_map(|prefix| {
                let mut counts = std::collections::BTreeMap::new();
                for request in requests.iter().filter(|r| r.query().starts_with(prefix)) {
                    *counts.entry(request.query()).or_insert(0) += 1;
                }
                counts.into_iter().find(|(_, n)| *n > 1).map(|(q, n)| {
                    format!(
                        "{} requests for `{}`",
                        n,
                        q.replace(QUERY_CANARY, "<query>")
                    )
                })
            })
            .collect();
        self.record(
            Check::NoRetry,
            retried.first().cloned().map_or_else(
                || Ok(format!("{} calls, one request each", requests.len())),
                Err,
            ),
        );

        self.cancellation(upstream).await;
    }

    pub(super) async fn cancellation(&mut self, upstream: &Upstream) {
        let before = upstream
            .requests()
            .iter()
            .filter(|r| r.query() == "hang")
            .count();
        let peer = self.session.client.peer().clone();
        let call = tokio::spawn(async move {
            let mut params = rmcp::model::CallToolRequestParams::new("context_search");
            params.arguments = json!({"query": "hang"}).as_object().cloned();
            peer.call_tool(params).await
        });
        let arrived = upstream
            .wait_until(Duration::from_secs(5), |r, _| {
                r.iter().filter(|r| r.query() == "hang").count() > before
            })
            .await;
        if !arrived {
            call.abort();
            self.record(
                Check::Cancellation,
                Err("the call never reached the upstream".into()),
            );
            return;
        }
        call.abort();
        let aborted = std::time::Instant::now();
        let closed = upstream
            .wait_for_close_of("hang", Duration::from_secs(3))
            .await;
        let after = aborted.elapsed().as_millis();
        self.record(
            Check::Cancellation,
            if closed {
                Ok(format!("closed {after} ms after notifications/cancelled"))
            } else {
                Err("the upstream connection stayed open 3 s after notifications/cancelled".into())
            },
        );
    }
}
