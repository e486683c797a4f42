//! What `ecp check --cassette` and the scripted upstream read from outside:
//! a cassette file (someone else's, in a reviewed repository), the requests
//! a target sends, the lines it writes, and the recorded answers bent into
//! hostile ones. Whatever the bytes: no panic; a cassette that parses is
//! within its bounds; a request's marker is one of the suite's words; a
//! line rewritten for lone surrogates is rewritten once and still reads
//! wherever `JSON.parse` read it; every hostile variant of a document is JSON.
//!
//! And the secret rule a recording (and every output) goes through: a
//! secret taken from the input, carried in one of its encoded forms (raw,
//! percent-encoded in part or whole in either case, `+` for a space, JSON
//! escapes, base64 of it or of a Basic pair) after a space in the rest of
//! the input:
//! no known encoded form of it survives the rule, and what is left between
//! the `<credential>` marks no longer holds it (a second, plain decoder here
//! says so too).

use base64::Engine as _;
use ecp::check::{
    cassette::Cassette,
    lines, mutate,
    secret::{REDACTED, Secrets},
    upstream::{SeenRequest, markers},
};

/// One input, as the fuzz target and the seed replay in `cargo test` run it.
pub fn run(data: &[u8]) {
    redaction(data);
    let text = String::from_utf8_lossy(data);

    if let Ok(cassette) = Cassette::parse(&text) {
        assert!(!cassette.exchanges.is_empty() && cassette.exchanges.len() <= 64);
        assert!(cassette.base_path.starts_with('/'));
        // A cassette answers the request it recorded, whatever its method.
        let request = SeenRequest {
            method: cassette.exchanges[0].method.clone(),
            path: cassette.exchanges[0].target.clone(),
            headers: Vec::new(),
            body: cassette.exchanges[0].body.clone(),
            tag: None,
        };
        assert!(cassette.answer_for(&request).is_some());
    }

    let middle = (0..=text.len() / 2)
        .rev()
        .find(|&at| text.is_char_boundary(at))
        .unwrap_or(0);
    let (path, body) = text.split_at(middle);
    let (path, body) = (path.to_owned(), body.to_owned());
    let request = SeenRequest {
        method: "POST".into(),
        path,
        headers: Vec::new(),
        body,
        tag: None,
    };
    if let Some((marker, _)) = request.marker() {
        assert!(markers().contains(&marker.as_str()));
    }

    let js = ecp::providers::http::parse_json_like_javascript(&text);
    if let Some(rewritten) = lines::as_json_parse_reads(data) {
        // Once is enough, and what JSON.parse read still reads.
        assert_eq!(lines::as_json_parse_reads(&rewritten), None);
        let rewritten = std::str::from_utf8(&rewritten).expect("UTF-8 in, UTF-8 out");
        if js.is_some() {
            assert!(
                ecp::providers::http::parse_json_like_javascript(rewritten).is_some(),
                "{rewritten:?}"
            );
        }
    }

    if let Some(document) = js {
        let seed = data.first().copied().unwrap_or(0).into();
        let hostile = mutate::hostile(&document, seed, data.len() as u64);
        let hostile = std::str::from_utf8(&hostile).expect("UTF-8");
        assert!(
            ecp::providers::http::parse_json_like_javascript(hostile).is_some(),
            "{hostile:?}"
        );
    }
}

/// The first byte says how long the secret is and how it is carried; the
/// secret follows; the rest is the text it is carried in (at its middle).
fn redaction(data: &[u8]) {
    let [how, rest @ ..] = data else {
        return;
    };
    let length = usize::from(how % 24) + 1;
    let (secret, text) = rest.split_at(length.min(rest.len()));
    let secret = String::from_utf8_lossy(secret).trim().to_owned();
    // Secrets that hold the mark's own characters, or the characters an
    // encoding is made of, can meet themselves across a mark: not a leak.
    // Shorter secrets are not taken out (`secret::MIN_SECRET`).
    if secret.len() < ecp::check::secret::MIN_SECRET || secret.contains(['<', '>', '%', '\\', '+'])
    {
        return;
    }
    let text = String::from_utf8_lossy(text);
    let carried = carry(&secret, *how / 24, &text);
    let middle = (0..=text.len() / 2)
        .rev()
        .find(|&at| text.is_char_boundary(at))
        .unwrap_or(0);
    // After a space, so that it reads as what it is: glued to a `\ud0`
    // before it, a reader takes its first letters into that escape.
    let input = format!("{} {carried}{}", &text[..middle], &text[middle..]);
    let rule = Secrets::new([secret.as_str()]);
    let out = rule.redact(&input);
    for piece in out.split(REDACTED) {
        assert!(
            REDACTED.contains(carried.as_str()) || !piece.contains(carried.as_str()),
            "{secret:?} carried as {carried:?} survives in {out:?}"
        );
        assert!(!rule.holds(piece), "{secret:?} survives in {out:?}");
        for decoded in [percent_decoded(piece), json_unescaped(piece)] {
            assert!(!decoded.contains(&secret), "{secret:?} survives in {out:?}");
        }
    }
}

