//! The three output formats of `ecp lint`: rustc-style text with source
//! snippets (secrets masked), one JSON document, and SARIF 2.1.0 for code
//! scanning.

use std::fmt::Write as _;

use anstyle::{AnsiColor, Style};
use serde_json::{Value, json};

use super::{Finding, Report, Rule, Severity, Source};

const ERROR: Style = AnsiColor::Red.on_default().bold();
const WARNING: Style = AnsiColor::Yellow.on_default().bold();
const ACCENT: Style = AnsiColor::Blue.on_default().bold();
const BOLD: Style = Style::new().bold();

fn severity_style(severity: Severity) -> Style {
    match severity {
        Severity::Error => ERROR,
        Severity::Warning => WARNING,
    }
}

fn paint(color: bool, style: Style, text: &str) -> String {
    if color {
        format!("{style}{text}{style:#}")
    } else {
        text.to_owned()
    }
}

/// `line` (1-based) of `source`, with every redacted string masked after
/// its first four characters. Masking keeps the character count, so carets
/// still line up.
fn masked_line(source: &Source, line: usize) -> String {
    let Some((start, text)) = source
        .text
        .split_inclusive('\n')
        .scan(0usize, |offset, l| {
            let start = *offset;
            *offset += l.len();
            Some((start, l))
        })
        .nth(line - 1)
    else {
        return String::new();
    };
    let text = text.trim_end_matches(['\n', '\r']);
    text.char_indices()
        .map(|(at, c)| {
            let offset = start + at;
            let hidden = source.redactions.iter().any(|span| {
                // Keep the quote and four characters visible.
                let visible_end = source.text[span.start..span.end]
                    .char_indices()
                    .nth(5)
                    .map_or(span.end, |(i, _)| span.start + i);
                offset >= visible_end && offset + c.len_utf8() < span.end
            });
            if hidden { '*' } else { c }
        })
        .collect()
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

fn human_size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}

/// rustc-style text.
pub fn human(report: &Report, color: bool) -> String {
    let mut out = String::new();
    for finding in &report.findings {
        let severity = finding.severity.to_string();
        let _ = writeln!(
            out,
            "{} {}",
            paint(
                color,
                severity_style(finding.severity),
                &format!("{severity}[{}]:", finding.rule)
            ),
            paint(color, BOLD, &finding.message)
        );
        match finding.position {
            Some(position) => {
                let gutter = position.line.to_string().len();
                let pad = " ".repeat(gutter);
                let _ = writeln!(
                    out,
                    "{pad}{} {}:{}:{}",
                    paint(color, ACCENT, "-->"),
                    finding.file,
                    position.line,
                    position.column
                );
                if let Some(source) = report.sources.iter().find(|s| s.file == finding.file) {
                    let line = masked_line(source, position.line);
                    let width = if position.end_line == position.line {
                        position.end_column.saturating_sub(position.column).max(1)
                    } else {
                        line.chars()
                            .count()
                            .saturating_sub(position.column - 1)
                            .max(1)
                    };
                    let bar = paint(color, ACCENT, "|");
                    let _ = writeln!(out, "{pad} {bar}");
                    let _ = writeln!(
                        out,
                        "{} {bar} {line}",
                        paint(color, ACCENT, &position.line.to_string())
                    );
                    let _ = writeln!(
                        out,
                        "{pad} {bar} {}{}",
                        " ".repeat(position.column - 1),
                        paint(color, severity_style(finding.severity), &"^".repeat(width))
                    );
                }
                let _ = writeln!(
                    out,
                    "{pad} {} help: {}",
                    paint(color, ACCENT, "="),
                    finding.help
                );
            }
            None => {
                let _ = writeln!(out, "  {} {}", paint(color, ACCENT, "-->"), finding.file);
                let _ = writeln!(
                    out,
                    "  {} help: {}",
                    paint(color, ACCENT, "="),
                    finding.help
                );
            }
        }
        out.push('\n');
    }
    for archive in &report.archives {
        let _ = writeln!(
            out,
            "{}: {}, {} unpacked, {} packed",
            archive.file,
            plural(archive.entries, "entry").replace("entrys", "entries"),
            human_size(archive.uncompressed_bytes),
            human_size(archive.compressed_bytes)
        );
    }
    let errors = report.count(Severity::Error);
    let warnings = report.count(Severity::Warning);
    let files = report.sources.len().max(report.archives.len());
    let summary = if errors + warnings == 0 {
        format!("ecp lint: clean ({} checked)", plural(files, "file"))
    } else {
        format!(
            "ecp lint: {}, {} ({} checked)",
            plural(errors, "error"),
            plural(warnings, "warning"),
            plural(files, "file")
        )
    };
    let style = if errors > 0 {
        ERROR
    } else if warnings > 0 {
        WARNING
    } else {
        BOLD
    };
    let _ = writeln!(out, "{}", paint(color, style, &summary));
    out
}

