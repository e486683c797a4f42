//! The one rule by which a known secret (the credential a target was given,
//! a bearer for an MCP endpoint) is removed from whatever ecp keeps or
//! shows: a cassette's requests and answers, and the reports, errors and
//! outputs of `ecp check` and `ecp call` that may echo an upstream's body,
//! a request's URL or a target's stderr.
//!
//! A secret travels in more forms than its own bytes, and each is found:
//!
//! - raw;
//! - percent-encoded, wholly or in part (only `/` as `%2F`, say), with
//!   upper- or lower-case hex, and `+` for a space as a query writes it;
//! - inside a JSON string: `\/`, `\"`, `\\`, the short escapes, and
//!   `\uXXXX` for any character (either case of hex, surrogate pairs for
//!   characters past U+FFFF);
//! - those two together (a URL echoed inside JSON, a JSON text sent in a
//!   query);
//! - base64 and base64url, padded or not, of the secret alone or inside
//!   a longer value (HTTP Basic's `user:password`): for each of the three
//!   alignments a base64 text can give it, the characters that only the
//!   secret decides are searched, and a match takes the whole base64 run
//!   around it, so the user name and padding go too.
//!
//! How: a few linear views of the input (as it is, percent-decoded,
//! JSON-unescaped, and both in either order), each remembering where every
//! byte came from; each form of each secret is precomputed once and found
//! in every view with `memchr`'s linear substring search; the places found
//! are merged in the input and replaced by [`REDACTED`]. The cost is a
//! fixed number of passes over the input, whatever it holds: a hostile
//! upstream's 4 MiB answer costs what reading it costs.

use base64::Engine as _;
use memchr::memmem::Finder;

/// What a secret becomes.
pub const REDACTED: &str = "<credential>";

/// The shortest secret the rule takes out: a shorter one (a test's `t`) is
/// no credential a service hands out, and taking every occurrence of it out
/// of a result would leave nothing readable.
pub const MIN_SECRET: usize = 4;

/// The shortest secret whose base64 forms are searched: below it the
/// characters it alone decides are too few to tell it from other text.
const MIN_BASE64_SECRET: usize = 6;

/// One form to search for.
struct Form {
    finder: Finder<'static>,
    /// A base64 form: the match takes the base64 run around it.
    base64: bool,
}

/// The secrets to remove, with their forms precomputed.
#[derive(Default)]
pub struct Secrets {
    forms: Vec<Form>,
    /// The raw forms of the secrets that hold a space, `+` read as a space
    /// (a query writes a space `+`, and a sloppy encoder leaves a `+` as
    /// it is): searched in the percent-decoded views read the same way.
    folded: Vec<Form>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secrets themselves.
        write!(f, "Secrets({} forms)", self.forms.len())
    }
}

