//! The provider body parser of the Generic HTTP Search V1 binding, then the
//! renderer over whatever items it kept.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(items) = ecp::providers::http::parse_search_response(data, 5) {
        let envelope = ecp::profile::render(&items);
        assert!(ecp::profile::ecmascript::utf16_len(&envelope.text) <= 4000);
        assert!(!envelope.text.contains('<') && !envelope.text.contains('>'));
        assert!(envelope.items.len() <= 5);
    }
});
