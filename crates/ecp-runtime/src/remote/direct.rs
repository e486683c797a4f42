//! The direct path: the two requests a client repeats, a stateless
//! `tools/call` of `context_search` and `tools/list`, answered before the
//! general path of [`super::mcp`] parses them into rmcp's untagged message
//! enum, by the same handler ([`ContextSearchServer::answer`]) and as the
//! same bytes: a call's success is written straight from the rendered
//! envelope (no `structuredContent` value built and serialized again), a
//! failure is rmcp's own response type after rmcp's legacy-peer stripping,
//! and the tool list is serialized once, as the general path serializes it.
//!
//! [`recognize`] takes a request (whose `Host` [`super::mcp`] has already
//! checked) only when every later check of the general path is one it
//! passes on its face:
//!
//! - one `Accept` list naming both `application/json` and
//!   `text/event-stream`, with no parameters (a `q=0` is the general
//!   path's to judge);
//! - one `Content-Type` whose media type is `application/json`;
//! - no `MCP-Protocol-Version`, or one of the revisions before 2026-07-28
//!   (where neither per-request metadata nor the standard `Mcp-*` request
//!   headers apply), and no other `Mcp-*` header;
//! - a body that is exactly `{"jsonrpc":"2.0","id":…,"method":"tools/call",
//!   "params":{"name":"context_search","arguments":{…}}}` or
//!   `{"jsonrpc":"2.0","id":…,"method":"tools/list"}` (with `"params":{}`
//!   or none), in any order, where `params` may also hold a `_meta` that
//!   is only a `progressToken` (rmcp's client sends one with every request:
//!   measured with rmcp 3.11.0 on 2026-12-08; a stateless answer sends no
//!   progress, so the bytes are the same), and nothing else: no task, no
//!   cursor, no other member, no `null` for any of them.
//!
//! Anything else takes the general path. The tests hold the two paths to
//! the same bytes (`tests/it/serve_remote.rs`), and both to rmcp's
//! Streamable HTTP service (`tests/it/http_protocol.rs`).
//!
//! One difference from rmcp's service, on purpose: a call still running
//! when a drain runs out of time (past the provider budget plus a second,
//! which the budget itself prevents unless the process stalls) is answered
//! with the stable failure (`200`, `isError`), as every other ended call
//! is; rmcp's service answered such a call `500` with a plain-text body.

use hyper::{
    HeaderMap,
    header::{ACCEPT, CONTENT_TYPE, HeaderName},
};
use rmcp::model::{
    CallToolResult, JsonObject, JsonRpcVersion2_0, ListToolsResult, ProgressToken, ProtocolVersion,
    RequestId, ServerJsonRpcMessage, ServerResult,
};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::{
    ContextSearchServer, Provider,
    profile::{Rendered, TOOL_NAME},
    server::Answer,
};

const JSON: &str = "application/json";
const EVENT_STREAM: &str = "text/event-stream";
const PROTOCOL_VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");

