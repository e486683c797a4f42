//! Judging a declared schema by what it accepts, not by its text.
//!
//! The profile fixes which arguments and results are valid, not how a
//! schema says so: Qwen's own starter declares draft-07 schemas with its own
//! titles, generated from zod. A declared schema conforms when
//!
//! 1. it is a valid JSON Schema of its dialect (`$schema` draft-07 or
//!    2020-12; 2020-12 when absent, as MCP 2025-11-25 says), and
//! 2. it classifies every case right: ecp's `contracts/v1` vectors, Qwen's
//!    published vectors (`contracts/qwen-v1`), and boundary cases at every
//!    bound, including a property nobody declared at every level (which is
//!    how "additional properties are forbidden" is judged).
//!
//! `pattern` is evaluated with ECMAScript semantics (the client that reads
//! the schema is JavaScript): `jsonschema` translates `\s`, `\S`, `\d`, `\w`
//! and `.` to their ECMAScript classes, so `\S` does not match U+FEFF and
//! does match U+0085. Titles and descriptions are free.

use serde_json::{Value, json};

use crate::{
    contracts::{QWEN_TEST_VECTORS_JSON, TEST_VECTORS_JSON},
    profile::NOTICE,
};

/// One instance and whether the profile accepts it.
#[derive(Debug, Clone)]
pub struct Case {
    /// Where it comes from and what it is, e.g. "contracts/v1: 2001 code points".
    pub name: String,
    pub value: Value,
    pub valid: bool,
}

/// Which schema is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    Input,
    Output,
}

