//! `contracts/v1` checked both ways: every vector against the schemas, the
//! schema bounds against the code's constants, the render vectors against
//! the Rust renderer, and the vector file against its ECMAScript generator.

use std::{path::Path, process::Command, sync::OnceLock};

use ecp::{
    contracts::{INPUT_SCHEMA_JSON, OUTPUT_SCHEMA_JSON, RENDER_VECTORS_JSON, TEST_VECTORS_JSON},
    profile::{self, query_from_arguments},
    providers::http::{parse_json_like_javascript, parse_search_response},
    runtime::ProviderItem,
};
use serde::Deserialize;
use serde_json::Value;

pub fn input_schema() -> &'static jsonschema::Validator {
    static SCHEMA: OnceLock<jsonschema::Validator> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        jsonschema::draft202012::new(&serde_json::from_str(INPUT_SCHEMA_JSON).unwrap()).unwrap()
    })
}

pub fn output_schema() -> &'static jsonschema::Validator {
    static SCHEMA: OnceLock<jsonschema::Validator> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        jsonschema::draft202012::new(&serde_json::from_str(OUTPUT_SCHEMA_JSON).unwrap()).unwrap()
    })
}

#[derive(Deserialize)]
struct Case {
    name: String,
    value: Value,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct TestVectors {
    valid_inputs: Vec<Case>,
    invalid_inputs: Vec<Case>,
    valid_outputs: Vec<Case>,
    invalid_outputs: Vec<Case>,
}

/// One render vector; `provider_items` is kept as written (it may hold
/// literals such as `1e400` that only JavaScript reads as numbers).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RenderVector {
    pub name: String,
    pub provider_items: Box<serde_json::value::RawValue>,
    pub text: String,
    #[serde(default)]
    pub http_text: Option<String>,
}

pub fn render_vectors() -> Vec<RenderVector> {
    serde_json::from_str(RENDER_VECTORS_JSON).expect("render-vectors.json parses")
}

fn test_vectors() -> TestVectors {
    serde_json::from_str(TEST_VECTORS_JSON).expect("test-vectors.json parses")
}

#[test]
fn schemas_are_2020_12_and_closed() {
    for json in [INPUT_SCHEMA_JSON, OUTPUT_SCHEMA_JSON] {
        let schema: Value = serde_json::from_str(json).unwrap();
        assert_eq!(
            schema["$schema"],
            "https://json-schema.org/draft/2020-12/schema"
        );
        assert!(jsonschema::meta::is_valid(&schema));
    }
}

#[test]
fn every_test_vector_validates_both_ways() {
    let vectors = test_vectors();
    let groups = [
        ("validInputs", &vectors.valid_inputs, input_schema(), true),
        (
            "invalidInputs",
            &vectors.invalid_inputs,
            input_schema(),
            false,
        ),
        (
            "validOutputs",
            &vectors.valid_outputs,
            output_schema(),
            true,
        ),
        (
            "invalidOutputs",
            &vectors.invalid_outputs,
            output_schema(),
            false,
        ),
    ];
    for (group, cases, schema, valid) in groups {
        assert!(cases.len() >= 6, "{group} has too few cases");
        for case in cases {
            assert_eq!(
                schema.is_valid(&case.value),
                valid,
                "{group} / {}: schema verdict",
                case.name
            );
        }
    }
}

#[test]
fn runtime_input_rules_agree_with_the_input_schema() {
    let vectors = test_vectors();
    for (cases, valid) in [
        (&vectors.valid_inputs, true),
        (&vectors.invalid_inputs, false),
    ] {
        for case in cases {
            // MCP arguments are always an object; other shapes stop earlier.
            let Some(arguments) = case.value.as_object() else {
                continue;
            };
            let verdict = query_from_arguments(Some(arguments));
            assert_eq!(verdict.is_ok(), valid, "{}: {verdict:?}", case.name);
        }
    }
}

fn bound(schema: &Value, pointer: &str) -> usize {
    schema
        .pointer(pointer)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{pointer} missing")) as usize
}

#[test]
fn schema_bounds_match_the_code_constants() {
    let input: Value = serde_json::from_str(INPUT_SCHEMA_JSON).unwrap();
    assert_eq!(
        bound(&input, "/properties/query/maxLength"),
        profile::MAX_QUERY_CODE_POINTS
    );
    assert_eq!(bound(&input, "/properties/query/minLength"), 1);

    let output: Value = serde_json::from_str(OUTPUT_SCHEMA_JSON).unwrap();
    let envelope = "/properties/untrusted_external_context/properties";
    let item = format!("{envelope}/items/items/properties");
    assert_eq!(
        output.pointer(&format!("{envelope}/notice/const")),
        Some(&Value::from(profile::NOTICE))
    );
    assert_eq!(
        bound(&output, &format!("{envelope}/items/maxItems")),
        profile::MAX_ITEMS
    );
    for (field, max) in [
        ("id", profile::MAX_ID),
        ("content", profile::MAX_CONTENT),
        ("title", profile::MAX_TITLE),
        ("uri", profile::MAX_URI),
        ("updatedAt", profile::MAX_UPDATED_AT),
    ] {
        assert_eq!(
            bound(&output, &format!("{item}/{field}/maxLength")),
            max,
            "{field}"
        );
        assert_eq!(
            bound(&output, &format!("{item}/{field}/minLength")),
            1,
            "{field}"
        );
    }
}

