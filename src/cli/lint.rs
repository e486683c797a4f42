//! `ecp lint`: run the linter and print its report; exit 0 clean, 1 on
//! findings, 2 when it could not run.

use std::process::ExitCode;

use super::{ColorChoice, LintArgs, LintFormat};
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
            let source = text.lines().nth(line - 1).unwrap_or("");
            let gutter = " ".repeat(line.to_string().len());
            format!(
                "error: {file} is not JSON: {message}\n{gutter}--> {file}:{line}:{column}\n{gutter} |\n{line} | {source}\n{gutter} | {}^\n{gutter} = help: fix the syntax; qwen-extension.json is strict JSON (no comments, no trailing commas)\n",
                " ".repeat(column - 1)
            )
        }
        other => format!("error: {other}\n"),
    }
}

pub fn run(args: LintArgs, color: ColorChoice) -> ExitCode {
    let report = match lint::lint_path(&args.path) {
        Ok(report) => report,
        Err(error) => {
            eprint!("{}", diagnostic(&error));
            return ExitCode::from(2);
        }
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
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
