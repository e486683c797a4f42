//! The rules of MCP revision 2026-07-28 a server keeps (SEP-2575's
//! stateless requests and `server/discover`, SEP-2549's cache hints,
//! SEP-2243's standard headers), asked through a second channel
//! ([`crate::check::probe`]) with raw requests. A target that does not
//! speak 2026-07-28 (its `server/discover` is an unknown method, or it does
//! not list the revision) is judged by the revision its `initialize`
//! negotiated: these checks are not applicable, saying which.

use super::*;
use crate::check::probe::{Answer, Probe, ProbeError, ProbeTarget};

/// The revision these checks hold a target to.
pub const STATELESS: &str = "2026-07-28";
/// A revision no server supports.
const UNKNOWN_REVISION: &str = "2099-01-01";
/// JSON-RPC error codes of the revision.
const INVALID_PARAMS: i64 = -32602;
const HEADER_MISMATCH: i64 = -32020;
const UNSUPPORTED_VERSION: i64 = -32022;

fn meta(version: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "ecp check", "version": env!("CARGO_PKG_VERSION")},
    })
}

fn request(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The standard headers of a request, as a conforming client sends them.
fn headers(version: &str, method: &str, name: Option<&str>) -> Vec<(&'static str, String)> {
    let mut headers = vec![
        ("MCP-Protocol-Version", version.to_owned()),
        ("Mcp-Method", method.to_owned()),
    ];
    if let Some(name) = name {
        headers.push(("Mcp-Name", name.to_owned()));
    }
    headers
}

/// Whether `result` carries valid cache hints: `ttlMs` a non-negative
/// integer, `cacheScope` `public` or `private`.
fn cache_hints(result: &Value) -> Result<(), Reason> {
    let ttl = result.get("ttlMs");
    if ttl.is_none_or(|t| t.as_u64().is_none()) {
        return Err(format!("ttlMs is {}", shown(ttl)).into());
    }
    let scope = result.get("cacheScope");
    if !matches!(scope.and_then(Value::as_str), Some("public" | "private")) {
        return Err(format!("cacheScope is {}", shown(scope)).into());
    }
    Ok(())
}

fn result_type(result: &Value) -> Result<(), Reason> {
    match result.get("resultType") {
        Some(Value::String(kind)) if kind == "complete" => Ok(()),
        other => Err(format!("resultType is {}", shown(other)).into()),
    }
}

fn shown(value: Option<&Value>) -> String {
    match value {
        None => "missing".to_owned(),
        Some(value) => {
            let text = value.to_string();
            crate::text::outside::line(&text, 60)
        }
    }
}

/// What `server/discover` said about the revision.
enum Discovered {
    /// It speaks 2026-07-28: the result.
    Stateless(Value),
    /// It does not: why, in words.
    Older(String),
    /// It failed in a way no older server does: why.
    Broken(String),
}

/// What a `server/discover` answer says. Only a result that lists
/// 2026-07-28 commits the target to the revision's rules; a result that is
/// not a discover result at all is broken; anything else (an error of any
/// code, an HTTP refusal, no answer) is what servers of the initialize
/// revisions do with a method they do not know, unless their `initialize`
/// itself agreed on 2026-07-28 or later (`handshake_modern`).
fn discovered(answer: Result<&Answer, &ProbeError>, handshake_modern: bool) -> Discovered {
    if let Ok(answer) = answer
        && let Some(result) = answer.result()
    {
        let Some(versions) = result.get("supportedVersions").and_then(Value::as_array) else {
            return Discovered::Broken(format!(
                "server/discover answered a result without supportedVersions: {}",
                answer.describe()
            ));
        };
        return if versions.iter().any(|v| v == STATELESS) {
            Discovered::Stateless(result.clone())
        } else if handshake_modern {
            Discovered::Broken(format!(
                "initialize agreed on {STATELESS} or later, but server/discover lists {}",
                shown(result.get("supportedVersions"))
            ))
        } else {
            Discovered::Older(format!(
                "server/discover lists {} but not {STATELESS}",
                shown(result.get("supportedVersions"))
            ))
        };
    }
    let said = match answer {
        Ok(answer) => format!("server/discover answered {}", answer.describe()),
        Err(why) => format!("server/discover: {why}"),
    };
    if handshake_modern {
        Discovered::Broken(format!(
            "initialize agreed on {STATELESS} or later, but {said}"
        ))
    } else {
        Discovered::Older(said)
    }
}

impl Suite<'_> {
    /// Every check of the protocol group.
    pub(super) async fn protocol(&mut self, target: Option<&ProbeTarget>, query: &str) {
        let Some(target) = target else {
            for check in Check::in_group(Group::Protocol) {
                self.not_exercised(check, "no second channel to the target", exercise::STARTED);
            }
            return;
        };
        let mut probe = match Probe::open(target).await {
            Ok(probe) => probe,
            Err(why) => {
                let why = why.to_string();
                self.record(Check::Discover, Err(why.clone().into()));
                for check in Check::in_group(Group::Protocol).skip(1) {
                    self.not_exercised(check, &why, exercise::DISCOVER);
                }
                return;
            }
        };
        self.stateless_checks(&mut probe, query).await;
        self.probe_stderr = probe.close().await.stderr;
    }

    async fn stateless_checks(&mut self, probe: &mut Probe, query: &str) {
        let http = probe.is_http();
        let discover = request(1, "server/discover", json!({"_meta": meta(STATELESS)}));
        let answer = probe
            .request(&discover, &headers(STATELESS, "server/discover", None))
            .await;
        let handshake = self.handshake_revision();
        // Revisions are dates: a later one sorts after as text.
        let modern =
            handshake.starts_with(|c: char| c.is_ascii_digit()) && handshake.as_str() >= STATELESS;
        let discovered = discovered(answer.as_ref(), modern);
        let result = match discovered {
            Discovered::Stateless(result) => result,
            Discovered::Older(why) => {
                let reason =
                    format!("the target speaks {handshake} (initialize), not {STATELESS}: {why}");
                for check in Check::in_group(Group::Protocol) {
                    self.not_applicable(check, &reason);
                }
                return;
            }
            Discovered::Broken(why) => {
                self.record(Check::Discover, Err(why.clone().into()));
                for check in Check::in_group(Group::Protocol).skip(1) {
                    self.not_exercised(check, "server/discover failed", exercise::DISCOVER);
                }
                return;
            }
        };
        self.revision = Some(STATELESS);
        self.record(Check::Discover, judge_discover(&result));

        let list = request(2, "tools/list", json!({"_meta": meta(STATELESS)}));
        let listed = probe
            .request(&list, &headers(STATELESS, "tools/list", None))
            .await;
        let call = request(
            3,
            "tools/call",
            json!({"name": profile::TOOL_NAME, "arguments": {"query": query}, "_meta": meta(STATELESS)}),
        );
        let called = probe
            .request(
                &call,
                &headers(STATELESS, "tools/call", Some(profile::TOOL_NAME)),
            )
            .await;
        self.result_type_and_hints(&result, &listed, &called);
        self.stateless_call(&called, query);
        let refusals = request_meta(probe, http).await;
        self.record(Check::RequestMeta, refusals);
        if http {
            let headers = standard_headers(probe).await;
            self.record(Check::HttpHeaders, headers);
        } else {
            self.not_applicable(Check::HttpHeaders, skip::STDIO);
        }
    }

    /// The revision the first channel's `initialize` agreed on.
    fn handshake_revision(&self) -> String {
        self.session
            .client
            .peer_info()
            .map(|info| info.protocol_version.to_string())
            .unwrap_or_else(|| "an older revision".to_owned())
    }

    fn result_type_and_hints(
        &mut self,
        discover: &Value,
        listed: &Result<Answer, ProbeError>,
        called: &Result<Answer, ProbeError>,
    ) {
        let mut kinds = vec![("server/discover", result_type(discover))];
        let mut hints = vec![("server/discover", cache_hints(discover))];
        match listed {
            Ok(answer) => match answer.result() {
                Some(result) => {
                    kinds.push(("tools/list", result_type(result)));
                    hints.push(("tools/list", cache_hints(result)));
                }
                None => {
                    let why = Err(Reason::from(format!("answered {}", answer.describe())));
                    kinds.push(("tools/list", why.clone()));
                    hints.push(("tools/list", why));
                }
            },
            Err(why) => {
                kinds.push(("tools/list", Err(Reason::of(why))));
                hints.push(("tools/list", Err(Reason::of(why))));
            }
        }
        match called.as_ref().map(|a| (a.result(), a.describe())) {
            Ok((Some(result), _)) => kinds.push(("tools/call", result_type(result))),
            Ok((None, said)) => kinds.push(("tools/call", Err(format!("answered {said}").into()))),
            Err(why) => kinds.push(("tools/call", Err(Reason::of(why)))),
        }
        self.record(Check::ResultType, summary(&kinds, "resultType is complete"));
        self.record(
            Check::CacheHints,
            summary(&hints, "ttlMs and cacheScope are valid"),
        );
    }

    /// The `tools/call` under 2026-07-28 keeps the promises a call through
    /// `initialize` keeps.
    fn stateless_call(&mut self, called: &Result<Answer, ProbeError>, query: &str) {
        let result = match called {
            Ok(answer) => answer.result().cloned(),
            Err(why) => {
                self.record(Check::StatelessCall, Err(Reason::of(why)));
                return;
            }
        };
        let Some(mut result) = result else {
            let said = called.as_ref().map(Answer::describe).unwrap_or_default();
            self.record(
                Check::StatelessCall,
                Err(format!("tools/call answered {said}").into()),
            );
            return;
        };
        // resultType is the revision's, judged above; the rest is a
        // CallToolResult like any other.
        if let Some(object) = result.as_object_mut() {
            object.remove("resultType");
        }
        let parsed: Result<CallToolResult, _> = serde_json::from_value(result);
        let arguments = json!({ "query": query });
        let outcome = match parsed {
            Err(e) => Err(Reason::from(format!(
                "the result is not a tool result: {e}"
            ))),
            Ok(parsed) => {
                let before = self.output_problems.len();
                match self.observe(&arguments, Ok(parsed)) {
                    Ok(result) if result.is_error == Some(true) => {
                        let said = output::text_of(&result).unwrap_or("(no single text block)");
                        let reason =
                            format!("the call answered isError ({said}): no envelope to judge");
                        self.not_exercised(Check::StatelessCall, &reason, self.to_exercise);
                        return;
                    }
                    Ok(_) => match self.output_problems.get(before..).unwrap_or_default() {
                        [] => Ok("the envelope keeps every output promise".to_owned()),
                        problems => Err(problems
                            .iter()
                            .map(|(check, problem)| format!("{check}: {problem}"))
                            .collect::<Vec<_>>()
                            .join("; ")
                            .into()),
                    },
                    Err(why) => Err(why.into()),
                }
            }
        };
        self.record(Check::StatelessCall, outcome);
    }
}

