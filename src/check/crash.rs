//! What a target's stderr says when its code crashed: a Rust panic or a
//! JavaScript exception nobody caught. A call that failed that way is told
//! by that line, not by where its request did not go.

/// The longest crash line a reason quotes, in characters.
const CRASH_CHARS: usize = 300;

/// The last crash `stderr` tells of, as outside text (secrets taken out,
/// escaped, bounded): a Rust panic (`thread 'main' panicked at
/// src/provider.rs:3:9:` with its message on the next line, or the ecp
/// runtime's `internal error (panic at src/provider.rs:3)`), or an
/// uncaught JavaScript exception (`Uncaught TypeError: ...`, or Node's
/// `TypeError: ...` followed by its `at ...` stack, or the ecp TypeScript
/// runtime's `stopped on an unexpected error (TypeError)`).
pub fn crash_line(stderr: &str, secrets: &super::secret::Secrets) -> Option<String> {
    let lines: Vec<&str> = stderr.lines().collect();
    let found = (0..lines.len()).rev().find_map(|at| crash_at(&lines, at))?;
    Some(crate::text::outside::line(
        &secrets.redact(&found),
        CRASH_CHARS,
    ))
}

/// The crash told at line `at`, with its message when that is on the next
/// line.
fn crash_at(lines: &[&str], at: usize) -> Option<String> {
    let line = lines[at].trim();
    let next = lines.get(at + 1).map(|l| l.trim()).unwrap_or_default();
    if line.contains("panicked at ") {
        // Rust 1.73 and later put the message on a line of its own.
        return Some(if line.ends_with(':') && !next.is_empty() {
            format!("{line} {next}")
        } else {
            line.to_owned()
        });
    }
    let uncaught = line.contains("(panic at ")
        || line.contains("Uncaught ")
        || line.contains("stopped on an unexpected error (")
        || (is_exception_line(line) && next.starts_with("at "));
    uncaught.then(|| line.to_owned())
}

/// `TypeError: message`, `SyntaxError`, `my.ParseException: ...`: a name
/// ending in Error or Exception, then its message.
fn is_exception_line(line: &str) -> bool {
    let name = line.split(':').next().unwrap_or_default();
    let name = name.split_whitespace().next().unwrap_or_default();
    (name.ends_with("Error") || name.ends_with("Exception"))
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::secret::Secrets;

    fn crash(stderr: &str) -> Option<String> {
        crash_line(stderr, &Secrets::default())
    }

    #[test]
    fn a_rust_panic_is_its_line_and_message() {
        let stderr = "starting\nthread 'tokio-runtime-worker' panicked at src/provider.rs:31:42:\ncalled `Option::unwrap()` on a `None` value\nnote: run with `RUST_BACKTRACE=1`\n";
        assert_eq!(
            crash(stderr).unwrap(),
            "thread 'tokio-runtime-worker' panicked at src/provider.rs:31:42: called `Option::unwrap()` on a `None` value"
        );
        let old = "thread 'main' panicked at 'boom', src/main.rs:2:5\n";
        assert_eq!(
            crash(old).unwrap(),
            "thread 'main' panicked at 'boom', src/main.rs:2:5"
        );
        let runtime = "kb-context: internal error (panic at src/provider.rs:12)\n";
        assert_eq!(
            crash(runtime).unwrap(),
            "kb-context: internal error (panic at src/provider.rs:12)"
        );
    }

    #[test]
    fn an_uncaught_javascript_exception_is_its_line() {
        let node = "/x/dist/main.js:10\n    throw e;\n    ^\n\nTypeError: Cannot read properties of undefined (reading 'id')\n    at parse (file:///x/dist/main.js:10:5)\n\nNode.js v22.3.0\n";
        assert_eq!(
            crash(node).unwrap(),
            "TypeError: Cannot read properties of undefined (reading 'id')"
        );
        let deno = "error: Uncaught (in promise) SyntaxError: Unexpected token\n";
        assert!(
            crash(deno)
                .unwrap()
                .contains("Uncaught (in promise) SyntaxError")
        );
        let runtime = "kb: stopped on an unexpected error (TypeError)\n";
        assert!(crash(runtime).is_some());
    }

    #[test]
    fn ordinary_lines_are_no_crash_and_secrets_and_controls_are_taken_out() {
        for stderr in [
            "",
            "kb-context: context_search failed: upstream failed (HTTP 401)\n",
            "Error: something\nno stack here\n",
            "the at-sign\n   at the end\n",
        ] {
            assert_eq!(crash(stderr), None, "{stderr:?}");
        }
        let secrets = Secrets::new(Some("kb-secret-token-4f1d"));
        let stderr =
            "thread 'main' panicked at src/p.rs:1:1:\nBearer kb-secret-token-4f1d \u{1b}[31m\n";
        let line = crash_line(stderr, &secrets).unwrap();
        assert!(!line.contains("kb-secret-token-4f1d"), "{line}");
        assert!(!line.contains('\u{1b}'), "{line}");
        let long = format!("thread 'main' panicked at {}\n", "x".repeat(10_000));
        assert!(crash(&long).unwrap().chars().count() < 400);
    }
}
