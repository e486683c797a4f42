//! The `context_search` input: argument validation and query normalization.
//!
//! Messages are bounded and never contain the query or any argument name or
//! value the model sent.

use serde_json::{Map, Value};

/// Most Unicode code points a raw query may have (checked before normalizing).
pub const MAX_QUERY_CODE_POINTS: usize = 2000;

/// Why `context_search` arguments were refused. `Display` is the exact,
/// stable text returned to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.message())]
#[non_exhaustive]
pub enum QueryError {
    /// No `query` property.
    Missing,
    /// A property other than `query`.
    UnknownArgument,
    /// `query` is not a string.
    NotAString,
    /// More than 2000 code points.
    TooLong,
    /// Empty, or only whitespace.
    Empty,
}

impl QueryError {
    /// The stable client-facing message.
    pub fn message(self) -> &'static str {
        match self {
            QueryError::Missing => "Search query is required.",
            QueryError::UnknownArgument => {
                "Only the query argument is accepted; remove any other argument."
            }
            QueryError::NotAString => "Search query must be a string.",
            QueryError::TooLong => "Search query is too long.",
            QueryError::Empty => "Search query must not be empty.",
        }
    }
}

/// Whether `c` is in ECMAScript's `\s` set (WhiteSpace and LineTerminator).
///
/// Differs from [`char::is_whitespace`]: U+FEFF is included, U+0085 is not.
pub fn is_ecmascript_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

/// Checks the raw bound and normalizes: every run of whitespace becomes one
/// space and the ends are trimmed.
pub fn normalize_query(raw: &str) -> Result<String, QueryError> {
    if raw.chars().count() > MAX_QUERY_CODE_POINTS {
        return Err(QueryError::TooLong);
    }
    let normalized = collapse_whitespace(raw);
    if normalized.is_empty() {
        return Err(QueryError::Empty);
    }
    Ok(normalized)
}

/// `text` with every run of ECMAScript white space made one space and the
/// ends trimmed (JavaScript's `.replace(/\s+/g, " ").trim()`).
pub(crate) fn collapse_whitespace(text: &str) -> String {
    let mut collapsed = String::with_capacity(text.len());
    for word in text
        .split(is_ecmascript_whitespace)
        .filter(|word| !word.is_empty())
    {
        if !collapsed.is_empty() {
            collapsed.push(' ');
        }
        collapsed.push_str(word);
    }
    collapsed
}

/// Validates the whole `arguments` object of a `tools/call` and returns the
/// normalized query. `None` (no `arguments`) is a missing query.
pub fn query_from_arguments(arguments: Option<&Map<String, Value>>) -> Result<String, QueryError> {
    let Some(arguments) = arguments else {
        return Err(QueryError::Missing);
    };
    if arguments.keys().any(|key| key != "query") {
        return Err(QueryError::UnknownArgument);
    }
    match arguments.get("query") {
        None => Err(QueryError::Missing),
        Some(Value::String(raw)) => normalize_query(raw),
        Some(_) => Err(QueryError::NotAString),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn normalizes_every_ecmascript_whitespace_run() {
        let raw = "\u{feff} deploy\t\n\u{b}\u{c}\r\u{a0}\u{1680}\u{2000}\u{200a}\u{2028}\u{2029}\u{202f}\u{205f}\u{3000}policy  ";
        assert_eq!(normalize_query(raw).unwrap(), "deploy policy");
        // U+0085 is whitespace to Rust but not to ECMAScript.
        assert_eq!(normalize_query("a\u{85}b").unwrap(), "a\u{85}b");
    }

    #[test]
    fn bounds_apply_to_the_raw_query_in_code_points() {
        assert_eq!(
            normalize_query(&"😀".repeat(2000)).unwrap().chars().count(),
            2000
        );
        assert_eq!(
            normalize_query(&"😀".repeat(2001)),
            Err(QueryError::TooLong)
        );
        assert_eq!(normalize_query(&" ".repeat(2001)), Err(QueryError::TooLong));
        assert_eq!(normalize_query(" \u{3000} "), Err(QueryError::Empty));
        assert_eq!(normalize_query(""), Err(QueryError::Empty));
    }

    #[test]
    fn arguments_must_be_exactly_one_string_query() {
        let args = |v: Value| v.as_object().cloned();
        assert_eq!(query_from_arguments(None), Err(QueryError::Missing));
        assert_eq!(
            query_from_arguments(args(json!({})).as_ref()),
            Err(QueryError::Missing)
        );
        assert_eq!(
            query_from_arguments(args(json!({"query": "x", "corpus": "all"})).as_ref()),
            Err(QueryError::UnknownArgument)
        );
        assert_eq!(
            query_from_arguments(args(json!({"query": 7})).as_ref()),
            Err(QueryError::NotAString)
        );
        assert_eq!(
            query_from_arguments(args(json!({"query": " a  b "})).as_ref()).unwrap(),
            "a b"
        );
    }
}
