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
//! `pattern` is judged as ECMA-262 says, with the `u` flag Ajv (and so
//! Qwen Code) uses: `regress`, an ECMAScript engine, compiles and matches
//! it ([`EcmaPattern`], registered over `jsonschema`'s own `pattern`).
//! Lookahead, lookbehind, backreferences and lone-surrogate classes work:
//! zod's code-point-counting pattern
//! `^(?:[\uD800-\uDBFF][\uDC00-\uDFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|[^\uD800-\uDBFF]){1,2000}$`
//! (Qwen's mem0 provider) counts code points as Ajv does. `\S` does not
//! match U+FEFF and does match U+0085; `\d` is ASCII; `.` is one code point.
//! `jsonschema` 0.61 offers only `regex` and `fancy-regex` as pattern
//! engines, and its translation cannot compile surrogate classes.
//!
//! Lone surrogates: the strings ecp matches are its own cases, Rust strings,
//! so always well-formed (a target's JSON text with a lone `\ud800` escape
//! is refused by the JSON reader before any schema is judged). Under the `u`
//! flag an ECMAScript string is read as code points, a pair being one, so
//! matching the UTF-8 string's code points is what Ajv does with the UTF-16
//! one; a surrogate class in a pattern is a class of the code points
//! U+D800-U+DFFF, which a well-formed string never holds.
//!
//! Cost (debug build with the pattern engines at `opt-level = 3`, as
//! `cargo test` builds them): compiling a schema takes 0.1-0.3 ms and
//! judging one (its 62 or 145 cases built and matched) 1-4 ms, for ecp's,
//! Qwen's and zod's schemas alike; the counting pattern matches 2001 ASCII
//! or astral characters in 50-70 µs.
//!
//! Hang defence: `regress` backtracks, with no step budget, and a declared
//! schema is the target's input (`^(?:a|a)*$` on 20 `a`s and a `!` takes
//! 50 ms, four times more for every two characters). So `ecp check` judges
//! on a thread of its own and gives up after [`JUDGE_BUDGET`]
//! ([`judge_bounded`]): "cannot judge", a warning. What ecp cannot compile
//! (a pattern `regress` refuses, a name in `patternProperties` that
//! `jsonschema`'s translation onto the linear `regex` engine cannot take)
//! is "cannot judge" too, never a FAIL; a pattern is a FAIL ("not a valid
//! JSON Schema") only when both `jsonschema`'s ECMAScript syntax check and
//! `regress` refuse it. Titles and descriptions are free.

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

/// A `$schema` the profile does not take.
#[derive(Debug, thiserror::Error)]
enum Dialect {
    #[error("declares `$schema` {0}; the profile takes draft-07 or 2020-12")]
    Other(String),
    #[error("`$schema` is {0}, not a URI string")]
    NotAString(Value),
}

/// A `pattern` ecp cannot compile as an ECMAScript regular expression; the
/// pattern shown escaped and bounded.
#[derive(Debug, thiserror::Error)]
#[error("`pattern` {shown} is not an ECMAScript regular expression ecp can compile ({error})")]
pub struct BadPattern {
    shown: String,
    error: regress::Error,
}

/// The dialect a schema declares.
fn draft(schema: &Value) -> Result<jsonschema::Draft, Dialect> {
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
                _ => Err(Dialect::Other(crate::text::outside::shown(uri))),
            }
        }
        Some(other) => Err(Dialect::NotAString(other.clone())),
    }
}

/// What ecp concludes about a declared schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judgement {
    /// It classifies every case as the profile does (how many, in words).
    Conforms(String),
    /// The target's defect: not a valid JSON Schema of a dialect the
    /// profile takes, or a case it gets wrong (which).
    Fails(String),
    /// ecp cannot compile it or cannot finish matching its patterns, so it
    /// says nothing either way (why): never a FAIL of the target, never a
    /// pass.
    CannotJudge(String),
}

/// How long judging one schema may take before ecp gives up on it (a
/// `pattern` backtracking without end). The profile's own schemas and
/// zod's take milliseconds (see the module doc); this is a bound on a
/// hostile schema, not a measure of a slow one.
pub const JUDGE_BUDGET: std::time::Duration = std::time::Duration::from_secs(10);

/// The `pattern` keyword as ECMA-262 says: compiled by `regress` with the
/// `u` flag (what Ajv, and so Qwen Code, uses) and matched anywhere in the
/// string (a JSON Schema pattern is not anchored).
struct EcmaPattern(regress::Regex);

