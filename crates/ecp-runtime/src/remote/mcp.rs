//! MCP over Streamable HTTP, stateless with JSON responses: the rules of
//! rmcp 3.11's `StreamableHttpService` for the one configuration this
//! adapter ran it in until runtime 0.2.3 (no sessions, JSON responses, no
//! SSE, rmcp's loopback `Host` list without OAuth and none with it), ported
//! so that its service machinery (a one-shot transport, a service loop and
//! its channels per request, SSE and session code) is no longer in every
//! `dist/main`. The messages are still rmcp's model types, parsed and
//! written by rmcp's own serde code, and the handler is the same
//! [`ContextSearchServer`] that serves stdio through rmcp.
//!
//! In order, as rmcp checks them:
//!
//! 1. `Host` (or, without one, the authority of an absolute request
//!    target): present, valid UTF-8 and a valid authority (else `400`,
//!    `text/plain`); without OAuth one of `localhost`, `127.0.0.1`, `::1`
//!    (else `403`), against DNS rebinding.
//! 2. Only `POST` (else `405` with `Allow: POST`).
//! 3. `Accept` names `application/json` and `text/event-stream`, neither
//!    with `q=0` (else `406`); `Content-Type` is `application/json` (else
//!    `415`); the body is one JSON-RPC message rmcp's model reads (else
//!    `415` with serde's reason).
//! 4. `MCP-Protocol-Version`: an `initialize` must name the same revision
//!    in its params; any other message a known revision, unless its own
//!    `_meta` names one (`400`).
//! 5. From 2026-07-28 on (by the header), the standard headers of SEP-2243:
//!    `Mcp-Method` equal to the body's method, `Mcp-Name` (plain or
//!    `=?base64?…?=`) to the tool name of a `tools/call` (`400`, `-32020`).
//!    The tool's schema declares no `Mcp-Param-*` headers, so none are read.
//! 6. A request whose `_meta` names a revision needs the header, and the
//!    same one; `server/discover` and 2026-07-28 requests need the whole
//!    per-request metadata (`400`, `-32020` or `-32602`).
//! 7. Notifications get `202`, client responses `400`; requests are
//!    answered by [`dispatch`], with rmcp's status mapping for requests that
//!    negotiate per request (`404` for an unknown method, `400` for
//!    version, capability and header errors).
//!
//! The tests hold every rule to rmcp's service byte for byte
//! (`tests/it/http_protocol.rs` in ecp runs a corpus of requests through
//! both; the `http_mcp` fuzz target any request). One difference, on
//! purpose: a call still running when the drain runs out of time (past the
//! provider budget plus a second) gets the stable failure (`200`,
//! `isError`) like every other ended call, where rmcp's service answered
//! `500` in plain text.

use std::borrow::Cow;

