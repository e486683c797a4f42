//! ECMAScript-compatible text primitives: UTF-16 lengths, `JSON.stringify`
//! string escaping (plus the profile's `<`/`>` escaping) and
//! `Number.prototype.toString`.
//!
//! The reference starter is JavaScript, and profile text must match it byte
//! for byte, so these functions reproduce the engine's behaviour rather than
//! `serde_json`'s (which writes `1.0` and escapes differently).

use std::borrow::Cow;

use std::fmt::Write as _;

/// UTF-16 units per UTF-8 byte: a lead byte counts its character's units
/// (1, or 2 for a 4-byte sequence), a continuation byte 0.
const fn utf16_units_of_byte(b: u8) -> u8 {
    match b {
        0x80..=0xBF => 0,
        0xF0..=0xFF => 2,
        _ => 1,
    }
}

/// What [`write_json_string`] writes for one byte, in UTF-16 units: the
/// escapes are all ASCII, so a byte table over valid UTF-8 counts the
/// escaped form exactly.
const ESCAPED_UTF16_UNITS: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = match b as u8 {
            b'"' | b'\\' | 0x08 | 0x0C | b'\n' | b'\r' | b'\t' => 2,
            b'<' | b'>' | 0x00..=0x1F => 6,
            other => utf16_units_of_byte(other),
        };
        b += 1;
    }
    table
};

/// Length of `s` in UTF-16 code units (JavaScript `string.length`).
pub fn utf16_len(s: &str) -> usize {
    s.bytes().map(|b| usize::from(utf16_units_of_byte(b))).sum()
}

/// UTF-16 length of what [`write_json_string`] writes for one character.
pub fn escaped_char_utf16_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\u{8}' | '\u{c}' | '\n' | '\r' | '\t' => 2,
        '<' | '>' => 6,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf16(),
    }
}

/// UTF-16 length of `s` once quoted and escaped by [`write_json_string`].
pub fn quoted_utf16_len(s: &str) -> usize {
    2 + s
        .bytes()
        .map(|b| usize::from(ESCAPED_UTF16_UNITS[usize::from(b)]))
        .sum::<usize>()
}

/// Whether any byte of `word` is one of `these` or below 0x20 (the
/// classic zero-byte test: it never misses one).
pub(crate) fn word_has_any_or_control(word: u64, these: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    let zero_in = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
    these.iter().fold(control, |found, &byte| {
        found | zero_in(word ^ (ONES * u64::from(byte)))
    }) != 0
}

/// Calls `each(at, byte)` for every byte of `bytes` that may need an
/// escape: words of eight bytes that `flagged` clears are skipped whole,
/// every byte of the others (and of the tail) is passed.
pub(crate) fn scan_words(
    bytes: &[u8],
    flagged: impl Fn(u64) -> bool,
    mut each: impl FnMut(usize, u8),
) {
    let mut at = 0;
    while at < bytes.len() {
        if let Some(chunk) = bytes.get(at..at + 8) {
            let word = u64::from_ne_bytes(chunk.try_into().unwrap_or([0; 8]));
            if !flagged(word) {
                at += 8;
                continue;
            }
        }
        let end = (at + 8).min(bytes.len());
        for (offset, &byte) in bytes[at..end].iter().enumerate() {
            each(at + offset, byte);
        }
        at = end;
    }
}

/// Appends `s` as a quoted JSON string the way `JSON.stringify` writes it,
/// then with every `<` as `\u003c` and every `>` as `\u003e`.
pub fn write_json_string(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    // Every byte that needs an escape is ASCII, so every cut is at a
    // character boundary.
    let mut clean_from = 0;
    let flagged = |word| word_has_any_or_control(word, b"\"\\<>");
    scan_words(s.as_bytes(), flagged, |at, b| {
        let escape: Option<&str> = match b {
            b'"' => Some("\\\""),
            b'\\' => Some("\\\\"),
            0x08 => Some("\\b"),
            0x0C => Some("\\f"),
            b'\n' => Some("\\n"),
            b'\r' => Some("\\r"),
            b'\t' => Some("\\t"),
            b'<' => Some("\\u003c"),
            b'>' => Some("\\u003e"),
            0x00..=0x1F => None,
            _ => return,
        };
        out.push_str(&s[clean_from..at]);
        match escape {
            Some(escape) => out.push_str(escape),
            None => {
                let _ = write!(out, "\\u{b:04x}");
            }
        }
        clean_from = at + 1;
    });
    out.push_str(&s[clean_from..]);
    out.push('"');
}

