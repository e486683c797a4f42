//! The one JSON reader of files Qwen Code reads (manifests, client files,
//! settings, `.mcp.json`, install records): it keeps where every value and
//! key came from, so that a finding can point at the line and column of
//! the offending value (serde_json's `Value` forgets positions), and it
//! reads what `JSON.parse` reads where serde_json refuses: a number beyond
//! f64 (`1e400` is `Infinity` to JavaScript; its literal is kept, and
//! [`Node::to_value`] gives the largest finite f64 of its sign), a lone
//! surrogate escape (`"\ud800"`, read as U+FFFD, what `JSON.parse` then
//! `TextEncoder` make of it), and nesting up to [`MAX_DEPTH`] (serde_json
//! stops at 128). Deeper nesting is refused with
//! [`SyntaxError::is_limit`], which a caller predicting Qwen reports as
//! "cannot judge", never as invalid: `JSON.parse` has no such limit.

use std::fmt;

/// A byte range in the source text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

/// A JSON value with its span.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub span: Span,
    pub value: Value,
}

/// An object member: the key (with its own span) and the value.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    pub key: String,
    pub key_span: Span,
    pub node: Node,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    /// The literal as written.
    Number(String),
    String(String),
    Array(Vec<Node>),
    /// Members in source order; duplicates are kept (the last one wins when
    /// looked up, as in JavaScript).
    Object(Vec<Member>),
}

impl Node {
    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&[Member]> {
        match &self.value {
            Value::Object(members) => Some(members),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Node]> {
        match &self.value {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    /// The member named `key` (the last one, like `JSON.parse`).
    pub fn member(&self, key: &str) -> Option<&Member> {
        self.as_object()?.iter().rev().find(|m| m.key == key)
    }

    pub fn get(&self, key: &str) -> Option<&Node> {
        self.member(key).map(|m| &m.node)
    }

    /// The value as serde_json holds it: the last of duplicate keys wins
    /// (at the first one's place, as in JavaScript), an integer that fits
    /// 64 bits stays one, any other number is the f64 JavaScript reads,
    /// saturated to the largest finite f64 where JavaScript has
    /// `Infinity` (serde_json has no infinity).
    pub fn to_value(&self) -> serde_json::Value {
        use serde_json::Value as V;
        match &self.value {
            Value::Null => V::Null,
            Value::Bool(b) => V::Bool(*b),
            Value::String(s) => V::String(s.clone()),
            Value::Number(literal) => V::Number(number_of(literal)),
            Value::Array(items) => V::Array(items.iter().map(Node::to_value).collect()),
            Value::Object(members) => {
                let mut map = serde_json::Map::new();
                for member in members {
                    map.insert(member.key.clone(), member.node.to_value());
                }
                V::Object(map)
            }
        }
    }

    /// The node a JSON Pointer (RFC 6901) names below this one: `""` is
    /// this node, `/a/0` member `a`'s first item; `~1` and `~0` in a part
    /// stand for `/` and `~`.
    pub fn pointer(&self, pointer: &str) -> Option<&Node> {
        let mut node = self;
        for part in pointer.split('/').skip(1) {
            node = match node.as_array() {
                Some(items) => items.get(part.parse::<usize>().ok()?)?,
                None => node.get(&part.replace("~1", "/").replace("~0", "~"))?,
            };
        }
        Some(node)
    }

    /// A short name of the JSON type, for messages.
    pub fn type_name(&self) -> &'static str {
        match self.value {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        }
    }
}

/// Where and why the text is not JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub offset: usize,
    pub message: String,
}

impl SyntaxError {
    /// Whether the text was refused for a limit of this reader (nesting
    /// deeper than [`MAX_DEPTH`]) rather than for being no JSON.
    pub fn is_limit(&self) -> bool {
        self.message == TOO_DEEP
    }
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// 1-based line and column (in characters) of a byte offset. One call is
/// linear in `text`; for many offsets build a [`LineIndex`].
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    LineIndex::new(text).line_column(offset)
}

/// Bytes between character-count checkpoints of a [`LineIndex`].
const CHECKPOINT: usize = 1024;

/// Line starts and character counts of a text, built once, so that every
/// position costs a binary search and at most [`CHECKPOINT`] bytes of
/// counting, however long the line.
#[derive(Debug, Clone)]
pub struct LineIndex<'a> {
    text: &'a str,
    /// Byte offset of every line's first character.
    starts: Vec<usize>,
    /// `chars[i]`: characters in `text[..boundary(i * CHECKPOINT)]`.
    chars: Vec<usize>,
}

