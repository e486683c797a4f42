//! The archive reader and rules: the input as a `.tar.gz`, as a raw tar
//! stream inside a gzip member (also as an npm `.tgz`), as a `.zip`, and
//! as an MCP Bundle's entries.

use std::{io::Write, path::Path};

use ecp::lint::{Report, archive};

fn lint(name: &str, bytes: &[u8]) {
    let mut report = Report::default();
    if archive::lint_archive_bytes(Path::new(name), archive::Bytes::Memory(bytes), &mut report)
        .is_ok()
    {
        let _ = ecp::lint::report::human(&report, false);
    }
}

/// One input, as the fuzz target and the seed replay in `cargo test` run it.
pub fn run(data: &[u8]) {
    lint("fuzz.tar.gz", data);
    lint("fuzz.zip", data);
    let mut report = Report::default();
    let _ = archive::bundle_entries(
        Path::new("fuzz.mcpb"),
        archive::Bytes::Memory(data),
        "manifest.json",
        &mut report,
    );
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let _ = gz.write_all(data);
    if let Ok(wrapped) = gz.finish() {
        lint("fuzz.tar.gz", &wrapped);
        lint("fuzz.tgz", &wrapped);
    }
}