/// Cases from one vector file's groups.
fn vector_cases(source: &str, json: &str, valid_group: &str, invalid_group: &str) -> Vec<Case> {
    let vectors: Value = serde_json::from_str(json).unwrap_or_default();
    let group = |name: &str, valid: bool| -> Vec<Case> {
        vectors[name]
            .as_array()
            .map(|cases| {
                cases
                    .iter()
                    .map(|c| Case {
                        name: format!("{source}: {}", c["name"].as_str().unwrap_or("?")),
                        value: c["value"].clone(),
                        valid,
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut cases = group(valid_group, true);
    cases.extend(group(invalid_group, false));
    cases
}

fn case(name: impl Into<String>, value: Value, valid: bool) -> Case {
    Case {
        name: format!("boundary: {}", name.into()),
        value,
        valid,
    }
}

/// Property names a model might pick (the profile's list) and one nobody
/// would declare.
const EXTRA_PROPERTIES: &[&str] = &[
    "tenant",
    "user",
    "repository",
    "corpus",
    "namespace",
    "endpoint",
    "token",
    "filter",
    "limit",
    "ecpUndeclared",
];

fn input_boundaries() -> Vec<Case> {
    let q = |query: Value| json!({ "query": query });
    let mut cases = vec![
        case("a query of 1 code point", q(json!("x")), true),
        case(
            "a query of 2000 code points",
            q(json!("a".repeat(2000))),
            true,
        ),
        case(
            "a query of 2001 code points",
            q(json!("a".repeat(2001))),
            false,
        ),
        case(
            "2000 astral code points (4000 UTF-16 units)",
            q(json!("😀".repeat(2000))),
            true,
        ),
        case(
            "2001 astral code points",
            q(json!("😀".repeat(2001))),
            false,
        ),
        case("an empty query", q(json!("")), false),
        case(
            "U+0085 alone (not ECMAScript whitespace)",
            q(json!("\u{85}")),
            true,
        ),
        case(
            "U+200B alone (not ECMAScript whitespace)",
            q(json!("\u{200b}")),
            true,
        ),
        case(
            "U+FEFF alone (ECMAScript whitespace)",
            q(json!("\u{feff}")),
            false,
        ),
        case(
            "U+3000 alone (ECMAScript whitespace)",
            q(json!("\u{3000}")),
            false,
        ),
        case("a number query", q(json!(1)), false),
        case("a boolean query", q(json!(true)), false),
        case("an object query", q(json!({"query": "x"})), false),
        case("no arguments", json!({}), false),
        case("arguments that are an array", json!(["x"]), false),
        case("arguments that are null", Value::Null, false),
    ];
    for extra in EXTRA_PROPERTIES {
        cases.push(case(
            format!("an extra `{extra}` argument"),
            json!({ "query": "x", *extra: "x" }),
            false,
        ));
    }
    // Extra properties of every JSON type (a schema that forbids only
    // string extras is not closed).
    for (what, value) in extra_values() {
        cases.push(case(
            format!("an extra `filter` argument that is {what}"),
            json!({ "query": "x", "filter": value }),
            false,
        ));
    }
    cases
}

/// One value of every JSON type but string.
fn extra_values() -> [(&'static str, Value); 6] {
    [
        ("a number", json!(1)),
        ("a boolean", json!(true)),
        ("null", Value::Null),
        ("an object", json!({"a": 1})),
        ("an array", json!(["a"])),
        ("an empty object", json!({})),
    ]
}

fn envelope(items: Value) -> Value {
    json!({ "untrusted_external_context": { "notice": NOTICE, "items": items } })
}

/// One item `{"id": "a", "content": "b"}` with `extra`'s members, in an
/// envelope.
fn one_item(extra: Value) -> Value {
    let mut item = json!({ "id": "a", "content": "b" });
    if let (Some(item), Some(extra)) = (item.as_object_mut(), extra.as_object()) {
        item.extend(extra.clone());
    }
    envelope(json!([item]))
}

fn output_boundaries() -> Vec<Case> {
    let mut cases = vec![
        case("no items", envelope(json!([])), true),
        case(
            "5 items",
            envelope(json!(vec![json!({"id": "a", "content": "b"}); 5])),
            true,
        ),
        case(
            "6 items",
            envelope(json!(vec![json!({"id": "a", "content": "b"}); 6])),
            false,
        ),
        case("an integer score", one_item(json!({"score": 1})), true),
        case(
            "a negative fractional score",
            one_item(json!({"score": -0.5})),
            true,
        ),
        case("a boolean score", one_item(json!({"score": true})), false),
        case(
            "a notice that is not a string",
            json!({"untrusted_external_context": {"notice": 1, "items": []}}),
            false,
        ),
        case(
            "items that are an object",
            json!({"untrusted_external_context": {"notice": NOTICE, "items": {}}}),
            false,
        ),
        case(
            "an envelope that is a string",
            json!({"untrusted_external_context": "x"}),
            false,
        ),
        case("a result that is an array", json!([]), false),
    ];
    field_boundaries(&mut cases);
    extra_property_cases(&mut cases);
    cases
}

/// Each item field at its bound and one past it (ASCII and astral code
/// points), empty, a number, and the required ones missing.
fn field_boundaries(cases: &mut Vec<Case>) {
    for (field, bound) in [
        ("id", 128),
        ("content", 1000),
        ("title", 200),
        ("uri", 500),
        ("updatedAt", 64),
    ] {
        for (what, text) in [("ASCII", "a"), ("astral", "😀")] {
            cases.push(case(
                format!("`{field}` of {bound} {what} code points"),
                one_item(json!({ field: text.repeat(bound) })),
                true,
            ));
            cases.push(case(
                format!("`{field}` of {} {what} code points", bound + 1),
                one_item(json!({ field: text.repeat(bound + 1) })),
                false,
            ));
        }
        cases.push(case(
            format!("an empty `{field}`"),
            one_item(json!({ field: "" })),
            false,
        ));
        cases.push(case(
            format!("a number `{field}`"),
            one_item(json!({ field: 1 })),
            false,
        ));
    }
    for field in ["id", "content"] {
        let mut only = json!({ "id": "a", "content": "b" });
        if let Some(object) = only.as_object_mut() {
            object.remove(field);
        }
        cases.push(case(
            format!("an item without `{field}`"),
            envelope(json!([only])),
            false,
        ));
    }
}

/// Extra properties (by name, and of every JSON kind) on an item, the
/// envelope and the result: all refused.
fn extra_property_cases(cases: &mut Vec<Case>) {
    for extra in EXTRA_PROPERTIES {
        cases.push(case(
            format!("an extra item property `{extra}`"),
            one_item(json!({ *extra: "x" })),
            false,
        ));
        cases.push(case(
            format!("an extra envelope property `{extra}`"),
            json!({"untrusted_external_context": {"notice": NOTICE, "items": [], *extra: "x"}}),
            false,
        ));
        cases.push(case(
            format!("an extra top-level property `{extra}`"),
            json!({"untrusted_external_context": {"notice": NOTICE, "items": []}, *extra: "x"}),
            false,
        ));
    }
    for (what, value) in extra_values() {
        cases.push(case(
            format!("an extra item property that is {what}"),
            one_item(json!({ "extra": value.clone() })),
            false,
        ));
        cases.push(case(
            format!("an extra envelope property that is {what}"),
            json!({"untrusted_external_context": {"notice": NOTICE, "items": [], "extra": value.clone()}}),
            false,
        ));
        cases.push(case(
            format!("an extra top-level property that is {what}"),
            json!({"untrusted_external_context": {"notice": NOTICE, "items": []}, "extra": value}),
            false,
        ));
    }
}

/// Every case a declared schema must classify right.
pub fn cases(which: Which) -> Vec<Case> {
    let (valid, invalid) = match which {
        Which::Input => ("validInputs", "invalidInputs"),
        Which::Output => ("validOutputs", "invalidOutputs"),
    };
    let mut cases = vector_cases("contracts/v1", TEST_VECTORS_JSON, valid, invalid);
    cases.extend(vector_cases(
        "qwen-v1",
        QWEN_TEST_VECTORS_JSON,
        valid,
        invalid,
    ));
    cases.extend(match which {
        Which::Input => input_boundaries(),
        Which::Output => output_boundaries(),
    });
    cases
}

/// The dialect a schema declares.
fn draft(schema: &Value) -> Result<jsonschema::Draft, String> {
    match schema.get("$schema") {
        None => Ok(jsonschema::Draft::Draft202012),
        Some(Value::String(uri)) => {
            let uri = uri
                .trim_end_matches('#')
                .trim_start_matches("http://")
                .trim_start_matches("https://");
            match uri {
                "json-schema.org/draft-07/schema" => Ok(jsonschema::Draft::Draft7),
                "json-schema.org/draft/2020-12/schema" => Ok(jsonschema::Draft::Draft202012),
                _ => Err(format!(
                    "declares `$schema` {}; the profile takes draft-07 or 2020-12",
                    crate::lint::secrets::shown(uri)
                )),
            }
        }
        Some(other) => Err(format!("`$schema` is {other}, not a URI string")),
    }
}

/// A validator for a declared schema, after checking it against its
/// meta-schema. Patterns use the linear-time engine (a declared schema is
/// input from the target).
pub fn compile(schema: &Value) -> Result<jsonschema::Validator, String> {
    let draft = draft(schema)?;
    let meta = match draft {
        jsonschema::Draft::Draft7 => jsonschema::draft7::meta::validate(schema),
        _ => jsonschema::draft202012::meta::validate(schema),
    };
    if let Err(error) = meta {
        return Err(format!(
            "is not a valid JSON Schema: {error} at {}",
            error.instance_path()
        ));
    }
    jsonschema::options()
        .with_draft(draft)
        .with_pattern_options(jsonschema::PatternOptions::regex())
        .build(schema)
        .map_err(|error| format!("cannot be compiled: {error}"))
}

/// Whether `schema` classifies every case right; `Ok` says how many cases,
/// `Err` names the first it gets wrong.
pub fn judge(schema: &Value, which: Which) -> Result<String, String> {
    let validator = compile(schema)?;
    let cases = cases(which);
    for case in &cases {
        let accepted = validator.is_valid(&case.value);
        if accepted != case.valid {
            return Err(format!(
                "it {} `{}`, which the profile {}",
                if accepted { "accepts" } else { "refuses" },
                case.name,
                if case.valid { "accepts" } else { "refuses" },
            ));
        }
    }
    Ok(format!(
        "classifies all {} vectors and boundary cases as the profile does",
        cases.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contracts::{
        INPUT_SCHEMA_JSON, OUTPUT_SCHEMA_JSON, QWEN_INPUT_SCHEMA_JSON, QWEN_OUTPUT_SCHEMA_JSON,
    };

    fn parsed(json: &str) -> Value {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn the_canonical_and_qwens_schemas_conform() {
        for (json, which) in [
            (INPUT_SCHEMA_JSON, Which::Input),
            (OUTPUT_SCHEMA_JSON, Which::Output),
            (QWEN_INPUT_SCHEMA_JSON, Which::Input),
            (QWEN_OUTPUT_SCHEMA_JSON, Which::Output),
        ] {
            judge(&parsed(json), which).unwrap();
        }
    }

    #[test]
    fn a_wrong_schema_is_told_which_case_it_misclassifies() {
        let mut schema = parsed(QWEN_INPUT_SCHEMA_JSON);
        schema["properties"]["query"]["maxLength"] = json!(2001);
        let error = judge(&schema, Which::Input).unwrap_err();
        assert!(error.contains("2001 code points"), "{error}");

        let mut schema = parsed(QWEN_OUTPUT_SCHEMA_JSON);
        schema["properties"]["untrusted_external_context"]["properties"]["items"]["items"]
            .as_object_mut()
            .unwrap()
            .remove("additionalProperties");
        let error = judge(&schema, Which::Output).unwrap_err();
        assert!(
            error.contains("it accepts `contracts/v1: snake_case updated_at`"),
            "{error}"
        );

        // `\s` judged as Rust's regex would judge it (U+0085 as whitespace)
        // is wrong for a JavaScript client.
        let mut schema = parsed(QWEN_INPUT_SCHEMA_JSON);
        schema["properties"]["query"]["pattern"] = json!("[^\\s\\u0085]");
        let error = judge(&schema, Which::Input).unwrap_err();
        assert!(error.contains("U+0085"), "{error}");

        let mut schema = parsed(INPUT_SCHEMA_JSON);
        schema["$schema"] = json!("http://json-schema.org/draft-04/schema#");
        assert!(
            judge(&schema, Which::Input)
                .unwrap_err()
                .contains("draft-07 or 2020-12")
        );

        let schema = json!({"type": "object", "properties": {"query": {"type": "strin"}}});
        assert!(
            judge(&schema, Which::Input)
                .unwrap_err()
                .contains("not a valid JSON Schema")
        );
    }
}