fn floor_boundary(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

impl<'a> LineIndex<'a> {
    pub fn new(text: &'a str) -> LineIndex<'a> {
        let mut starts = vec![0];
        starts.extend(
            text.bytes()
                .enumerate()
                .filter(|(_, b)| *b == b'\n')
                .map(|(i, _)| i + 1),
        );
        let mut chars = Vec::with_capacity(text.len() / CHECKPOINT + 1);
        let mut count = 0;
        let mut previous = 0;
        for i in 0..=text.len() / CHECKPOINT {
            let at = floor_boundary(text, i * CHECKPOINT);
            count += text[previous..at].chars().count();
            chars.push(count);
            previous = at;
        }
        LineIndex {
            text,
            starts,
            chars,
        }
    }

    /// Characters before byte `offset`.
    fn chars_before(&self, offset: usize) -> usize {
        let offset = floor_boundary(self.text, offset);
        let slot = offset / CHECKPOINT;
        let from = floor_boundary(self.text, slot * CHECKPOINT);
        self.chars[slot] + self.text[from..offset].chars().count()
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_column(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = self.starts.partition_point(|start| *start <= offset);
        let start = self.starts[line - 1];
        (
            line,
            self.chars_before(offset) - self.chars_before(start) + 1,
        )
    }

    /// The byte range of 1-based `line`, without its line break.
    pub fn line_range(&self, line: usize) -> std::ops::Range<usize> {
        let start = self
            .starts
            .get(line.wrapping_sub(1))
            .copied()
            .unwrap_or(self.text.len());
        let end = self
            .starts
            .get(line)
            .map_or(self.text.len(), |next| next - 1);
        let end = end.max(start);
        let trimmed = self.text[start..end].trim_end_matches('\r').len();
        start..start + trimmed
    }
}

/// A number literal as JavaScript reads it (see [`Node::to_value`]).
fn number_of(literal: &str) -> serde_json::Number {
    if let Ok(n) = literal.parse::<i64>() {
        return n.into();
    }
    if let Ok(n) = literal.parse::<u64>() {
        return n.into();
    }
    let float = literal.parse::<f64>().unwrap_or(0.0);
    let finite = if float.is_finite() {
        float
    } else {
        f64::MAX.copysign(float)
    };
    serde_json::Number::from_f64(finite).unwrap_or_else(|| 0.into())
}

/// Parses `text` as `JSON.parse` does (after a leading BOM, which Qwen
/// strips from its settings) into serde_json's value.
pub fn parse_value(text: &str) -> Result<serde_json::Value, SyntaxError> {
    parse(text).map(|node| node.to_value())
}

/// The deepest nesting read (a recursive parser on the caller's stack).
pub const MAX_DEPTH: usize = 256;

/// The message of the depth refusal.
const TOO_DEEP: &str = "JSON nested too deeply";

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    depth: usize,
}

/// Parses one JSON document (a leading UTF-8 BOM is allowed).
pub fn parse(text: &str) -> Result<Node, SyntaxError> {
    let start = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let mut parser = Parser {
        text,
        bytes: text.as_bytes(),
        at: start,
        depth: 0,
    };
    parser.skip_whitespace();
    let node = parser.value()?;
    parser.skip_whitespace();
    if parser.at < parser.bytes.len() {
        return Err(parser.error("unexpected text after the JSON value"));
    }
    Ok(node)
}

impl Parser<'_> {
    fn error(&self, message: &str) -> SyntaxError {
        SyntaxError {
            offset: self.at,
            message: message.to_owned(),
        }
    }

    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    fn expect(&mut self, byte: u8, what: &str) -> Result<(), SyntaxError> {
        if self.bytes.get(self.at) == Some(&byte) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.error(&format!("expected {what}")))
        }
    }

    fn value(&mut self) -> Result<Node, SyntaxError> {
        let start = self.at;
        let value = match self.bytes.get(self.at) {
            None => return Err(self.error("unexpected end of input: expected a value")),
            Some(b'{') => self.object()?,
            Some(b'[') => self.array()?,
            Some(b'"') => Value::String(self.string()?),
            Some(b'-' | b'0'..=b'9') => self.number()?,
            Some(_) => self.literal()?,
        };
        Ok(Node {
            span: Span {
                start,
                end: self.at,
            },
            value,
        })
    }

    fn nested(&mut self) -> Result<(), SyntaxError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error(TOO_DEEP));
        }
        Ok(())
    }

    fn object(&mut self) -> Result<Value, SyntaxError> {
        self.nested()?;
        self.at += 1;
        let mut members = Vec::new();
        self.skip_whitespace();
        if self.bytes.get(self.at) == Some(&b'}') {
            self.at += 1;
            self.depth -= 1;
            return Ok(Value::Object(members));
        }
        loop {
            self.skip_whitespace();
            if !members.is_empty() && self.bytes.get(self.at) == Some(&b'}') {
                return Err(self.error("trailing commas are not JSON"));
            }
            if self.bytes.get(self.at) != Some(&b'"') {
                return Err(self.error("expected a string key (keys need double quotes)"));
            }
            let key_start = self.at;
            let key = self.string()?;
            let key_span = Span {
                start: key_start,
                end: self.at,
            };
            self.skip_whitespace();
            self.expect(b':', "':' after the key")?;
            self.skip_whitespace();
            let node = self.value()?;
            members.push(Member {
                key,
                key_span,
                node,
            });
            self.skip_whitespace();
            match self.bytes.get(self.at) {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    self.depth -= 1;
                    return Ok(Value::Object(members));
                }
                _ => return Err(self.error("expected ',' or '}' (trailing commas are not JSON)")),
            }
        }
    }

    fn array(&mut self) -> Result<Value, SyntaxError> {
        self.nested()?;
        self.at += 1;
        let mut items = Vec::new();
        self.skip_whitespace();
        if self.bytes.get(self.at) == Some(&b']') {
            self.at += 1;
            self.depth -= 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_whitespace();
            if !items.is_empty() && self.bytes.get(self.at) == Some(&b']') {
                return Err(self.error("trailing commas are not JSON"));
            }
            items.push(self.value()?);
            self.skip_whitespace();
            match self.bytes.get(self.at) {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    self.depth -= 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.error("expected ',' or ']' (trailing commas are not JSON)")),
            }
        }
    }

    fn literal(&mut self) -> Result<Value, SyntaxError> {
        for (word, value) in [
            ("true", Value::Bool(true)),
            ("false", Value::Bool(false)),
            ("null", Value::Null),
        ] {
            if self.text[self.at..].starts_with(word) {
                self.at += word.len();
                return Ok(value);
            }
        }
        Err(self.error("expected a JSON value"))
    }

    fn digits(&mut self) -> usize {
        let start = self.at;
        while self.bytes.get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
        self.at - start
    }

    fn number(&mut self) -> Result<Value, SyntaxError> {
        let start = self.at;
        if self.bytes[self.at] == b'-' {
            self.at += 1;
        }
        let int_start = self.at;
        if self.digits() == 0 {
            return Err(self.error("expected digits"));
        }
        if self.bytes[int_start] == b'0' && self.at - int_start > 1 {
            return Err(SyntaxError {
                offset: int_start,
                message: "numbers must not have leading zeros".into(),
            });
        }
        if self.bytes.get(self.at) == Some(&b'.') {
            self.at += 1;
            if self.digits() == 0 {
                return Err(self.error("expected digits after '.'"));
            }
        }
        if let Some(b'e' | b'E') = self.bytes.get(self.at) {
            self.at += 1;
            if let Some(b'+' | b'-') = self.bytes.get(self.at) {
                self.at += 1;
            }
            if self.digits() == 0 {
                return Err(self.error("expected digits in the exponent"));
            }
        }
        Ok(Value::Number(self.text[start..self.at].to_owned()))
    }

    fn hex4(&mut self) -> Result<u32, SyntaxError> {
        let digits = self
            .text
            .get(self.at..self.at + 4)
            .filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| self.error("expected four hex digits after \\u"))?;
        self.at += 4;
        Ok(u32::from_str_radix(digits, 16).unwrap_or(0xFFFD))
    }

    fn string(&mut self) -> Result<String, SyntaxError> {
        self.at += 1;
        let mut out = String::new();
        loop {
            let clean_start = self.at;
            while let Some(&b) = self.bytes.get(self.at) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.at += 1;
            }
            out.push_str(&self.text[clean_start..self.at]);
            match self.bytes.get(self.at) {
                None => return Err(self.error("unterminated string")),
                Some(b'"') => {
                    self.at += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.at += 1;
                    let escape = self.bytes.get(self.at).copied();
                    self.at += 1;
                    match escape {
                        Some(b'"') => out.push('"'),
                        Some(b'\\') => out.push('\\'),
                        Some(b'/') => out.push('/'),
                        Some(b'b') => out.push('\u{8}'),
                        Some(b'f') => out.push('\u{c}'),
                        Some(b'n') => out.push('\n'),
                        Some(b'r') => out.push('\r'),
                        Some(b't') => out.push('\t'),
                        Some(b'u') => {
                            let unit = self.hex4()?;
                            let code = if (0xD800..0xDC00).contains(&unit)
                                && self.text[self.at..].starts_with("\\u")
                            {
                                let save = self.at;
                                self.at += 2;
                                let low = self.hex4()?;
                                if (0xDC00..0xE000).contains(&low) {
                                    0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                                } else {
                                    self.at = save;
                                    0xFFFD
                                }
                            } else {
                                unit
                            };
                            out.push(char::from_u32(code).unwrap_or('\u{FFFD}'));
                        }
                        _ => {
                            self.at -= 1;
                            return Err(self.error("invalid escape in string"));
                        }
                    }
                }
                Some(_) => return Err(self.error("control character in string (escape it)")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_name_nodes_as_rfc_6901_does() {
        let root = parse(r#"{"a": [{"b/c": 1, "d~e": 2, "": 3}], "a~1": 4}"#).unwrap();
        let number = |n: &str| Some(Value::Number(n.to_owned()));
        let at = |pointer: &str| root.pointer(pointer).map(|n| n.value.clone());
        assert_eq!(at("/a/0/b~1c"), number("1"));
        assert_eq!(at("/a/0/d~0e"), number("2"));
        assert_eq!(at("/a/0/"), number("3"));
        // `~01` is `~1` as a key, not `/`.
        assert_eq!(at("/a~01"), number("4"));
        assert_eq!(root.pointer(""), Some(&root));
        for missing in ["/a/1", "/a/x", "/b", "/a/0/b/c", "/a/-1"] {
            assert_eq!(at(missing), None, "{missing}");
        }
    }

    #[test]
    fn keeps_spans_of_keys_and_values() {
        let text = "{\n  \"name\": \"acme-context\",\n  \"n\": [1, -2.5e3, true, null]\n}";
        let doc = parse(text).unwrap();
        let name = doc.member("name").unwrap();
        assert_eq!(&text[name.key_span.start..name.key_span.end], "\"name\"");
        assert_eq!(
            &text[name.node.span.start..name.node.span.end],
            "\"acme-context\""
        );
        assert_eq!(line_column(text, name.node.span.start), (2, 11));
        let n = doc.get("n").unwrap().as_array().unwrap();
        assert_eq!(n[1].value, Value::Number("-2.5e3".into()));
    }

    #[test]
    fn decodes_escapes_and_surrogates() {
        let doc = parse(r#""a\"\\\/\n\u00e9\ud83d\ude00\ud800""#).unwrap();
        assert_eq!(doc.as_str(), Some("a\"\\/\né😀\u{FFFD}"));
    }

    #[test]
    fn reports_where_the_syntax_breaks() {
        for (text, at, what) in [
            ("{\"a\": 1,}", 8, "trailing commas"),
            ("{'a': 1}", 1, "double quotes"),
            ("[01]", 1, "leading zeros"),
            ("{\"a\" 1}", 5, "':'"),
            ("\"abc", 4, "unterminated"),
            ("[1] x", 4, "after the JSON value"),
        ] {
            let error = parse(text).unwrap_err();
            assert_eq!(error.offset, at, "{text}");
            assert!(error.message.contains(what), "{text}: {}", error.message);
        }
    }
}