use base64::Engine;
use bytes::Bytes;
use hyper::{
    HeaderMap, Method, StatusCode, Uri,
    header::{ACCEPT, CONTENT_TYPE, HOST, HeaderName},
    http::uri::Authority,
};
use rmcp::{
    ServerHandler,
    model::{
        ClientJsonRpcMessage, ClientRequest, DiscoverResult, ErrorCode, ErrorData, GetMeta,
        ListToolsResult, ProtocolVersion, RequestId, ServerJsonRpcMessage, ServerResult,
    },
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::direct;
use crate::{ContextSearchServer, Provider, context_search_tool, profile::TOOL_NAME};

const JSON: &str = "application/json";
const EVENT_STREAM: &str = "text/event-stream";
const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
const MCP_METHOD: &str = "Mcp-Method";
const MCP_NAME: &str = "Mcp-Name";
const BASE64_PREFIX: &str = "=?base64?";
const BASE64_SUFFIX: &str = "?=";
/// rmcp's default `Host` allow-list, which `--no-auth` keeps.
pub(super) const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// What the MCP endpoint answers: the status, the content type (none for
/// rmcp's plain-text refusals), whether `Allow: POST` goes with it, the
/// body, and whether the direct path answered (for the access log).
pub(super) struct Reply {
    pub status: StatusCode,
    pub content_type: Option<&'static str>,
    pub allow_post: bool,
    pub body: Bytes,
    pub direct: bool,
}

impl Reply {
    fn text(status: StatusCode, body: impl Into<Bytes>) -> Reply {
        Reply {
            status,
            content_type: None,
            allow_post: false,
            body: body.into(),
            direct: false,
        }
    }

    fn json(status: StatusCode, message: &ServerJsonRpcMessage) -> Reply {
        match serde_json::to_vec(message) {
            Ok(body) => Reply {
                status,
                content_type: Some(JSON),
                allow_post: false,
                body: body.into(),
                direct: false,
            },
            Err(error) => unserializable(error),
        }
    }
}

/// rmcp's answer when a response cannot be written (which its types make
/// unreachable).
fn unserializable(error: serde_json::Error) -> Reply {
    Reply::text(
        StatusCode::INTERNAL_SERVER_ERROR,
        format!("Encounter an error when serialize json response: {error}"),
    )
}

fn bad_request(message: &'static str) -> Reply {
    Reply {
        content_type: Some("text/plain; charset=utf-8"),
        ..Reply::text(StatusCode::BAD_REQUEST, message)
    }
}

/// A JSON-RPC error answered with `400`.
fn refused(id: Option<RequestId>, error: ErrorData) -> Reply {
    Reply::json(
        StatusCode::BAD_REQUEST,
        &ServerJsonRpcMessage::error(error, id),
    )
}

/// Answers one request to the MCP endpoint (`uri` is its request target).
/// `loopback_only` is true without OAuth; `cancel` is the drain's token.
pub(super) async fn respond<P: Provider>(
    server: &ContextSearchServer<P>,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &[u8],
    loopback_only: bool,
    cancel: &CancellationToken,
) -> Reply {
    if let Err(reply) = check_host(uri, headers, loopback_only) {
        return reply;
    }
    if method != Method::POST {
        return Reply {
            allow_post: true,
            ..Reply::text(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed")
        };
    }
    if let Some(request) = direct::recognize(headers, body) {
        return match direct::answer(server, request, cancel).await {
            Ok(answer) => Reply {
                status: StatusCode::OK,
                content_type: Some(JSON),
                allow_post: false,
                body: answer.into(),
                direct: true,
            },
            Err(error) => unserializable(error),
        };
    }
    match post(server, headers, body, cancel).await {
        Ok(reply) | Err(reply) => reply,
    }
}

/// The `Host` header, or without one the authority of an absolute request
/// target (`POST http://host/mcp`), as rmcp reads it.
fn check_host(uri: &Uri, headers: &HeaderMap, loopback_only: bool) -> Result<(), Reply> {
    let authority = match headers.get(HOST) {
        Some(host) => {
            let host = host
                .to_str()
                .map_err(|_| bad_request("Bad Request: Invalid Host header encoding"))?;
            Authority::try_from(host)
                .map_err(|_| bad_request("Bad Request: Invalid Host header"))?
        }
        None => uri
            .authority()
            .cloned()
            .ok_or_else(|| bad_request("Bad Request: missing Host header"))?,
    };
    if loopback_only {
        let name = authority
            .host()
            .trim_matches('[')
            .trim_matches(']')
            .to_ascii_lowercase();
        if !LOOPBACK_HOSTS.contains(&name.as_str()) {
            return Err(Reply::text(
                StatusCode::FORBIDDEN,
                "Forbidden: Host header is not allowed",
            ));
        }
    }
    Ok(())
}

/// Splits at `delimiter` outside double quotes (a backslash escapes inside).
fn split_unquoted(value: &str, delimiter: char) -> impl Iterator<Item = &str> {
    let (mut quoted, mut escaped) = (false, false);
    value.split(move |character| {
        if escaped {
            escaped = false;
        } else if quoted && character == '\\' {
            escaped = true;
        } else if character == '"' {
            quoted = !quoted;
        } else if !quoted && character == delimiter {
            return true;
        }
        false
    })
}

/// A `q` of zero excludes a media range; a weight that is not RFC 9110's
/// grammar is ignored.
fn quality_is_acceptable(quality: &str) -> bool {
    let (whole, fraction) = quality.split_once('.').unwrap_or((quality, ""));
    if fraction.len() > 3 || !fraction.bytes().all(|digit| digit.is_ascii_digit()) {
        return true;
    }
    whole != "0" || fraction.bytes().any(|digit| digit != b'0')
}

/// The media types of every `Accept` header, without those weighted zero.
fn accepted_media_types(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    headers
        .get_all(ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| split_unquoted(value, ','))
        .filter_map(|entry| {
            let mut parts = split_unquoted(entry, ';');
            let essence = parts.next()?.trim();
            parts
                .all(|parameter| match parameter.split_once('=') {
                    Some((name, value)) => {
                        !name.trim().eq_ignore_ascii_case("q")
                            || quality_is_acceptable(value.trim())
                    }
                    None => true,
                })
                .then_some(essence)
        })
}

/// The POST's message, once its `Accept` and `Content-Type` headers say
/// what rmcp's service requires and its body parses.
fn accepted_message(headers: &HeaderMap, body: &[u8]) -> Result<ClientJsonRpcMessage, Reply> {
    let (mut json, mut stream) = (false, false);
    for essence in accepted_media_types(headers) {
        json |= essence.eq_ignore_ascii_case(JSON);
        stream |= essence.eq_ignore_ascii_case(EVENT_STREAM);
    }
    if !json || !stream {
        return Err(Reply::text(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: Client must accept both application/json and text/event-stream",
        ));
    }
    let sends_json = headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            let essence = value.split_once(';').map_or(value, |(essence, _)| essence);
            essence.trim().eq_ignore_ascii_case(JSON)
        });
    if !sends_json {
        return Err(Reply::text(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Unsupported Media Type: Content-Type must be application/json",
        ));
    }
    serde_json::from_slice::<ClientJsonRpcMessage>(body).map_err(|error| {
        Reply::text(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("fail to deserialize request body {error}"),
        )
    })
}

