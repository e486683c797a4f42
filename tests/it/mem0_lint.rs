//! Issue 46, part 2: `ecp lint FILE` recognises the administrator files of
//! Qwen's own provider (`@qwen-code/external-context-mem0`): its
//! InstanceConfig v2 and v3 and its DialectV1, judged by the published
//! schemas (vendored in `contracts/qwen-mem0/`) and the rules the
//! package's loader applies beyond them. The examples are the package
//! README's own; each mutant breaks one rule; Python's `jsonschema` agrees
//! with every schema verdict.

use std::{collections::BTreeSet, path::Path, process::Command};

use serde_json::{Value, json};

use crate::ci_tools::tool;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The README's dialect ("an unbranded template").
fn readme_dialect() -> Value {
    json!({"dialectVersion": 1, "id": "organization-memory-v1", "auth": "authorization-bearer",
        "search": {"method": "POST", "path": "/memories/search", "queryLocation": "json",
            "userIdLocation": "json.filters", "agentIdLocation": "omit", "appIdLocation": "omit",
            "limitField": "limit"},
        "response": {"collection": "results", "idField": "id", "contentField": "memory",
            "titleField": "omit", "uriField": "omit", "scoreField": "score",
            "updatedAtField": "omit"}})
}

/// The README's v2 instance, its dialectPath where the dialect is here.
fn readme_instance(dialect: &Path) -> Value {
    json!({"schemaVersion": 2, "dialectPath": dialect,
        "endpoint": {"origin": "https://memory.example.com", "basePath": "", "allowInsecureHttp": false},
        "credentialEnv": "MEMORY_API_KEY", "scope": {"userId": "repository-memory"}, "timeoutMs": 5000})
}

/// The README's v3 (Auto Recall) instance.
fn readme_auto_recall(dialect: &Path) -> Value {
    let mut v3 = readme_instance(dialect);
    v3["schemaVersion"] = 3.into();
    v3["autoRecall"] = json!({"repositoryRoot": "/workspace/my-repository"});
    v3["timeoutMs"] = 1500.into();
    v3
}

/// `ecp lint --format json FILE`: exit code and the set of rule IDs.
fn lint(file: &Path) -> (Option<i32>, BTreeSet<String>, Value) {
    let output = Command::new(env!("CARGO_BIN_EXE_ecp"))
        .args(["lint", "--format", "json"])
        .arg(file)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| {
        panic!(
            "no JSON report for {}: {}",
            file.display(),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let rules = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap().to_owned())
        .collect();
    (output.status.code(), rules, report)
}

/// Python's `jsonschema` (Draft 7) on each (schema, document) pair: true
/// where it finds the document valid.
fn python_verdicts(pairs: &[(&str, &Path)]) -> Vec<bool> {
    let script = "import json, sys, jsonschema\n\
        args = sys.argv[1:]\n\
        for schema, doc in zip(args[::2], args[1::2]):\n\
        \x20   s = json.load(open(schema)); d = json.load(open(doc))\n\
        \x20   print('valid' if jsonschema.Draft7Validator(s).is_valid(d) else 'invalid')\n";
    let mut command = Command::new(tool("python"));
    command.args(["-c", script]);
    for (schema, doc) in pairs {
        command
            .arg(Path::new(ROOT).join("contracts/qwen-mem0").join(schema))
            .arg(doc);
    }
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| l == "valid")
        .collect()
}

type Mutation = fn(&mut Value);

/// (file, mutation, the one rule it must break).
fn mutants() -> Vec<(&'static str, &'static str, Mutation, &'static str)> {
    vec![
        (
            "dialect",
            "extra field",
            |d| d["$schema"] = "x".into(),
            "mem0-schema",
        ),
        (
            "dialect",
            "unknown auth",
            |d| d["auth"] = "basic".into(),
            "mem0-schema",
        ),
        (
            "dialect",
            "threshold over 1",
            |d| d["search"]["threshold"] = 1.5.into(),
            "mem0-schema",
        ),
        (
            "dialect",
            "id with capitals",
            |d| d["id"] = "Org".into(),
            "mem0-schema",
        ),
        (
            "dialect",
            "missing response",
            |d| {
                d.as_object_mut().unwrap().remove("response");
            },
            "mem0-schema",
        ),
        (
            "dialect",
            "dot segment",
            |d| d["search"]["path"] = "/a/../b".into(),
            "mem0-path",
        ),
        (
            "dialect",
            "percent",
            |d| d["search"]["path"] = "/a%2Fb".into(),
            "mem0-path",
        ),
        (
            "dialect",
            "GET with a JSON body",
            |d| d["search"]["method"] = "GET".into(),
            "mem0-dialect-get",
        ),
        (
            "v2",
            "timeout over 30 s",
            |i| i["timeoutMs"] = 30001.into(),
            "mem0-schema",
        ),
        (
            "v2",
            "timeout under 100 ms",
            |i| i["timeoutMs"] = 99.into(),
            "mem0-schema",
        ),
        (
            "v2",
            "lower-case credentialEnv",
            |i| i["credentialEnv"] = "memory_key".into(),
            "mem0-schema",
        ),
        (
            "v2",
            "no scope",
            |i| {
                i.as_object_mut().unwrap().remove("scope");
            },
            "mem0-schema",
        ),
        (
            "v2",
            "origin with a path",
            |i| i["endpoint"]["origin"] = "https://m.example.com/api".into(),
            "mem0-endpoint",
        ),
        (
            "v2",
            "origin with user info",
            |i| i["endpoint"]["origin"] = "https://u:p@m.example.com".into(),
            "mem0-endpoint",
        ),
        (
            "v2",
            "http not allowed",
            |i| i["endpoint"]["origin"] = "http://10.0.0.5".into(),
            "mem0-endpoint",
        ),
        (
            "v2",
            "public http",
            |i| {
                i["endpoint"]["origin"] = "http://memory.example.com".into();
                i["endpoint"]["allowInsecureHttp"] = true.into();
            },
            "mem0-insecure-http",
        ),
        (
            "v2",
            "basePath with //",
            |i| i["endpoint"]["basePath"] = "/api//v1".into(),
            "mem0-path",
        ),
        (
            "v2",
            "relative dialectPath",
            |i| i["dialectPath"] = "memory.dialect.json".into(),
            "mem0-dialect-path",
        ),
        (
            "v2",
            "scope the dialect omits",
            |i| i["scope"]["agentId"] = "agent".into(),
            "mem0-scope",
        ),
        (
            "v2",
            "scope the dialect needs",
            |i| i["scope"] = json!({}),
            "mem0-scope",
        ),
        (
            "v3",
            "timeout over 5 s",
            |i| i["timeoutMs"] = 5001.into(),
            "mem0-schema",
        ),
        (
            "v3",
            "no autoRecall",
            |i| {
                i.as_object_mut().unwrap().remove("autoRecall");
            },
            "mem0-schema",
        ),
        (
            "v3",
            "root as repository",
            |i| i["autoRecall"]["repositoryRoot"] = "/".into(),
            "mem0-repository-root",
        ),
        (
            "v3",
            "relative repository",
            |i| i["autoRecall"]["repositoryRoot"] = "repo".into(),
            "mem0-repository-root",
        ),
    ]
}

