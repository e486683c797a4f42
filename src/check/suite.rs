//! The checks: discovery, inputs, rendering, and, when the target speaks
//! the Generic HTTP Search V1 binding, every fault of a scripted upstream.
//! Each check has a stable ID and ends pass, fail or skip with a reason.

use std::{
    sync::{Arc, OnceLock},
    time::Duration,
};

use rmcp::model::{CallToolResult, Tool};
use serde::Serialize;
use serde_json::{Value, json};

use super::{
    schema,
    target::Session,
    upstream::{Reply, SeenRequest, Upstream},
};
use crate::{
    contracts::{OUTPUT_SCHEMA_JSON, RENDER_VECTORS_JSON, TEST_VECTORS_JSON},
    profile::{self, ContextItem, ecmascript::utf16_len},
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    /// Conforms, with something the provider should look at; does not
    /// change the exit status.
    Warn,
    Fail,
    Skip,
}

/// The outcome of one check.
#[derive(Debug, Clone, Serialize)]
pub struct CheckResult {
    pub id: &'static str,
    pub title: &'static str,
    pub status: Status,
    pub reason: String,
}

/// The canaries: none may appear in any result or on stderr.
pub const QUERY_CANARY: &str = "ecpQueryCanary7f3a";
pub const TOKEN_CANARY: &str = "ecp-token-canary-51c9e2";
pub const BODY_CANARY: &str = "ecpBodyCanary0d4b";

const MIB: usize = 1024 * 1024;

/// Faults of the upstream, by the first word of the query.
pub const FAULTS: &[(&str, &str)] = &[
    ("fault-timeout", "an upstream that answers after the budget"),
    ("fault-redirect", "a 302 redirect"),
    ("fault-rate-limit", "a 429 with a body"),
    ("fault-server-error", "a 500 with a body"),
    ("fault-malformed", "malformed JSON"),
    ("fault-oversized", "a body over 1 MiB"),
    ("fault-invalid-utf8", "a body that is not UTF-8"),
    ("fault-slow-body", "a body that trickles past the budget"),
];