/// The protocol version the peer speaks: `initialize`'s own, else the
/// `MCP-Protocol-Version` header's, else 2025-03-26 (rmcp's default).
fn peer_version(request: &ClientRequest, headers: &HeaderMap) -> ProtocolVersion {
    match request {
        ClientRequest::InitializeRequest(initialize) => initialize.params.protocol_version.clone(),
        _ => headers
            .get(&PROTOCOL_VERSION)
            .and_then(|value| value.to_str().ok())
            .map(|version| {
                serde_json::from_value(Value::String(version.to_owned()))
                    .unwrap_or(ProtocolVersion::V_2025_03_26)
            })
            .unwrap_or(ProtocolVersion::V_2025_03_26),
    }
}

async fn post<P: Provider>(
    server: &ContextSearchServer<P>,
    headers: &HeaderMap,
    body: &[u8],
    cancel: &CancellationToken,
) -> Result<Reply, Reply> {
    let message = accepted_message(headers, body)?;
    let per_request_version = match &message {
        ClientJsonRpcMessage::Request(request) => {
            request.request.get_meta().protocol_version().is_some()
        }
        _ => false,
    };
    match &message {
        ClientJsonRpcMessage::Request(request) => match &request.request {
            ClientRequest::InitializeRequest(initialize) => header_matches_initialize(
                headers,
                initialize.params.protocol_version.as_str(),
                &request.id,
            )?,
            _ => known_version_header(headers, per_request_version)?,
        },
        _ => known_version_header(headers, per_request_version)?,
    }
    standard_headers(headers, &message, body)?;
    meta_matches_header(headers, &message)?;
    match message {
        ClientJsonRpcMessage::Request(request) => {
            let negotiated =
                per_request_version || matches!(request.request, ClientRequest::DiscoverRequest(_));
            let meta_malformed = !request
                .request
                .get_meta()
                .missing_required_keys(&ProtocolVersion::V_2026_07_28)
                .is_empty();
            let peer_version = peer_version(&request.request, headers);
            let id = request.id;
            let answer = match dispatch(server, request.request, peer_version, cancel).await {
                Ok(result) => ServerJsonRpcMessage::response(result, id),
                Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
            };
            let status = if negotiated {
                status_of(&answer, meta_malformed)
            } else {
                StatusCode::OK
            };
            Ok(Reply::json(status, &answer))
        }
        ClientJsonRpcMessage::Notification(_) => Ok(Reply::text(StatusCode::ACCEPTED, "")),
        ClientJsonRpcMessage::Response(_) | ClientJsonRpcMessage::Error(_) => Err(refused(
            None,
            ErrorData::invalid_request("stateless server does not accept JSON-RPC responses", None),
        )),
    }
}

