//! The doctor's report for people and for fleet tooling. Every line holds
//! text from the machine (paths, names, manifest values), so each goes
//! through `crate::text::outside` (escaped, bounded) on the way out.

use std::fmt::Write as _;

use super::{ExtensionReport, Report};
use crate::qwen::machine::{FileState, VariableSource};

/// The widest line printed.
const WIDTH: usize = 400;

fn line(out: &mut String, indent: &str, text: &str) {
    let _ = writeln!(out, "{indent}{}", crate::text::outside::line(text, WIDTH));
}

/// Where a variable comes from, said so that the name never directly
/// precedes the place (a credential-like name followed by a word reads as
/// a secret to `outside`'s masking).
fn source(source: &VariableSource) -> String {
    match source {
        VariableSource::Process => "is set by the environment Qwen starts with".to_owned(),
        VariableSource::ProjectEnv(file) => {
            format!("is set by {} (a workspace file)", file.display())
        }
        VariableSource::HomeEnv(file) => format!("is set by {}", file.display()),
        VariableSource::SettingsEnv(file) => format!("is set by the env of {}", file.display()),
        VariableSource::Unset => "is not set".to_owned(),
    }
}

/// The human report: the machine, then each extension, then one verdict
/// line per extension.
pub fn human(report: &Report) -> String {
    let mut out = String::new();
    line(
        &mut out,
        "",
        &format!("Qwen Code for the workspace {}", report.workspace.display()),
    );
    let trust = if report.trusted {
        "trusted"
    } else {
        "NOT trusted"
    };
    line(
        &mut out,
        "  ",
        &format!("workspace {trust}: {}", report.trust_rule),
    );
    line(
        &mut out,
        "  ",
        &format!("Qwen home: {}", report.qwen_home.display()),
    );
    for settings in &report.settings {
        let state = match &settings.state {
            FileState::Absent => "absent".to_owned(),
            FileState::Read => "read".to_owned(),
            FileState::Ignored(why) => format!("ignored: {why}"),
            FileState::Invalid(why) => format!("invalid: {why}"),
            FileState::Unjudged(why) => format!("not judged: {why}"),
        };
        line(
            &mut out,
            "  ",
            &format!(
                "{}: {} ({state})",
                settings.layer.describe(),
                settings.path.display()
            ),
        );
    }
    for file in &report.env_files {
        line(&mut out, "  ", &format!(".env loaded: {}", file.display()));
    }
    let tokens = &report.token_storage;
    line(
        &mut out,
        "  ",
        &format!(
            "OAuth tokens: {} ({})",
            if tokens.encrypted {
                "encrypted"
            } else {
                "plain text"
            },
            tokens.file.display()
        ),
    );
    hook_lines(&mut out, &report.auto_recall);
    for finding in &report.findings {
        finding_lines(&mut out, finding);
    }
    if report.extensions.is_empty() && report.findings.is_empty() && report.auto_recall.is_empty() {
        line(
            &mut out,
            "",
            "no External Context extension is installed for this user",
        );
    }
    for extension in &report.extensions {
        out.push('\n');
        extension_lines(&mut out, extension);
    }
    out.push('\n');
    for extension in &report.extensions {
        line(&mut out, "", &extension.verdict);
    }
    out
}

/// One line per Auto Recall hook Qwen runs here.
fn hook_lines(out: &mut String, hooks: &[super::hooks::AutoRecall]) {
    for hook in hooks {
        let root = hook
            .repository_root
            .as_ref()
            .map_or("none".to_owned(), |r| {
                let here = if hook.searches_here {
                    "this workspace is inside it"
                } else {
                    "this workspace is not inside it"
                };
                format!("{} ({here})", r.display())
            });
        line(
            out,
            "  ",
            &format!(
                "Auto Recall hook {}: defined by {} ({}), runs {}; repository root {root}",
                hook.name.as_deref().unwrap_or("(unnamed)"),
                hook.defined_by,
                hook.file.display(),
                hook.command
            ),
        );
    }
}

fn finding_lines(out: &mut String, finding: &super::Finding) {
    line(
        out,
        "  ",
        &format!("finding [{}]: {}", finding.id, finding.message),
    );
    line(out, "    ", &format!("fix: {}", finding.fix));
}

fn extension_lines(out: &mut String, extension: &ExtensionReport) {
    let version = extension.version.as_deref().unwrap_or("(no version)");
    line(
        out,
        "",
        &format!(
            "{} {version} in {}",
            extension.name,
            extension.folder.display()
        ),
    );
    if let (Some(kind), Some(source)) = (&extension.install_type, &extension.install_source) {
        let tag = extension
            .release_tag
            .as_ref()
            .map_or(String::new(), |t| format!(", release {t}"));
        line(out, "  ", &format!("installed from {source} ({kind}{tag})"));
    }
    line(out, "  ", &extension.activation);
    if let Some(server) = &extension.server {
        line(
            out,
            "  ",
            &format!(
                "server {}: defined by {}, {} {}",
                server.name, server.defined_by, server.transport, server.runs
            ),
        );
        let tools = server
            .include_tools
            .as_ref()
            .map_or("every tool".to_owned(), |t| t.join(", "));
        let timeout = server
            .timeout_ms
            .map_or("none (10 minutes)".to_owned(), |t| format!("{t} ms"));
        line(
            out,
            "  ",
            &format!(
                "tools: {tools}; timeout {timeout}; trust {}",
                if server.trust { "true" } else { "no" }
            ),
        );
    }
    for variable in &extension.variables {
        line(
            out,
            "  ",
            &format!("${{{}}} {}", variable.name, source(&variable.source)),
        );
    }
    if let Some(entry) = &extension.entry_point {
        line(
            out,
            "  ",
            &format!("entry point {}: {}", entry.path.display(), entry.state),
        );
    }
    for finding in &extension.findings {
        finding_lines(out, finding);
    }
}

/// The report as one JSON document (`exit` included).
pub fn json(report: &Report, exit: u8) -> String {
    let mut value = serde_json::to_value(report).unwrap_or_default();
    if let Some(map) = value.as_object_mut() {
        map.insert("exit".to_owned(), exit.into());
    }
    crate::text::outside::json_report(&value)
}