/// Splits Rust's `{:e}` form (`d.ddde±x`) into its digits and exponent.
fn scientific_parts(formatted: &str) -> (String, i32) {
    let (mantissa, exponent) = formatted.split_once('e').unwrap_or((formatted, "0"));
    let digits = mantissa.chars().filter(|c| *c != '.').collect();
    (digits, exponent.parse().unwrap_or(0))
}

/// A short text formatted on the stack: a score is rendered on every call,
/// and `format!` would allocate twice for each.
struct StackText {
    bytes: [u8; 40],
    len: usize,
}

impl StackText {
    fn of(args: std::fmt::Arguments<'_>) -> Option<StackText> {
        let mut text = StackText {
            bytes: [0; 40],
            len: 0,
        };
        std::fmt::write(&mut text, args).ok()?;
        Some(text)
    }

    fn as_str(&self) -> &str {
        // Only whole `&str`s are ever copied in.
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
    }
}

impl std::fmt::Write for StackText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        let slot = self.bytes.get_mut(self.len..end).ok_or(std::fmt::Error)?;
        slot.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// The shortest digits that read back as `x` (positive and finite), and
/// the exponent of the first digit, chosen as ECMAScript's Number::toString
/// chooses them.
///
/// Rust's `{:e}` gives the shortest round-tripping digits too, but when `x`
/// lies exactly halfway between two such candidates it rounds half up where
/// ECMAScript takes the even one (`1826280094248744.25` is `...744.2` in
/// JavaScript, `...744.3` in Rust).
fn shortest_digits(x: f64) -> (String, i32) {
    // At most 17 digits, a point and `e-324`: always fits on the stack.
    let (digits, exponent) = match StackText::of(format_args!("{x:e}")) {
        Some(text) => scientific_parts(text.as_str()),
        None => scientific_parts(&format!("{x:e}")),
    };
    let k = digits.len();
    // A tie needs x to be exactly k+1 significant digits ending in 5; the
    // correctly rounded k+1-digit form is a cheap first filter.
    let near_ends_in_5 = match StackText::of(format_args!("{x:.k$e}")) {
        Some(text) => text.as_str().split('e').next().unwrap_or("").ends_with('5'),
        None => scientific_parts(&format!("{x:.k$e}")).0.ends_with('5'),
    };
    if !near_ends_in_5 || k >= 19 {
        return (digits, exponent);
    }
    // 800 digits hold the exact decimal expansion of any double.
    let (exact, exact_exponent) = scientific_parts(&format!("{x:.800e}"));
    let exact = exact.trim_end_matches('0');
    if exact.len() != k + 1 || !exact.ends_with('5') {
        return (digits, exponent);
    }
    let Ok(low) = exact[..k].parse::<u64>() else {
        return (digits, exponent);
    };
    let scale = exact_exponent - (k as i32 - 1);
    let reads_back = |candidate: u64| format!("{candidate}e{scale}").parse::<f64>() == Ok(x);
    let high = low + 1;
    let even = if low % 2 == 0 { low } else { high };
    if !(reads_back(low) && reads_back(high)) {
        return (digits, exponent);
    }
    let even = even.to_string();
    let first_digit_exponent = scale + even.len() as i32 - 1;
    (even.trim_end_matches('0').to_owned(), first_digit_exponent)
}

