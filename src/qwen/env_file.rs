//! `.env` files as Qwen Code reads them: the `dotenv` package's `parse`
//! (the rules of its line expression, re-stated here, not copied): `KEY=value`
//! or `KEY: value`, an optional `export `, `#` comments, single, double or
//! back quotes (a quoted value may span lines; only a double-quoted one
//! turns `\n` and `\r` into line breaks), and a later line winning over an
//! earlier one.
//!
//! `ecp doctor` needs the names and where they come from; a value is kept
//! only to tell an empty one from a set one, and never printed.

use std::sync::LazyLock;

use regex::Regex;

/// One line's expression, in multi-line mode: the key (ASCII word
/// characters, `.` and `-`), `=` or `: `, then a quoted value or the text
/// up to a `#` or the end of the line.
static LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?m)^\s*(?:export\s+)?([A-Za-z0-9_.-]+)(?:\s*=[ \t]*|:[ \t]+)(\s*'(?:\\'|[^'])*'|\s*"(?:\\"|[^"])*"|\s*`(?:\\`|[^`])*`|[^#\r\n]+)?[ \t]*(?:#[^\n]*)?$"#,
    )
    .expect("the line expression compiles")
});

/// The variables of a `.env` text, in the order they first appear, each
/// with its last value.
pub fn parse(text: &str) -> Vec<(String, String)> {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let mut out: Vec<(String, String)> = Vec::new();
    for captures in LINE.captures_iter(&text) {
        let key = captures[1].to_owned();
        let raw = captures.get(2).map_or("", |m| m.as_str()).trim();
        let value = unquote(raw);
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some(existing) => existing.1 = value,
            None => out.push((key, value)),
        }
    }
    out
}

fn unquote(raw: &str) -> String {
    let Some(quote) = raw.chars().next().filter(|c| matches!(c, '\'' | '"' | '`')) else {
        return raw.to_owned();
    };
    let inner = if raw.len() >= 2 && raw.ends_with(quote) {
        &raw[1..raw.len() - 1]
    } else {
        raw
    };
    if quote == '"' {
        inner.replace("\\n", "\n").replace("\\r", "\r")
    } else {
        inner.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    fn names(text: &str) -> Vec<(String, String)> {
        parse(text)
    }

    #[test]
    fn reads_what_dotenv_reads() {
        let text = "# a comment\nexport ACME_URL=https://a.example # trailing\nACME_TOKEN = 'x#y'\nEMPTY=\nQUOTED=\"line\\nbreak\"\nMULTI=\"one\ntwo\"\nCOLON: yes\nnot a line\nACME_URL=second\n";
        assert_eq!(
            names(text),
            vec![
                ("ACME_URL".into(), "second".into()),
                ("ACME_TOKEN".into(), "x#y".into()),
                ("EMPTY".into(), String::new()),
                ("QUOTED".into(), "line\nbreak".into()),
                ("MULTI".into(), "one\ntwo".into()),
                ("COLON".into(), "yes".into()),
            ]
        );
    }

    #[test]
    fn carriage_returns_and_backticks() {
        assert_eq!(
            names("A=`b`\r\nC='d'\r"),
            vec![("A".into(), "b".into()), ("C".into(), "d".into())]
        );
    }
}
