//! The promises every result keeps (validated structured content, the exact
//! text, escaping, the bound), concurrency, and redaction over everything
//! seen.

use super::*;

pub(super) fn text_of(result: &CallToolResult) -> Option<&str> {
    match result.content.as_slice() {
        [block] => block.as_text().map(|t| t.text.as_str()),
        _ => None,
    }
}

/// Rebuilds the items of a structured envelope, to serialize them again.
pub(super) fn items_of(structured: &Value) -> Option<Vec<ContextItem>> {
    let items = structured
        .pointer("/untrusted_external_context/items")?
        .as_array()?;
    items
        .iter()
        .map(|item| {
            let string = |key: &str| item.get(key).and_then(Value::as_str).map(str::to_owned);
            Some(ContextItem {
                id: string("id")?,
                content: string("content")?,
                title: string("title"),
                uri: string("uri"),
                score: item.get("score").and_then(Value::as_f64),
                updated_at: string("updatedAt"),
            })
        })
        .collect()
}

/// Whether two JSON values are the same to `JSON.parse`: every number an
/// IEEE double (`1`, `1.0` and `1e0` are one value, and `-0` equals `0`),
/// objects compared by their members, arrays by position.
pub fn same_as_json_parse(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_as_json_parse(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(key, x)| y.get(key).is_some_and(|y| same_as_json_parse(x, y)))
        }
        (x, y) => x == y,
    }
}

/// Everything wrong with one success result, per check ID.
pub(crate) fn success_problems(
    output: &jsonschema::Validator,
    result: &CallToolResult,
) -> Vec<(Check, String)> {
    let mut problems = Vec::new();
    if result.is_error == Some(true) {
        problems.push((Check::ValidInputs, "isError is true".to_owned()));
        return problems;
    }
    let Some(structured) = &result.structured_content else {
        problems.push((Check::ValidInputs, "no structuredContent".to_owned()));
        return problems;
    };
    if let Some(error) = output.iter_errors(structured).next() {
        problems.push((
            Check::StructuredContent,
            format!("does not validate: {error} at {}", error.instance_path()),
        ));
    }
    let Some(text) = text_of(result) else {
        problems.push((
            Check::TextSerialization,
            "not exactly one text block".to_owned(),
        ));
        return problems;
    };
    if text.contains('<') || text.contains('>') {
        problems.push((
            Check::TextEscaping,
            "the text holds a raw < or >".to_owned(),
        ));
    }
    let units = utf16_len(text);
    if units > profile::MAX_TEXT_UTF16 {
        problems.push((
            Check::TextBound,
            format!("the text is {units} UTF-16 units (at most 4000)"),
        ));
    }
    // A lone surrogate escape in the text reads as U+FFFD, as in
    // structuredContent once the session read the line ([`lines`]).
    let read = crate::check::lines::text_as_json_parse_reads(text);
    match crate::runtime::http::parse_json_like_javascript(text) {
        None => problems.push((Check::TextSerialization, "the text is not JSON".to_owned())),
        Some(parsed) if !same_as_json_parse(&parsed, structured) => problems.push((
            Check::TextSerialization,
            "the text does not parse to structuredContent".to_owned(),
        )),
        Some(_) => {
            if items_of(structured).is_some_and(|items| profile::serialize(&items) != read) {
                problems.push((Check::TextSerialization,
                    "the text is not the profile serialization of structuredContent (key order, escaping or number format)".to_owned(),
                ));
            }
        }
    }
    problems
}

pub(super) fn describe(secret: &str) -> &'static str {
    match secret {
        QUERY_CANARY => "the query",
        TOKEN_CANARY => "the token",
        BODY_CANARY => "the upstream body",
        _ => "the endpoint",
    }
}

