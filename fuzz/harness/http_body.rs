//! The provider body parser of the Generic HTTP Search V1 binding, then the
//! renderer over whatever items it kept; and the runtime's typed reader
//! held to the binding's reading by value wherever it answers.

/// One input, as the fuzz target and the seed replay in `cargo test` run it.
pub fn run(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        for limit in [1, 5] {
            if let Some(fast) = ecp::runtime::search_response::read_items(text, limit) {
                assert_eq!(
                    Ok(fast),
                    ecp::providers::http::parse_search_document(text, limit)
                );
            }
        }
    }
    if let Ok(items) = ecp::providers::http::parse_search_response(data, 5) {
        let envelope = ecp::profile::render(&items);
        assert!(ecp::profile::ecmascript::utf16_len(&envelope.text) <= 4000);
        assert!(!envelope.text.contains('<') && !envelope.text.contains('>'));
        assert!(envelope.items.len() <= 5);
    }
}
