//! Where a rebuilt archive first differs from the release: the first byte
//! that differs, and the first entry, by name, metadata or content. Both
//! archives are read through the bounded reader of
//! [`crate::extension::archive`], the one `ecp lint` reads with: the
//! release is a user's file, and the rebuild ran the user's build.

use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::extension::archive::{self, ArchiveError, Bytes, Format};

/// `None` when the two files are byte-identical; else the first difference,
/// named by archive entry when both are archives of the same format.
/// Entries are compared only when the release archive passed `ecp lint`
/// (`entries`), whose bounded reader vouches for its headers.
pub fn first_difference(
    release: &Path,
    rebuilt: &Path,
    entries: bool,
) -> std::io::Result<Option<String>> {
    let mut a = std::fs::File::open(release)?;
    let mut b = std::fs::File::open(rebuilt)
        .map_err(|e| std::io::Error::new(e.kind(), "the rebuild wrote no archive of this name"))?;
    let Some(offset) = first_differing_byte(&mut a, &mut b)? else {
        return Ok(None);
    };
    let name = release.to_string_lossy();
    let format = if name.ends_with(".tar.gz") {
        Some(Format::TarGz)
    } else if name.ends_with(".zip") {
        Some(Format::Zip)
    } else {
        None
    };
    let entry = format
        .filter(|_| entries)
        .and_then(|format| entry_difference(format, release, rebuilt).ok().flatten());
    Ok(Some(match entry {
        Some(entry) => format!("{entry} (the archives first differ at byte {offset})"),
        None => format!("the archives first differ at byte {offset}"),
    }))
}

fn first_differing_byte(a: &mut impl Read, b: &mut impl Read) -> std::io::Result<Option<u64>> {
    let (mut left, mut right) = (vec![0; 64 * 1024], vec![0; 64 * 1024]);
    let mut offset = 0u64;
    loop {
        let n = read_full(a, &mut left)?;
        let m = read_full(b, &mut right)?;
        let common = n.min(m);
        if let Some(at) = (0..common).find(|&i| left[i] != right[i]) {
            return Ok(Some(offset + at as u64));
        }
        if n != m {
            return Ok(Some(offset + common as u64));
        }
        if n == 0 {
            return Ok(None);
        }
        offset += n as u64;
    }
}

