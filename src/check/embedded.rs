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

/// What is wrong with one of the files built into this ecp: a defect of
/// the build, refused rather than run with fewer checks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("this ecp's embedded contract data is broken ({file} {what}); nothing was checked")]
pub struct Broken {
    file: &'static str,
    what: String,
}

fn broken(file: &'static str, what: impl Into<String>) -> Broken {
    Broken {
        file,
        what: what.into(),
    }
}

/// `file`'s vector groups, each present and non-empty.
fn vector_file(file: &'static str, json: &str) -> Result<Value, Broken> {
    let vectors: Value =
        serde_json::from_str(json).map_err(|e| broken(file, format!("is not JSON: {e}")))?;
    for group in GROUPS {
        match vectors.get(group).and_then(Value::as_array) {
            Some(cases) if !cases.is_empty() => {}
            _ => return Err(broken(file, format!("has no `{group}` cases"))),
        }
    }
    Ok(vectors)
}

const RENDER: &str = "contracts/v1/render-vectors.json";
const SCHEMA: &str = "the output schema";

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
    ) -> Result<Embedded, Broken> {
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
            return Err(broken(
                "contracts/v1/test-vectors.json",
                "has no call arguments to send",
            ));
        }
        let render: Vec<Vector> = serde_json::from_str(render_vectors)
            .map_err(|e| broken(RENDER, format!("is unreadable: {e}")))?;
        if render.is_empty() {
            return Err(broken(RENDER, "holds no vectors"));
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
            .map_err(|e| broken(SCHEMA, format!("is not JSON: {e}")))?;
        let output_validator = jsonschema::draft202012::new(&schema)
            .map_err(|e| broken(SCHEMA, format!("does not compile: {e}")))?;
        Ok(Embedded {
            valid_inputs,
            invalid_inputs,
            render_vectors,
            output_validator,
        })
    }

    /// The files built into this ecp, read once; `Err` names what is wrong.
    pub fn get() -> Result<&'static Embedded, Broken> {
        static EMBEDDED: OnceLock<Result<Embedded, Broken>> = OnceLock::new();
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
            .map_err(Broken::clone)
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
        let fails = |t: &str, r: &str, o: &str, q: &str| {
            Embedded::parse(t, r, o, q).err().map(|e| e.to_string())
        };
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
