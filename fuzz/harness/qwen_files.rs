//! The readers of the files Qwen Code reads, as doctor predicts it: `.env`
//! text as dotenv parses it, JSON with comments as `JSON.parse` reads it
//! (`ecp::json`), and a JSON report escaped for a terminal. Properties, not
//! only "no panic": a leading byte order mark changes no `.env` variable
//! (dotenv's `^\s*` eats it); whatever serde_json reads (up to its own
//! nesting limit), the JSON.parse-like reader reads too; a report carries
//! no raw C1 control or bidi character and reads back as the same value.

/// One input, as the fuzz target and the seed replay in `cargo test` run it.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let vars = ecp::qwen::env_file::parse(text);
    assert_eq!(
        ecp::qwen::env_file::parse(&format!("\u{feff}{text}")),
        vars,
        "a byte order mark changed what dotenv reads"
    );
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(text) {
        assert!(
            ecp::json::parse_value(text).is_ok(),
            "serde_json reads it, so JSON.parse does"
        );
        let report = ecp::text::outside::json_report(&value);
        assert!(
            !report
                .chars()
                .any(|c| (c.is_control() && c != '\n') || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}')),
            "a raw control in the report"
        );
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&report).ok(),
            Some(value),
            "the report reads back as the value"
        );
    }
    let _ = ecp::qwen::machine::parse_jsonc(text);
}
