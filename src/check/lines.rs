//! A target's stdout as `JSON.parse` would read it. A server that answers as
//! the JavaScript reference does writes a lone surrogate (a string holding
//! half of a UTF-16 pair) as the escape `\ud800`; Qwen's client reads such
//! a line, serde_json (under rmcp) refuses it, and the check would see no
//! answer at all. Each line holding such an escape is rewritten with
//! `\ufffd` in its place, what `JSON.parse` then `TextEncoder` make of it
//! (the runtime's own framing reads requests the same way); every other
//! line passes byte for byte. A line longer than [`MAX_LINE`] ends the
//! stream (rmcp then reports the server gone).

use memchr::memmem;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream};

/// The longest line read from a target (the runtime's own limit is 4 MiB
/// a request; answers hold at most five bounded items).
pub const MAX_LINE: u64 = 64 * 1024 * 1024;

/// Whether `line` may hold a surrogate escape (`\ud800`-`\udfff`).
fn may_hold_surrogate(line: &[u8]) -> bool {
    memmem::find(line, b"\\ud").is_some() || memmem::find(line, b"\\uD").is_some()
}

/// `line` with its lone surrogate escapes replaced, when it has any.
pub fn as_json_parse_reads(line: &[u8]) -> Option<Vec<u8>> {
    if !may_hold_surrogate(line) {
        return None;
    }
    let text = std::str::from_utf8(line).ok()?;
    match crate::runtime::profile::ecmascript::javascript_compatible(text, false) {
        std::borrow::Cow::Borrowed(_) => None,
        std::borrow::Cow::Owned(rewritten) => Some(rewritten.into_bytes()),
    }
}

/// A reader of `stdout`'s lines, rewritten by [`as_json_parse_reads`].
pub fn json_parse_lines(stdout: impl AsyncRead + Send + Unpin + 'static) -> DuplexStream {
    let (mut writer, reader) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        let mut lines = BufReader::new(stdout);
        let mut line = Vec::new();
        loop {
            line.clear();
            match (&mut lines)
                .take(MAX_LINE)
                .read_until(b'\n', &mut line)
                .await
            {
                Ok(0) | Err(_) => break,
                Ok(_) if line.len() as u64 >= MAX_LINE && !line.ends_with(b"\n") => break,
                Ok(_) => {}
            }
            let out = as_json_parse_reads(&line);
            if writer
                .write_all(out.as_deref().unwrap_or(&line))
                .await
                .is_err()
            {
                break;
            }
        }
    });
    reader
}

/// Text written by a server that re-escapes lone surrogates, in the form
/// ecp's own serialization gives after they became U+FFFD: each lone
/// surrogate escape becomes the character U+FFFD itself (the rewrite's
/// `\ufffd` escapes are the only ones: ecp writes U+FFFD as itself).
pub fn text_as_json_parse_reads(text: &str) -> std::borrow::Cow<'_, str> {
    match as_json_parse_reads(text.as_bytes()) {
        Some(rewritten) => std::borrow::Cow::Owned(
            String::from_utf8_lossy(&rewritten).replace("\\ufffd", "\u{fffd}"),
        ),
        None => std::borrow::Cow::Borrowed(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_lone_surrogate_escapes_are_rewritten() {
        let line = br#"{"a":"x\ud800y","b":"\ud83d\ude00","c":"\\ud800"}"#;
        let out = as_json_parse_reads(line).unwrap();
        assert_eq!(
            out,
            br#"{"a":"x\ufffdy","b":"\ud83d\ude00","c":"\\ud800"}"#.to_vec()
        );
        assert_eq!(as_json_parse_reads(br#"{"a":"\ud83d\ude00"}"#), None);
        assert_eq!(as_json_parse_reads(br#"{"a":"plain"}"#), None);
        let parsed: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(parsed["a"], "x\u{fffd}y");
    }

    #[test]
    fn a_text_reads_as_its_own_serialization_would() {
        // Inside the envelope text a lone surrogate is `\ud800`; ecp's
        // serialization of the item holding U+FFFD writes it raw.
        let text = r#"{"id":"a\ud800b"}"#;
        assert_eq!(text_as_json_parse_reads(text), "{\"id\":\"a\u{fffd}b\"}");
        assert_eq!(text_as_json_parse_reads("{}"), "{}");
    }

    #[tokio::test]
    async fn lines_pass_through_and_are_rewritten_where_needed() {
        let input: &[u8] = b"{\"a\":1}\n{\"b\":\"\\udc00\"}\nlast without newline";
        let mut reader = json_parse_lines(input);
        let mut out = String::new();
        reader.read_to_string(&mut out).await.unwrap();
        assert_eq!(out, "{\"a\":1}\n{\"b\":\"\\ufffd\"}\nlast without newline");
    }
}
