//! Issue 47: what README, `docs/commands.md`, the generated READMEs and
//! `--help` claim about generated files and commands, held to what ecp
//! does: the line counts they give, and the help's example that writes a
//! placeholder endpoint.

use std::path::Path;

use crate::cli::{ecp, ecp_new};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The number before `after` (`"80 lines as"` → 80) at its first place
/// in `text`, whose context is `marker`.
fn number_before(text: &str, marker: &str, after: &str) -> usize {
    let at = text
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker:?} in the text"));
    let rest = &text[at..];
    let end = rest
        .find(after)
        .unwrap_or_else(|| panic!("no {after:?} after {marker:?}"));
    let digits: String = rest[..end]
        .chars()
        .rev()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(char::is_ascii_digit)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("no number before {after:?} in {:?}", &rest[..end]))
}

fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .count()
}

#[test]
fn the_line_counts_the_docs_give_are_those_of_the_generated_files() {
    let temp = tempfile::tempdir().unwrap();
    let rust = temp.path().join("acme-context");
    assert!(ecp_new(&rust, &[]).status.success());
    let ts = temp.path().join("acme-ts");
    assert!(ecp_new(&ts, &["--template", "local-ts"]).status.success());
    let commands = std::fs::read_to_string(Path::new(ROOT).join("docs/commands.md")).unwrap();
    let readme = std::fs::read_to_string(rust.join("README.md")).unwrap();
    let claims = [
        (
            "docs/commands.md: src/provider.rs",
            number_before(&commands, "`src/provider.rs`, the one file", " lines as"),
            rust.join("src/provider.rs"),
        ),
        (
            "docs/commands.md: src/main.rs",
            number_before(&commands, "as generated; a ", "-line `src/main.rs`"),
            rust.join("src/main.rs"),
        ),
        (
            "docs/commands.md: src/provider.ts",
            number_before(&commands, "What you edit: `src/provider.ts`", " lines as"),
            ts.join("src/provider.ts"),
        ),
        (
            "the generated README: src/main.rs",
            number_before(&readme, "`src/main.rs` (", " lines)"),
            rust.join("src/main.rs"),
        ),
    ];
    for (what, claimed, file) in claims {
        assert_eq!(claimed, lines(&file), "{what} says {claimed} lines");
    }
}

/// `ecp new --help` shows a remote endpoint under the reserved `.example`
/// domain and says that `ecp lint` refuses it before publishing: both
/// halves hold.
#[test]
fn the_help_of_ecp_new_says_what_lint_makes_of_its_example_endpoint() {
    let help = ecp(&["new", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    let example = help
        .lines()
        .find(|line| line.contains("ecp new") && line.contains("--endpoint"))
        .unwrap_or_else(|| panic!("no --endpoint example in:\n{help}"));
    assert!(
        example.contains("ecp lint refuses a reserved .example name before you publish"),
        "{example}"
    );
    let endpoint = example
        .split_whitespace()
        .skip_while(|word| *word != "--endpoint")
        .nth(1)
        .unwrap();
    assert!(endpoint.ends_with(".example/mcp"), "{endpoint}");
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("acme-context");
    let made = ecp_new(&dir, &["--template", "remote", "--endpoint", endpoint]);
    assert!(made.status.success(), "{made:?}");
    let lint = ecp(&["lint", dir.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&lint.stdout);
    assert_eq!(lint.status.code(), Some(1), "{said}");
    assert!(said.contains(".example"), "{said}");
}