#[test]
fn qwens_mem0_files_are_judged_by_its_schemas_and_its_loader_rules() {
    let dir = tempfile::tempdir().unwrap();
    let dialect_path = dir.path().join("memory.dialect.json");
    let examples = [
        ("dialect", "dialect.schema.json", readme_dialect()),
        (
            "v2",
            "instance-config.schema.json",
            readme_instance(&dialect_path),
        ),
        (
            "v3",
            "auto-recall-instance-config.schema.json",
            readme_auto_recall(&dialect_path),
        ),
    ];
    std::fs::write(
        &dialect_path,
        serde_json::to_string_pretty(&examples[0].2).unwrap(),
    )
    .unwrap();
    let mut pairs = Vec::new();
    for (kind, schema, example) in &examples {
        let path = dir.path().join(format!("{kind}.json"));
        std::fs::write(&path, serde_json::to_string_pretty(example).unwrap()).unwrap();
        let (code, rules, report) = lint(&path);
        assert_eq!(
            (code, rules.len()),
            (Some(0), 0),
            "the README's {kind}: {report:#}"
        );
        pairs.push((*schema, path, false));
    }
    let mut wrong = Vec::new();
    for (n, (kind, what, mutate, rule)) in mutants().into_iter().enumerate() {
        let (_, schema, example) = examples.iter().find(|e| e.0 == kind).unwrap();
        let mut mutant = example.clone();
        mutate(&mut mutant);
        let path = dir.path().join(format!("mutant-{n}.json"));
        std::fs::write(&path, serde_json::to_string_pretty(&mutant).unwrap()).unwrap();
        let (code, rules, report) = lint(&path);
        let expected_code = if rule == "mem0-insecure-http" { 0 } else { 1 };
        if rules != BTreeSet::from([rule.to_owned()]) || code != Some(expected_code) {
            wrong.push(format!("{kind} {what}: expected {rule} (exit {expected_code}), got {rules:?} exit {code:?}: {report:#}"));
        }
        // Every finding points at a line of the file.
        assert!(
            report["findings"]
                .as_array()
                .unwrap()
                .iter()
                .all(|f| f["line"].is_u64()),
            "{report:#}"
        );
        pairs.push((*schema, path, rule == "mem0-schema"));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // Python's jsonschema agrees with every schema verdict.
    let verdicts = python_verdicts(
        &pairs
            .iter()
            .map(|(s, p, _)| (*s, p.as_path()))
            .collect::<Vec<_>>(),
    );
    assert_eq!(verdicts.len(), pairs.len());
    for ((schema, path, refused), valid) in pairs.iter().zip(verdicts) {
        assert_eq!(
            valid,
            !refused,
            "{schema} on {}: jsonschema says valid={valid}",
            path.display()
        );
    }
}

#[test]
fn what_the_provider_cannot_read_is_said_and_explained() {
    let dir = tempfile::tempdir().unwrap();
    let bom = dir.path().join("bom.json");
    let text = serde_json::to_string(&readme_dialect()).unwrap();
    std::fs::write(&bom, format!("\u{feff}{text}")).unwrap();
    let (code, rules, _) = lint(&bom);
    assert_eq!(
        (code, rules),
        (Some(1), BTreeSet::from(["mem0-read".to_owned()]))
    );
    let mut large = readme_dialect();
    large["id"] = "x".repeat(128).into();
    let padded = format!(
        "{}{}",
        serde_json::to_string(&large).unwrap(),
        " ".repeat(64 * 1024)
    );
    let big = dir.path().join("big.json");
    std::fs::write(&big, padded).unwrap();
    let (code, rules, _) = lint(&big);
    assert_eq!(
        (code, rules),
        (Some(1), BTreeSet::from(["mem0-read".to_owned()]))
    );
    let explain = Command::new(env!("CARGO_BIN_EXE_ecp"))
        .args(["explain", "mem0-scope"])
        .output()
        .unwrap();
    assert!(explain.status.success());
    assert!(String::from_utf8_lossy(&explain.stdout).contains("omit"));
}
