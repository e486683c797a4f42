//! JSON-RPC framing on stdio, in front of rmcp: every line a client sends
//! is either forwarded to the MCP service or answered here with the right
//! JSON-RPC error, so that no request goes unanswered (a client would wait
//! for its timeout):
//!
//! - a line that is not JSON: `-32700`, with the `id` when one can still be
//!   read; a lone surrogate escape (`"\ud800"`, which `JSON.parse` takes and
//!   Rust strings cannot hold) is read as U+FFFD and the request forwarded;
//! - a batch, a non-object, a wrong `jsonrpc`, an `id` that is neither a
//!   string nor an integer, a `method` that is not a string: `-32600`;
//! - `params` that is not an object, `tools/call` arguments that are not an
//!   object: `-32602`;
//! - a line longer than [`MAX_LINE_BYTES`]: `-32600`, and the rest of the
//!   line is skipped without being held.
//!
//! Notifications get no answer, as JSON-RPC says. Answers and rmcp's output
//! are written whole, one line at a time.

use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader},
    sync::mpsc,
};

use super::{Provider, RuntimeConfig, RuntimeError, serve};
use crate::profile::ecma::javascript_compatible;

/// The longest request line read; an MCP request of the profile is a few
/// KiB (a query is at most 2000 code points).
pub const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// What to do with one line.
#[derive(Debug, PartialEq)]
enum Verdict {
    Forward(String),
    Answer(Value),
    Ignore,
}

fn error(id: Value, code: i64, message: &str) -> Verdict {
    Verdict::Answer(
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
    )
}

fn valid_id(id: &Value) -> bool {
    match id {
        Value::String(_) => true,
        Value::Number(n) => n.is_i64() || n.is_u64(),
        _ => false,
    }
}

/// Judges one line (without its line break).
fn judge(line: &[u8]) -> Verdict {
    let trimmed = line.trim_ascii();
    if trimmed.is_empty() {
        return Verdict::Ignore;
    }
    let Ok(text) = std::str::from_utf8(trimmed) else {
        return error(Value::Null, -32700, "Parse error: the line is not UTF-8.");
    };
    let (message, text) = match serde_json::from_str::<Value>(text) {
        Ok(message) => (message, text.to_owned()),
        Err(_) => {
            let fixed = javascript_compatible(text, false);
            match serde_json::from_str::<Value>(&fixed) {
                Ok(message) => (message, fixed.into_owned()),
                Err(_) => return error(Value::Null, -32700, "Parse error: the line is not JSON."),
            }
        }
    };
    let Value::Object(object) = &message else {
        return error(
            Value::Null,
            -32600,
            "Invalid Request: send one JSON-RPC object per line (no batches).",
        );
    };
    let id = object.get("id");
    let answerable = id.is_some_and(valid_id);
    let reply_id = if answerable {
        id.cloned().unwrap_or(Value::Null)
    } else {
        Value::Null
    };
    if id.is_some_and(|id| !valid_id(id)) {
        return error(
            Value::Null,
            -32600,
            "Invalid Request: `id` must be a string or an integer.",
        );
    }
    if object.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return error(
            reply_id,
            -32600,
            "Invalid Request: `jsonrpc` must be \"2.0\".",
        );
    }
    let method = match object.get("method") {
        None => return Verdict::Forward(text), // a response to the server
        Some(Value::String(method)) => method,
        Some(_) => {
            return error(
                reply_id,
                -32600,
                "Invalid Request: `method` must be a string.",
            );
        }
    };
    let params = object.get("params");
    let bad_params = params.is_some_and(|p| !p.is_object() && !p.is_null());
    let bad_arguments = method == "tools/call"
        && params
            .and_then(|p| p.get("arguments"))
            .is_some_and(|a| !a.is_object() && !a.is_null());
    if bad_params || bad_arguments {
        if !answerable {
            return Verdict::Ignore; // a notification: nothing is owed
        }
        let what = if bad_params {
            "`params` must be an object."
        } else {
            "`arguments` must be an object."
        };
        return error(reply_id, -32602, &format!("Invalid params: {what}"));
    }
    Verdict::Forward(text)
}