/// `secret` in one of the forms it travels in, chosen by `how` (and the
/// text's bytes, for which characters an encoding touches).
fn carry(secret: &str, how: u8, text: &str) -> String {
    let pick = |at: usize| text.as_bytes().get(at).copied().unwrap_or(0x55);
    let per_char = |encode: &dyn Fn(usize, char) -> String| -> String {
        secret
            .chars()
            .enumerate()
            .map(|(at, c)| encode(at, c))
            .collect()
    };
    let percent = |c: char, upper: bool| -> String {
        let mut bytes = [0; 4];
        c.encode_utf8(&mut bytes)
            .bytes()
            .map(|b| {
                if upper {
                    format!("%{b:02X}")
                } else {
                    format!("%{b:02x}")
                }
            })
            .collect()
    };
    let escape = |c: char, upper: bool| -> String {
        let mut units = [0; 2];
        c.encode_utf16(&mut units)
            .iter()
            .map(|u| {
                if upper {
                    format!("\\u{u:04X}")
                } else {
                    format!("\\u{u:04x}")
                }
            })
            .collect()
    };
    let engines = [
        base64::engine::general_purpose::STANDARD,
        base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ];
    match how % 7 {
        0 => secret.to_owned(),
        // Percent-encoded in part (the text's bits say which), either case,
        // a space as `+`.
        1 => per_char(&|at, c| match (c, pick(at) % 3) {
            (' ', _) => "+".to_owned(),
            (c, 0) => c.to_string(),
            (c, n) => percent(c, n == 1),
        }),
        // JSON escapes, in part, either case; `/` as `\/`.
        2 => per_char(&|at, c| match (c, pick(at) % 3) {
            ('/', _) => "\\/".to_owned(),
            (c, 0) if c != '"' && !c.is_control() => c.to_string(),
            (c, n) => escape(c, n == 1),
        }),
        // Percent-encoded, then inside JSON (a URL echoed by an upstream).
        3 => per_char(&|at, c| percent(c, pick(at) % 2 == 0)).replace('/', "\\/"),
        4 | 5 if secret.len() >= 6 => {
            let engine = &engines[usize::from(how % 2)];
            let user = &"kb-user:"[..usize::from(pick(0) % 9)];
            engine.encode(format!("{user}{secret}"))
        }
        _ => per_char(&|_, c| percent(c, true)),
    }
}

/// A plain reading of `%XX` (not the rule's): bytes, then lossy text.
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let hex = bytes
            .get(at + 1..at + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .filter(|h| h.chars().all(|c| c.is_ascii_hexdigit()))
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[at], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                at += 3;
            }
            (byte, _) => {
                out.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A plain reading of JSON string escapes (not the rule's), pairs too.
fn json_unescaped(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let unit = |at: usize| -> Option<u32> {
        (chars.get(at) == Some(&'\\') && chars.get(at + 1) == Some(&'u'))
            .then(|| chars.get(at + 2..at + 6))
            .flatten()
            .and_then(|h| u32::from_str_radix(&h.iter().collect::<String>(), 16).ok())
            .filter(|_| chars[at + 2..at + 6].iter().all(char::is_ascii_hexdigit))
    };
    let mut out = String::new();
    let mut at = 0;
    while at < chars.len() {
        if let Some(high) = unit(at) {
            if let Some(c) = char::from_u32(high) {
                out.push(c);
                at += 6;
                continue;
            }
            if let Some(low) = unit(at + 6)
                && (0xD800..0xDC00).contains(&high)
                && (0xDC00..0xE000).contains(&low)
                && let Some(c) = char::from_u32(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
            {
                out.push(c);
                at += 12;
                continue;
            }
        }
        let short = match (chars[at], chars.get(at + 1)) {
            ('\\', Some('/')) => Some('/'),
            ('\\', Some('"')) => Some('"'),
            ('\\', Some('\\')) => Some('\\'),
            _ => None,
        };
        match short {
            Some(c) => {
                out.push(c);
                at += 2;
            }
            None => {
                out.push(chars[at]);
                at += 1;
            }
        }
    }
    out
}