fn summary(parts: &[(&str, Result<(), Reason>)], all_good: &str) -> Result<String, Reason> {
    let wrong: Vec<String> = parts
        .iter()
        .filter_map(|(method, outcome)| outcome.as_ref().err().map(|e| format!("{method}: {e}")))
        .collect();
    if wrong.is_empty() {
        let methods: Vec<&str> = parts.iter().map(|(m, _)| *m).collect();
        Ok(format!("{all_good} ({})", methods.join(", ")))
    } else {
        Err(wrong.join("; ").into())
    }
}

fn judge_discover(result: &Value) -> Result<String, Reason> {
    let mut wrong = Vec::new();
    if !result
        .pointer("/capabilities/tools")
        .is_some_and(Value::is_object)
    {
        wrong.push("capabilities.tools is missing".to_owned());
    }
    let info = result.pointer("/_meta/io.modelcontextprotocol~1serverInfo");
    let named = |key: &str| info.and_then(|i| i.get(key)).is_some_and(Value::is_string);
    if !(named("name") && named("version")) {
        wrong.push(format!(
            "_meta io.modelcontextprotocol/serverInfo is {} (name and version)",
            shown(info)
        ));
    }
    if wrong.is_empty() {
        Ok(format!(
            "lists {STATELESS}, declares tools and names the server"
        ))
    } else {
        Err(wrong.join("; ").into())
    }
}