/// Reads one line of at most [`MAX_LINE_BYTES`]; `Ok(None)` at the end.
/// A longer line is consumed to its end and returned as `Err(())`.
async fn read_line<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    line: &mut Vec<u8>,
) -> std::io::Result<Option<Result<(), ()>>> {
    line.clear();
    let mut too_long = false;
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok((!line.is_empty() || too_long).then_some(if too_long {
                Err(())
            } else {
                Ok(())
            }));
        }
        let (chunk, done) = match buffer.iter().position(|b| *b == b'\n') {
            Some(at) => (&buffer[..at], Some(at + 1)),
            None => (buffer, None),
        };
        if !too_long {
            if line.len() + chunk.len() > MAX_LINE_BYTES {
                too_long = true;
                line.clear();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let consumed = done.unwrap_or(buffer.len());
        reader.consume(consumed);
        if done.is_some() {
            return Ok(Some(if too_long { Err(()) } else { Ok(()) }));
        }
    }
}

/// Serves `context_search` over a line-delimited byte stream pair with the
/// framing guard in front of the MCP service.
pub async fn serve_lines<P, R, W>(
    provider: P,
    config: RuntimeConfig,
    reader: R,
    mut writer: W,
) -> Result<(), RuntimeError>
where
    P: Provider,
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let (to_service, service_side) = tokio::io::duplex(1 << 20);
    let (service_read, service_write) = tokio::io::split(service_side);
    let service = tokio::spawn(serve(provider, config, service_read, service_write));
    let (mut from_service, mut to_service) = tokio::io::split(to_service);

    // One writer: whole lines from the service and from the guard.
    let (lines, mut outgoing) = mpsc::channel::<Vec<u8>>(64);
    let output = tokio::spawn(async move {
        while let Some(line) = outgoing.recv().await {
            if writer.write_all(&line).await.is_err() || writer.flush().await.is_err() {
                break;
            }
        }
    });
    let service_lines = lines.clone();
    let pump = tokio::spawn(async move {
        let mut reader = BufReader::new(&mut from_service);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if service_lines.send(line.clone()).await.is_err() {
                        break;
                    }
                }
            }
        }
    });

    let mut input = BufReader::new(reader);
    let mut line = Vec::new();
    while let Ok(Some(read)) = read_line(&mut input, &mut line).await {
        let verdict = match read {
            Ok(()) => judge(&line),
            Err(()) => error(
                Value::Null,
                -32600,
                "Invalid Request: the line is too long.",
            ),
        };
        match verdict {
            Verdict::Ignore => {}
            Verdict::Answer(answer) => {
                let mut bytes = serde_json::to_vec(&answer).unwrap_or_default();
                bytes.push(b'\n');
                if lines.send(bytes).await.is_err() {
                    break;
                }
            }
            Verdict::Forward(text) => {
                let mut bytes = text.into_bytes();
                bytes.push(b'\n');
                if to_service.write_all(&bytes).await.is_err() {
                    break;
                }
            }
        }
    }
    let _ = to_service.shutdown().await;
    drop(to_service);
    let served = service.await;
    let _ = pump.await;
    drop(lines);
    let _ = output.await;
    match served {
        Ok(result) => result,
        Err(_) => Err(RuntimeError("MCP service task failed".to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(line: &str) -> Value {
        match judge(line.as_bytes()) {
            Verdict::Answer(answer) => answer,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn every_malformed_request_is_answered_with_its_code() {
        let code = |line: &str| answer(line)["error"]["code"].as_i64().unwrap();
        assert_eq!(code("not json"), -32700);
        assert_eq!(code("[1,2]"), -32600);
        assert_eq!(code("7"), -32600);
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#),
            -32600
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#),
            -32600
        );
        assert_eq!(code(r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#), -32600);
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1,"method":7}"#), -32600);
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}"#),
            -32602
        );
        let bad_arguments = r#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"context_search","arguments":"q"}}"#;
        assert_eq!(code(bad_arguments), -32602);
        assert_eq!(answer(bad_arguments)["id"], "x");
        // Notifications are never answered.
        assert_eq!(
            judge(br#"{"jsonrpc":"2.0","method":"notifications/x","params":[1]}"#),
            Verdict::Ignore
        );
    }

    #[test]
    fn a_lone_surrogate_is_forwarded_as_a_replacement_character() {
        let line = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"context_search","arguments":{"query":"a\ud800b"}}}"#;
        match judge(line.as_bytes()) {
            Verdict::Forward(text) => {
                let value: Value = serde_json::from_str(&text).unwrap();
                assert_eq!(value["params"]["arguments"]["query"], "a\u{fffd}b");
            }
            other => panic!("{other:?}"),
        }
    }
}
