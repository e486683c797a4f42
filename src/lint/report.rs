//! The three output formats of `ecp lint`: rustc-style text with source
//! snippets (secrets masked), one JSON document, and SARIF 2.1.0 for code
//! scanning.

use std::fmt::Write as _;

use anstyle::{AnsiColor, Style};
use serde_json::{Value, json};

use super::{
    Finding, Report, Rule, Severity, Source,
    json::{LineIndex, Span},
};
use crate::text::outside::{escape_controls, visible};

const ERROR: Style = AnsiColor::Red.on_default().bold();
const WARNING: Style = AnsiColor::Yellow.on_default().bold();
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

/// The widest source line shown, in characters; longer lines are cut to a
/// window around the finding.
const MAX_SNIPPET_CHARS: usize = 120;

/// A source line prepared for display: masked, made visible, and cut to a
/// window. `caret` and `width` are the caret's column (0-based, in
/// characters of `text`) and length.
pub struct Snippet {
    pub text: String,
    pub caret: usize,
    pub width: usize,
}

/// Cuts `line` (already masked and visible) to at most
/// [`MAX_SNIPPET_CHARS`] around `column` (0-based) with `width` carets.
pub fn window(line: &[char], column: usize, width: usize) -> Snippet {
    let column = column.min(line.len());
    if line.len() <= MAX_SNIPPET_CHARS {
        let width = width.min(line.len().saturating_sub(column)).max(1);
        return Snippet {
            text: line.iter().collect(),
            caret: column,
            width,
        };
    }
    let start = column.saturating_sub(MAX_SNIPPET_CHARS / 3);
    let end = (start + MAX_SNIPPET_CHARS).min(line.len());
    let mut text = String::new();
    let mut caret = column - start;
    if start > 0 {
        text.push('…');
        caret += 1;
    }
    text.extend(&line[start..end]);
    if end < line.len() {
        text.push('…');
    }
    let width = width.min(end.saturating_sub(column)).max(1);
    Snippet { text, caret, width }
}

