//! Text that came from outside, as ecp shows it: a target's stderr, a
//! manifest or `Cargo.toml` value, a provenance statement's field, a
//! server's error line. Whoever wrote it may be an attacker, so every such
//! text reaches a terminal or a JSON report through this one rendering:
//!
//! - secret-looking words (what [`crate::text::secrets::detect`] finds, or a
//!   long random-looking run) keep four characters and are masked after;
//! - control characters (C0 but the line breaks of a [`block`], DEL, C1)
//!   and the bidirectional overrides and isolates are escaped as `\u{1b}`,
//!   so nothing clears a screen, sets a title or reorders what follows;
//! - it is cut to a bound, and the cut says how much it left out.
//!
//! Bounding comes first, so the cost is linear in the bound, not in the
//! input: a 20 MiB stderr costs what its last lines cost.

use crate::text::secrets;

/// The usual bound on one value in a message, in characters.
pub const VALUE_CHARS: usize = 200;
/// The usual bound on one line of a [`block`], in characters.
pub const LINE_CHARS: usize = 300;
/// The usual number of lines a [`block`] keeps (its last).
pub const BLOCK_LINES: usize = 20;

/// The innermost cause of `error` (a transport's or a library's own words,
/// which say what happened), unbounded: render it like any outside text.
pub fn innermost(error: &(dyn std::error::Error + 'static)) -> String {
    std::iter::successors(Some(error), |e| e.source())
        .last()
        .map(|e| e.to_string())
        .unwrap_or_default()
}

/// `value` as pretty JSON for a report ecp prints: the same document, with
/// every character that must not reach a terminal as itself (C1 controls,
/// DEL, the bidirectional overrides and isolates; serde_json already
/// escapes C0) written as its `\uXXXX` escape. Such characters only occur
/// inside strings, so the escape keeps every value as it was: a pipeline
/// reads the same JSON, a terminal shows no raw control.
pub fn json_report(value: &impl serde::Serialize) -> String {
    let text = serde_json::to_string_pretty(value).unwrap_or_default();
    if !text.chars().any(unsafe_char) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_char(c) && !matches!(c, '\n' | '\t' | '\r') {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether `c` must not reach a terminal as itself.
fn unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Characters that end a word for masking.
fn separator(c: char) -> bool {
    c.is_whitespace() || c.is_control() || "\"'`,;=:&{}[]()<>".contains(c)
}

/// `text` with every word that is or may be a secret masked after its
/// first four characters (`ghp_************`). One character out for one
/// in; nothing else changes, control characters included.
pub fn mask_secrets(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = chars.clone();
    let mut at = 0;
    let mut previous_word = String::new();
    while at < chars.len() {
        if separator(chars[at]) {
            at += 1;
            continue;
        }
        let start = at;
        while at < chars.len() && !separator(chars[at]) {
            at += 1;
        }
        let word: String = chars[start..at].iter().collect();
        let secret = !secrets::detect(Some(&previous_word), &word).is_empty()
            || word.split(['.', '/', '-', '_']).any(random_looking);
        if secret {
            for c in out.iter_mut().take(at).skip(start + 4) {
                *c = '*';
            }
        }
        previous_word = word;
    }
    out.into_iter().collect()
}

/// Whether one part of a word (between dots, slashes, dashes and
/// underscores, so that file names, hosts and paths are judged by their
/// parts; a known token shape is found whole by `secrets::detect`) looks like a random
/// credential: long, mixed letters and digits, high entropy. A hex SHA-1
/// or SHA-256 digest (a commit, a file's sum) is random but no secret, and
/// what a reader compares.
fn random_looking(part: &str) -> bool {
    let length = part.chars().count();
    let digest = matches!(length, 40 | 64) && part.chars().all(|c| c.is_ascii_hexdigit());
    length >= 16
        && !digest
        && part.chars().any(|c| c.is_ascii_digit())
        && part.chars().any(char::is_alphabetic)
        && secrets::entropy(part) >= 3.5
}

/// Appends `c`, escaped when it must not reach a terminal as itself.
fn push_safe(out: &mut String, c: char) {
    if unsafe_char(c) {
        out.extend(c.escape_unicode());
    } else {
        out.push(c);
    }
}

/// One value on one line: masked, escaped (line breaks too), and at most
/// `max_chars` characters of it, followed by `… (N more characters)` when
/// it was longer.
pub fn line(text: &str, max_chars: usize) -> String {
    let mut kept: String = text.chars().take(max_chars).collect();
    let more = text.chars().count() - kept.chars().count();
    kept = mask_secrets(&kept);
    let mut out = String::with_capacity(kept.len());
    for c in kept.chars() {
        push_safe(&mut out, c);
    }
    if more > 0 {
        out.push_str(&format!("… ({more} more characters)"));
    }
    out
}

/// A value with [`line`]'s treatment and [`VALUE_CHARS`] as its bound.
pub fn value(text: &str) -> String {
    line(text, VALUE_CHARS)
}

/// Several lines (a process's stderr, say): its last `max_lines` lines,
/// each rendered by [`line`] with `max_line_chars`, joined by `\n`; the
/// first line says how many earlier lines were left out. Blank lines at
/// the end are dropped.
pub fn block(text: &str, max_lines: usize, max_line_chars: usize) -> String {
    let text = text.trim_end();
    let lines: Vec<&str> = text.lines().collect();
    let skipped = lines.len().saturating_sub(max_lines);
    let mut out = Vec::with_capacity(max_lines + 1);
    if skipped > 0 {
        out.push(format!("… ({skipped} earlier lines not shown)"));
    }
    out.extend(
        lines[skipped..]
            .iter()
            .map(|l| line(l.trim_end_matches('\r'), max_line_chars)),
    );
    out.join("\n")
}

/// The bytes a process wrote to a pipe, kept bounded as they arrive: the
/// last `cap` bytes and how many came before them.
#[derive(Debug, Default)]
pub struct Tail {
    cap: usize,
    kept: std::collections::VecDeque<u8>,
    dropped: u64,
}

impl Tail {
    /// A tail that keeps at most `cap` bytes.
    pub fn new(cap: usize) -> Tail {
        Tail {
            cap,
            kept: std::collections::VecDeque::new(),
            dropped: 0,
        }
    }

    /// Takes `bytes`, dropping the oldest beyond the cap.
    pub fn push(&mut self, bytes: &[u8]) {
        let bytes = if bytes.len() > self.cap {
            self.dropped += (bytes.len() - self.cap) as u64;
            &bytes[bytes.len() - self.cap..]
        } else {
            bytes
        };
        let over = (self.kept.len() + bytes.len()).saturating_sub(self.cap);
        self.kept.drain(..over);
        self.dropped += over as u64;
        self.kept.extend(bytes);
    }

    /// How many bytes came before what is kept.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// What is kept, as text (invalid UTF-8, and a character cut by the
    /// cap at the front, replaced by U+FFFD).
    pub fn text(&self) -> String {
        let bytes: Vec<u8> = self.kept.iter().copied().collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// The kept text as a [`block`] of the usual bounds, with a first line
    /// that counts the bytes left out before it.
    pub fn render(&self) -> String {
        let shown = block(&self.text(), BLOCK_LINES, LINE_CHARS);
        if self.dropped > 0 {
            format!("… ({} earlier bytes not shown)\n…{shown}", self.dropped)
        } else {
            shown
        }
    }
}

/// A character as a terminal should see it: control characters (C0, DEL,
/// C1) become their visible Control Pictures or `�`, one character for one,
/// so that carets still line up.
pub fn visible(c: char) -> char {
    match c {
        '\u{0}'..='\u{1f}' => char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}'),
        '\u{7f}' => '\u{2421}',
        c if c.is_control() => '\u{fffd}',
        '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => '\u{fffd}',
        c => c,
    }
}

/// `text` with control characters escaped (`\u{1b}`) for a terminal, and at
/// most `max` characters.
pub fn escape_controls(text: &str, max: usize) -> String {
    let mut out = String::new();
    for (n, c) in text.chars().enumerate() {
        if n == max {
            out.push('…');
            break;
        }
        if c.is_control() || visible(c) != c {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// Text that could not be parsed, for display: every word that is or may
/// be a secret (what [`crate::text::secrets::detect`] finds, or a long random-looking
/// run) keeps four characters and is masked after them, and control
/// characters are made visible. One character out for one in.
pub fn mask_free_text(text: &str) -> String {
    mask_secrets(text).chars().map(visible).collect()
}

/// How a value from the input appears in a message: masked when it holds a
/// secret, else at most 60 characters with control characters and the
/// bidirectional overrides escaped (as everything here escapes them).
pub fn shown(value: &str) -> String {
    if !secrets::detect(None, value).is_empty() {
        return secrets::mask(value);
    }
    let mut out: String = value
        .chars()
        .take(60)
        .flat_map(|c| {
            if unsafe_char(c) {
                c.escape_unicode().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect();
    if value.chars().count() > 60 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value shown in a message escapes what `outside` escapes: C0 and
    /// the bidirectional overrides that would reorder the message.
    #[test]
    fn a_shown_value_escapes_controls_and_bidi_overrides() {
        assert_eq!(shown("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(shown("evil\u{202e}txt.exe"), "evil\\u{202e}txt.exe");
        assert_eq!(shown("plain"), "plain");
    }

    /// What a report may hold raw: JSON's own line breaks and indentation.
    fn unsafe_char_in_report(c: char) -> bool {
        unsafe_char(c) && c != '\n'
    }

    #[test]
    fn escapes_what_a_terminal_would_obey() {
        let report = serde_json::json!({"name": "a\u{202e}b\u{9b}c\u{7f}\u{2066}", "n": 1});
        let text = json_report(&report);
        assert!(!text.chars().any(unsafe_char_in_report), "{text}");
        assert!(text.contains(r"a\u202eb\u009bc\u007f\u2066"), "{text}");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&text).unwrap(),
            report
        );
        let shown = line("a\u{1b}[2J\u{1b}]0;owned\u{7}b\u{202e}c\u{9b}d\ne", 100);
        assert_eq!(
            shown,
            "a\\u{1b}[2J\\u{1b}]0;owned\\u{7}b\\u{202e}c\\u{9b}d\\u{a}e"
        );
        assert!(!shown.chars().any(unsafe_char));
    }

    #[test]
    fn masks_tokens_and_bearers() {
        let token = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
        let shown = line(&format!("using {token} now"), 200);
        assert!(shown.starts_with("using ghp_***"), "{shown}");
        assert!(!shown.contains("0123456789abcdef"), "{shown}");
        let shown = line("Authorization: Bearer s3cr3tT0k3nV4lu3xyzQW", 200);
        assert!(!shown.contains("s3cr3tT0k3nV4lu3xyzQW"), "{shown}");
        assert_eq!(line("plain words stay", 200), "plain words stay");
        let digest = "9f81762a0c1e3b5d7f9e8d7c6b5a49382716f5e4d3c2b1a09f81762a0c1e3b5d";
        assert_eq!(line(digest, 200), digest);
        let names = "provenance.linux.x64.intoto.jsonl linux.x64.acme-context.tar.gz";
        assert_eq!(line(names, 200), names);
        let shown = line("key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEX4MPLEKEY", 200);
        assert!(!shown.contains("bPxRfiCYEX4MPLEKEY"), "{shown}");
    }

    #[test]
    fn cuts_with_the_count_of_what_was_cut() {
        assert_eq!(line("abcdef", 4), "abcd… (2 more characters)");
        let many: String = (0..50).map(|n| format!("line {n}\n")).collect();
        let shown = block(&many, 3, 100);
        assert_eq!(
            shown,
            "… (47 earlier lines not shown)\nline 47\nline 48\nline 49"
        );
    }

    #[test]
    fn a_tail_keeps_the_end_and_counts_the_rest() {
        let mut tail = Tail::new(10);
        tail.push(b"first line\nsecond\n");
        tail.push(b"xyz\n");
        assert_eq!(tail.dropped(), 12);
        assert_eq!(tail.text(), "econd\nxyz\n");
        assert_eq!(tail.render(), "… (12 earlier bytes not shown)\n…econd\nxyz");
        let mut big = Tail::new(8);
        big.push(&[b'a'; 1000]);
        assert_eq!(big.dropped(), 992);
        assert_eq!(big.text(), "aaaaaaaa");
    }
}