fn read_full(reader: &mut (impl Read + ?Sized), buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match reader.read(&mut buffer[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

/// The piece of an entry's data one digest covers.
const CHUNK: u64 = 64 * 1024;

/// One entry, as two archives are compared: its name, its metadata, its
/// raw header's digest (a tar's; empty for a zip) and a digest per
/// [`CHUNK`] of its data, so the first differing byte is found by reading
/// one chunk again, never by holding an entry.
struct Seen {
    path: String,
    mode: u32,
    /// The tar header's `mtime` field, as written.
    mtime: Vec<u8>,
    size: u64,
    header: [u8; 32],
    chunks: Vec<[u8; 32]>,
}

/// Every entry of the archive at `path`, as [`Seen`].
fn seen(format: Format, path: &Path) -> Result<Vec<Seen>, ArchiveError> {
    let mut all = Vec::new();
    let mut buffer = vec![0; CHUNK as usize];
    archive::each_entry(format, Bytes::File(path), |entry, header, data| {
        let mut chunks = Vec::new();
        loop {
            let n = read_full(data, &mut buffer)?;
            if n == 0 {
                break;
            }
            chunks.push(Sha256::digest(&buffer[..n]).into());
        }
        all.push(Seen {
            path: entry.path.clone(),
            mode: entry.mode,
            mtime: header.get(136..148).unwrap_or_default().to_vec(),
            size: entry.size,
            header: Sha256::digest(header).into(),
            chunks,
        });
        Ok(())
    })?;
    Ok(all)
}

/// The bytes of chunk `chunk` of entry number `index`.
fn chunk_of(
    format: Format,
    path: &Path,
    index: usize,
    chunk: usize,
) -> Result<Vec<u8>, ArchiveError> {
    let mut n = 0;
    let mut found = Vec::new();
    archive::each_entry(format, Bytes::File(path), |_, _, data| {
        if n == index {
            std::io::copy(&mut data.take(chunk as u64 * CHUNK), &mut std::io::sink())?;
            data.take(CHUNK).read_to_end(&mut found)?;
        }
        n += 1;
        Ok(())
    })?;
    Ok(found)
}

/// The first entry of two archives of one format that differs, by name,
/// mode, time, content or header.
fn entry_difference(
    format: Format,
    release: &Path,
    rebuilt: &Path,
) -> Result<Option<String>, ArchiveError> {
    let (left, right) = (seen(format, release)?, seen(format, rebuilt)?);
    for index in 0..left.len().max(right.len()) {
        let (x, y) = match (left.get(index), right.get(index)) {
            (Some(x), Some(y)) => (x, y),
            (Some(x), None) => {
                return Ok(Some(format!(
                    "the release has `{}` after the rebuild's last entry",
                    x.path
                )));
            }
            (None, Some(y)) => {
                return Ok(Some(format!(
                    "the rebuild has `{}` after the release's last entry",
                    y.path
                )));
            }
            (None, None) => break,
        };
        if x.path != y.path {
            return Ok(Some(format!(
                "the release has `{}` where the rebuild has `{}`",
                x.path, y.path
            )));
        }
        if x.mode != y.mode || x.mtime != y.mtime {
            return Ok(Some(format!("`{}` has other metadata", x.path)));
        }
        let pieces = x.chunks.len().max(y.chunks.len());
        if let Some(chunk) = (0..pieces).find(|&k| x.chunks.get(k) != y.chunks.get(k)) {
            let a = chunk_of(format, release, index, chunk)?;
            let b = chunk_of(format, rebuilt, index, chunk)?;
            let within = (0..a.len().min(b.len()))
                .find(|&i| a[i] != b[i])
                .unwrap_or(a.len().min(b.len()));
            let at = chunk as u64 * CHUNK + within as u64;
            return Ok(Some(format!(
                "`{}` differs from its byte {at} (sizes {} and {})",
                x.path, x.size, y.size
            )));
        }
        if x.header != y.header {
            return Ok(Some(format!("`{}` has another header", x.path)));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `.tar.gz` of `(name, mtime, data)` entries, written by the tar
    /// crate (as `ecp package` writes).
    /// A tar entry: name, mtime, data.
    type TarEntry<'a> = (&'a str, u64, &'a [u8]);

    fn tar_gz(dir: &Path, file: &str, entries: &[TarEntry]) -> std::path::PathBuf {
        let path = dir.join(file);
        let gz = flate2::write::GzEncoder::new(
            std::fs::File::create(&path).unwrap(),
            flate2::Compression::default(),
        );
        let mut builder = tar::Builder::new(gz);
        for (name, mtime, data) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.set_mtime(*mtime);
            header.set_cksum();
            builder.append_data(&mut header, name, *data).unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap();
        path
    }

    fn zip(dir: &Path, file: &str, entries: &[(&str, &[u8])]) -> std::path::PathBuf {
        use std::io::Write;
        let path = dir.join(file);
        let mut writer = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
        for (name, data) in entries {
            writer
                .start_file(*name, zip::write::SimpleFileOptions::default())
                .unwrap();
            writer.write_all(data).unwrap();
        }
        writer.finish().unwrap();
        path
    }

    /// Each kind of difference is named by its entry, and a content
    /// difference past the first chunk by its exact byte.
    #[test]
    fn the_first_differing_entry_is_named_from_the_bounded_reader() {
        let dir = tempfile::tempdir().unwrap();
        let big = vec![7u8; 200_000];
        let mut changed = big.clone();
        changed[150_001] = 8;
        let release = tar_gz(
            dir.path(),
            "a.tar.gz",
            &[("m", 1, b"x"), ("dist/main", 1, &big)],
        );
        let cases: &[(&[TarEntry], &str)] = &[
            (
                &[("m", 1, b"x"), ("dist/main", 1, &changed)],
                "`dist/main` differs from its byte 150001 (sizes 200000 and 200000)",
            ),
            (
                &[("m", 1, b"x"), ("dist/main", 1, &big[..150_000])],
                "`dist/main` differs from its byte 150000 (sizes 200000 and 150000)",
            ),
            (
                &[("m", 2, b"x"), ("dist/main", 1, &big)],
                "`m` has other metadata",
            ),
            (
                &[("m", 1, b"x")],
                "the release has `dist/main` after the rebuild's last entry",
            ),
            (
                &[("n", 1, b"x"), ("dist/main", 1, &big)],
                "the release has `m` where the rebuild has `n`",
            ),
        ];
        for (n, (entries, expected)) in cases.iter().enumerate() {
            let rebuilt = tar_gz(dir.path(), &format!("b{n}.tar.gz"), entries);
            let found = first_difference(&release, &rebuilt, true).unwrap().unwrap();
            assert!(found.starts_with(expected), "{found}");
            assert!(
                found.contains("the archives first differ at byte"),
                "{found}"
            );
        }
        let same = tar_gz(
            dir.path(),
            "c.tar.gz",
            &[("m", 1, b"x"), ("dist/main", 1, &big)],
        );
        assert_eq!(first_difference(&release, &same, true).unwrap(), None);
        // Without `entries` (the release did not pass lint) only the byte.
        let rebuilt = dir.path().join("b0.tar.gz");
        let found = first_difference(&release, &rebuilt, false)
            .unwrap()
            .unwrap();
        assert!(
            found.starts_with("the archives first differ at byte"),
            "{found}"
        );

        let release = zip(dir.path(), "a.zip", &[("m", b"x"), ("dist/main", &big)]);
        let rebuilt = zip(dir.path(), "b.zip", &[("m", b"x"), ("dist/main", &changed)]);
        let found = first_difference(&release, &rebuilt, true).unwrap().unwrap();
        assert!(
            found.starts_with("`dist/main` differs from its byte 150001"),
            "{found}"
        );
    }

    /// A rebuild that is no archive is said by its byte, not an error.
    #[test]
    fn an_unreadable_rebuild_is_a_byte_difference() {
        let dir = tempfile::tempdir().unwrap();
        let release = tar_gz(dir.path(), "a.tar.gz", &[("m", 1, b"x")]);
        let rebuilt = dir.path().join("b.tar.gz");
        std::fs::write(&rebuilt, b"not gzip at all").unwrap();
        let found = first_difference(&release, &rebuilt, true).unwrap().unwrap();
        assert_eq!(found, "the archives first differ at byte 0");
    }
}