impl<'i> jsonschema::Keyword<'i> for EcmaPattern {
    fn validate(&self, instance: &'i Value) -> Result<(), jsonschema::ValidationError<'i>> {
        if self.is_valid(instance) {
            Ok(())
        } else {
            Err(jsonschema::ValidationError::custom(
                "does not match the ECMAScript `pattern`",
            ))
        }
    }

    fn is_valid(&self, instance: &'i Value) -> bool {
        instance
            .as_str()
            .is_none_or(|text| self.0.find(text).is_some())
    }
}

/// Compiles one `pattern` value as an ECMAScript regular expression with
/// the `u` flag; the error names the pattern (shown escaped and bounded).
pub fn ecma_regex(pattern: &str) -> Result<regress::Regex, BadPattern> {
    regress::Regex::with_flags(pattern, "u").map_err(|error| BadPattern {
        shown: crate::text::outside::shown(pattern),
        error,
    })
}

fn pattern_keyword<'a>(
    _parent: &'a serde_json::Map<String, Value>,
    value: &'a Value,
    _path: jsonschema::paths::Location,
) -> Result<Box<dyn for<'i> jsonschema::Keyword<'i>>, jsonschema::ValidationError<'a>> {
    // The meta-schema has already made it a string.
    let pattern = value.as_str().unwrap_or_default();
    match ecma_regex(pattern) {
        Ok(regex) => Ok(Box::new(EcmaPattern(regex))),
        Err(reason) => Err(jsonschema::ValidationError::custom(reason.to_string())),
    }
}

/// A validator for a declared schema, after checking it against its
/// meta-schema. `Err` is [`Judgement::Fails`] when the schema is the
/// target's defect, [`Judgement::CannotJudge`] when ecp cannot compile it.
///
/// `pattern` is ECMAScript's ([`EcmaPattern`]); `patternProperties` names
/// keep `jsonschema`'s ECMAScript translation on the linear-time `regex`
/// engine, and a name that engine cannot take is "cannot judge".
pub fn compile(schema: &Value) -> Result<jsonschema::Validator, Judgement> {
    let draft = draft(schema).map_err(|why| Judgement::Fails(why.to_string()))?;
    let meta = match draft {
        jsonschema::Draft::Draft7 => jsonschema::draft7::meta::validate(schema),
        _ => jsonschema::draft202012::meta::validate(schema),
    };
    if let Err(error) = meta {
        return Err(meta_error(&error));
    }
    jsonschema::options()
        .with_draft(draft)
        .with_pattern_options(jsonschema::PatternOptions::regex())
        .with_keyword("pattern", pattern_keyword)
        .build(schema)
        .map_err(|error| Judgement::CannotJudge(format!("ecp cannot compile it: {error}")))
}

/// What a meta-schema error makes of the schema. A pattern the
/// meta-schema's `format: "regex"` refuses (`jsonschema`'s own ECMAScript
/// syntax reader) is a FAIL only when `regress` refuses it too: two readers
/// that disagree make it "cannot judge", never a false FAIL.
fn meta_error(error: &jsonschema::ValidationError<'_>) -> Judgement {
    let at = error.instance_path();
    if let jsonschema::error::ValidationErrorKind::Format { format } = error.kind()
        && format == "regex"
        && let Some(pattern) = error.instance().as_str()
        && ecma_regex(pattern).is_ok()
    {
        return Judgement::CannotJudge(format!(
            "`jsonschema`'s syntax check refuses the pattern {} at {at}, which `regress` \
             compiles as ECMAScript",
            crate::text::outside::shown(pattern)
        ));
    }
    Judgement::Fails(format!("is not a valid JSON Schema: {error} at {at}"))
}

/// Whether `schema` classifies every case right, judged here and now with
/// no bound on time (see [`judge_bounded`]).
pub fn judge(schema: &Value, which: Which) -> Judgement {
    let validator = match compile(schema) {
        Ok(validator) => validator,
        Err(judgement) => return judgement,
    };
    let cases = cases(which);
    for case in &cases {
        let accepted = validator.is_valid(&case.value);
        if accepted != case.valid {
            return Judgement::Fails(format!(
                "it {} `{}`, which the profile {}",
                if accepted { "accepts" } else { "refuses" },
                case.name,
                if case.valid { "accepts" } else { "refuses" },
            ));
        }
    }
    Judgement::Conforms(format!(
        "classifies all {} vectors and boundary cases as the profile does",
        cases.len()
    ))
}

