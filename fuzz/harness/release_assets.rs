//! A release folder's parts that come from the publisher: `SHA256SUMS`
//! text, executable headers, and asset names for Qwen's lookup. None may
//! panic; what parses renders back to what it parsed.

use ecp::release::{self, Binary, Sums};

/// One input, as the fuzz target and the seed replay in `cargo test` run it.
pub fn run(data: &[u8]) {
    let _ = Binary::read(data);
    let text = String::from_utf8_lossy(data);
    if let Ok(sums) = Sums::parse(&text) {
        assert_eq!(Sums::parse(&sums.render()).as_ref(), Ok(&sums));
    }
    let names: Vec<&str> = text.lines().take(64).collect();
    for (platform, arch) in release::TARGETS {
        if let release::Resolution::Assets(found) = release::resolve(&names, platform, arch) {
            assert!(!found.is_empty() && found.iter().all(|name| names.contains(name)));
        }
    }
    for name in &names {
        let _ = release::target_of(name);
    }
}