/// An `initialize` may leave the header out; if it is there, it names the
/// revision of its params.
fn header_matches_initialize(
    headers: &HeaderMap,
    asked: &str,
    id: &RequestId,
) -> Result<(), Reply> {
    let Some(value) = headers.get(&PROTOCOL_VERSION) else {
        return Ok(());
    };
    let Ok(value) = value.to_str() else {
        return Err(refused(
            Some(id.clone()),
            ErrorData::invalid_request(
                "Invalid Request: MCP-Protocol-Version header is not valid UTF-8",
                None,
            ),
        ));
    };
    if value != asked {
        return Err(refused(
            Some(id.clone()),
            ErrorData::invalid_request(
                format!(
                    "Invalid Request: MCP-Protocol-Version header ({value}) does not match initialize params.protocolVersion ({asked})"
                ),
                None,
            ),
        ));
    }
    Ok(())
}

/// Any other message: no header (2025-03-26 is assumed), or a known
/// revision; an unknown one only when the request's `_meta` names its own.
fn known_version_header(headers: &HeaderMap, allow_unknown: bool) -> Result<(), Reply> {
    let Some(value) = headers.get(&PROTOCOL_VERSION) else {
        return Ok(());
    };
    let Ok(version) = value.to_str() else {
        return Err(Reply::text(
            StatusCode::BAD_REQUEST,
            "Bad Request: Invalid MCP-Protocol-Version header encoding",
        ));
    };
    let known = ProtocolVersion::KNOWN_VERSIONS
        .iter()
        .any(|known| known.as_str() == version);
    if !allow_unknown && !known {
        return Err(Reply::text(
            StatusCode::BAD_REQUEST,
            format!("Bad Request: Unsupported MCP-Protocol-Version: {version}"),
        ));
    }
    Ok(())
}

/// The one value of a header, if present; two values, or one that is not
/// visible ASCII, are errors.
fn single<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, String> {
    let mut values = headers.get_all(name).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(format!("duplicate {name} header"));
    }
    value
        .to_str()
        .map(Some)
        .map_err(|_| format!("{name} header contains invalid characters"))
}

/// A header value as sent, or the text inside `=?base64?…?=`.
fn decode_header_value(value: &str) -> Option<String> {
    match value
        .strip_prefix(BASE64_PREFIX)
        .and_then(|inner| inner.strip_suffix(BASE64_SUFFIX))
    {
        Some(inner) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(inner)
                .ok()?;
            String::from_utf8(bytes).ok()
        }
        None => Some(value.to_owned()),
    }
}

/// The parameter `Mcp-Name` stands for, by method.
fn name_key(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => Some("uri"),
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    }
}