/// A request without the per-request metadata, and one naming a revision
/// nobody supports, are refused as the revision says (over HTTP with 400).
async fn request_meta(probe: &mut Probe, http: bool) -> Result<String, Reason> {
    let bare = request(4, "server/discover", json!({}));
    let answer = probe
        .request(&bare, &headers(STATELESS, "server/discover", None))
        .await?;
    let mut wrong = Vec::new();
    if answer.error_code() != Some(INVALID_PARAMS) || (http && answer.status != Some(400)) {
        wrong.push(format!(
            "server/discover without _meta answered {} (expected error {INVALID_PARAMS}{})",
            answer.describe(),
            if http { ", HTTP 400" } else { "" }
        ));
    }
    let unknown = request(5, "tools/list", json!({"_meta": meta(UNKNOWN_REVISION)}));
    let answer = probe
        .request(&unknown, &headers(UNKNOWN_REVISION, "tools/list", None))
        .await?;
    let supported = answer
        .message
        .as_ref()
        .and_then(|m| m.pointer("/error/data/supported"))
        .and_then(Value::as_array)
        .is_some_and(|s| s.iter().any(|v| v == STATELESS));
    if answer.error_code() != Some(UNSUPPORTED_VERSION)
        || !supported
        || (http && answer.status != Some(400))
    {
        wrong.push(format!(
            "tools/list under {UNKNOWN_REVISION} answered {}{} (expected error {UNSUPPORTED_VERSION} with data.supported{})",
            answer.describe(),
            if supported { "" } else { " without the supported revisions" },
            if http { ", HTTP 400" } else { "" }
        ));
    }
    if wrong.is_empty() {
        Ok("a missing _meta and an unknown revision are refused".to_owned())
    } else {
        Err(wrong.join("; ").into())
    }
}