/// `line` (1-based) of `source`, with every redacted string masked after
/// its first four characters and control characters made visible; one
/// character out for one in, so carets still line up.
fn masked_line(source: &Source, index: &LineIndex, redactions: &[Span], line: usize) -> Vec<char> {
    let range = index.line_range(line);
    let text = &source.text[range.clone()];
    // The redactions that overlap this line (sorted by start; they do not
    // nest: each is one JSON string).
    let first = redactions.partition_point(|span| span.end <= range.start);
    let overlapping: Vec<(usize, usize)> = redactions[first..]
        .iter()
        .take_while(|span| span.start < range.end)
        .map(|span| {
            // Keep the quote and four characters visible.
            let visible_end = source.text[span.start..span.end]
                .char_indices()
                .nth(5)
                .map_or(span.end, |(i, _)| span.start + i);
            (visible_end, span.end)
        })
        .collect();
    let mut next = 0;
    text.char_indices()
        .map(|(at, c)| {
            let offset = range.start + at;
            while next < overlapping.len() && overlapping[next].1 <= offset {
                next += 1;
            }
            let hidden = overlapping
                .get(next)
                .is_some_and(|&(from, end)| offset >= from && offset + c.len_utf8() < end);
            if hidden { '*' } else { visible(c) }
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

/// `1.9 MiB`, `12.0 KiB`, `300 B`: the one size format of ecp's output.
pub fn human_size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}

/// A place to point at: the 1-based line and column shown in `-->`, and
/// the prepared source line with its caret.
pub struct At<'a> {
    pub line: usize,
    pub column: usize,
    pub snippet: &'a Snippet,
}

/// One diagnostic as rustc draws it, `LEVEL[ID]: message`, ` --> file:L:C`,
/// the line with carets under the span and `= help:`, rendered by
/// annotate-snippets: the one frame printer of ecp, for lint findings and
/// for `ecp lint`'s could-not-run errors. Every text is already escaped;
/// the location names the real line and column even when the line shown is
/// a window of a longer one.
pub fn frame(
    severity: Severity,
    id: Option<&str>,
    message: &str,
    file: &str,
    at: Option<At<'_>>,
    help: &str,
    color: bool,
) -> String {
    use annotate_snippets::{AnnotationKind, Level, Origin, Renderer, Snippet as Source};
    let level = match severity {
        Severity::Error => Level::ERROR,
        Severity::Warning => Level::WARNING,
    };
    let mut title = level.primary_title(message);
    if let Some(id) = id {
        title = title.id(id);
    }
    let group = match &at {
        Some(at) => {
            let text = &at.snippet.text;
            // Byte offsets of the caret's characters in the shown text.
            let byte = |chars: usize| {
                text.char_indices()
                    .nth(chars)
                    .map_or(text.len(), |(i, _)| i)
            };
            let start = byte(at.snippet.caret);
            let end = byte(at.snippet.caret + at.snippet.width).max(start);
            title
                .element(
                    Source::source(text.as_str())
                        .path(file)
                        .line_start(at.line)
                        .annotation(AnnotationKind::Primary.span(start..end)),
                )
                .element(Level::HELP.message(help))
        }
        None => title
            .element(Origin::path(file))
            .element(Level::HELP.message(help)),
    };
    let renderer = if color {
        Renderer::styled()
    } else {
        Renderer::plain()
    };
    let mut out = renderer.render(&[group]);
    // annotate-snippets takes the column from the caret's place in the text
    // it shows; a window of a long line starts later, so the location line
    // (the first after the title) gets the real column back.
    if let Some(at) = at.filter(|at| at.snippet.caret + 1 != at.column) {
        let shown = format!("{file}:{}:{}", at.line, at.snippet.caret + 1);
        let real = format!("{file}:{}:{}", at.line, at.column);
        if let Some(title_end) = out.find('\n')
            && let Some(place) = out[title_end..].find(&shown)
        {
            let place = title_end + place;
            out.replace_range(place..place + shown.len(), &real);
        }
    }
    out.push('\n');
    out
}

/// rustc-style text. Linear in the sources and the (capped) findings.
pub fn human(report: &Report, color: bool) -> String {
    let mut out = String::new();
    let indexes: Vec<(LineIndex, Vec<Span>)> = report
        .sources
        .iter()
        .map(|source| {
            let mut redactions = source.redactions.clone();
            redactions.sort_by_key(|span| span.start);
            (LineIndex::new(&source.text), redactions)
        })
        .collect();
    for finding in &report.findings {
        let file = escape_controls(&finding.file, 300);
        let message = escape_controls(&finding.message, 1000);
        let help = escape_controls(&finding.help, 1000);
        let source = report.sources.iter().position(|s| s.file == finding.file);
        let shown = match (finding.position, source) {
            (Some(position), Some(at)) => {
                let (index, redactions) = &indexes[at];
                let line = masked_line(&report.sources[at], index, redactions, position.line);
                let width = if position.end_line == position.line {
                    position.end_column.saturating_sub(position.column).max(1)
                } else {
                    line.len().saturating_sub(position.column - 1).max(1)
                };
                Some((position, window(&line, position.column - 1, width)))
            }
            _ => None,
        };
        let at = shown.as_ref().map(|(position, snippet)| At {
            line: position.line,
            column: position.column,
            snippet,
        });
        out.push_str(&frame(
            finding.severity,
            Some(finding.rule.id()),
            &message,
            &file,
            at,
            &help,
            color,
        ));
        out.push('\n');
    }
    trailer(&mut out, report, color);
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

/// What follows the findings: the omitted counts, each archive's size, and
/// the notes.
fn trailer(out: &mut String, report: &Report, color: bool) {
    for (rule, omitted) in &report.omitted {
        let _ = writeln!(
            out,
            "{} and {} more `{rule}` findings, not shown (at most {} per rule)\n",
            paint(color, severity_style(rule.severity()), "..."),
            omitted,
            super::MAX_FINDINGS_PER_RULE
        );
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
    for note in &report.notes {
        let _ = writeln!(
            out,
            "{}: {}",
            paint(color, BOLD, "note"),
            escape_controls(note, 1000)
        );
    }
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
        "omitted": report.omitted.iter().map(|(rule, n)| (rule.id().to_owned(), Value::from(*n))).collect::<serde_json::Map<_, _>>(),
        "maxFindingsPerRule": super::MAX_FINDINGS_PER_RULE,
        "notes": report.notes,
        "archives": report.archives.iter().map(|a| json!({
            "file": a.file,
            "entries": a.entries,
            "uncompressedBytes": a.uncompressed_bytes,
            "compressedBytes": a.compressed_bytes,
        })).collect::<Vec<_>>(),
    });
    crate::text::outside::json_report(&document) + "\n"
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
            "properties": {
                "counts": {
                    "error": report.count(Severity::Error),
                    "warning": report.count(Severity::Warning),
                },
                "omitted": report.omitted.iter().map(|(rule, n)| (rule.id().to_owned(), Value::from(*n))).collect::<serde_json::Map<_, _>>(),
                "maxFindingsPerRule": super::MAX_FINDINGS_PER_RULE,
        "notes": report.notes,
            },
        }],
    });
    crate::text::outside::json_report(&document) + "\n"
}