/// SEP-2243, from 2026-07-28 on (by the header): `Mcp-Method` and, where
/// the method has one, `Mcp-Name` agree with the body. An `initialize` may
/// leave them out, but a single `Mcp-Method` it sends must say
/// `initialize`.
fn standard_headers(
    headers: &HeaderMap,
    message: &ClientJsonRpcMessage,
    body: &[u8],
) -> Result<(), Reply> {
    let required = headers
        .get(&PROTOCOL_VERSION)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|version| version >= ProtocolVersion::STANDARD_HEADERS.as_str());
    if !required {
        return Ok(());
    }
    let id = match message {
        ClientJsonRpcMessage::Request(request) => {
            if matches!(request.request, ClientRequest::InitializeRequest(_)) {
                let mut values = headers.get_all(MCP_METHOD).iter();
                let Some(first) = values.next() else {
                    return Ok(());
                };
                let mismatch = |text: String| {
                    Err(refused(
                        Some(request.id.clone()),
                        ErrorData::header_mismatch(text, None),
                    ))
                };
                if values.next().is_some() {
                    return mismatch(
                        "multiple Mcp-Method header values supplied; initialize requires exactly one"
                            .to_owned(),
                    );
                }
                if first.as_bytes() != b"initialize" {
                    return mismatch(format!(
                        "Mcp-Method header `{}` does not match body method `initialize`",
                        String::from_utf8_lossy(first.as_bytes())
                    ));
                }
                return Ok(());
            }
            Some(request.id.clone())
        }
        ClientJsonRpcMessage::Notification(_) => None,
        _ => return Ok(()),
    };
    // The body as sent: rmcp's model reads it (above), so its method and
    // parameters are the ones the typed message holds.
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return Ok(());
    };
    check_standard_headers(headers, &value)
        .map_err(|reason| refused(id, ErrorData::header_mismatch(reason, None)))
}