fn finding_json(finding: &Finding) -> Value {
    let mut value = json!({
        "rule": finding.rule.id(),
        "severity": finding.severity,
        "message": finding.message,
        "file": finding.file,
        "pointer": finding.pointer,
        "help": finding.help,
    });
    if let Some(position) = finding.position {
        value["line"] = position.line.into();
        value["column"] = position.column.into();
        value["endLine"] = position.end_line.into();
        value["endColumn"] = position.end_column.into();
    }
    value
}

/// One JSON document with every finding and the counts.
pub fn json(report: &Report) -> String {
    let document = json!({
        "findings": report.findings.iter().map(finding_json).collect::<Vec<_>>(),
        "counts": {
            "error": report.count(Severity::Error),
            "warning": report.count(Severity::Warning),
        },
        "archives": report.archives.iter().map(|a| json!({
            "file": a.file,
            "entries": a.entries,
            "uncompressedBytes": a.uncompressed_bytes,
            "compressedBytes": a.compressed_bytes,
        })).collect::<Vec<_>>(),
    });
    serde_json::to_string_pretty(&document).unwrap_or_default() + "\n"
}

fn sarif_level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

/// FNV-1a, 64 bits: a stable fingerprint that does not change when lines
/// move (it hashes the rule, the file and the JSON pointer).
fn fingerprint(parts: &[&str]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in part.bytes().chain([0]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{hash:016x}:1")
}

fn artifact_uri(file: &str) -> String {
    let file = file.replace('\\', "/");
    if file.starts_with('/') {
        format!("file://{file}")
    } else {
        file
    }
}

/// SARIF 2.1.0, as GitHub code scanning accepts it.
pub fn sarif(report: &Report) -> String {
    let rules: Vec<Value> = Rule::ALL
        .iter()
        .map(|rule| {
            json!({
                "id": rule.id(),
                "shortDescription": { "text": rule.summary() },
                "fullDescription": { "text": rule.explanation() },
                "help": { "text": format!("{}\n\nRun `ecp explain {}` for more.", rule.explanation(), rule.id()) },
                "defaultConfiguration": { "level": sarif_level(rule.severity()) },
                "properties": { "tags": ["qwen-extension", "external-context"] },
            })
        })
        .collect();
    let results: Vec<Value> = report
        .findings
        .iter()
        .map(|finding| {
            // A file inside an archive is reported on the archive itself.
            let (artifact, inner) = match finding.file.split_once("!/") {
                Some((archive, inner)) => (archive, Some(inner)),
                None => (finding.file.as_str(), None),
            };
            let mut location = json!({ "artifactLocation": { "uri": artifact_uri(artifact) } });
            let mut text = finding.message.clone();
            match (inner, finding.position) {
                (None, Some(position)) => {
                    location["region"] = json!({
                        "startLine": position.line,
                        "startColumn": position.column,
                        "endLine": position.end_line,
                        "endColumn": position.end_column,
                    });
                }
                (Some(inner), Some(position)) => {
                    text = format!("{inner}:{}:{}: {text}", position.line, position.column);
                }
                (Some(inner), None) => text = format!("{inner}: {text}"),
                (None, None) => {}
            }
            let rule_index = Rule::ALL.iter().position(|r| *r == finding.rule).unwrap_or(0);
            json!({
                "ruleId": finding.rule.id(),
                "ruleIndex": rule_index,
                "level": sarif_level(finding.severity),
                "message": { "text": format!("{text}. Help: {}", finding.help) },
                "locations": [{ "physicalLocation": location }],
                "partialFingerprints": {
                    "primaryLocationLineHash": fingerprint(&[finding.rule.id(), &finding.file, &finding.pointer, if finding.pointer.is_empty() { &finding.message } else { "" }]),
                },
            })
        })
        .collect();
    let document = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": "ecp",
                "semanticVersion": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    });
    serde_json::to_string_pretty(&document).unwrap_or_default() + "\n"
}