impl Secrets {
    /// The rule for `secrets`; ones shorter than [`MIN_SECRET`] bytes (after
    /// trimming) are ignored.
    pub fn new<'a>(secrets: impl IntoIterator<Item = &'a str>) -> Secrets {
        let mut rule = Secrets::default();
        let mut seen: Vec<Vec<u8>> = Vec::new();
        for secret in secrets {
            let secret = secret.trim();
            if secret.len() < MIN_SECRET {
                continue;
            }
            if secret.contains(' ') {
                rule.folded.push(Form {
                    finder: Finder::new(secret.replace('+', " ").as_bytes()).into_owned(),
                    base64: false,
                });
            }
            let mut forms = vec![(secret.as_bytes().to_vec(), false)];
            if secret.len() >= MIN_BASE64_SECRET {
                forms.extend(
                    base64_cores(secret.as_bytes())
                        .into_iter()
                        .map(|f| (f, true)),
                );
            }
            for (form, base64) in forms {
                if form.is_empty() || seen.contains(&form) {
                    continue;
                }
                rule.forms.push(Form {
                    finder: Finder::new(&form).into_owned(),
                    base64,
                });
                seen.push(form);
            }
        }
        rule
    }

    /// Whether there is nothing to remove.
    pub fn is_empty(&self) -> bool {
        self.forms.is_empty()
    }

    /// Whether `text` holds a secret in any of its forms.
    pub fn holds(&self, text: &str) -> bool {
        !self.spans(text.as_bytes()).is_empty()
    }

    /// `text` with every form of every secret replaced by [`REDACTED`].
    pub fn redact(&self, text: &str) -> String {
        let spans = self.spans(text.as_bytes());
        if spans.is_empty() {
            return text.to_owned();
        }
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (start, end) in spans {
            // Spans end on character boundaries ([`Secrets::spans`]).
            out.push_str(text.get(at..start).unwrap_or_default());
            out.push_str(REDACTED);
            at = end;
        }
        out.push_str(text.get(at..).unwrap_or_default());
        out
    }

    /// Every string of `value` (keys too) redacted in place.
    pub fn redact_json(&self, value: &mut serde_json::Value) {
        use serde_json::Value;
        if self.is_empty() {
            return;
        }
        match value {
            Value::String(text) => *text = self.redact(text),
            Value::Array(items) => items.iter_mut().for_each(|item| self.redact_json(item)),
            Value::Object(members) => {
                let taken = std::mem::take(members);
                for (key, mut member) in taken {
                    self.redact_json(&mut member);
                    members.insert(self.redact(&key), member);
                }
            }
            _ => {}
        }
    }

    /// Where the secrets are in `input`: sorted, disjoint byte ranges,
    /// widened to UTF-8 character boundaries.
    fn spans(&self, input: &[u8]) -> Vec<(usize, usize)> {
        if self.is_empty() {
            return Vec::new();
        }
        let mut found = Vec::new();
        let raw = View::raw(input);
        self.search(&raw, &self.forms, input, &mut found);
        let percent = input.contains(&b'%') || (!self.folded.is_empty() && input.contains(&b'+'));
        // JSON escapes read strictly, and, where an escaped backslash
        // stands, also with it read as one backslash that may start an
        // escape (`\\u0041`): a form there is the secret's to a lax reader.
        let escapes: &[bool] = match (input.contains(&b'\\'), memchr::memmem::find(input, b"\\\\"))
        {
            (false, _) => &[],
            (true, None) => &[false],
            (true, Some(_)) => &[false, true],
        };
        if percent {
            let decoded = raw.percent_decoded();
            self.search(&decoded, &self.forms, input, &mut found);
            for &lax in escapes {
                self.search(&decoded.json_unescaped(lax), &self.forms, input, &mut found);
            }
            if !self.folded.is_empty() {
                self.search(&decoded.folded(), &self.folded, input, &mut found);
            }
        }
        for &lax in escapes {
            let unescaped = raw.json_unescaped(lax);
            self.search(&unescaped, &self.forms, input, &mut found);
            if percent {
                let decoded = unescaped.percent_decoded();
                self.search(&decoded, &self.forms, input, &mut found);
                if !self.folded.is_empty() {
                    self.search(&decoded.folded(), &self.folded, input, &mut found);
                }
            }
        }
        merge(found, input)
    }

    /// Every match of every one of `forms` in `view`, as ranges of `input`.
    fn search(
        &self,
        view: &View,
        forms: &[Form],
        input: &[u8],
        found: &mut Vec<(usize, usize, bool)>,
    ) {
        for form in forms {
            for start in form.finder.find_iter(&view.bytes) {
                let end = start + form.finder.needle().len();
                let (start, end) = view.origin(start, end, input.len());
                found.push((start, end, form.base64));
            }
        }
    }
}

/// For each alignment (0, 1 or 2 bytes before it in a base64 text) and
/// each alphabet, the characters of the encoding that only `secret`
/// decides.
fn base64_cores(secret: &[u8]) -> Vec<Vec<u8>> {
    let engines = [
        base64::engine::general_purpose::STANDARD_NO_PAD,
        base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ];
    let mut cores = Vec::new();
    for engine in engines {
        for before in 0..3 {
            let mut input = vec![0u8; before];
            input.extend_from_slice(secret);
            let encoded = engine.encode(&input).into_bytes();
            // Character j holds bits 6j..6j+6: only the secret's when it
            // starts past the `before` bytes and ends within the secret.
            let first = (8 * before).div_ceil(6);
            let last = 8 * input.len() / 6;
            if let Some(core) = encoded.get(first..last) {
                cores.push(core.to_vec());
            }
        }
    }
    cores
}