/// Formats `x` as ECMAScript `Number.prototype.toString()` does (radix 10):
/// `1` not `1.0`, `0.91`, `1e+21`, `1.5e-7`, `-0` as `0`.
pub fn format_number(x: f64) -> String {
    if x.is_nan() {
        return "NaN".to_owned();
    }
    if x == 0.0 {
        return "0".to_owned();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    let (digits, exponent) = shortest_digits(x.abs());
    let k = digits.len() as i32;
    let n = exponent + 1;

    let mut out = String::with_capacity(digits.len() + 8);
    if x < 0.0 {
        out.push('-');
    }
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        out.push_str(&digits[..n as usize]);
        out.push('.');
        out.push_str(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(&digits);
    } else {
        out.push_str(&digits[..1]);
        if k > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if n > 0 { '+' } else { '-' });
        let _ = write!(out, "{}", (n - 1).abs());
    }
    out
}

fn hex4(bytes: &[u8], at: usize) -> Option<u16> {
    let digits = bytes.get(at..at + 4)?;
    let digits = std::str::from_utf8(digits).ok()?;
    u16::from_str_radix(digits, 16).ok()
}

fn is_json_number(token: &str) -> bool {
    let rest = token.strip_prefix('-').unwrap_or(token);
    let int_end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let (int, mut rest) = rest.split_at(int_end);
    if int.is_empty() || (int.len() > 1 && int.starts_with('0')) {
        return false;
    }
    if let Some(fraction) = rest.strip_prefix('.') {
        let end = fraction
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(fraction.len());
        if end == 0 {
            return false;
        }
        rest = &fraction[end..];
    }
    if let Some(exponent) = rest.strip_prefix(['e', 'E']) {
        let exponent = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
        return !exponent.is_empty() && exponent.bytes().all(|b| b.is_ascii_digit());
    }
    rest.is_empty()
}