/// A request the direct path answers.
pub(super) enum DirectRequest {
    Call {
        id: RequestId,
        arguments: JsonObject,
    },
    List {
        id: RequestId,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Message {
    #[allow(dead_code)] // its type admits only "2.0"
    jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    method: String,
    #[serde(default, deserialize_with = "present")]
    params: Option<Params>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    #[serde(default, deserialize_with = "present")]
    name: Option<String>,
    #[serde(default, deserialize_with = "present")]
    arguments: Option<JsonObject>,
    #[serde(default, deserialize_with = "present", rename = "_meta")]
    #[allow(dead_code)] // read to be refused when it holds more
    meta: Option<ProgressOnly>,
}

/// A `_meta` that holds a progress token and nothing else.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProgressOnly {
    #[serde(rename = "progressToken")]
    #[allow(dead_code)] // its type admits what rmcp's does
    progress_token: ProgressToken,
}

/// A member that is there is not `null` (absent is `None`, by `default`).
fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

/// The request in `body`, when it takes the direct path; `None` sends it
/// to the general path ([`super::mcp`]), which has already checked the
/// `Host`.
pub(super) fn recognize(headers: &HeaderMap, body: &[u8]) -> Option<DirectRequest> {
    if !(accepts_both(headers) && sends_json(headers) && plain_revision(headers)) {
        return None;
    }
    let message: Message = serde_json::from_slice(body).ok()?;
    let (name, arguments) = match message.params {
        Some(params) => (params.name, params.arguments),
        None => (None, None),
    };
    match (message.method.as_str(), name, arguments) {
        ("tools/call", Some(name), Some(arguments)) if name == TOOL_NAME => {
            Some(DirectRequest::Call {
                id: message.id,
                arguments,
            })
        }
        ("tools/list", None, None) => Some(DirectRequest::List { id: message.id }),
        _ => None,
    }
}

fn only(headers: &HeaderMap, name: impl hyper::header::AsHeaderName) -> Option<&str> {
    let mut values = headers.get_all(name).iter();
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    value.to_str().ok()
}

fn accepts_both(headers: &HeaderMap) -> bool {
    let Some(accept) = only(headers, ACCEPT) else {
        return false;
    };
    let (mut json, mut stream) = (false, false);
    for range in accept.split(',') {
        if range.contains([';', '"']) {
            return false;
        }
        let range = range.trim();
        json |= range.eq_ignore_ascii_case(JSON);
        stream |= range.eq_ignore_ascii_case(EVENT_STREAM);
    }
    json && stream
}

fn sends_json(headers: &HeaderMap) -> bool {
    only(headers, CONTENT_TYPE).is_some_and(|value| {
        let essence = value.split_once(';').map_or(value, |(essence, _)| essence);
        essence.trim().eq_ignore_ascii_case(JSON)
    })
}

/// No `MCP-Protocol-Version`, or a known revision before 2026-07-28; and no
/// other `Mcp-*` header (session ids, the standard request headers).
fn plain_revision(headers: &HeaderMap) -> bool {
    // Header names are lower case in a `HeaderMap`.
    let other_mcp_header = headers
        .keys()
        .any(|name| *name != PROTOCOL_VERSION_HEADER && name.as_str().starts_with("mcp-"));
    if other_mcp_header {
        return false;
    }
    if !headers.contains_key(&PROTOCOL_VERSION_HEADER) {
        return true;
    }
    only(headers, &PROTOCOL_VERSION_HEADER).is_some_and(|version| {
        version < ProtocolVersion::V_2026_07_28.as_str()
            && ProtocolVersion::KNOWN_VERSIONS
                .iter()
                .any(|known| known.as_str() == version)
    })
}

/// Logs the cancellation when the client leaves before the answer (hyper
/// drops the request future, and with it the provider task).
struct LeftEarly<'a, P: Provider> {
    server: &'a ContextSearchServer<P>,
    armed: bool,
}

impl<P: Provider> Drop for LeftEarly<'_, P> {
    fn drop(&mut self) {
        if self.armed {
            self.server.log_cancelled();
        }
    }
}

/// Answers `request` and returns the JSON-RPC response body, byte for
/// byte what rmcp would send for it; `cancel` is the drain's token.
pub(super) async fn answer<P: Provider>(
    server: &ContextSearchServer<P>,
    request: DirectRequest,
    cancel: &CancellationToken,
) -> Result<Vec<u8>, serde_json::Error> {
    match request {
        DirectRequest::Call { id, arguments } => {
            match answer_logged(server, Some(&arguments), cancel).await {
                Answer::Envelope(rendered) => success(&id, &rendered),
                failure => rmcp_bytes(failure.into_result(), id),
            }
        }
        DirectRequest::List { id } => listed(&id),
    }
}

