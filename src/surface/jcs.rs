//! The JSON Canonicalization Scheme (RFC 8785): one spelling of a JSON
//! value, so that two texts of the same value (key order, white space,
//! `1.0` or `1`, `\u0041` or `A`) hash alike and any other value does not.
//!
//! Object members are sorted by the UTF-16 code units of their names;
//! strings are written as ECMAScript's `JSON.stringify` writes them (only
//! `"`, `\` and the C0 controls escaped, the short forms where there are
//! some, else `\u00xx` in lower case); numbers as `Number.prototype.
//! toString` writes the IEEE double they parse to (the runtime's
//! [`format_number`](crate::runtime::profile::ecmascript::format_number)),
//! so `1e2`, `100.0` and `100` are one number and an integer past 2^53 is
//! the double nearest to it, as every JavaScript reader of it sees it.

use serde_json::Value;

/// The deepest nesting canonicalized; a deeper value is refused (serde_json
/// stops at 128 when parsing, a value built in code need not).
pub const MAX_DEPTH: usize = 256;

/// A value nested deeper than [`MAX_DEPTH`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the value is nested deeper than {MAX_DEPTH} levels")]
pub struct TooDeep;

/// The canonical text of `value`.
pub fn canonical(value: &Value) -> Result<String, TooDeep> {
    let mut out = String::new();
    write_value(&mut out, value, 0)?;
    Ok(out)
}

fn write_value(out: &mut String, value: &Value, depth: usize) -> Result<(), TooDeep> {
    if depth > MAX_DEPTH {
        return Err(TooDeep);
    }
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            // Every JSON number is an IEEE double to the scheme.
            let x = n.as_f64().unwrap_or(f64::NAN);
            out.push_str(&crate::runtime::profile::ecmascript::format_number(x));
        }
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (at, item) in items.iter().enumerate() {
                if at > 0 {
                    out.push(',');
                }
                write_value(out, item, depth + 1)?;
            }
            out.push(']');
        }
        Value::Object(members) => {
            let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
            sorted.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            out.push('{');
            for (at, (name, member)) in sorted.into_iter().enumerate() {
                if at > 0 {
                    out.push(',');
                }
                write_string(out, name);
                out.push(':');
                write_value(out, member, depth + 1)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

/// `s` quoted as `JSON.stringify` quotes it: serde_json's writer escapes
/// the same characters the same way (`"`, `\`, the short forms, every
/// other C0 control as `\u00xx` in lower case, nothing else).
fn write_string(out: &mut String, s: &str) {
    out.push_str(&serde_json::to_string(s).unwrap_or_else(|_| unreachable!("a string serializes")));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn of(text: &str) -> String {
        canonical(&serde_json::from_str(text).unwrap()).unwrap()
    }

    #[test]
    fn the_rfcs_own_examples() {
        // RFC 8785, 3.2.2 (the sorting example's names) and 3.2.4.
        assert_eq!(
            of(
                r#"{"\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh", "1": "One", "\ud83d\ude00": "Emoji: Grinning Face", "\u0080": "Control", "\u00f6": "Latin Small Letter O With Diaeresis"}"#
            ),
            "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u{80}\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\",\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}"
        );
        assert_eq!(
            of(
                r#"{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001], "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/", "literals": [null, true, false]}"#
            ),
            r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
        );
    }

    #[test]
    fn one_value_one_text() {
        assert_eq!(
            of(r#"{"b":1,"a":[1.0,100,1e2,-0]}"#),
            r#"{"a":[1,100,100,0],"b":1}"#
        );
        // Past 2^53 an integer is the double nearest to it.
        assert_eq!(of("9007199254740993"), "9007199254740992");
        // Confusables stay themselves: a Cyrillic о is not an o.
        assert_ne!(of(r#""context""#), of("\"c\u{43e}ntext\""));
    }

    #[test]
    fn too_deep_is_refused() {
        let mut deep = json!(1);
        for _ in 0..=MAX_DEPTH {
            deep = json!([deep]);
        }
        assert_eq!(canonical(&deep), Err(TooDeep));
    }
}
