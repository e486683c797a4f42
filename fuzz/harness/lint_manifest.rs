//! The lint JSON parser and every manifest rule, then the three report
//! formats, on any text.

/// One input, as the fuzz target and the seed replay in `cargo test` run it.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = ecp::lint::json::parse(text);
    let mut report = ecp::lint::Report::default();
    if ecp::lint::lint_manifest_text("qwen-extension.json", text, &mut report).is_ok() {
        let _ = ecp::lint::report::human(&report, false);
        let _ = ecp::lint::report::json(&report);
        let _ = ecp::lint::report::sarif(&report);
    }
    let _ = ecp::text::outside::mask_free_text(text);
}
