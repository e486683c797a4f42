//! `ecp lint`: run the linter and print its report; exit 0 clean, 1 on
//! findings, 2 when it could not run.

use super::{ColorChoice, Exit, Failure, LintArgs, LintFormat, Outcome};
use crate::lint::{self, LintError, Severity, report};

/// A could-not-run diagnostic, with a snippet for a JSON syntax error.
fn diagnostic(error: &LintError) -> String {
    match error {
        LintError::NotJson {
            file,
            text,
            line,
            column,
            message,
            ..
        } => {
            // The text is whatever the file held: masked, made visible and
            // cut to a window like every other snippet.
            let index = crate::lint::json::LineIndex::new(text);
            let source = &text[index.line_range(*line)];
            let masked: Vec<char> = crate::text::outside::mask_free_text(source)
                .chars()
                .collect();
            let snippet = report::window(&masked, column - 1, 1);
            let file = crate::text::outside::escape_controls(file, 300);
            let message = crate::text::outside::escape_controls(message, 300);
            report::frame(
                Severity::Error,
                None,
                &format!("{file} is not JSON: {message}"),
                &file,
                Some(report::At {
                    line: *line,
                    column: *column,
                    snippet: &snippet,
                }),
                "fix the syntax; qwen-extension.json is strict JSON (no comments, no trailing commas)",
                false,
            )
        }
        other => {
            let mut text = format!(
                "error: {}\n",
                crate::text::outside::escape_controls(&other.to_string(), 2000)
            );
            if let Some(help) = other.help() {
                text.push_str(&format!(
                    "  = help: {}\n",
                    crate::text::outside::escape_controls(&help, 2000)
                ));
            }
            text
        }
    }
}

pub fn run(args: LintArgs, color: ColorChoice) -> Outcome {
    let options = lint::LintOptions {
        release_tag: args.release_tag.clone(),
    };
    let report = match lint::lint_path_with(&args.path, &options) {
        Ok((report, _)) => report,
        Err(error) => return Err(Failure::framed(Exit::CouldNotRun, diagnostic(&error))),
    };
    let output = match args.format {
        LintFormat::Human => report::human(&report, color.for_stdout()),
        LintFormat::Json => report::json(&report),
        LintFormat::Sarif => report::sarif(&report),
    };
    print!("{output}");
    let errors = report.count(Severity::Error);
    let warnings = report.count(Severity::Warning);
    if errors > 0 || (args.deny_warnings && warnings > 0) {
        Ok(Exit::No)
    } else {
        Ok(Exit::Success)
    }
}
