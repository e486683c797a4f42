//! What a release's publisher (or an attacker in their place) writes for
//! `ecp verify`: statements, DSSE envelopes, key files. None may panic; an
//! envelope that parses renders back to one that parses the same; no
//! signature verifies with a key it was not made by.

use std::path::Path;

use ecp::provenance::{dsse::Envelope, keys::VerifyingKey};
use ecp::verify;

/// One input, as the fuzz target and the seed replay in `cargo test` run it.
pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok((statement, envelope)) = verify::parse_provenance(&text) {
        let _ = verify::subjects(&statement);
        if let Some(envelope) = envelope {
            let again = Envelope::parse(&envelope.to_line()).expect("a rendered envelope parses");
            assert_eq!(again, envelope);
            let _ = envelope.key_ids();
        }
    }
    if let Ok(key) = VerifyingKey::from_text(&text, Path::new("fuzz.pem")) {
        let _ = key.key_id();
        assert!(!key.verify(b"message", data));
    }
    if let Ok(envelope) = Envelope::parse(&text) {
        let _ = envelope.statement();
    }
}