fn check_standard_headers(headers: &HeaderMap, request: &Value) -> Result<(), String> {
    let Some(method) = request.get("method").and_then(Value::as_str) else {
        return Ok(());
    };
    match single(headers, MCP_METHOD)? {
        None => return Err("missing required Mcp-Method header".to_owned()),
        Some(value) if value != method => {
            return Err(format!(
                "Mcp-Method header `{value}` does not match body method `{method}`"
            ));
        }
        Some(_) => {}
    }
    let expected = name_key(method)
        .and_then(|key| request.get("params")?.get(key)?.as_str())
        .map(str::to_owned);
    if let Some(expected) = expected {
        match single(headers, MCP_NAME)? {
            None => return Err(format!("missing required Mcp-Name header for `{method}`")),
            Some(raw) => {
                let decoded = decode_header_value(raw)
                    .ok_or_else(|| "Mcp-Name header is not valid Base64".to_owned())?;
                if decoded != expected {
                    return Err(format!(
                        "Mcp-Name header `{decoded}` does not match body value `{expected}`"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// A request whose `_meta` names a revision needs the same one in the
/// header; `server/discover`, and any request under a 2026-07-28 header,
/// needs the per-request metadata.
fn meta_matches_header(headers: &HeaderMap, message: &ClientJsonRpcMessage) -> Result<(), Reply> {
    let ClientJsonRpcMessage::Request(request) = message else {
        return Ok(());
    };
    if matches!(request.request, ClientRequest::InitializeRequest(_)) {
        return Ok(());
    }
    let discover = matches!(request.request, ClientRequest::DiscoverRequest(_));
    let meta = request.request.get_meta();
    let header = headers
        .get(&PROTOCOL_VERSION)
        .and_then(|value| value.to_str().ok());
    let id = Some(request.id.clone());
    let Some(in_meta) = meta.protocol_version() else {
        let required = discover
            || header.is_some_and(|version| version >= ProtocolVersion::V_2026_07_28.as_str());
        if required {
            let missing = meta.missing_required_keys(&ProtocolVersion::V_2026_07_28);
            return Err(refused(
                id,
                ErrorData::invalid_params(
                    format!(
                        "Invalid params: request _meta is missing or has malformed required fields: {}",
                        missing.join(", ")
                    ),
                    None,
                ),
            ));
        }
        return Ok(());
    };
    let Some(header) = header else {
        return Err(refused(
            id,
            ErrorData::header_mismatch(
                "request _meta protocolVersion requires MCP-Protocol-Version header",
                None,
            ),
        ));
    };
    if header != in_meta.as_str() {
        return Err(refused(
            id,
            ErrorData::header_mismatch(
                format!(
                    "MCP-Protocol-Version header ({header}) does not match request _meta protocolVersion ({in_meta})"
                ),
                None,
            ),
        ));
    }
    Ok(())
}

/// rmcp's HTTP status for a request that negotiates per request.
fn status_of(answer: &ServerJsonRpcMessage, meta_malformed: bool) -> StatusCode {
    let ServerJsonRpcMessage::Error(error) = answer else {
        return StatusCode::OK;
    };
    match error.error.code {
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        | ErrorCode::HEADER_MISMATCH => StatusCode::BAD_REQUEST,
        ErrorCode::INVALID_PARAMS if meta_malformed => StatusCode::BAD_REQUEST,
        ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

/// What rmcp's server handler answers for `request` from a peer on
/// `peer_version` (the header's, or the `initialize` params'): the revision
/// checks of per-request negotiation, then the method, then the result's
/// shape for the revision (cache hints from 2026-07-28 on; before it, no
/// `resultType` and only object output).
async fn dispatch<P: Provider>(
    server: &ContextSearchServer<P>,
    request: ClientRequest,
    peer_version: ProtocolVersion,
    cancel: &CancellationToken,
) -> Result<ServerResult, ErrorData> {
    let meta = request.get_meta();
    let asked = meta.protocol_version();
    let version = asked.clone().unwrap_or(peer_version);
    let modern = version.as_str() >= ProtocolVersion::V_2026_07_28.as_str();
    let inline = !matches!(request, ClientRequest::InitializeRequest(_));
    if inline && let Some(asked) = &asked {
        let supported = server.supported_protocol_versions();
        if !supported.contains(asked) {
            return Err(ErrorData::unsupported_protocol_version(
                asked.clone(),
                &supported,
            ));
        }
    }
    let needs_meta = inline
        && (matches!(request, ClientRequest::DiscoverRequest(_))
            || asked
                .as_ref()
                .is_some_and(|asked| asked.as_str() >= ProtocolVersion::V_2026_07_28.as_str()));
    if needs_meta {
        let missing = meta.missing_required_keys(&ProtocolVersion::V_2026_07_28);
        if !missing.is_empty() {
            return Err(ErrorData::invalid_params(
                format!(
                    "request _meta is missing or has malformed required fields: {}",
                    missing.join(", ")
                ),
                None,
            ));
        }
    }
    let legacy = !needs_meta && version.has_initialize();
    let mut result = match request {
        ClientRequest::InitializeRequest(initialize) => {
            ServerResult::InitializeResult(server.negotiate_initialize(&initialize.params)?)
        }
        ClientRequest::DiscoverRequest(_) => {
            ServerResult::DiscoverResult(DiscoverResult::from_server_info(
                server.supported_protocol_versions().into_owned(),
                server.get_info(),
            ))
        }
        ClientRequest::PingRequest(_) if legacy => ServerResult::empty(()),
        ClientRequest::ListToolsRequest(_) => {
            ServerResult::ListToolsResult(ListToolsResult::with_all_items(vec![
                context_search_tool(),
            ]))
        }
        ClientRequest::CallToolRequest(call) => {
            if call.params.name != TOOL_NAME {
                return Err(ErrorData::invalid_params(
                    "Unknown tool: this server offers only context_search.",
                    None,
                ));
            }
            let answer = direct::answer_logged(server, call.params.arguments.as_ref(), cancel);
            ServerResult::CallToolResult(answer.await.into_result())
        }
        other => {
            return Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                Cow::Owned(other.method().to_owned()),
                None,
            ));
        }
    };
    if modern {
        result.fill_missing_cache_hints();
    } else {
        result.strip_result_type_for_legacy_peer();
        result.strip_non_object_output_for_legacy_peer();
    }
    Ok(result)
}
