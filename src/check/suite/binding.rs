//! The upstream checks: the scripted upstream (the Generic HTTP Search V1
//! binding, or a recorded real upstream replayed), the request, rendering,
//! every fault (at once), no retry, cancellation, hostile answers.
//!
//! Every check here is decided only after a baseline call through the same
//! upstream succeeded: a fault that gives "the stable error" proves nothing
//! when every call fails anyway.

use super::{output::text_of, *};
use crate::check::{
    cassette::{Tape, as_recorded},
    secret::Secrets,
    session::{CallError, Session},
    upstream::{REDIRECTED, TAGGING_PROBE},
};

/// A call the upstream knows as `tag`: by its words, or armed first (one
/// call at a time); the result and how long it took.
async fn tagged_call(
    session: &Session,
    upstream: &Upstream,
    tagging: Tagging,
    tag: Tag,
    arguments: Value,
) -> (Value, Result<CallToolResult, CallError>, Duration) {
    if tagging == Tagging::Order {
        upstream.arm(Some(tag));
    }
    let started = std::time::Instant::now();
    let result = session.call(arguments.clone()).await;
    (arguments, result, started.elapsed())
}

/// Runs `calls` (tag, arguments): all at once when the words tell them
/// apart, else one at a time in order.
async fn tagged_calls(
    session: &Session,
    upstream: &Upstream,
    tagging: Tagging,
    calls: Vec<(Tag, Value)>,
) -> Vec<(Value, Result<CallToolResult, CallError>, Duration)> {
    match tagging {
        Tagging::Words => {
            let calls = calls
                .into_iter()
                .map(|(tag, arguments)| tagged_call(session, upstream, tagging, tag, arguments));
            futures_util::future::join_all(calls).await
        }
        Tagging::Order => {
            let mut answers = Vec::with_capacity(calls.len());
            for (tag, arguments) in calls {
                answers.push(tagged_call(session, upstream, tagging, tag, arguments).await);
            }
            answers
        }
    }
}

/// What the redirect fault's other host saw: nothing when no client
/// followed the redirect, else that it was followed, and whether the
/// token went with it (in any form [`Secrets`] knows, in any header, the
/// target or the body).
fn followed_redirect(upstream: &Upstream) -> Option<String> {
    let elsewhere = upstream.elsewhere.as_deref()?;
    let requests = elsewhere.requests();
    let first = requests.first()?;
    let token = Secrets::new(Some(TOKEN_CANARY));
    let leaked = requests.iter().any(|r| {
        token.holds(&r.path)
            || token.holds(&r.body)
            || r.headers.iter().any(|(_, value)| token.holds(value))
    });
    let place = format!("{}{}", elsewhere.base_url, first.path);
    Some(if leaked {
        format!(
            "the adapter followed the 302 redirect to another host ({place}) and sent the token there"
        )
    } else {
        format!("the adapter followed the 302 redirect to another host ({place})")
    })
}

