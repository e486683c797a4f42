//! `.env` files as Qwen Code reads them: the `dotenv` package's `parse`
//! (the rules of its line expression, re-stated here, not copied): `KEY=value`
//! or `KEY: value`, an optional `export `, `#` comments, single, double or
//! back quotes (a quoted value may span lines; only a double-quoted one
//! turns `\n` and `\r` into line breaks), and a later line winning over an
//! earlier one.
//!
//! JavaScript's `\s` is not Rust's: it holds U+FEFF (so a file that starts
//! with a byte order mark keeps its first line: `^\s*` eats the mark) and
//! not U+0085, and `String.prototype.trim` strips the same set. Both are
//! spelled out here ([`JS_SPACE`], and the runtime's ECMAScript whitespace
//! for [`js_trim`]). A later line wins over an
//! earlier one through an index, so a file of many names is read in linear
//! time.
//!
//! `ecp doctor` needs the names and where they come from; a value is kept
//! only to tell an empty one from a set one, and never printed.

use std::{collections::HashMap, sync::LazyLock};

use regex::Regex;

/// JavaScript's `\s` (ECMA-262 WhiteSpace and LineTerminator), as a regex
/// class body.
const JS_SPACE: &str = r"\t\n\x0B\x0C\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}";

/// One line's expression, in multi-line mode: the key (ASCII word
/// characters, `.` and `-`), `=` or `: `, then a quoted value or the text
/// up to a `#` or the end of the line.
static LINE: LazyLock<Regex> = LazyLock::new(|| {
    let expression = r#"(?m)^S*(?:exportS+)?([A-Za-z0-9_.-]+)(?:S*=[ \t]*|:[ \t]+)(S*'(?:\\'|[^'])*'|S*"(?:\\"|[^"])*"|S*`(?:\\`|[^`])*`|[^#\r\n]+)?[ \t]*(?:#[^\n]*)?$"#;
    Regex::new(&expression.replace('S', &format!("[{JS_SPACE}]")))
        .expect("the line expression compiles")
});

/// `String.prototype.trim`.
fn js_trim(text: &str) -> &str {
    text.trim_matches(crate::runtime::profile::is_ecmascript_whitespace)
}

/// The variables of a `.env` text, in the order they first appear, each
/// with its last value.
pub fn parse(text: &str) -> Vec<(String, String)> {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let mut out: Vec<(String, String)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for captures in LINE.captures_iter(&text) {
        let key = &captures[1];
        let raw = js_trim(captures.get(2).map_or("", |m| m.as_str()));
        let value = unquote(raw);
        match index.get(key) {
            Some(&at) => out[at].1 = value,
            None => {
                index.insert(key.to_owned(), out.len());
                out.push((key.to_owned(), value));
            }
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
    fn a_byte_order_mark_and_javascript_spaces_are_read_as_dotenv_reads_them() {
        // dotenv's `^\s*` eats U+FEFF; U+0085 is no space to JavaScript.
        assert_eq!(
            names("\u{feff}ACME_URL=https://repo.example\nB=1\n"),
            vec![
                ("ACME_URL".into(), "https://repo.example".into()),
                ("B".into(), "1".into())
            ]
        );
        assert_eq!(names("\u{85}C=1\n"), vec![]);
        assert_eq!(
            names("D=\u{3000}x\u{feff}\n"),
            vec![("D".into(), "x".into())]
        );
    }

    #[test]
    fn a_later_line_wins_among_many_names() {
        // Many names, each twice: the second value wins (through the index).
        let mut text = String::new();
        for round in 0..2 {
            for n in 0..200_000 {
                text += &format!("N{n}={round}\n");
            }
        }
        let vars = names(&text);
        assert_eq!(vars.len(), 200_000);
        assert!(vars.iter().all(|(_, v)| v == "1"));
    }

    #[test]
    fn carriage_returns_and_backticks() {
        assert_eq!(
            names("A=`b`\r\nC='d'\r"),
            vec![("A".into(), "b".into()), ("C".into(), "d".into())]
        );
    }
}
