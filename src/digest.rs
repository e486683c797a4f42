//! SHA-256 in lower-case hex, the one spelling of a digest in ecp: archive
//! sums, the vendored runtime's checksum, upgrade's tables of what an
//! earlier ecp wrote, key fingerprints.

use std::{io::Read, path::Path};

use sha2::{Digest, Sha256};

/// `bytes` as lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The SHA-256 of `bytes`, in hex.
pub fn sha256(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// The SHA-256 of everything `reader` gives, in hex, read in 256 KiB
/// pieces.
pub fn sha256_reader(reader: &mut impl Read) -> std::io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 256 * 1024];
    loop {
        let read = reader.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(hex(&hasher.finalize()))
}

/// The SHA-256 of a regular file (never a FIFO or a device:
/// [`crate::files::open_regular`]), in hex.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let (mut file, _) = crate::files::open_regular(path, None, u64::MAX)
        .map_err(|problem| std::io::Error::other(problem.to_string()))?;
    sha256_reader(&mut file)
}