impl Suite<'_> {
    /// Records the output promises over every success seen.
    pub(super) fn output_checks(&mut self, how: &'static str) {
        for check in [
            Check::StructuredContent,
            Check::TextSerialization,
            Check::TextEscaping,
            Check::TextBound,
        ] {
            let first = self
                .output_problems
                .iter()
                .find(|(problem, _)| *problem == check)
                .map(|(_, p)| p.clone());
            let successes = self.successes;
            if successes == 0 && first.is_none() {
                self.not_exercised(check, "no call succeeded: no result to judge", how);
                continue;
            }
            self.record(
                check,
                first.map_or_else(
                    || Ok(format!("{successes} results")),
                    |reason| Err(reason.into()),
                ),
            );
        }
    }

    pub(super) async fn concurrency(&mut self) {
        const CALLS: usize = 20;
        // Told apart by their order, all twenty are the one armed call.
        let armed = (self.upstream).filter(|_| self.tagging == super::Tagging::Order);
        if let Some(upstream) = armed {
            upstream.arm(Some(("ecpconcurrent".to_owned(), None)));
        }
        let calls: Vec<_> = (0..CALLS)
            .map(|n| {
                let peer = self.session.client.peer().clone();
                let timeout = self.session.call_timeout;
                tokio::spawn(async move {
                    let mut params =
                        rmcp::model::CallToolRequestParams::new(crate::profile::TOOL_NAME);
                    params.arguments = json!({"query": format!("ecpconcurrent {n}")})
                        .as_object()
                        .cloned();
                    tokio::time::timeout(timeout, peer.call_tool(params)).await
                })
            })
            .collect();
        let mut answered = 0;
        let mut succeeded = 0;
        for call in calls {
            if let Ok(Ok(Ok(result))) = call.await {
                answered += 1;
                succeeded += usize::from(result.is_error != Some(true));
            }
        }
        if let Some(upstream) = armed {
            upstream.arm(None);
        }
        // With an upstream of ecp's, the baseline succeeded: so must these.
        let want_success = self.upstream.is_some();
        self.record(
            Check::Concurrency,
            if answered < CALLS {
                Err(format!("{answered} of {CALLS} answered").into())
            } else if want_success && succeeded < CALLS {
                Err(format!("{succeeded} of {CALLS} succeeded").into())
            } else {
                Ok(format!("{CALLS} of {CALLS}"))
            },
        );
    }

    /// No canary in any result or stderr; a canary that never reached the
    /// target proves nothing, so the check names those that did, and is
    /// not exercised while one did not (`how` says what would send it).
    pub(super) fn redaction(&mut self, how: &'static str) {
        let mut secrets = vec![
            QUERY_CANARY.to_owned(),
            TOKEN_CANARY.to_owned(),
            BODY_CANARY.to_owned(),
        ];
        if let Some(upstream) = self.upstream {
            secrets.push(upstream.base_url.trim_start_matches("http://").to_owned());
        }
        let leak = secrets.iter().find_map(|secret| self.leak_of(secret));
        let probe_wrote = self
            .probe_stderr
            .as_ref()
            .is_some_and(|(stderr, _)| !stderr.is_empty());
        let checked = if self.session.stderr().is_empty() && !probe_wrote && self.upstream.is_none()
        {
            "results"
        } else {
            "results and stderr"
        };
        // A second process whose stderr stayed open past its end (a child
        // it left behind) was not read whole: say so.
        let partly = match &self.probe_stderr {
            Some((_, false)) => {
                " (the protocol group's second process's stderr not read to its end: a process it started held it open)"
            }
            _ => "",
        };
        if let Some(leak) = leak {
            self.record(Check::Redaction, Err(leak.into()));
            return;
        }
        let (reached, missed) = self.canaries_reached();
        let clean = format!("{checked} clean of {}", words(&reached));
        if missed.is_empty() {
            let each = if reached.len() == 1 {
                ""
            } else {
                ", each of which"
            };
            let reason = format!("{clean}{each} reached the target{partly}");
            self.record(Check::Redaction, Ok(reason));
        } else {
            let why = format!(
                "{clean}, which reached the target; {} never did, so nothing shows {} would be kept out{partly}",
                words(&missed),
                if missed.len() == 1 { "it" } else { "they" }
            );
            self.not_exercised(Check::Redaction, &why, how);
        }
    }

    /// Where `secret` shows, if anywhere.
    fn leak_of(&self, secret: &str) -> Option<String> {
        if self.texts.iter().any(|t| t.contains(secret)) {
            Some(format!("a result holds {}", describe(secret)))
        } else if self.session.stderr_holds(secret) {
            Some(format!("stderr holds {}", describe(secret)))
        } else if self
            .probe_stderr
            .as_ref()
            .is_some_and(|(stderr, _)| stderr.holds(secret))
        {
            Some(format!(
                "stderr of the protocol group's second process holds {}",
                describe(secret)
            ))
        } else {
            None
        }
    }

    /// The canaries that reached the target, and those that never did, by
    /// what ecp saw: the query in every call; the token in a request to
    /// ecp's upstream (in any form the secret rule reads: a header, the
    /// URL, the body, base64 of a Basic pair); the endpoint when the
    /// target called it; the upstream body when a fault that carries it
    /// was served. A server that keeps its own endpoint and credential (in
    /// a file of its own) never gets ecp's.
    fn canaries_reached(&self) -> (Vec<&'static str>, Vec<&'static str>) {
        let requests = self.upstream.map(Upstream::requests).unwrap_or_default();
        let token = crate::check::secret::Secrets::new([TOKEN_CANARY]);
        let carries_token = |r: &SeenRequest| {
            token.holds(&r.path)
                || token.holds(&r.body)
                || r.headers.iter().any(|(_, value)| token.holds(value))
        };
        let body_faults = [
            Check::FaultRateLimit,
            Check::FaultServerError,
            Check::FaultMalformed,
            Check::FaultInvalidUtf8,
        ];
        let served_body = |r: &SeenRequest| body_faults.iter().any(|c| r.is(c.id()));
        let canaries = [
            (describe(QUERY_CANARY), true),
            (describe(TOKEN_CANARY), requests.iter().any(carries_token)),
            ("the endpoint", !requests.is_empty()),
            (describe(BODY_CANARY), requests.iter().any(served_body)),
        ];
        // A target that takes no credential variable is given no token.
        let applies = |c: &&(&str, bool)| self.takes_credential || c.0 != describe(TOKEN_CANARY);
        let canaries: Vec<_> = canaries.iter().filter(applies).collect();
        let reached = canaries.iter().filter(|(_, r)| *r).map(|(c, _)| *c);
        let missed = canaries.iter().filter(|(_, r)| !*r).map(|(c, _)| *c);
        (reached.collect(), missed.collect())
    }
}

/// "a", "a and b", "a, b and c".
fn words(items: &[&str]) -> String {
    match items {
        [] => "nothing".to_owned(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}