/// Whether `byte` may be part of a base64 or base64url text (`%` too: one
/// percent-encoded in a query).
fn base64_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'+' | b'/' | b'=' | b'-' | b'_' | b'%')
}

/// The found ranges sorted and merged; a base64 one widened to its run
/// (each byte looked at once: a widening stops where the last span ended);
/// every range on character boundaries.
fn merge(mut found: Vec<(usize, usize, bool)>, input: &[u8]) -> Vec<(usize, usize)> {
    found.sort_unstable();
    let mut spans: Vec<(usize, usize)> = Vec::with_capacity(found.len());
    for (mut start, mut end, base64) in found {
        let floor = spans.last().map_or(0, |&(_, end)| end);
        if base64 {
            while start > floor && base64_byte(input[start - 1]) {
                start -= 1;
            }
            if end > floor {
                while end < input.len() && base64_byte(input[end]) {
                    end += 1;
                }
            }
        }
        while start > 0 && is_continuation(input[start]) {
            start -= 1;
        }
        while end < input.len() && is_continuation(input[end]) {
            end += 1;
        }
        match spans.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => spans.push((start, end)),
        }
    }
    spans
}

fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}

/// The input decoded one way, with where each decoded byte's unit began
/// in the input (`None`: the input itself).
struct View {
    bytes: Vec<u8>,
    starts: Option<Vec<usize>>,
}

impl View {
    fn raw(input: &[u8]) -> View {
        View {
            bytes: input.to_vec(),
            starts: None,
        }
    }

    /// Where decoded byte `at` began in the input.
    fn start(&self, at: usize, input_len: usize) -> usize {
        match &self.starts {
            None => at,
            Some(starts) => starts.get(at).copied().unwrap_or(input_len),
        }
    }

    /// The input range of decoded bytes `start..end`: from the start of
    /// the first's unit to the end of the last's (the start of the next
    /// unit; a unit gives at most four bytes, so this looks at most four
    /// ahead per view it passed through).
    fn origin(&self, start: usize, end: usize, input_len: usize) -> (usize, usize) {
        let first = self.start(start, input_len);
        let last = self.start(end - 1, input_len);
        let mut next = end;
        while next < self.bytes.len() && self.start(next, input_len) == last {
            next += 1;
        }
        (first, self.start(next, input_len))
    }

    /// A view of this view: `decode` gives (bytes out, bytes it read) at
    /// each place; the starts are composed back to the input.
    fn decoded(&self, decode: impl Fn(&[u8]) -> (Vec<u8>, usize)) -> View {
        let mut bytes = Vec::with_capacity(self.bytes.len());
        let mut starts = Vec::with_capacity(self.bytes.len());
        let mut at = 0;
        while at < self.bytes.len() {
            let (out, read) = decode(&self.bytes[at..]);
            let origin = self.start(at, usize::MAX);
            starts.extend(std::iter::repeat_n(origin, out.len()));
            bytes.extend_from_slice(&out);
            at += read.max(1);
        }
        View {
            bytes,
            starts: Some(starts),
        }
    }

    /// `%XX` (either case) decoded.
    fn percent_decoded(&self) -> View {
        self.decoded(|rest| match rest {
            [b'%', high, low, ..] => match (hex(*high), hex(*low)) {
                (Some(high), Some(low)) => (vec![high << 4 | low], 3),
                _ => (vec![b'%'], 1),
            },
            [byte, ..] => (vec![*byte], 1),
            [] => (Vec::new(), 1),
        })
    }

    /// Every `+` read as a space (byte for byte, so the starts stay).
    fn folded(mut self) -> View {
        for byte in &mut self.bytes {
            if *byte == b'+' {
                *byte = b' ';
            }
        }
        self
    }