/// One header case: what it is, the body, the headers.
type Case<'a> = (&'static str, &'a Value, Vec<(&'static str, String)>);

/// SEP-2243 over HTTP: headers that disagree with the body, or a missing
/// `Mcp-Method`, are refused with 400 and -32020.
async fn standard_headers(probe: &mut Probe) -> Result<String, Reason> {
    let list = request(6, "tools/list", json!({"_meta": meta(STATELESS)}));
    let call = request(
        7,
        "tools/call",
        json!({"name": profile::TOOL_NAME, "arguments": {"query": "ecp headers"}, "_meta": meta(STATELESS)}),
    );
    let cases: [Case; 4] = [
        (
            "Mcp-Method tools/call on a tools/list body",
            &list,
            headers(STATELESS, "tools/call", None),
        ),
        (
            "no Mcp-Method",
            &list,
            vec![("MCP-Protocol-Version", STATELESS.to_owned())],
        ),
        (
            "Mcp-Name other_tool on a context_search call",
            &call,
            headers(STATELESS, "tools/call", Some("other_tool")),
        ),
        (
            "MCP-Protocol-Version 2025-11-25 on a 2026-07-28 body",
            &list,
            headers("2025-11-25", "tools/list", None),
        ),
    ];
    let mut wrong = Vec::new();
    for (case, body, headers) in cases {
        let answer = probe.request(body, &headers).await?;
        let refused = answer.status == Some(400)
            && matches!(answer.error_code(), Some(HEADER_MISMATCH | INVALID_PARAMS));
        if !refused {
            wrong.push(format!("{case}: {}", answer.describe()));
        }
    }
    if wrong.is_empty() {
        Ok("headers that disagree with the body are refused with 400".to_owned())
    } else {
        Err(format!("accepted or answered otherwise: {}", wrong.join("; ")).into())
    }
}
