//! Issue 47: the worked mappings of `docs/commands.md` ("Shapes search
//! engines answer with": nested hits, numeric ids, array-valued fields, a
//! query language's syntax) are whole provider files in `docs/examples/`.
//! Each is compiled in a generated extension in place of its mapping and
//! its tests run there (Rust: `cargo test --lib`; TypeScript: `tsc` over
//! the project, then `docs/examples/test_examples.ts` under `node --test`),
//! and every code block of that section is a verbatim part of one of them.

use std::{
    path::Path,
    process::{Command, Output, Stdio},
};

use crate::{
    any_api::{npm_output, show},
    cli::{ecp, generated_target},
};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const RUST: &[&str] = &["elasticsearch_provider.rs", "tantivy_provider.rs"];
const TYPESCRIPT: &[&str] = &["elasticsearch_provider.ts", "tantivy_provider.ts"];

fn example(name: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join("docs/examples").join(name)).unwrap()
}

/// `cargo` or `node` with ARGS in `dir`, building into the shared target.
fn run(dir: &Path, program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", generated_target())
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"))
}

#[test]
fn every_code_block_of_the_shapes_section_is_part_of_an_example() {
    let commands = std::fs::read_to_string(Path::new(ROOT).join("docs/commands.md")).unwrap();
    let start = commands
        .find("### Shapes search engines answer with")
        .expect("the section");
    let section = &commands[start..];
    let section = &section[..section[4..]
        .find("\n## ")
        .map_or(section.len(), |at| at + 4)];
    let examples: Vec<String> = RUST.iter().chain(TYPESCRIPT).map(|n| example(n)).collect();
    let mut blocks = 0;
    for (at, block) in section.split("```").enumerate() {
        if at % 2 == 0 {
            continue;
        }
        let (lang, code) = block.split_once('\n').unwrap();
        assert!(matches!(lang, "rust" | "ts"), "a block in {lang:?}");
        blocks += 1;
        assert!(
            examples
                .iter()
                .any(|example| example.contains(code.trim_end())),
            "this block of docs/commands.md is in no file of docs/examples/:\n{code}"
        );
    }
    assert!(blocks >= 4, "{blocks} blocks");
}

#[test]
fn the_rust_examples_build_in_a_generated_crate_and_pass_their_tests() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("shapes-context");
    let made = ecp(&[
        "new",
        "shapes-context",
        "--yes",
        "--dir",
        dir.to_str().unwrap(),
    ]);
    assert!(made.status.success(), "{}", show(&made));
    for name in RUST {
        std::fs::write(dir.join("src/provider.rs"), example(name)).unwrap();
        let tested = run(&dir, env!("CARGO"), &["test", "--offline", "--lib"]);
        assert!(tested.status.success(), "{name}: {}", show(&tested));
        assert!(
            String::from_utf8_lossy(&tested.stdout).contains("test result: ok. 1 passed"),
            "{name}: {}",
            show(&tested)
        );
        // The binary builds with it too (`main.rs` calls `from_env`).
        let built = run(&dir, env!("CARGO"), &["build", "--offline", "--quiet"]);
        assert!(built.status.success(), "{name}: {}", show(&built));
    }
}

#[test]
fn the_typescript_examples_typecheck_in_a_generated_project_and_pass_their_tests() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("shapes-context");
    let made = ecp(&[
        "new",
        "shapes-context",
        "--template",
        "local-ts",
        "--yes",
        "--dir",
        dir.to_str().unwrap(),
    ]);
    assert!(made.status.success(), "{}", show(&made));
    let installed = npm_output(&dir, &["ci"]);
    assert!(installed.status.success(), "{}", show(&installed));
    std::fs::write(
        dir.join("test/examples.test.ts"),
        example("test_examples.ts"),
    )
    .unwrap();
    for name in TYPESCRIPT {
        std::fs::write(dir.join("src/provider.ts"), example(name)).unwrap();
        let checked = npm_output(&dir, &["exec", "--", "tsc", "--noEmit"]);
        assert!(checked.status.success(), "{name}: {}", show(&checked));
        let bundled = npm_output(
            &dir,
            &[
                "exec",
                "--",
                "esbuild",
                "test/examples.test.ts",
                "--bundle",
                "--platform=node",
                "--format=cjs",
                "--log-level=warning",
                "--outfile=build/examples.test.js",
            ],
        );
        assert!(bundled.status.success(), "{name}: {}", show(&bundled));
        let tested = run(&dir, "node", &["--test", "build/examples.test.js"]);
        assert!(tested.status.success(), "{name}: {}", show(&tested));
        assert!(
            String::from_utf8_lossy(&tested.stdout).contains("# fail 0"),
            "{name}: {}",
            show(&tested)
        );
    }
}