/// [`judge`] on a thread of its own, given up after `budget`: ECMAScript
/// patterns backtrack, and a declared schema is the target's input, so a
/// pattern must not be able to hang ecp. A judgement given up on is
/// "cannot judge"; its thread is left to end with the process (nothing in
/// a match can be interrupted), and `ecp check` exits when its run ends.
pub async fn judge_bounded(schema: Value, which: Which, budget: std::time::Duration) -> Judgement {
    bounded(move || judge(&schema, which), budget).await
}

/// `work` on a thread of its own, "cannot judge" when it has not given a
/// judgement after `budget`.
async fn bounded(
    work: impl FnOnce() -> Judgement + Send + 'static,
    budget: std::time::Duration,
) -> Judgement {
    let (sender, receiver) = tokio::sync::oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("ecp-schema-judge".into())
        .spawn(move || {
            let _ = sender.send(work());
        });
    if let Err(error) = spawned {
        return Judgement::CannotJudge(format!("ecp could not start judging it: {error}"));
    }
    match tokio::time::timeout(budget, receiver).await {
        Ok(Ok(judgement)) => judgement,
        Ok(Err(_)) => Judgement::CannotJudge("judging it stopped without a verdict".into()),
        Err(_) => Judgement::CannotJudge(format!(
            "its patterns did not finish matching ecp's cases within {} s (an ECMAScript \
             pattern that backtracks without end); ecp gave up rather than hang",
            budget.as_secs()
        )),
    }
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

    /// The reason of a FAIL (anything else fails the test).
    fn failure(judgement: Judgement) -> String {
        match judgement {
            Judgement::Fails(reason) => reason,
            other => panic!("not a FAIL: {other:?}"),
        }
    }

    #[test]
    fn the_canonical_and_qwens_schemas_conform() {
        for (json, which) in [
            (INPUT_SCHEMA_JSON, Which::Input),
            (OUTPUT_SCHEMA_JSON, Which::Output),
            (QWEN_INPUT_SCHEMA_JSON, Which::Input),
            (QWEN_OUTPUT_SCHEMA_JSON, Which::Output),
        ] {
            assert!(
                matches!(judge(&parsed(json), which), Judgement::Conforms(_)),
                "{json}"
            );
        }
    }

    #[test]
    fn a_wrong_schema_is_told_which_case_it_misclassifies() {
        let mut schema = parsed(QWEN_INPUT_SCHEMA_JSON);
        schema["properties"]["query"]["maxLength"] = json!(2001);
        let error = failure(judge(&schema, Which::Input));
        assert!(error.contains("2001 code points"), "{error}");

        let mut schema = parsed(QWEN_OUTPUT_SCHEMA_JSON);
        schema["properties"]["untrusted_external_context"]["properties"]["items"]["items"]
            .as_object_mut()
            .unwrap()
            .remove("additionalProperties");
        let error = failure(judge(&schema, Which::Output));
        assert!(
            error.contains("it accepts `contracts/v1: snake_case updated_at`"),
            "{error}"
        );

        // `\s` judged as Rust's regex would judge it (U+0085 as whitespace)
        // is wrong for a JavaScript client.
        let mut schema = parsed(QWEN_INPUT_SCHEMA_JSON);
        schema["properties"]["query"]["pattern"] = json!("[^\\s\\u0085]");
        let error = failure(judge(&schema, Which::Input));
        assert!(error.contains("U+0085"), "{error}");

        let mut schema = parsed(INPUT_SCHEMA_JSON);
        schema["$schema"] = json!("http://json-schema.org/draft-04/schema#");
        assert!(failure(judge(&schema, Which::Input)).contains("draft-07 or 2020-12"));

        let schema = json!({"type": "object", "properties": {"query": {"type": "strin"}}});
        assert!(failure(judge(&schema, Which::Input)).contains("not a valid JSON Schema"));
    }

    /// An input schema shaped as Qwen's mem0 provider's is (zod's output
    /// for a string bounded by a code-point-counting pattern).
    fn counting_input_schema() -> Value {
        json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {"query": {"type": "string", "allOf": [
                {"pattern": "\\S"},
                {"pattern": COUNTING_2000},
            ]}},
            "required": ["query"],
            "additionalProperties": false
        })
    }

    const COUNTING_2000: &str = "^(?:[\\uD800-\\uDBFF][\\uDC00-\\uDFFF]|[\\uD800-\\uDBFF](?![\\uDC00-\\uDFFF])|[^\\uD800-\\uDBFF]){1,2000}$";

    fn matches(pattern: &str, text: &str) -> bool {
        ecma_regex(pattern).unwrap().find(text).is_some()
    }

    #[test]
    fn patterns_are_ecmascript_with_the_u_flag() {
        // Code points counted through lookahead and lone-surrogate classes:
        // a well-formed string holds no surrogate code point, so an astral
        // character is one `[^\uD800-\uDBFF]`.
        for (text, expected) in [
            ("a".repeat(2000), true),
            ("a".repeat(2001), false),
            ("😀".repeat(2000), true),
            ("😀".repeat(2001), false),
            (format!("{}a", "😀".repeat(1999)), true),
            (format!("{}a", "😀".repeat(2000)), false),
            (String::new(), false),
        ] {
            assert_eq!(matches(COUNTING_2000, &text), expected, "{}", text.len());
        }
        assert!(!matches("[\\uD800-\\uDFFF]", "a😀\u{ffff}\u{10ffff}"));
        assert!(matches("^[^\\uD800-\\uDBFF]$", "😀"));
        // A surrogate pair written as escapes is one code point under `u`.
        assert!(matches("^\\uD83D\\uDE00$", "😀"));
        assert!(matches("^\\u{1F600}$", "😀"));
        // Lookahead and lookbehind, backreferences.
        assert!(matches("^(?=.*\\d)(?!.*x).+$", "a1"));
        assert!(!matches("^(?=.*\\d)(?!.*x).+$", "a1x"));
        assert!(matches("(?<=a)b", "ab"));
        assert!(matches("^(a+)-\\1$", "aa-aa"));
        // `\d` is ASCII only; `\s` is ECMAScript's white space and line
        // terminators (U+FEFF and U+3000 in, U+0085 and U+200B out).
        assert!(!matches("\\d", "\u{663}"));
        assert!(matches("^\\d$", "7"));
        for space in ["\u{feff}", "\u{3000}", "\u{a0}", "\u{2028}", "\t"] {
            assert!(matches("^\\s$", space), "{space:?}");
        }
        for not_space in ["\u{85}", "\u{200b}", "a"] {
            assert!(!matches("\\s", not_space), "{not_space:?}");
            assert!(matches("\\S", not_space), "{not_space:?}");
        }
        // `.` is one code point and no line terminator.
        assert!(matches("^.$", "😀"));
        for terminator in ["\n", "\r", "\u{2028}", "\u{2029}"] {
            assert!(!matches(".", terminator), "{terminator:?}");
        }
        // Not anchored unless it says so.
        assert!(matches("b", "abc"));
    }

    #[test]
    fn a_code_point_counting_schema_conforms() {
        let judgement = judge(&counting_input_schema(), Which::Input);
        assert!(matches!(judgement, Judgement::Conforms(_)), "{judgement:?}");
        // Off by one is still a FAIL.
        let mut schema = counting_input_schema();
        schema["properties"]["query"]["allOf"][1]["pattern"] =
            json!(COUNTING_2000.replace("2000", "2001"));
        let error = failure(judge(&schema, Which::Input));
        assert!(error.contains("2001 code points"), "{error}");
    }

    #[test]
    fn what_ecp_cannot_compile_or_finish_is_not_judged() {
        // A pattern `jsonschema`'s syntax check takes and `regress` refuses
        // (`\p{Foo}`: no such property): ecp cannot judge it.
        let mut schema = parsed(QWEN_INPUT_SCHEMA_JSON);
        schema["properties"]["query"]["pattern"] = json!("\\p{Foo}");
        let Judgement::CannotJudge(reason) = judge(&schema, Which::Input) else {
            panic!("judged");
        };
        assert!(reason.contains("\\p{Foo}"), "{reason}");
        // One both refuse is the target's defect.
        schema["properties"]["query"]["pattern"] = json!("[");
        let error = failure(judge(&schema, Which::Input));
        assert!(error.contains("is not a \"regex\""), "{error}");

        // Work that gives no judgement within its budget: "cannot judge".
        let (release, held) = std::sync::mpsc::channel::<()>();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let judgement = runtime.block_on(bounded(
            move || {
                let _ = held.recv();
                Judgement::Conforms("too late".into())
            },
            std::time::Duration::ZERO,
        ));
        drop(release);
        let Judgement::CannotJudge(reason) = judgement else {
            panic!("{judgement:?}");
        };
        assert!(reason.contains("gave up rather than hang"), "{reason}");
    }
}
