//! Schemas no one here wrote: a Node MCP server (`tests/it/zod/server.cjs`)
//! whose tool schemas are zod's own JSON Schema output, shaped as Qwen's
//! mem0 provider shapes its strings (a pattern counting code points with a
//! lookahead and lone-surrogate classes). zod and the MCP SDK are pinned
//! npm packages, installed once into `target/npm-cache/`.

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use serde_json::Value;

const ZOD: &str = "4.6.7";
const SDK: &str = "1.32.2";

/// `node server.cjs SDK ZOD`, as arguments after `ecp check --`.
fn server_command() -> Vec<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/zod/server.cjs");
    let sdk = crate::npm::package("@modelcontextprotocol/sdk", SDK);
    let zod = crate::npm::package("zod", ZOD);
    [PathBuf::from("node"), script, sdk, zod]
        .iter()
        .map(|p| p.display().to_string())
        .collect()
}

/// The schemas the server declares, as zod generated them.
fn declared_schemas() -> Value {
    let command = server_command();
    let output = Command::new(&command[0])
        .args(&command[1..])
        .arg("--print-schemas")
        .stdin(Stdio::null())
        .output()
        .expect("node runs (Node.js 20 is required by the test suite)");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn zods_code_point_counting_schemas_pass_input_and_output_schema() {
    // What makes them hard: zod emits the lookahead and the surrogate
    // classes as they are.
    let schemas = declared_schemas();
    let text = schemas.to_string();
    assert!(
        text.contains(r"(?![\\uDC00-\\uDFFF])") && text.contains(r"[^\\uD800-\\uDBFF]"),
        "{text}"
    );

    let command = server_command();
    let output = Command::new(env!("CARGO_BIN_EXE_ecp"))
        .args(["check", "--format", "json", "--"])
        .args(&command)
        .env("CARGO_TARGET_DIR", crate::cli::generated_target())
        .envs(crate::cli::LIGHT_RELEASE)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| {
        panic!(
            "no JSON report:\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    for id in ["input-schema", "output-schema"] {
        let check = report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap_or_else(|| panic!("no {id}: {report:#}"));
        assert_eq!(check["status"], "pass", "{check:#}");
    }
}

/// ecp and Ajv (the validator Qwen's own tests use: patterns with the `u`
/// flag) classify every case ecp judges zod's schemas by alike, and as the
/// profile does.
#[test]
fn ecp_and_ajv_classify_every_case_of_zods_schemas_alike() {
    use ecp::check::schema::{Judgement, Which, cases, judge};
    let schemas = declared_schemas();
    let mut jobs = Vec::new();
    for (key, which) in [
        ("inputSchema", Which::Input),
        ("outputSchema", Which::Output),
    ] {
        let schema = &schemas[key];
        let judgement = judge(schema, which);
        assert!(
            matches!(judgement, Judgement::Conforms(_)),
            "{key}: {judgement:?}"
        );
        let cases = cases(which);
        jobs.push(serde_json::json!({
            "name": key,
            "schema": schema,
            "values": cases.iter().map(|c| c.value.clone()).collect::<Vec<_>>(),
            "expected": cases.iter().map(|c| c.valid).collect::<Vec<_>>(),
            "names": cases.iter().map(|c| c.name.clone()).collect::<Vec<_>>(),
        }));
    }
    let ajv = crate::npm::package("ajv", "8.17.1");
    let script = r#"
        const Ajv2020 = require(require("path").join(process.argv[1], "dist/2020.js")).default;
        const jobs = JSON.parse(require("fs").readFileSync(0, "utf8"));
        const wrong = [];
        for (const job of jobs) {
          const validate = new Ajv2020({ strict: false }).compile(job.schema);
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
