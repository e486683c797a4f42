//! The contract data `ecp check` holds a target to, embedded in the binary:
//! ecp's `contracts/v1` vectors and output schema, Qwen's published vectors.
//! Read once and refused whole when any part is unreadable or empty, so that
//! no check can pass on "0 vectors" (the run stops with exit 2 instead).

use std::sync::OnceLock;

use serde_json::Value;

use crate::contracts::{
    OUTPUT_SCHEMA_JSON, QWEN_TEST_VECTORS_JSON, RENDER_VECTORS_JSON, TEST_VECTORS_JSON,
};

/// A named input, as the vector files hold them.
pub type NamedInput = (String, Value);

/// Everything the suite and the schema judge read.
pub struct Embedded {
    /// `contracts/v1` `validInputs` and `invalidInputs` whose value is an
    /// object (the arguments of a call).
    pub valid_inputs: Vec<NamedInput>,
    pub invalid_inputs: Vec<NamedInput>,
    /// (upstream body, expected text through the binding).
    pub render_vectors: Vec<(String, String)>,
    /// ecp's own output schema, compiled.
    pub output_validator: jsonschema::Validator,
}

const GROUPS: &[&str] = &[
    "validInputs",
    "invalidInputs",
    "validOutputs",
    "invalidOutputs",
];

/// `file`'s vector groups, each present and non-empty.
fn vector_file(file: &str, json: &str) -> Result<Value, String> {
    let vectors: Value =
        serde_json::from_str(json).map_err(|e| format!("{file} is not JSON: {e}"))?;
    for group in GROUPS {
        match vectors.get(group).and_then(Value::as_array) {
            Some(cases) if !cases.is_empty() => {}
            _ => return Err(format!("{file} has no `{group}` cases")),
        }
    }
    Ok(vectors)
}

fn calls(vectors: &Value, group: &str) -> Vec<NamedInput> {
    vectors[group]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["value"].is_object())
        .map(|c| {
            (
                c["name"].as_str().unwrap_or("").to_owned(),
                c["value"].clone(),
            )
        })
        .collect()
}

impl Embedded {
    /// Reads and checks the four files.
    pub fn parse(
        test_vectors: &str,
        render_vectors: &str,
        output_schema: &str,
        qwen_test_vectors: &str,
    ) -> Result<Embedded, String> {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Vector {
            provider_items: Box<serde_json::value::RawValue>,
            text: String,
            #[serde(default)]
            http_text: Option<String>,
        }
        let vectors = vector_file("contracts/v1/test-vectors.json", test_vectors)?;
        vector_file("contracts/qwen-v1/test-vectors.json", qwen_test_vectors)?;
        let valid_inputs = calls(&vectors, "validInputs");
        let invalid_inputs = calls(&vectors, "invalidInputs");
        if valid_inputs.is_empty() || invalid_inputs.is_empty() {
            return Err("contracts/v1/test-vectors.json has no call arguments to send".into());
        }
        let render: Vec<Vector> = serde_json::from_str(render_vectors)
            .map_err(|e| format!("contracts/v1/render-vectors.json is unreadable: {e}"))?;
        if render.is_empty() {
            return Err("contracts/v1/render-vectors.json holds no vectors".into());
        }
        let render_vectors = render
            .into_iter()
            .map(|v| {
                (
                    format!(r#"{{"items":{}}}"#, v.provider_items.get()),
                    v.http_text.unwrap_or(v.text),
                )
            })
            .collect();
        let schema: Value = serde_json::from_str(output_schema)
            .map_err(|e| format!("the output schema is not JSON: {e}"))?;
        let output_validator = jsonschema::draft202012::new(&schema)
            .map_err(|e| format!("the output schema does not compile: {e}"))?;
        Ok(Embedded {
            valid_inputs,
            invalid_inputs,
            render_vectors,
            output_validator,
        })
    }

    /// The files built into this ecp, read once; `Err` names what is wrong.
    pub fn get() -> Result<&'static Embedded, String> {
        static EMBEDDED: OnceLock<Result<Embedded, String>> = OnceLock::new();
        EMBEDDED
            .get_or_init(|| {
                Embedded::parse(
                    TEST_VECTORS_JSON,
                    RENDER_VECTORS_JSON,
                    OUTPUT_SCHEMA_JSON,
                    QWEN_TEST_VECTORS_JSON,
                )
            })
            .as_ref()
            .map_err(|e| {
                format!("this ecp's embedded contract data is broken ({e}); nothing was checked")
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_data_is_whole() {
        let embedded = Embedded::get().unwrap();
        assert!(embedded.valid_inputs.len() >= 5);
        assert!(embedded.invalid_inputs.len() >= 5);
        assert!(embedded.render_vectors.len() >= 10);
    }

    #[test]
    fn missing_or_empty_data_fails_closed() {
        let ok = (
            TEST_VECTORS_JSON,
            RENDER_VECTORS_JSON,
            OUTPUT_SCHEMA_JSON,
            QWEN_TEST_VECTORS_JSON,
        );
        let fails = |t: &str, r: &str, o: &str, q: &str| Embedded::parse(t, r, o, q).err();
        assert!(fails(ok.0, ok.1, ok.2, ok.3).is_none());
        assert!(fails("", ok.1, ok.2, ok.3).unwrap().contains("not JSON"));
        assert!(
            fails("{}", ok.1, ok.2, ok.3)
                .unwrap()
                .contains("no `validInputs`")
        );
        let no_invalid = r#"{"validInputs":[{"name":"a","value":{"query":"a"}}],"invalidInputs":[],"validOutputs":[1],"invalidOutputs":[1]}"#;
        assert!(
            fails(no_invalid, ok.1, ok.2, ok.3)
                .unwrap()
                .contains("invalidInputs")
        );
        assert!(
            fails(ok.0, "[]", ok.2, ok.3)
                .unwrap()
                .contains("holds no vectors")
        );
        assert!(fails(ok.0, "", ok.2, ok.3).unwrap().contains("unreadable"));
        assert!(fails(ok.0, ok.1, "{", ok.3).unwrap().contains("not JSON"));
        assert!(
            fails(ok.0, ok.1, r#"{"type": 5}"#, ok.3)
                .unwrap()
                .contains("does not compile")
        );
        assert!(fails(ok.0, ok.1, ok.2, "{}").unwrap().contains("qwen-v1"));
    }
}
