//! The archive reader and rules: the input as a `.tar.gz`, as a raw tar
//! stream inside a gzip member, and as a `.zip`.
#![no_main]

use std::{io::Write, path::Path};

use ecp::lint::{Report, archive};
use libfuzzer_sys::fuzz_target;

fn lint(name: &str, bytes: &[u8]) {
    let mut report = Report::default();
    if archive::lint_archive_bytes(Path::new(name), archive::Bytes::Memory(bytes), &mut report)
        .is_ok()
    {
        let _ = ecp::lint::report::human(&report, false);
    }
}

fuzz_target!(|data: &[u8]| {
    lint("fuzz.tar.gz", data);
    lint("fuzz.zip", data);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let _ = gz.write_all(data);
    if let Ok(wrapped) = gz.finish() {
        lint("fuzz.tar.gz", &wrapped);
    }
});
