//! The Auto Recall query: what of a submitted prompt may leave the machine.
//!
//! The rules are those of Qwen Code's own Auto Recall hook
//! (`@qwen-code/external-context-mem0`, `src/auto-recall.ts`, 0.25.0),
//! written here as a scanner with the same results as its JavaScript
//! regular expressions (their backtracking included), in this order:
//!
//! 1. the first 4096 code points are kept;
//! 2. fenced code goes: a ```` ``` ```` or `~~~` block up to the next same
//!    fence, then anything from a fence left unclosed to the end;
//! 3. each credential the provider was configured with goes;
//! 4. assignments whose key names a secret go: an optionally quoted key of
//!    `[A-Za-z0-9_.-]` holding `token`, `password`, `secret` or `api key`
//!    (`apikey`, `api_key`, `api-key`; ASCII case-insensitive), then `:` or
//!    `=` and its value (quoted on one line, or up to white space, `,` or
//!    `;`);
//! 5. `Bearer` and its token;
//! 6. three dot-separated runs of at least 8 of `[A-Za-z0-9_-]` (JWT-like)
//!    and any run of at least 32 of them, each between word boundaries;
//! 7. white space (ECMAScript's `\s`) collapses to one space, the ends are
//!    trimmed, and at most 512 code points are kept.
//!
//! Each removed part becomes one space. Nothing left: no query, no search.

use crate::profile::query::{collapse_whitespace, is_ecmascript_whitespace};

/// Most code points of a submitted prompt the sanitizer reads.
pub const MAX_SANITIZED_CODE_POINTS: usize = 4096;
/// Most code points of the query an Auto Recall search sends.
pub const MAX_AUTO_RECALL_QUERY_CODE_POINTS: usize = 512;

/// The query an Auto Recall search sends for `submitted`, with every
/// value of `credentials` removed; `None` when nothing is left.
pub fn auto_recall_query(submitted: &str, credentials: &[String]) -> Option<String> {
    let read: Vec<char> = submitted.chars().take(MAX_SANITIZED_CODE_POINTS).collect();
    let mut text: String = strip_unclosed_fence(&strip_closed_fences(&read))
        .into_iter()
        .collect();
    for credential in credentials.iter().filter(|c| !c.is_empty()) {
        text = text.replace(credential.as_str(), " ");
    }
    for pattern in [assignment as Matcher, bearer, jwt_like, long_token] {
        text = replace_all(&text, pattern);
    }
    let query = collapse_whitespace(&text);
    if query.is_empty() {
        return None;
    }
    Some(
        query
            .chars()
            .take(MAX_AUTO_RECALL_QUERY_CODE_POINTS)
            .collect(),
    )
}

/// Where a match that starts at the index ends, if one does.
type Matcher = fn(&[char], usize) -> Option<usize>;

/// Every match of `pattern`, left to right and never overlapping, replaced
/// by one space (JavaScript's `replace` with a global expression).
fn replace_all(text: &str, pattern: Matcher) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while at < chars.len() {
        match pattern(&chars, at) {
            Some(end) if end > at => {
                out.push(' ');
                at = end;
            }
            _ => {
                out.push(chars[at]);
                at += 1;
            }
        }
    }
    out
}

const FENCES: [[char; 3]; 2] = [['`'; 3], ['~'; 3]];

fn fence_at(chars: &[char], at: usize) -> Option<[char; 3]> {
    let three = chars.get(at..at + 3)?;
    FENCES.into_iter().find(|fence| three == fence)
}

/// Each fence with its block up to the next same fence, as one space; a
/// fence with no partner is kept for [`strip_unclosed_fence`].
fn strip_closed_fences(chars: &[char]) -> Vec<char> {
    let mut out = Vec::with_capacity(chars.len());
    let mut at = 0;
    while at < chars.len() {
        let closing = fence_at(chars, at).and_then(|fence| {
            (at + 3..chars.len().saturating_sub(2)).find(|&end| chars[end..end + 3] == fence)
        });
        match closing {
            Some(end) => {
                out.push(' ');
                at = end + 3;
            }
            None => {
                out.push(chars[at]);
                at += 1;
            }
        }
    }
    out
}