/// The `tools/list` response: the result serialized once, as rmcp
/// serializes it for a peer before 2026-07-28 (a test holds it to
/// [`list_result_bytes`] for any id), around the request's id.
fn listed(id: &RequestId) -> Result<Vec<u8>, serde_json::Error> {
    static RESULT: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    let result = match RESULT.get() {
        Some(result) => result,
        None => {
            let made = list_result_bytes()?;
            RESULT.get_or_init(|| made)
        }
    };
    let mut out = Vec::with_capacity(result.len() + 64);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    serde_json::to_writer(&mut out, id)?;
    out.extend_from_slice(br#","result":"#);
    out.extend_from_slice(result);
    out.push(b'}');
    Ok(out)
}

/// The list result of the one tool, after rmcp's legacy-peer stripping.
fn list_result_bytes() -> Result<Vec<u8>, serde_json::Error> {
    let mut result = ServerResult::ListToolsResult(ListToolsResult::with_all_items(vec![
        crate::context_search_tool(),
    ]));
    result.strip_result_type_for_legacy_peer();
    result.strip_non_object_output_for_legacy_peer();
    serde_json::to_vec(&result)
}

/// The handler's answer to a call with `arguments`, with the cancellation
/// logged when the client leaves first (hyper drops the request future, and
/// with it the provider task).
pub(super) async fn answer_logged<P: Provider>(
    server: &ContextSearchServer<P>,
    arguments: Option<&JsonObject>,
    cancel: &CancellationToken,
) -> Answer {
    let mut left_early = LeftEarly {
        server,
        armed: true,
    };
    // The drain's token itself (a clone shares it): nothing cancels one
    // call alone here, and a child token would lock the parent's tree twice
    // a call.
    let answer = server.answer(arguments, cancel.clone()).await;
    left_early.armed = false;
    answer
}

/// A result as rmcp's handler sends it to a peer before 2026-07-28 (the only
/// revisions this path takes): without `resultType`, and with only object
/// output.
fn rmcp_bytes(result: CallToolResult, id: RequestId) -> Result<Vec<u8>, serde_json::Error> {
    let mut result = ServerResult::CallToolResult(result);
    result.strip_result_type_for_legacy_peer();
    result.strip_non_object_output_for_legacy_peer();
    serde_json::to_vec(&ServerJsonRpcMessage::response(result, id))
}

/// A successful result written straight from the rendered envelope: the
/// bytes of [`rmcp_bytes`] for the same result (a test holds them equal),
/// without building the `structuredContent` value and rmcp's result first.
fn success(id: &RequestId, rendered: &Rendered) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = Vec::with_capacity(2 * rendered.text().len() + 256);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    serde_json::to_writer(&mut out, id)?;
    out.extend_from_slice(br#","result":{"content":[{"type":"text","text":"#);
    crate::profile::render::write_json_str(&mut out, rendered.text());
    out.extend_from_slice(br#"}],"structuredContent":"#);
    rendered.write_structured(&mut out)?;
    out.extend_from_slice(br#","isError":false}}"#);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ProviderItem;
    use hyper::header::HeaderValue;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                hyper::header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    const CALL: &str = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"context_search","arguments":{"query":"x"}}}"#;

    fn plain() -> Vec<(&'static str, &'static str)> {
        vec![
            ("host", "127.0.0.1:8080"),
            ("accept", "application/json, text/event-stream"),
            ("content-type", "application/json"),
            ("mcp-protocol-version", "2025-06-18"),
        ]
    }

    fn taken(pairs: &[(&str, &str)], body: &str) -> bool {
        recognize(&headers(pairs), body.as_bytes()).is_some()
    }

    #[test]
    fn the_plain_call_is_taken() {
        assert!(taken(&plain(), CALL));
        let mut without_version = plain();
        without_version.pop();
        assert!(taken(&without_version, CALL));
        for version in ["2024-11-05", "2025-03-26", "2025-11-25"] {
            let mut pairs = plain();
            pairs[3].1 = version;
            assert!(taken(&pairs, CALL), "{version}");
        }
        let reordered = r#"{"params":{"arguments":{"query":"x"},"name":"context_search"},"method":"tools/call","id":"a","jsonrpc":"2.0"}"#;
        assert!(taken(&plain(), reordered));
        // What rmcp's client sends: a progress token in `_meta`.
        for body in [
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"context_search","arguments":{"query":"x"},"_meta":{"progressToken":0}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"progressToken":"p"},"name":"context_search","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#,
            r#"{"params":{"_meta":{"progressToken":1}},"method":"tools/list","id":"l","jsonrpc":"2.0"}"#,
        ] {
            assert!(taken(&plain(), body), "{body}");
        }
    }

    /// The list answer is the general path's serialization of rmcp's
    /// response, for ids of every kind.
    #[test]
    fn a_written_list_is_rmcp_s_bytes() {
        for id in [
            RequestId::Number(0),
            RequestId::Number(i64::MIN),
            RequestId::String("r-😀\"\u{2028}".into()),
        ] {
            let mut result = ServerResult::ListToolsResult(ListToolsResult::with_all_items(vec![
                crate::context_search_tool(),
            ]));
            result.strip_result_type_for_legacy_peer();
            result.strip_non_object_output_for_legacy_peer();
            let expected =
                serde_json::to_vec(&ServerJsonRpcMessage::response(result, id.clone())).unwrap();
            assert_eq!(
                String::from_utf8(listed(&id).unwrap()).unwrap(),
                String::from_utf8(expected).unwrap()
            );
        }
    }

    #[test]
    fn anything_rmcp_might_judge_otherwise_is_not() {
        let bodies = [
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"context_search","arguments":{"query":"x"},"_meta":{}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"other","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"name":"context_search","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"context_search","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"context_search"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"context_search","arguments":null}}"#,
            r#"{"jsonrpc":"1.0","id":7,"method":"tools/call","params":{"name":"context_search","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"context_search","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"id":8,"method":"tools/call","params":{"name":"context_search","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"context_search","arguments":{}},"x":1}"#,
            r#"[{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"context_search","arguments":{}}}]"#,
            "not json",
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"context_search","arguments":{},"_meta":{"progressToken":0,"x":1}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"context_search","arguments":{},"_meta":null}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"context_search","arguments":{},"_meta":{"progressToken":null}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"context_search","arguments":{},"_meta":{"progressToken":1.5}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"context_search","arguments":{},"task":{}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"c"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":null}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"progressToken":0,"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"prompts/list"}"#,
        ];
        for body in bodies {
            assert!(!taken(&plain(), body), "{body}");
        }
        let changes: [(usize, &str); 7] = [
            (1, "application/json"),
            (1, "application/json, text/event-stream;q=0"),
            (1, "application/json;q=0, text/event-stream"),
            (2, "text/plain"),
            (3, "2026-07-28"),
            (3, "2099-01-01"),
            (3, "bogus"),
        ];
        for (at, value) in changes {
            let mut pairs = plain();
            pairs[at].1 = value;
            assert!(!taken(&pairs, CALL), "{pairs:?}");
        }
        for extra in [
            ("mcp-session-id", "abc"),
            ("mcp-method", "tools/call"),
            ("content-type", "application/json"),
            ("accept", "*/*"),
            ("mcp-protocol-version", "2025-06-18"),
        ] {
            let mut pairs = plain();
            pairs.push(extra);
            assert!(!taken(&pairs, CALL), "{extra:?}");
        }
    }

    /// Every render vector of `contracts/v1`, and items whose strings and
    /// scores stress the two writers' escaping and numbers.
    #[test]
    fn a_written_success_is_rmcp_s_bytes() {
        let vectors = crate::contracts::render_vectors();
        let vectors = vectors.as_array().unwrap();
        assert!(vectors.len() > 10);
        let mut cases: Vec<Vec<ProviderItem>> = vectors
            .iter()
            .map(|v| {
                v["providerItems"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(ProviderItem::from_json)
                    .collect()
            })
            .collect();
        let awkward = "\u{0}\u{1f}\"\\/\u{7f}\u{2028}\u{2029}<>&\u{fffd}é😀\n\t\r\u{8}\u{c}";
        let scores = [
            0.91,
            1.0,
            0.0,
            -0.0,
            1e21,
            1e-7,
            123456789012345680000.0,
            5e-324,
            -2.5,
            0.1 + 0.2,
        ];
        cases.push(
            scores
                .iter()
                .enumerate()
                .map(|(n, score)| ProviderItem {
                    id: format!("{awkward}{n}"),
                    content: awkward.repeat(n + 1),
                    title: (n % 2 == 0).then(|| awkward.to_owned()),
                    uri: (n % 3 == 0).then(|| format!("https://x.example/{awkward}")),
                    score: Some(*score),
                    updated_at: (n % 2 == 1).then(|| "2026-08-13T00:00:00Z".to_owned()),
                })
                .collect(),
        );
        // Every string over its bound, in multi-byte characters.
        let long = |n: usize| "é😀".repeat(n);
        cases.push(vec![
            ProviderItem {
                id: long(400),
                content: long(3000),
                title: Some(long(400)),
                uri: Some(long(3000)),
                score: Some(0.5),
                updated_at: Some(long(100)),
            };
            6
        ]);
        for items in &cases {
            for id in [RequestId::Number(7), RequestId::String("r-😀\"".into())] {
                let rendered = Rendered::new(items);
                let written = success(&id, &rendered).unwrap();
                let result = Answer::Envelope(rendered).into_result();
                let expected = rmcp_bytes(result, id).unwrap();
                assert_eq!(
                    String::from_utf8(written).unwrap(),
                    String::from_utf8(expected).unwrap()
                );
            }
        }
    }
}