/// What is wrong with the V1 probe request, if anything; the bearer is
/// asked for when the target takes a credential.
pub(super) fn request_problem(request: &SeenRequest, credential: bool) -> Option<String> {
    if request.method != "POST" || request.path != "/v1/context/search" {
        return Some(format!(
            "{} {} instead of POST /v1/context/search",
            request.method, request.path
        ));
    }
    if credential && request.header("authorization") != Some(&format!("Bearer {TOKEN_CANARY}")) {
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

/// What differs between the replayed request and the recorded one, if
/// anything: the same method, target and body (the suite's token read as
/// the recorded credential, [`as_recorded`]), and the credential in the
/// same header.
fn recorded_request_problem(
    request: &SeenRequest,
    tape: &Tape,
    credential_header: Option<&str>,
) -> Option<String> {
    let (target, body) = as_recorded(request);
    if request.method != tape.method || target != tape.target {
        return Some(format!(
            "{} {} instead of the recorded {} {}: the mapping changed since the cassette was recorded; record it again (--upstream URL --record FILE)",
            request.method, target, tape.method, tape.target
        ));
    }
    if body != tape.body {
        return Some(
            "the body differs from the recorded one: the mapping changed since the cassette was recorded; record it again".into(),
        );
    }
    if let Some(header) = credential_header
        && !request
            .header(header)
            .is_some_and(|value| value.contains(TOKEN_CANARY))
    {
        return Some(format!(
            "the credential is not in `{header}`, where the recorded request carried it"
        ));
    }
    None
}

/// The query of the baseline call.
pub(super) fn baseline_query(script: &Script) -> String {
    match script {
        Script::V1 { .. } => "  ecp   probe  ".to_owned(),
        Script::Recorded(cassette) => cassette
            .baseline()
            .map(|tape| tape.query.clone())
            .unwrap_or_default(),
    }
}

/// Why nothing that needs a baseline is decided when the baseline call
/// succeeded with no item of a real upstream's answer: checks through an
/// upstream whose every answer comes out empty prove nothing about what
/// the mapping does with an item.
pub const NO_ITEM_KEPT: &str = "the mapping kept no item of the upstream's answer";

/// Why nothing that needs a baseline is decided.
pub(super) fn no_baseline(why: &str) -> String {
    format!("no successful baseline call: {why}")
}

impl Suite<'_> {
    /// One call through the scripted upstream that must succeed before any
    /// check that depends on it is decided.
    pub(super) async fn baseline(&mut self) -> Baseline {
        let (Some(upstream), Some(scripted)) = (self.upstream, self.scripted.clone()) else {
            return Baseline::NoUpstream;
        };
        if let Script::Recorded(cassette) = &scripted.script
            && cassette.baseline().is_none()
        {
            return Baseline::Failed(
                no_baseline(
                    "the real upstream answered no recorded call with a 2xx; record again with --query words your service finds",
                ),
                exercise::RECORD_AGAIN,
            );
        }
        let before = upstream.requests().len();
        let query = baseline_query(&scripted.script);
        let result = self.call(json!({ "query": &query })).await;
        let seen = upstream
            .wait_until(Duration::from_secs(2), |r, _| r.len() > before)
            .await;
        let v1 = matches!(scripted.script, Script::V1 { .. });
        let (hint, how) = if v1 {
            (
                " (a mapping of another API: check it against that API with --upstream URL, or offline with --cassette FILE)",
                exercise::ANOTHER_API,
            )
        } else {
            ("", exercise::RECORD_AGAIN)
        };
        let failed = |why: String| Baseline::Failed(no_baseline(&why), how);
        let failed_call = !matches!(&result, Ok(r) if r.is_error != Some(true));
        if failed_call && let Some(crash) = self.crash().await {
            return failed(format!(
                "the target's code crashed; its stderr says: {crash}"
            ));
        }
        match result {
            _ if !seen => failed(format!(
                "the target never called the scripted upstream{hint}"
            )),
            Err(error) => failed(format!("{error}{hint}")),
            Ok(result) if result.is_error == Some(true) => failed(format!(
                "the target never got an answer it could use from the scripted upstream{hint}"
            )),
            Ok(result) => {
                let kept = (result.structured_content.as_ref()).and_then(output::items_of);
                self.baseline_result = Some(result);
                if v1 {
                    // The render vectors judge what a mapping keeps of V1.
                    return Baseline::Succeeded;
                }
                let Some(kept) = kept else {
                    // No items to show: the output checks say why.
                    return Baseline::Succeeded;
                };
                self.mapped = Some(Mapped::of(&query, &kept, &self.secrets));
                if kept.is_empty() {
                    return Baseline::Failed(
                        format!(
                            "{NO_ITEM_KEPT} to {query:?}: it reads a field otherwise than the service writes it (a number read as a string drops every item), or the service found nothing for these words"
                        ),
                        how,
                    );
                }
                Baseline::Succeeded
            }
        }
    }

    /// The crash the target's stderr tells of, once a failed call's line
    /// had time to arrive ([`crate::check::crash`]).
    async fn crash(&self) -> Option<String> {
        if !self.session.is_process() {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        crate::check::crash::crash_line(&self.session.stderr(), &self.secrets)
    }

    pub(super) async fn upstream_checks(&mut self) {
        let (Some(upstream), Some(scripted)) = (self.upstream, self.scripted.clone()) else {
            return;
        };
        self.request_check(upstream, &scripted.script);
        self.learn_tagging(upstream).await;
        self.render_check(upstream, &scripted.script).await;
        self.faults(upstream).await;

        // No retry: one upstream request per call.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let requests = upstream.requests();
        let mut counts = std::collections::BTreeMap::new();
        for request in &requests {
            let Some((marker, number)) = request.tag.clone() else {
                continue;
            };
            if marker.starts_with("fault-") || marker == "ecpvector" {
                let alone = request.words().iter().any(|w| w == "alone");
                *counts.entry((marker, number, alone)).or_insert(0) += 1;
            }
        }
        let retried = counts
            .iter()
            .find(|(_, n)| **n > 1)
            .map(|((marker, number, _), n)| {
                let what = number.map_or(marker.clone(), |n| format!("{marker} {n}"));
                format!("{n} requests for the call `{what}`: the adapter retried")
            });
        let redirected = requests.iter().any(|r| r.path.starts_with(REDIRECTED))
            || upstream
                .elsewhere
                .as_deref()
                .is_some_and(|e| !e.requests().is_empty());
        self.record(
            Check::NoRetry,
            match retried {
                Some(reason) => Err(reason.into()),
                None if counts.is_empty() => Err("no fault call reached the upstream".into()),
                None => Ok(format!(
                    "{} calls, one request each{}{}",
                    counts.len(),
                    if redirected {
                        " (not counting a followed redirect)"
                    } else {
                        ""
                    },
                    match self.tagging {
                        Tagging::Words => "",
                        Tagging::Order => {
                            "; told apart by their order, one call at a time: the mapping does not keep ecp's marker words (`fault-timeout`) in its requests"
                        }
                    }
                )),
            },
        );

        self.cancellation(upstream).await;
        self.hostile_responses(upstream, &scripted).await;
        upstream.arm(None);
    }

    /// Whether the upstream sees the suite's marker words: a call whose
    /// query starts with one, as every fault's does. A mapping that
    /// rewrites the query (a query language's plain words) drops them,
    /// and then the calls are told apart by their order.
    async fn learn_tagging(&mut self, upstream: &Upstream) {
        upstream.arm(None);
        let before = upstream.requests().len();
        let _ = self
            .call(json!({"query": format!("{TAGGING_PROBE} {QUERY_CANARY}")}))
            .await;
        upstream
            .wait_until(Duration::from_secs(2), |r, _| r.len() > before)
            .await;
        let kept = (upstream.requests().iter().skip(before)).any(|r| r.is(TAGGING_PROBE));
        self.tagging = if kept { Tagging::Words } else { Tagging::Order };
    }

    fn request_check(&mut self, upstream: &Upstream, script: &Script) {
        let requests = upstream.requests();
        let outcome = match script {
            Script::V1 { .. } => match requests.iter().find(|r| r.query().contains("probe")) {
                None => Err("no probe request".into()),
                Some(request) => request_problem(request, self.takes_credential).map_or_else(
                    || {
                        Ok(if self.takes_credential {
                            "POST /v1/context/search, bearer, {query, limit: 5}".into()
                        } else {
                            "POST /v1/context/search, no credential, {query, limit: 5}".into()
                        })
                    },
                    Err,
                ),
            },
            Script::Recorded(cassette) => {
                let tape = cassette.baseline();
                let seen = tape.and_then(|tape| {
                    requests
                        .iter()
                        .find(|r| r.method == tape.method && as_recorded(r).0 == tape.target)
                        .or(requests.first())
                        .map(|r| (r, tape))
                });
                match seen {
                    None => Err("no probe request".into()),
                    Some((request, tape)) => recorded_request_problem(
                        request,
                        tape,
                        cassette.credential_header.as_deref(),
                    )
                    .map_or_else(
                        || {
                            Ok(format!(
                                "{} {} as recorded{}",
                                tape.method,
                                tape.target.split('?').next().unwrap_or(""),
                                cassette
                                    .credential_header
                                    .as_deref()
                                    .map(|h| format!(", the credential in `{h}`"))
                                    .unwrap_or_default()
                            ))
                        },
                        Err,
                    ),
                }
            }
        };
        self.record(Check::UpstreamRequest, outcome.map_err(Reason::from));
    }

    async fn render_check(&mut self, upstream: &Upstream, script: &Script) {
        let outcome = match script {
            Script::V1 { vectors } => {
                let mut mismatch = None;
                for (index, (_, expected)) in vectors.iter().enumerate() {
                    let tag = ("ecpvector".to_owned(), Some(index));
                    let arguments = json!({"query": format!("ecpvector {index}")});
                    let (arguments, result, _) =
                        tagged_call(self.session, upstream, self.tagging, tag, arguments).await;
                    match self.observe(&arguments, result) {
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
                mismatch.map_or_else(
                    || Ok(format!("{} vectors", vectors.len())),
                    |reason| Err(Reason::from(reason)),
                )
            }
            Script::Recorded(_) => {
                // The recorded answer replayed: the text must be what the
                // profile's rendering algorithm gives for the items the
                // target returned.
                match &self.baseline_result {
                    None => Err("no baseline result".into()),
                    Some(result) => rendered_as_the_profile_says(result),
                }
            }
        };
        self.record(Check::RenderVectors, outcome);
    }

    async fn faults(&mut self, upstream: &Upstream) {
        // Each gives the same stable error, before the MCP timeout. They run
        // at once (each upstream request on its own connection), so the two
        // that wait out the budget cost one budget, not two.
        // (With the calls told apart by their order, one at a time.)
        let session = self.session;
        let calls = (FAULTS.iter())
            .map(|(id, _)| {
                let tag = (id.id().to_owned(), None);
                (tag, json!({"query": format!("{id} {QUERY_CANARY}")}))
            })
            .collect();
        let mut answers = tagged_calls(session, upstream, self.tagging, calls).await;
        // A server that answers one call at a time cannot meet the timeout
        // for the second waiting fault; such a fault is tried again alone
        // (another query, so that no-retry still counts one request each),
        // and passing then is a warning.
        let mut alone = vec![false; answers.len()];
        for (index, (id, _)) in FAULTS.iter().enumerate() {
            if self.tagging == Tagging::Words
                && answers[index]
                    .1
                    .as_ref()
                    .is_err_and(|e| matches!(e, CallError::Timeout(_)))
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
        let requests = upstream.requests();
        for (((id, what), (arguments, result, elapsed)), alone) in
            FAULTS.iter().zip(answers).zip(alone)
        {
            let reached = requests.iter().any(|r| r.is(id.id()));
            let followed = (*id == Check::FaultRedirect)
                .then(|| followed_redirect(upstream))
                .flatten();
            let outcome = match self.observe(&arguments, result) {
                _ if !reached => Err(Reason::from(format!(
                    "the call never reached the upstream, so {what} was never served"
                ))),
                _ if followed.is_some() => Err(followed.unwrap_or_default().into()),
                Err(error) => Err(error.into()),
                Ok(result) if result.is_error != Some(true) => {
                    Err(format!("{what} gave a success").into())
                }
                Ok(result) => self
                    .stable_error(&result)
                    .map(|()| format!("stable error in {} ms", elapsed.as_millis())),
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
    }

    /// Whether an error result is the one stable error: no structured
    /// content, one text block, the same text as every other failure.
    fn stable_error(&mut self, result: &CallToolResult) -> Result<(), Reason> {
        if result.structured_content.is_some() {
            return Err("the error carries structuredContent".into());
        }
        let Some(text) = text_of(result) else {
            return Err("the error is not one text block".into());
        };
        match &self.stable {
            Some(first) if first != text => {
                Err(format!("the error text differs from the other failures': {text:?}").into())
            }
            _ => {
                self.stable.get_or_insert(text.to_owned());
                Ok(())
            }
        }
    }

    pub(super) async fn cancellation(&mut self, upstream: &Upstream) {
        let hung = |r: &SeenRequest| r.is("ecphang");
        let before = upstream.requests().iter().filter(|r| hung(r)).count();
        if self.tagging == Tagging::Order {
            upstream.arm(Some(("ecphang".to_owned(), None)));
        }
        let peer = self.session.client.peer().clone();
        let call = tokio::spawn(async move {
            let mut params = rmcp::model::CallToolRequestParams::new(crate::profile::TOOL_NAME);
            params.arguments = json!({"query": "ecphang"}).as_object().cloned();
            peer.call_tool(params).await
        });
        let arrived = upstream
            .wait_until(Duration::from_secs(5), |r, _| {
                r.iter().filter(|r| hung(r)).count() > before
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
            .wait_for_close_of("ecphang", Duration::from_secs(3))
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

    /// The hostile answers: every one gives a result that keeps the
    /// profile's promises, or the stable error, in time.
    async fn hostile_responses(&mut self, upstream: &Upstream, scripted: &Scripted) {
        if scripted.mutations == 0 {
            self.not_exercised(
                Check::HostileResponses,
                "--mutations 0: no hostile answer sent",
                exercise::MUTATIONS,
            );
            return;
        }
        if scripted.hostile_source().is_none() {
            // The hostile answers are JSON of the upstream's own shape; an
            // upstream that answers in something else has no such shape
            // (its malformed, oversized and invalid bodies were served).
            self.not_applicable(
                Check::HostileResponses,
                "the recorded answer is not JSON: the hostile answers are variants of a JSON answer",
            );
            return;
        }
        let session = self.session;
        let total = scripted.mutations;
        let mut found = 0;
        let mut failed = 0;
        let mut problem = None;
        for chunk in (0..total).collect::<Vec<_>>().chunks(4) {
            let calls = (chunk.iter())
                .map(|&index| {
                    let tag = ("ecpmutation".to_owned(), Some(index));
                    (tag, json!({"query": format!("ecpmutation {index}")}))
                })
                .collect();
            let answers = tagged_calls(session, upstream, self.tagging, calls).await;
            for (&index, (arguments, result, _)) in chunk.iter().zip(answers) {
                let result = self.observe(&arguments, result);
                let outcome = match &result {
                    Err(error) => Err(Reason::of(error)),
                    Ok(result) if result.is_error == Some(true) => {
                        failed += 1;
                        self.stable_error(result)
                    }
                    Ok(result) => {
                        found += 1;
                        let problems = success_problems(&self.embedded.output_validator, result);
                        match problems.into_iter().next() {
                            Some((check, p)) => Err(format!("{p} ({check})").into()),
                            None => Ok(()),
                        }
                    }
                };
                if let Err(error) = outcome {
                    problem.get_or_insert(format!(
                        "hostile answer {index} (--seed {}): {error}",
                        scripted.seed
                    ));
                }
            }
        }
        self.record(
            Check::HostileResponses,
            match problem {
                Some(problem) => Err(problem.into()),
                None if found == 0 => Err(format!(
                    "none of {total} hostile answers (--seed {}) gave a result: the mapping fails on every variant of the recorded shape",
                    scripted.seed
                ).into()),
                None => Ok(format!(
                    "{total} hostile answers (--seed {}): {found} results within the profile, {failed} the stable error",
                    scripted.seed
                )),
            },
        );
    }
}

/// Whether a result's text is what the profile's rendering algorithm gives
/// for the items it carries.
fn rendered_as_the_profile_says(result: &CallToolResult) -> Result<String, Reason> {
    let items = result
        .structured_content
        .as_ref()
        .and_then(output::items_of)
        .ok_or(Reason::from("the result has no items to render"))?;
    let provider_items: Vec<profile::ProviderItem> = items
        .iter()
        .map(|item| profile::ProviderItem {
            id: item.id.clone(),
            content: item.content.clone(),
            title: item.title.clone(),
            uri: item.uri.clone(),
            score: item.score,
            updated_at: item.updated_at.clone(),
        })
        .collect();
    let expected = profile::render(&provider_items).text;
    let text = text_of(result).map(crate::check::lines::text_as_json_parse_reads);
    match text.as_deref() {
        Some(text) if text == expected => Ok(format!(
            "the recorded answer gives {} items, rendered byte for byte",
            items.len()
        )),
        Some(_) => Err(Reason::from(
            "the text is not what the profile's rendering algorithm gives for its items",
        )),
        None => Err("not exactly one text block".into()),
    }
}