/// Everything from the first fence left to the end, as one space.
fn strip_unclosed_fence(chars: &[char]) -> Vec<char> {
    match (0..chars.len()).find(|&at| fence_at(chars, at).is_some()) {
        Some(at) => {
            let mut kept = chars[..at].to_vec();
            kept.push(' ');
            kept
        }
        None => chars.to_vec(),
    }
}

/// ECMAScript's `\w` without the `u` flag.
fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// `\b` before index `at` (the end counts as a non-word character).
fn boundary(chars: &[char], at: usize) -> bool {
    let before = at.checked_sub(1).is_some_and(|i| is_word(chars[i]));
    let after = chars.get(at).is_some_and(|&c| is_word(c));
    before != after
}

fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')
}

fn is_quote(c: char) -> bool {
    c == '"' || c == '\''
}

/// White space that does not end a line (`[^\S\r\n]`).
fn is_inline_space(c: char) -> bool {
    is_ecmascript_whitespace(c) && c != '\r' && c != '\n'
}

/// The first index at or after `at` whose character is not `keep`.
fn run_end(chars: &[char], at: usize, keep: impl Fn(char) -> bool) -> usize {
    (at..chars.len())
        .find(|&i| !keep(chars[i]))
        .unwrap_or(chars.len())
}

fn names_a_secret(key: &[char]) -> bool {
    let key: String = key.iter().map(char::to_ascii_lowercase).collect();
    [
        "token", "password", "secret", "apikey", "api_key", "api-key",
    ]
    .iter()
    .any(|word| key.contains(word))
}

/// `["']?KEY["']?[ \t]*[:=][ \t]*VALUE?`, KEY naming a secret.
fn assignment(chars: &[char], at: usize) -> Option<usize> {
    let key_start = if is_quote(chars[at]) { at + 1 } else { at };
    let key_end = run_end(chars, key_start, is_key_char);
    if !names_a_secret(&chars[key_start..key_end]) {
        return None;
    }
    let mut i = key_end;
    if chars.get(i).copied().is_some_and(is_quote) {
        i += 1;
    }
    i = run_end(chars, i, is_inline_space);
    if !matches!(chars.get(i), Some(':' | '=')) {
        return None;
    }
    i = run_end(chars, i + 1, is_inline_space);
    if let Some(&quote) = chars.get(i).filter(|&&c| is_quote(c)) {
        let inside = run_end(chars, i + 1, |c| c != quote && c != '\r' && c != '\n');
        if chars.get(inside) == Some(&quote) {
            return Some(inside + 1);
        }
    }
    Some(run_end(chars, i, |c| {
        !is_ecmascript_whitespace(c) && c != ',' && c != ';'
    }))
}

/// `\bBearer\s+[A-Za-z0-9._~+/=-]+`, ASCII case-insensitive.
fn bearer(chars: &[char], at: usize) -> Option<usize> {
    let word = chars.get(at..at + 6)?;
    let is_bearer = word
        .iter()
        .zip("bearer".chars())
        .all(|(w, c)| w.eq_ignore_ascii_case(&c));
    if !boundary(chars, at) || !is_bearer {
        return None;
    }
    let spaces = run_end(chars, at + 6, is_ecmascript_whitespace);
    let token = run_end(chars, spaces, |c| {
        c.is_ascii_alphanumeric() || "._~+/=-".contains(c)
    });
    (spaces > at + 6 && token > spaces).then_some(token)
}

fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// The last index from `end` down to `least` with a word boundary before it.
fn last_boundary(chars: &[char], least: usize, end: usize) -> Option<usize> {
    (least..=end).rev().find(|&i| boundary(chars, i))
}

/// `\b[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b`.
fn jwt_like(chars: &[char], at: usize) -> Option<usize> {
    if !boundary(chars, at) {
        return None;
    }
    let mut start = at;
    for _ in 0..2 {
        let end = run_end(chars, start, is_token_char);
        if end < start + 8 || chars.get(end) != Some(&'.') {
            return None;
        }
        start = end + 1;
    }
    let end = run_end(chars, start, is_token_char);
    if end < start + 8 {
        return None;
    }
    last_boundary(chars, start + 8, end)
}

/// `\b[A-Za-z0-9_-]{32,}\b`.
fn long_token(chars: &[char], at: usize) -> Option<usize> {
    if !boundary(chars, at) {
        return None;
    }
    let end = run_end(chars, at, is_token_char);
    if end < at + 32 {
        return None;
    }
    last_boundary(chars, at + 32, end)
}