fn reply_for(request: &SeenRequest, vectors: &[(String, String)]) -> Reply {
    let query = request.query();
    let first = query.split(' ').next().unwrap_or("");
    let canary_body = format!(r#"{{"error":"{BODY_CANARY}"}}"#);
    match first {
        "fault-timeout" => Reply::After(Duration::from_secs(600), Box::new(Reply::json(r#"{"items":[]}"#))),
        "fault-redirect" => Reply::Redirect,
        "fault-rate-limit" => Reply::status(429, &canary_body),
        "fault-server-error" => Reply::status(500, &canary_body),
        "fault-malformed" => Reply::json(format!(r#"{{"items":[{{"id":"{BODY_CANARY}""#)),
        "fault-oversized" => Reply::ChunkedJson { len: MIB + 1 },
        "fault-invalid-utf8" => Reply::Body {
            status: 200,
            body: [br#"{"items":[{"id":"a","content":""#.as_slice(), BODY_CANARY.as_bytes(), b"\xff\"}]}"].concat(),
        },
        "fault-slow-body" => Reply::Trickle {
            body: br#"{"items":[]}"#.to_vec(),
            every: Duration::from_secs(2),
        },
        "hang" => Reply::Hang,
        "vector" => {
            let index: usize = query.split(' ').nth(1).and_then(|n| n.parse().ok()).unwrap_or(usize::MAX);
            match vectors.get(index) {
                Some((body, _)) => Reply::json(body.clone()),
                None => Reply::status(404, "{}"),
            }
        }
        "concurrent" => Reply::After(
            Duration::from_millis(100),
            Box::new(Reply::json(json!({"items": [{"id": query, "content": "concurrent"}]}).to_string())),
        ),
        _ => Reply::json(
            json!({"items": [{"id": "ecp-check", "content": "Reference data with <angle> brackets & \"quotes\".", "score": 0.5}]})
                .to_string(),
        ),
    }
}

/// Render vectors as (upstream body, expected text through the binding).
pub fn render_vectors() -> Vec<(String, String)> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Vector {
        provider_items: Box<serde_json::value::RawValue>,
        text: String,
        #[serde(default)]
        http_text: Option<String>,
    }
    let vectors: Vec<Vector> = serde_json::from_str(RENDER_VECTORS_JSON).unwrap_or_default();
    vectors
        .into_iter()
        .map(|v| {
            (
                format!(r#"{{"items":{}}}"#, v.provider_items.get()),
                v.http_text.unwrap_or(v.text),
            )
        })
        .collect()
}

/// Starts the scripted upstream for a run.
pub async fn start_upstream() -> Result<Upstream, String> {
    let vectors = Arc::new(render_vectors());
    Upstream::try_start(move |request| reply_for(request, &vectors))
        .await
        .map_err(|e| format!("cannot start the scripted upstream: {e}"))
}

/// ecp's own output schema, for `structured-content`.
fn output_validator() -> Option<&'static jsonschema::Validator> {
    static OUTPUT: OnceLock<Option<jsonschema::Validator>> = OnceLock::new();
    OUTPUT
        .get_or_init(|| {
            serde_json::from_str(OUTPUT_SCHEMA_JSON)
                .ok()
                .and_then(|schema| jsonschema::draft202012::new(&schema).ok())
        })
        .as_ref()
}

fn text_of(result: &CallToolResult) -> Option<&str> {
    match result.content.as_slice() {
        [block] => block.as_text().map(|t| t.text.as_str()),
        _ => None,
    }
}

/// Rebuilds the items of a structured envelope, to serialize them again.
fn items_of(structured: &Value) -> Option<Vec<ContextItem>> {
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
fn success_problems(result: &CallToolResult) -> Vec<(&'static str, String)> {
    let mut problems = Vec::new();
    if result.is_error == Some(true) {
        problems.push(("valid-inputs", "isError is true".to_owned()));
        return problems;
    }
    let Some(structured) = &result.structured_content else {
        problems.push(("valid-inputs", "no structuredContent".to_owned()));
        return problems;
    };
    if let Some(validator) = output_validator()
        && let Some(error) = validator.iter_errors(structured).next()
    {
        problems.push((
            "structured-content",
            format!("does not validate: {error} at {}", error.instance_path()),
        ));
    }
    let Some(text) = text_of(result) else {
        problems.push((
            "text-serialization",
            "not exactly one text block".to_owned(),
        ));
        return problems;
    };
    if text.contains('<') || text.contains('>') {
        problems.push(("text-escaping", "the text holds a raw < or >".to_owned()));
    }
    let units = utf16_len(text);
    if units > profile::MAX_TEXT_UTF16 {
        problems.push((
            "text-bound",
            format!("the text is {units} UTF-16 units (at most 4000)"),
        ));
    }
    match serde_json::from_str::<Value>(text) {
        Err(_) => problems.push(("text-serialization", "the text is not JSON".to_owned())),
        Ok(parsed) if !same_as_json_parse(&parsed, structured) => problems.push((
            "text-serialization",
            "the text does not parse to structuredContent".to_owned(),
        )),
        Ok(_) => {
            if items_of(structured).is_some_and(|items| profile::serialize(&items) != text) {
                problems.push((
                    "text-serialization",
                    "the text is not the profile serialization of structuredContent (key order, escaping or number format)".to_owned(),
                ));
            }
        }
    }
    problems
}

/// Sees each result as soon as it is decided (progress on a terminal).
pub type Progress<'a> = Option<Box<dyn Fn(&CheckResult) + 'a>>;

/// The run's state: the session, the upstream, and the results so far.
pub struct Suite<'a> {
    session: &'a Session,
    upstream: Option<&'a Upstream>,
    include_tools: Option<Vec<String>>,
    results: Vec<CheckResult>,
    /// Every text any call returned, for the redaction check.
    texts: Vec<String>,
    /// Broken output promises of any success, by check ID.
    output_problems: Vec<(&'static str, String)>,
    /// How many successes were inspected.
    successes: usize,
    progress: Progress<'a>,
}

impl<'a> Suite<'a> {
    pub fn new(
        session: &'a Session,
        upstream: Option<&'a Upstream>,
        include_tools: Option<Vec<String>>,
        progress: Progress<'a>,
    ) -> Suite<'a> {
        Suite {
            session,
            upstream,
            include_tools,
            results: Vec::new(),
            texts: Vec::new(),
            output_problems: Vec::new(),
            successes: 0,
            progress,
        }
    }

    fn record(&mut self, id: &'static str, title: &'static str, outcome: Result<String, String>) {
        let (status, reason) = match outcome {
            Ok(reason) => (Status::Pass, reason),
            Err(reason) => (Status::Fail, reason),
        };
        self.push(CheckResult {
            id,
            title,
            status,
            reason,
        });
    }

    fn warn(&mut self, id: &'static str, title: &'static str, reason: String) {
        self.push(CheckResult {
            id,
            title,
            status: Status::Warn,
            reason,
        });
    }

    fn skip(&mut self, id: &'static str, title: &'static str, reason: &str) {
        self.push(CheckResult {
            id,
            title,
            status: Status::Skip,
            reason: reason.to_owned(),
        });
    }

    fn push(&mut self, result: CheckResult) {
        if let Some(progress) = &self.progress {
            progress(&result);
        }
        self.results.push(result);
    }

    async fn call(&mut self, arguments: Value) -> Result<CallToolResult, String> {
        let result = self.session.call(arguments.clone()).await;
        self.observe(&arguments, result)
    }

    /// Records what a call returned: its texts for the redaction check, and
    /// the output promises of a success.
    fn observe(
        &mut self,
        arguments: &Value,
        result: Result<CallToolResult, String>,
    ) -> Result<CallToolResult, String> {
        let arguments_label = match arguments.get("query").and_then(Value::as_str) {
            Some(query) if query.chars().count() <= 40 => format!("query {query:?}"),
            Some(query) => format!("a query of {} code points", query.chars().count()),
            None => "a call".to_owned(),
        };
        let result = result?;
        for block in &result.content {
            if let Some(text) = block.as_text() {
                self.texts.push(text.text.clone());
            }
        }
        if let Some(structured) = &result.structured_content {
            self.texts.push(structured.to_string());
        }
        if result.is_error != Some(true) {
            self.successes += 1;
            let problems = success_problems(&result);
            let context = arguments_label;
            self.output_problems.extend(
                problems
                    .into_iter()
                    .filter(|(id, _)| *id != "valid-inputs")
                    .map(|(id, p)| (id, format!("{context}: {p}"))),
            );
        }
        Ok(result)
    }

    /// Records the output promises over every success seen.
    fn output_checks(&mut self) {
        for (id, title) in [
            (
                "structured-content",
                "structuredContent validates against the output schema",
            ),
            (
                "text-serialization",
                "the text is the exact profile serialization",
            ),
            ("text-escaping", "the text escapes < and >"),
            ("text-bound", "the text is at most 4000 UTF-16 units"),
        ] {
            let first = self
                .output_problems
                .iter()
                .find(|(check, _)| *check == id)
                .map(|(_, p)| p.clone());
            let successes = self.successes;
            self.record(
                id,
                title,
                first.map_or_else(|| Ok(format!("{successes} results")), Err),
            );
        }
    }

    /// Runs every check and returns the results in order.
    pub async fn run(mut self) -> Vec<CheckResult> {
        let tool = self.discovery().await;
        if tool.is_none() {
            for (id, title) in [
                ("valid-inputs", "every valid input vector succeeds"),
                ("invalid-inputs", "every invalid input vector is refused"),
            ] {
                self.skip(id, title, "no context_search tool to call");
            }
            return self.results;
        }
        self.inputs().await;
        let binding = self.binding().await;
        match binding {
            Ok(()) => self.upstream_checks().await,
            Err(reason) => {
                for (id, title) in UPSTREAM_CHECKS {
                    self.skip(id, title, &reason);
                }
            }
        }
        self.concurrency().await;
        self.output_checks();
        self.redaction();
        self.results
    }

    async fn discovery(&mut self) -> Option<Tool> {
        let tools = match self.session.client.list_all_tools().await {
            Ok(tools) => tools,
            Err(error) => {
                self.record(
                    "tool-offered",
                    "exactly context_search is offered",
                    Err(format!("tools/list failed: {error}")),
                );
                return None;
            }
        };
        let offered: Vec<&Tool> = tools
            .iter()
            .filter(|t| {
                self.include_tools
                    .as_ref()
                    .is_none_or(|include| include.iter().any(|i| i == t.name.as_ref()))
            })
            .collect();
        let names: Vec<&str> = offered.iter().map(|t| t.name.as_ref()).collect();
        let via = if self.include_tools.is_some() {
            " through includeTools"
        } else {
            ""
        };
        self.tool_offered(&names, via);
        let tool = tools.iter().find(|t| t.name == "context_search")?.clone();
        let input = Value::Object((*tool.input_schema).clone());
        self.record(
            "input-schema",
            "the input schema accepts exactly the profile's arguments",
            schema::judge(&input, schema::Which::Input),
        );
        let output = tool
            .output_schema
            .as_ref()
            .map(|s| Value::Object((**s).clone()));
        self.record(
            "output-schema",
            "the output schema accepts exactly the profile's results",
            match output {
                Some(output) => schema::judge(&output, schema::Which::Output),
                None => Err("no outputSchema is declared".into()),
            },
        );
        self.annotations(&tool);
        Some(tool)
    }

    /// Exactly `context_search` after `includeTools`; a bare command may
    /// offer more (a warning), as long as a manifest includes only it.
    fn tool_offered(&mut self, names: &[&str], via: &str) {
        const ID: &str = "tool-offered";
        const TITLE: &str = "exactly context_search is offered";
        if !names.contains(&"context_search") {
            self.record(
                ID,
                TITLE,
                Err(format!("no context_search{via}; offered: {names:?}")),
            );
        } else if names == ["context_search"] {
            self.record(ID, TITLE, Ok(format!("context_search, alone{via}")));
        } else if self.include_tools.is_some() {
            self.record(ID, TITLE, Err(format!("offered{via}: {names:?}")));
        } else {
            let others: Vec<&&str> = names.iter().filter(|n| **n != "context_search").collect();
            self.warn(
                ID,
                TITLE,
                format!(
                    "the server also offers {others:?}; its manifest must include only context_search (\"includeTools\": [\"context_search\"])"
                ),
            );
        }
    }

    /// `destructiveHint: false` is required; other hints are the provider's
    /// to add when they are accurate.
    fn annotations(&mut self, tool: &Tool) {
        const ID: &str = "annotations";
        const TITLE: &str = "annotations say destructiveHint: false";
        let annotations = serde_json::to_value(&tool.annotations).unwrap_or(Value::Null);
        match annotations.get("destructiveHint") {
            Some(Value::Bool(false)) => {}
            Some(other) => {
                return self.record(
                    ID,
                    TITLE,
                    Err(format!("destructiveHint is {other}, not false")),
                );
            }
            None => return self.record(ID, TITLE, Err("destructiveHint: false is missing".into())),
        }
        let extra: Vec<&str> = annotations
            .as_object()
            .map(|a| {
                a.keys()
                    .map(String::as_str)
                    .filter(|k| *k != "destructiveHint" && *k != "title")
                    .collect()
            })
            .unwrap_or_default();
        if extra.is_empty() {
            self.record(ID, TITLE, Ok("destructiveHint: false".into()));
        } else {
            let shown: Vec<String> = extra
                .iter()
                .map(|k| format!("{k}: {}", annotations[*k]))
                .collect();
            self.warn(
                ID,
                TITLE,
                format!(
                    "also declares {}; make sure it is accurate for this deployment (search may bill, log or change ranking state)",
                    shown.join(", ")
                ),
            );
        }
    }

    async fn inputs(&mut self) {
        let vectors: Value = serde_json::from_str(TEST_VECTORS_JSON).unwrap_or_default();
        let cases = |group: &str| -> Vec<(String, Value)> {
            vectors[group]
                .as_array()
                .map(|cases| {
                    cases
                        .iter()
                        .filter(|c| c["value"].is_object())
                        .map(|c| {
                            (
                                c["name"].as_str().unwrap_or("").to_owned(),
                                c["value"].clone(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default()
        };

        // Valid inputs: each succeeds and keeps every output promise.
        let mut problems: Vec<(&'static str, String)> = Vec::new();
        let valid = cases("validInputs");
        for (name, arguments) in &valid {
            match self.call(arguments.clone()).await {
                Err(error) => problems.push(("valid-inputs", format!("{name}: {error}"))),
                Ok(result) => problems.extend(
                    success_problems(&result)
                        .into_iter()
                        .filter(|(id, _)| *id == "valid-inputs")
                        .map(|(id, p)| (id, format!("{name}: {p}"))),
                ),
            }
        }
        let count = valid.len();
        let first = problems
            .iter()
            .find(|(check, _)| *check == "valid-inputs")
            .map(|(_, p)| p.clone());
        self.record(
            "valid-inputs",
            "every valid input vector succeeds",
            first.map_or_else(|| Ok(format!("{count} calls")), Err),
        );

        // Invalid inputs: each refused, and no message repeats the query.
        let mut failure = None;
        let invalid = cases("invalidInputs");
        let mut echoed = None;
        for (name, arguments) in &invalid {
            match self.call(arguments.clone()).await {
                Ok(result)
                    if result.is_error == Some(true) && result.structured_content.is_none() =>
                {
                    // A query long enough to recognise must not come back.
                    let query = arguments
                        .get("query")
                        .and_then(Value::as_str)
                        .map(str::trim)
                        .unwrap_or("");
                    if query.chars().count() >= 8
                        && result
                            .content
                            .iter()
                            .any(|b| b.as_text().is_some_and(|t| t.text.contains(query)))
                    {
                        echoed.get_or_insert(format!("the error for `{name}` repeats the query"));
                    }
                }
                Ok(_) => {
                    failure.get_or_insert(format!("{name}: accepted"));
                }
                Err(error) => {
                    failure.get_or_insert(format!("{name}: {error}"));
                }
            }
        }
        self.record(
            "invalid-inputs",
            "every invalid input vector is refused with isError",
            failure.map_or_else(|| Ok(format!("{} refused", invalid.len())), Err),
        );
        let unknown = self
            .call(json!({"query": "deployment policy", "tenant": "acme"}))
            .await;
        self.record(
            "unknown-argument",
            "an unknown argument is refused",
            match unknown {
                Ok(result) if result.is_error == Some(true) => Ok("refused".into()),
                Ok(_) => Err("a call with an extra `tenant` argument succeeded".into()),
                Err(error) => Err(error),
            },
        );
        let echo_cases = [
            json!({"query": QUERY_CANARY, "corpus": "all"}),
            json!({"query": format!("{QUERY_CANARY} {}", "x".repeat(2000))}),
            json!({"query": [QUERY_CANARY]}),
        ];
        for arguments in echo_cases {
            if let Ok(result) = self.call(arguments).await
                && result
                    .content
                    .iter()
                    .any(|b| b.as_text().is_some_and(|t| t.text.contains(QUERY_CANARY)))
            {
                echoed.get_or_insert("an input error repeats the query".to_owned());
            }
        }
        self.record(
            "input-errors-redacted",
            "input errors never echo the query",
            echoed.map_or_else(|| Ok("no echo".into()), Err),
        );
    }

    /// Whether the target talks to the scripted upstream.
    async fn binding(&mut self) -> Result<(), String> {
        let Some(upstream) = self.upstream else {
            return Err(
                "the target does not take the V1 binding's endpoint and credential variables"
                    .into(),
            );
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

    async fn upstream_checks(&mut self) {
        let Some(upstream) = self.upstream else {
            return;
        };
        // The probe's request.
        let probe = upstream
            .requests()
            .into_iter()
            .find(|r| r.query().contains("probe"));
        self.record(
            "upstream-request",
            "the upstream request follows the binding",
            match probe {
                None => Err("no probe request".into()),
                Some(request) => request_problem(&request).map_or_else(
                    || Ok("POST /v1/context/search, bearer, {query, limit: 5}".into()),
                    Err,
                ),
            },
        );

        // Render vectors, byte for byte.
        let vectors = render_vectors();
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
            "render-vectors",
            "every render vector is reproduced byte for byte",
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
            let title = match *id {
                "fault-timeout" => "an upstream past the budget gives the stable error in time",
                "fault-redirect" => "a redirect gives the stable error",
                "fault-rate-limit" => "a 429 gives the stable error",
                "fault-server-error" => "a 500 gives the stable error",
                "fault-malformed" => "malformed JSON gives the stable error",
                "fault-oversized" => "a body over 1 MiB gives the stable error",
                "fault-invalid-utf8" => "invalid UTF-8 gives the stable error",
                _ => "a slow body gives the stable error in time",
            };
            match outcome {
                Ok(reason) if alone => self.warn(
                    id,
                    title,
                    format!(
                        "{reason} when called alone; beside the other faults it took longer than the MCP timeout: the server answers one call at a time, and Qwen may send calls at once"
                    ),
                ),
                outcome => self.record(id, title, outcome),
            }
        }

        // No retry: one upstream request per call.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let requests = upstream.requests();
        let retried: Vec<String> = FAULTS
            .iter()
            .map(|(id, _)| *id)
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
            "no-retry",
            "one call makes at most one upstream request",
            retried.first().cloned().map_or_else(
                || Ok(format!("{} calls, one request each", requests.len())),
                Err,
            ),
        );

        self.cancellation(upstream).await;
    }

    async fn cancellation(&mut self, upstream: &Upstream) {
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
                "cancellation",
                "a cancelled call closes the upstream connection",
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
            "cancellation",
            "a cancelled call closes the upstream connection",
            if closed {
                Ok(format!("closed {after} ms after notifications/cancelled"))
            } else {
                Err("the upstream connection stayed open 3 s after notifications/cancelled".into())
            },
        );
    }

    async fn concurrency(&mut self) {
        const CALLS: usize = 20;
        let calls: Vec<_> = (0..CALLS)
            .map(|n| {
                let peer = self.session.client.peer().clone();
                let timeout = self.session.call_timeout;
                tokio::spawn(async move {
                    let mut params = rmcp::model::CallToolRequestParams::new("context_search");
                    params.arguments = json!({"query": format!("concurrent {n}")})
                        .as_object()
                        .cloned();
                    tokio::time::timeout(timeout, peer.call_tool(params)).await
                })
            })
            .collect();
        let mut answered = 0;
        for call in calls {
            if let Ok(Ok(Ok(_))) = call.await {
                answered += 1;
            }
        }
        self.record(
            "concurrency",
            "concurrent calls are all answered",
            if answered == CALLS {
                Ok(format!("{CALLS} of {CALLS}"))
            } else {
                Err(format!("{answered} of {CALLS} answered"))
            },
        );
    }

    fn redaction(&mut self) {
        let stderr = self.session.stderr();
        let mut secrets = vec![
            QUERY_CANARY.to_owned(),
            TOKEN_CANARY.to_owned(),
            BODY_CANARY.to_owned(),
        ];
        if let Some(upstream) = self.upstream {
            secrets.push(upstream.base_url.trim_start_matches("http://").to_owned());
        }
        let leak = secrets.iter().find_map(|secret| {
            if self.texts.iter().any(|t| t.contains(secret.as_str())) {
                Some(format!("a result holds {}", describe(secret)))
            } else if stderr.contains(secret.as_str()) {
                Some(format!("stderr holds {}", describe(secret)))
            } else {
                None
            }
        });
        let checked = if self.session.stderr().is_empty() && self.upstream.is_none() {
            "results"
        } else {
            "results and stderr"
        };
        self.record(
            "redaction",
            "no query, token, endpoint or upstream body in any result or stderr",
            leak.map_or_else(|| Ok(format!("{} clean", checked)), Err),
        );
    }
}

fn describe(secret: &str) -> &'static str {
    match secret {
        QUERY_CANARY => "the query",
        TOKEN_CANARY => "the token",
        BODY_CANARY => "the upstream body",
        _ => "the endpoint",
    }
}

/// What is wrong with the probe request, if anything.
fn request_problem(request: &SeenRequest) -> Option<String> {
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

/// The checks that need the V1 binding, skipped together without it.
pub const UPSTREAM_CHECKS: &[(&str, &str)] = &[
    (
        "upstream-request",
        "the upstream request follows the binding",
    ),
    (
        "render-vectors",
        "every render vector is reproduced byte for byte",
    ),
    (
        "fault-timeout",
        "an upstream past the budget gives the stable error in time",
    ),
    ("fault-redirect", "a redirect gives the stable error"),
    ("fault-rate-limit", "a 429 gives the stable error"),
    ("fault-server-error", "a 500 gives the stable error"),
    ("fault-malformed", "malformed JSON gives the stable error"),
    (
        "fault-oversized",
        "a body over 1 MiB gives the stable error",
    ),
    ("fault-invalid-utf8", "invalid UTF-8 gives the stable error"),
    (
        "fault-slow-body",
        "a slow body gives the stable error in time",
    ),
    ("no-retry", "one call makes at most one upstream request"),
    (
        "cancellation",
        "a cancelled call closes the upstream connection",
    ),
];
