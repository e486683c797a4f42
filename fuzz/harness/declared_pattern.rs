//! A `pattern` a target declares in its tool schemas, as `ecp check`
//! compiles it (`ecp::check::schema`): the input split at its first 0xff
//! byte into the pattern and a string to match. Whatever the bytes, nothing
//! panics, and a pattern FAILs a schema only when the ECMAScript engine
//! refuses it too (two readers that disagree make "cannot judge").

use ecp::check::schema::{Judgement, compile, ecma_regex};
use serde_json::json;

/// The longest string matched: `regress` backtracks, and the hang defence
/// of `ecp check` is its time budget, not this harness.
const MATCHED_CHARS: usize = 8;

/// One input, as the fuzz target and the seed replay in `cargo test` run it.
pub fn run(data: &[u8]) {
    let (pattern, text) = match data.iter().position(|b| *b == 0xff) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let pattern = String::from_utf8_lossy(pattern);
    let text: String = String::from_utf8_lossy(text)
        .chars()
        .take(MATCHED_CHARS)
        .collect();
    let compiled = ecma_regex(&pattern);
    if let Ok(regex) = &compiled {
        let _ = regex.find(&text);
    }
    for draft in [
        "http://json-schema.org/draft-07/schema#",
        "https://json-schema.org/draft/2020-12/schema",
    ] {
        let schema = json!({"$schema": draft, "type": "string", "pattern": &*pattern});
        match compile(&schema) {
            Ok(validator) => {
                assert!(compiled.is_ok(), "{pattern:?} compiled without regress");
                let _ = validator.is_valid(&json!(text));
            }
            Err(Judgement::Fails(reason)) => {
                assert!(compiled.is_err(), "{pattern:?} failed: {reason}");
            }
            Err(_) => {}
        }
    }
}