/// Rewrites what serde_json cannot hold but `JSON.parse` reads: a lone
/// surrogate escape becomes `\ufffd`, and (with `numbers`) a valid number
/// literal that overflows a double becomes `false` (like Infinity, it is no
/// string, no finite number, no object and not null, so every binding rule
/// treats it the same). The HTTP binding uses both; the stdio framing only
/// the first, so that a request holding `"\ud800"` is answered.
pub fn javascript_compatible(text: &str, numbers: bool) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut out = String::new();
    let mut copied = 0;
    let mut replace = |out: &mut String, from: usize, to: usize, with: &str| {
        out.push_str(&text[copied..from]);
        out.push_str(with);
        copied = to;
    };
    let is_high = |unit: u16| (0xD800..0xDC00).contains(&unit);
    let is_low = |unit: u16| (0xDC00..0xE000).contains(&unit);
    let mut in_string = false;
    let mut at = 0;
    while at < bytes.len() {
        match (in_string, bytes[at]) {
            (true, b'"') => {
                in_string = false;
                at += 1;
            }
            (true, b'\\') if bytes.get(at + 1) == Some(&b'u') => match hex4(bytes, at + 2) {
                Some(unit) if is_high(unit) => {
                    let paired = bytes.get(at + 6..at + 8) == Some(b"\\u")
                        && hex4(bytes, at + 8).is_some_and(is_low);
                    if paired {
                        at += 12;
                    } else {
                        replace(&mut out, at, at + 6, "\\ufffd");
                        at += 6;
                    }
                }
                Some(unit) if is_low(unit) => {
                    replace(&mut out, at, at + 6, "\\ufffd");
                    at += 6;
                }
                _ => at += 2,
            },
            (true, b'\\') => at += 2,
            (false, b'"') => {
                in_string = true;
                at += 1;
            }
            (false, b'-' | b'0'..=b'9') if numbers => {
                let start = at;
                at += 1;
                while at < bytes.len()
                    && matches!(bytes[at], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
                {
                    at += 1;
                }
                let token = &text[start..at];
                if is_json_number(token) && token.parse::<f64>().is_ok_and(f64::is_infinite) {
                    replace(&mut out, start, at, "false");
                }
            }
            _ => at += 1,
        }
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quoted(s: &str) -> String {
        let mut out = String::new();
        write_json_string(&mut out, s);
        out
    }

    #[test]
    // The halfway cases are written exactly on purpose.
    #[allow(clippy::excessive_precision)]
    fn numbers_follow_ecmascript() {
        let cases = [
            (1.0, "1"),
            (0.91, "0.91"),
            (-0.0, "0"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (123456789012345680000.0, "123456789012345680000"),
            (1e-7, "1e-7"),
            (1.5e-7, "1.5e-7"),
            (0.000001, "0.000001"),
            (0.0000015, "0.0000015"),
            (-2.5, "-2.5"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (0.1 + 0.2, "0.30000000000000004"),
            (100.0, "100"),
            (1.25e22, "1.25e+22"),
            // Exactly halfway between two shortest candidates: the even one.
            (1826280094248744.25, "1826280094248744.2"),
            (-9045312443734.5625, "-9045312443734.562"),
            (828972620067779.25, "828972620067779.2"),
        ];
        for (x, want) in cases {
            assert_eq!(format_number(x), want, "{x:?}");
        }
    }

    #[test]
    fn strings_escape_like_json_stringify_then_angle_brackets() {
        assert_eq!(quoted("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(quoted("\u{8}\u{c}\n\r\t"), r#""\b\f\n\r\t""#);
        assert_eq!(quoted("\u{0}\u{1f}\u{7f}"), "\"\\u0000\\u001f\u{7f}\"");
        assert_eq!(quoted("<b>"), r#""\u003cb\u003e""#);
        assert_eq!(quoted("\u{2028}/é😀"), "\"\u{2028}/é😀\"");
    }

    /// `JSON.stringify`'s escapes and the angle brackets, one character at a
    /// time: what [`write_json_string`] must write.
    fn by_character(s: &str) -> String {
        let mut out = String::from('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '<' => out.push_str("\\u003c"),
                '>' => out.push_str("\\u003e"),
                c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }

    /// The word-at-a-time writer against the escapes one character at a
    /// time: every ASCII byte at every offset of a word, alone and in runs,
    /// beside multi-byte characters.
    #[test]
    fn words_skipped_whole_escape_as_characters_do() {
        for byte in 0u8..0x80 {
            for offset in 0..17 {
                let c = char::from(byte);
                for s in [
                    format!("{}{c}bcdefghij", "a".repeat(offset)),
                    c.to_string().repeat(offset),
                    format!("{}{c}😀", "é".repeat(offset)),
                ] {
                    assert_eq!(quoted(&s), by_character(&s), "{s:?}");
                }
            }
        }
    }

    #[test]
    fn lengths_count_utf16_units_of_the_escaped_form() {
        for s in ["", "plain", "<x>", "\u{1}\n\"", "😀é\u{2028}", "\\"] {
            let q = quoted(s);
            assert_eq!(quoted_utf16_len(s), utf16_len(&q), "{s:?}");
        }
        assert_eq!(utf16_len("😀"), 2);
    }

    /// The byte tables agree with the character-by-character definitions
    /// (JavaScript's `length`, and the escapes one character at a time) on
    /// strings drawn from every kind of character.
    #[test]
    fn byte_tables_agree_with_the_character_definitions() {
        let palette: Vec<char> = (0u32..0x80)
            .filter_map(char::from_u32)
            .chain([
                'é', 'ß', '\u{7ff}', '\u{800}', '\u{2028}', '\u{fffd}', '\u{ffff}',
            ])
            .chain(['😀', '\u{10000}', '\u{10ffff}'])
            .collect();
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..2000 {
            let mut s = String::new();
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            for _ in 0..(state % 24) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                s.push(palette[(state % palette.len() as u64) as usize]);
            }
            let chars_utf16: usize = s.chars().map(char::len_utf16).sum();
            assert_eq!(utf16_len(&s), chars_utf16, "{s:?}");
            let escaped: usize = s.chars().map(escaped_char_utf16_len).sum();
            assert_eq!(quoted_utf16_len(&s), escaped + 2, "{s:?}");
            assert_eq!(quoted(&s), by_character(&s), "{s:?}");
        }
    }
}