#[test]
fn the_input_pattern_is_exactly_the_ecmascript_whitespace_set() {
    // Every code point of the BMP, one at a time, against the schema and
    // against the runtime's own whitespace test.
    for code in 0..=0xFFFFu32 {
        let Some(c) = char::from_u32(code) else {
            continue;
        };
        let value = serde_json::json!({ "query": c.to_string() });
        assert_eq!(
            input_schema().is_valid(&value),
            !profile::is_ecmascript_whitespace(c),
            "U+{code:04X}"
        );
    }
}

#[test]
fn rust_renderer_reproduces_every_render_vector() {
    let vectors = render_vectors();
    assert!(vectors.len() >= 20);
    for vector in &vectors {
        let items =
            parse_json_like_javascript(vector.provider_items.get()).expect("providerItems parse");
        let items: Vec<_> = items
            .as_array()
            .expect("providerItems is an array")
            .iter()
            .map(ProviderItem::from_json)
            .collect();
        let envelope = profile::render(&items);
        assert_eq!(envelope.text, vector.text, "{}", vector.name);
        assert_eq!(
            serde_json::from_str::<Value>(&envelope.text).unwrap(),
            envelope.structured,
            "{}",
            vector.name
        );
        assert!(
            output_schema().is_valid(&envelope.structured),
            "{}",
            vector.name
        );
        assert!(profile::ecmascript::utf16_len(&envelope.text) <= profile::MAX_TEXT_UTF16);

        // The same items through the Generic HTTP Search V1 binding.
        let body = format!(r#"{{"items":{}}}"#, vector.provider_items.get());
        let through_binding =
            parse_search_response(body.as_bytes(), profile::PROVIDER_LIMIT).unwrap();
        assert_eq!(
            profile::render(&through_binding).text,
            *vector.http_text.as_ref().unwrap_or(&vector.text),
            "{} (through the binding)",
            vector.name
        );
    }
}

#[test]
fn vector_files_match_their_ecmascript_generator() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let output = Command::new("node")
        .arg(root.join("xtask/contracts/generate.mjs"))
        .arg("--check")
        .output()
        .expect("node runs (Node.js 20 is required by the test suite)");
    assert!(
        output.status.success(),
        "contracts/v1 vectors differ from the ECMAScript oracle:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Qwen's published draft-07 schemas and ecp's 2020-12 schemas classify
/// every case `ecp check` judges a declared schema by (both vector files and
/// the boundary cases) as the profile does, under two validators: ecp's
/// (the `jsonschema` crate with ECMAScript patterns) and Ajv, the
/// JavaScript validator Qwen's own tests use (patterns with the `u` flag,
/// lengths in code points).
#[test]
fn qwen_and_ecp_schemas_classify_every_case_alike_in_rust_and_in_ajv() {
    use ecp::{
        check::schema::{Which, cases, compile},
        contracts::{QWEN_INPUT_SCHEMA_JSON, QWEN_OUTPUT_SCHEMA_JSON},
    };
    let ajv = crate::npm::package("ajv", "8.17.1");
    let schemas = [
        ("qwen input", QWEN_INPUT_SCHEMA_JSON, Which::Input),
        ("qwen output", QWEN_OUTPUT_SCHEMA_JSON, Which::Output),
        ("ecp input", INPUT_SCHEMA_JSON, Which::Input),
        ("ecp output", OUTPUT_SCHEMA_JSON, Which::Output),
    ];
    let mut jobs = Vec::new();
    for (name, json, which) in schemas {
        let schema: Value = serde_json::from_str(json).unwrap();
        let validator = compile(&schema).unwrap();
        let cases = cases(which);
        assert!(cases.len() > 50, "{name}: {} cases", cases.len());
        for case in &cases {
            assert_eq!(
                validator.is_valid(&case.value),
                case.valid,
                "{name} (Rust): {}",
                case.name
            );
        }
        jobs.push(serde_json::json!({
            "name": name,
            "schema": schema,
            "values": cases.iter().map(|c| c.value.clone()).collect::<Vec<_>>(),
            "expected": cases.iter().map(|c| c.valid).collect::<Vec<_>>(),
            "names": cases.iter().map(|c| c.name.clone()).collect::<Vec<_>>(),
        }));
    }
    let script = r#"
        const path = require("path");
        const root = process.argv[1];
        const Ajv07 = require(path.join(root, "dist/ajv.js")).default;
        const Ajv2020 = require(path.join(root, "dist/2020.js")).default;
        const jobs = JSON.parse(require("fs").readFileSync(0, "utf8"));
        const wrong = [];
        for (const job of jobs) {
          const draft07 = String(job.schema.$schema || "").includes("draft-07");
          const ajv = draft07 ? new Ajv07({ strict: false }) : new Ajv2020({ strict: false });
          const validate = ajv.compile(job.schema);
          job.values.forEach((value, i) => {
            if (validate(value) !== job.expected[i]) wrong.push(`${job.name}: ${job.names[i]}`);
          });
        }
        process.stdout.write(JSON.stringify(wrong));
    "#;
    let wrong: Vec<String> = crate::npm::node_json(script, &ajv, &jobs);
    assert_eq!(
        wrong,
        Vec::<String>::new(),
        "Ajv disagrees with the profile"
    );
}
