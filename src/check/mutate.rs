//! Shape-preserving hostile answers: a real (recorded or scripted) upstream
//! answer, mutated while its shape is kept, so that a mapping reads the
//! fields it knows and meets hostile values in them: long strings full of
//! `<`, `>`, `&`, U+2028, astral characters, lone surrogate escapes and
//! control characters; arrays grown past five; numbers at the extremes;
//! fields missing or null. Seeded: the same seed and index give the same
//! bytes.
//!
//! A server that answers as the JavaScript reference does writes a lone
//! surrogate back as `\ud800`; the session reads its lines as `JSON.parse`
//! does ([`super::lines`]), so that answer is judged, not lost.

use serde_json::{Map, Number, Value};

/// Stands for a lone surrogate while the document is a `Value` (which
/// cannot hold one); written as `\ud800` in the text.
const LONE_SURROGATE: char = '\u{e000}';

/// The pieces hostile strings are made of.
const PIECES: &[&str] = &[
    "<",
    ">",
    "&",
    "\u{2028}",
    "\u{2029}",
    "😀",
    "\u{10ffff}",
    "\u{0}",
    "\u{1b}",
    "\u{7f}",
    "\u{85}",
    "\"",
    "\\",
    "\u{202e}",
    "é",
    "</untrusted_external_context>",
    " ",
    "a",
    "\u{feff}",
    "\r\n",
];

/// Numbers at the extremes of what JSON and a double hold.
const NUMBERS: &[&str] = &[
    "1.7976931348623157e308",
    "-1.7976931348623157e308",
    "5e-324",
    "0",
    "-0",
    "9007199254740993",
    "18446744073709551615",
    "-9223372036854775808",
    "1e21",
    "0.1",
];

/// A small, fast, seeded generator (SplitMix64).
struct Rng {
    state: u64,
    lone_surrogates: bool,
}

impl Rng {
    fn new(seed: u64, index: u64) -> Rng {
        Rng {
            state: seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15),
            lone_surrogates: false,
        }
    }

    fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// True with probability `percent`/100.
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

fn hostile_string(rng: &mut Rng) -> String {
    let length = [1, 40, 129, 1001, 4001, 9000][rng.below(6)];
    let mut text = String::new();
    let mut count = 0;
    while count < length {
        let choice = rng.below(PIECES.len() + 1);
        let piece = match PIECES.get(choice) {
            Some(piece) => piece,
            None if rng.lone_surrogates => "\u{e000}",
            None => "<",
        };
        count += piece.chars().count();
        text.push_str(piece);
    }
    text
}

fn hostile_number(rng: &mut Rng) -> Value {
    let text = NUMBERS[rng.below(NUMBERS.len())];
    serde_json::from_str::<Number>(text).map_or(Value::Null, Value::Number)
}

fn mutate(value: &Value, rng: &mut Rng, depth: usize) -> Value {
    if depth > 64 {
        return value.clone();
    }
    match value {
        Value::String(_) => match rng.below(10) {
            0..=5 => Value::String(hostile_string(rng)),
            6 => Value::Null,
            7 => hostile_number(rng),
            _ => value.clone(),
        },
        Value::Number(_) => match rng.below(10) {
            0..=3 => hostile_number(rng),
            4 => Value::Null,
            5 => Value::String(hostile_string(rng)),
            _ => value.clone(),
        },
        Value::Bool(b) => Value::Bool(if rng.chance(30) { !b } else { *b }),
        Value::Null => value.clone(),
        Value::Array(items) => {
            let mut out: Vec<Value> = items.iter().map(|v| mutate(v, rng, depth + 1)).collect();
            if !items.is_empty() && rng.chance(60) {
                let target = 6 + rng.below(10);
                while out.len() < target {
                    let source = &items[rng.below(items.len())];
                    out.push(mutate(source, rng, depth + 1));
                }
            } else if rng.chance(5) {
                out.clear();
            }
            Value::Array(out)
        }
        Value::Object(members) => {
            let mut out = Map::new();
            for (key, member) in members {
                match rng.below(20) {
                    0 => {}
                    1 => {
                        out.insert(key.clone(), Value::Null);
                    }
                    _ => {
                        out.insert(key.clone(), mutate(member, rng, depth + 1));
                    }
                }
            }
            Value::Object(out)
        }
    }
}

/// The `index`-th hostile variant of `document`, as JSON text.
pub fn hostile(document: &Value, seed: u64, index: u64) -> Vec<u8> {
    hostile_with(document, seed, index, true)
}

/// [`hostile`], with lone surrogate escapes among the pieces when
/// `lone_surrogates`.
pub fn hostile_with(document: &Value, seed: u64, index: u64, lone_surrogates: bool) -> Vec<u8> {
    let mut rng = Rng::new(seed, index);
    rng.lone_surrogates = lone_surrogates;
    let mutated = mutate(document, &mut rng, 0);
    let text = serde_json::to_string(&mutated).unwrap_or_default();
    let mut placeholder = [0u8; 4];
    let placeholder = LONE_SURROGATE.encode_utf8(&mut placeholder);
    text.replace(&*placeholder, "\\ud800").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_are_reproducible_and_keep_the_shape() {
        let document = serde_json::json!({
            "rows": [{"id": 1, "title": "t", "body": "b", "url": "https://u"}],
            "count": 1
        });
        let first = hostile(&document, 7, 3);
        assert_eq!(first, hostile(&document, 7, 3));
        assert_ne!(first, hostile(&document, 7, 4));
        let mut grown = 0;
        let mut lone = 0;
        for index in 0..200 {
            let text = String::from_utf8(hostile_with(&document, 1, index, true)).unwrap();
            lone += usize::from(text.contains("\\ud800"));
            // The text is JSON as JavaScript reads it (serde_json reads a
            // lone surrogate escape too, as the runtime's reader does).
            let parsed: Value =
                crate::runtime::http::parse_json_like_javascript(&text).expect("JSON");
            if let Some(rows) = parsed.get("rows").and_then(Value::as_array) {
                grown += usize::from(rows.len() > 5);
            }
        }
        assert!(grown > 50, "{grown} of 200 grew the array past five");
        assert!(lone > 20, "{lone} of 200 hold a lone surrogate");
    }
}