    /// JSON string escapes decoded wherever they stand; a lone surrogate
    /// or a broken escape is left as it is. `lax`: `\\` read as a
    /// backslash that may start the next escape.
    fn json_unescaped(&self, lax: bool) -> View {
        self.decoded(|rest| match rest {
            [b'\\', b'\\', ..] if lax => (vec![b'\\'], 1),
            [b'\\', b'u', ..] => unicode_escape(rest),
            [b'\\', escaped, ..] => match short_escape(*escaped) {
                Some(byte) => (vec![byte], 2),
                None => (vec![b'\\'], 1),
            },
            [byte, ..] => (vec![*byte], 1),
            [] => (Vec::new(), 1),
        })
    }
}

fn hex(byte: u8) -> Option<u8> {
    (byte as char)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

/// The four hex digits after `\u` at the start of `rest`.
fn code_unit(rest: &[u8]) -> Option<u32> {
    match rest {
        [b'\\', b'u', a, b, c, d, ..] => [a, b, c, d].iter().try_fold(0u32, |unit, &&digit| {
            Some(unit << 4 | u32::from(hex(digit)?))
        }),
        _ => None,
    }
}

/// `\uXXXX`, or a surrogate pair of two, as UTF-8.
fn unicode_escape(rest: &[u8]) -> (Vec<u8>, usize) {
    let utf8 = |c: char| c.to_string().into_bytes();
    let Some(unit) = code_unit(rest) else {
        return (vec![b'\\'], 1);
    };
    if let Some(c) = char::from_u32(unit) {
        return (utf8(c), 6);
    }
    let low = rest.get(6..).and_then(code_unit);
    match low {
        Some(low) if (0xD800..0xDC00).contains(&unit) && (0xDC00..0xE000).contains(&low) => {
            let c = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
            char::from_u32(c).map_or((vec![b'\\'], 1), |c| (utf8(c), 12))
        }
        _ => (vec![b'\\'], 1),
    }
}

fn short_escape(byte: u8) -> Option<u8> {
    Some(match byte {
        b'"' | b'\\' | b'/' => byte,
        b'b' => 0x08,
        b'f' => 0x0C,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "sig Kq3/x+Yz9w==";

    fn rule() -> Secrets {
        Secrets::new([SECRET])
    }

    fn gone(text: &str) -> String {
        let out = rule().redact(text);
        assert!(out.contains(REDACTED), "{text:?} -> {out:?}");
        for piece in out.split(REDACTED) {
            assert!(!rule().holds(piece), "{text:?} -> {out:?}");
        }
        out
    }

    #[test]
    fn the_raw_secret_goes() {
        assert_eq!(gone(&format!("a {SECRET} b")), format!("a {REDACTED} b"));
        assert_eq!(rule().redact("nothing here"), "nothing here");
        assert!(Secrets::new(["", "  ", "t", "abc"]).is_empty());
        assert_eq!(Secrets::new(["t"]).redact("the text"), "the text");
    }

    #[test]
    fn percent_encodings_go_whole_partial_either_case_and_plus_for_space() {
        for form in [
            "sig%20Kq3%2Fx%2BYz9w%3D%3D",
            "sig+Kq3%2fx%2bYz9w%3d%3d",
            "sig+Kq3%2Fx+Yz9w==",
            "%73%69%67%20%4b%71%33%2F%78%2B%59%7A%39%77%3D%3D",
        ] {
            let out = gone(&format!("/s?q=a&api_key={form}&x=1"));
            assert_eq!(out, format!("/s?q=a&api_key={REDACTED}&x=1"), "{form}");
        }
        // A lone `+` stays a `+` when the secret holds one.
        assert_eq!(
            Secrets::new(["a+b/c"]).redact("k=a+b%2Fc"),
            format!("k={REDACTED}")
        );
    }

    #[test]
    fn json_escapes_go_short_unicode_either_case_and_surrogate_pairs() {
        for form in [
            r"sig Kq3\/x+Yz9w==",
            r"\u0073ig\u0020Kq3\/x\u002BYz9w\u003d\u003D",
            r"sig Kq3\u002fx+Yz9w==",
        ] {
            let out = gone(&format!(r#"{{"echo":"{form}","n":1}}"#));
            assert_eq!(out, format!(r#"{{"echo":"{REDACTED}","n":1}}"#), "{form}");
        }
        let wide = Secrets::new(["tok\u{1F511}en"]);
        let out = wide.redact(r#"{"k":"tok\ud83d\uDD11en"}"#);
        assert_eq!(out, format!(r#"{{"k":"{REDACTED}"}}"#));
        // Escapes and percent-encoding together: a URL echoed in JSON.
        let out = gone(r#"{"url":"http:\/\/h\/s?api_key=sig+Kq3%2Fx%2BYz9w%3D%3D"}"#);
        assert_eq!(
            out,
            format!(r#"{{"url":"http:\/\/h\/s?api_key={REDACTED}"}}"#)
        );
        // After an escaped backslash, to a lax reader.
        assert_eq!(
            rule().redact(r"\\u0073ig Kq3\/x+Yz9w=="),
            format!(r"\{REDACTED}")
        );
        // A lone surrogate and a broken escape are left as they are.
        assert_eq!(rule().redact(r"\ud800 \u12 \q"), r"\ud800 \u12 \q");
    }

    #[test]
    fn base64_goes_alone_and_as_a_basic_pair_with_its_run() {
        let engines = [
            base64::engine::general_purpose::STANDARD,
            base64::engine::general_purpose::STANDARD_NO_PAD,
            base64::engine::general_purpose::URL_SAFE,
            base64::engine::general_purpose::URL_SAFE_NO_PAD,
        ];
        for engine in engines {
            for user in ["", "u", "us", "kb-user"] {
                let value = if user.is_empty() {
                    SECRET.to_owned()
                } else {
                    format!("{user}:{SECRET}")
                };
                let encoded = engine.encode(&value);
                let out = gone(&format!("authorization: Basic {encoded}\n"));
                assert_eq!(out, format!("authorization: Basic {REDACTED}\n"), "{value}");
            }
        }
        // Too short a secret is not searched in base64 (it would be noise).
        assert_eq!(Secrets::new(["abc"]).redact("YWJj"), "YWJj");
    }

    #[test]
    fn several_secrets_and_overlaps_make_one_span() {
        let rule = Secrets::new(["abcdef", "defghi"]);
        assert_eq!(rule.redact("x abcdefghi y"), format!("x {REDACTED} y"));
        assert_eq!(rule.redact("aaabcdefabcdef"), format!("aa{REDACTED}"));
    }

    #[test]
    fn spans_stay_on_character_boundaries() {
        let rule = Secrets::new(["éé"]);
        // The secret's bytes percent-encoded next to multi-byte characters.
        assert_eq!(rule.redact("ü%C3%A9%C3%A9ü"), format!("ü{REDACTED}ü"));
        assert_eq!(rule.redact(r"\u00e9\u00E9ü"), format!("{REDACTED}ü"));
        assert_eq!(
            Secrets::new(["\u{a9}\u{a9}"]).redact("\u{e9}\u{e9}"),
            "\u{e9}\u{e9}"
        );
    }

    #[test]
    fn json_stays_json_when_the_secret_is_inside_a_string() {
        let mut value = serde_json::json!({"a": ["x sig+Kq3%2Fx%2BYz9w%3D%3D", 1], SECRET: true});
        rule().redact_json(&mut value);
        assert_eq!(
            value,
            serde_json::json!({"a": [format!("x {REDACTED}"), 1], REDACTED: true})
        );
    }

    #[test]
    fn a_large_hostile_input_is_one_pass() {
        // Runs of near-matches, escapes and base64 that a quadratic scan
        // would not finish; each is read a fixed number of times.
        let near = "sig Kq3/x+Yz9w=".repeat(300_000);
        assert_eq!(rule().redact(&near), near);
        let escapes = r"\u0073%2".repeat(400_000);
        assert_eq!(rule().redact(&escapes), escapes);
        let basic = base64::engine::general_purpose::STANDARD.encode(SECRET.repeat(200_000));
        assert_eq!(rule().redact(&basic), REDACTED);
    }
}
