//! Reproducible archive writers: the same staged tree gives the same bytes
//! on every run and machine. Entries are sorted, every time is the same
//! fixed instant, owners are 0 with no names, modes are 0644/0755, the gzip
//! header has no time or name, and file data is streamed (memory does not
//! grow with the tree).

use std::{
    fs::File,
    io::{self, BufWriter, Read, Seek, SeekFrom, Write},
};

use crate::extension::staged::StagedFile;

/// The time stamped on every entry when `SOURCE_DATE_EPOCH` is not set:
/// 1980-01-01T00:00:00Z, the earliest instant a zip entry can hold.
pub const DEFAULT_EPOCH: u64 = 315_532_800;

/// Archive formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Format {
    TarGz,
    Zip,
}

impl Format {
    pub fn extension(self) -> &'static str {
        match self {
            Format::TarGz => "tar.gz",
            Format::Zip => "zip",
        }
    }

    /// The format named by [`Format::extension`].
    pub fn from_extension(extension: &str) -> Option<Format> {
        [Format::TarGz, Format::Zip]
            .into_iter()
            .find(|f| f.extension() == extension)
    }
}

/// Writes `files` as `format` into `out` (an empty file) and returns the
/// SHA-256 of the archive bytes, hex.
pub fn write_archive(
    format: Format,
    files: &[StagedFile],
    epoch: u64,
    out: &mut File,
) -> io::Result<String> {
    {
        let mut writer = BufWriter::with_capacity(256 * 1024, &mut *out);
        match format {
            Format::TarGz => write_tar_gz(files, epoch, &mut writer)?,
            Format::Zip => write_zip(files, epoch, &mut writer)?,
        }
        writer.flush()?;
    }
    out.sync_all()?;
    out.seek(SeekFrom::Start(0))?;
    crate::digest::sha256_reader(out)
}

fn open(file: &StagedFile) -> io::Result<File> {
    File::open(&file.source)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", file.source.display())))
}

fn write_tar_gz<W: Write>(files: &[StagedFile], epoch: u64, out: W) -> io::Result<()> {
    // No file name and no time in the gzip header.
    let gzip = flate2::GzBuilder::new()
        .mtime(0)
        .operating_system(255)
        .write(out, flate2::Compression::new(6));
    let mut tar = tar::Builder::new(gzip);
    tar.mode(tar::HeaderMode::Deterministic);
    for file in files {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_mode(file.mode);
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(epoch);
        header.set_size(file.size);
        let source = open(file)?.take(file.size);
        tar.append_data(&mut header, &file.name, source)?;
    }
    tar.into_inner()?.finish()?;
    Ok(())
}

/// The zip entry time for a Unix epoch second (UTC), clamped to the range
/// a zip can hold (1980-01-01T00:00:00 to 2107-12-31T23:59:58).
fn zip_time(epoch: u64) -> zip::DateTime {
    const LAST: u64 = 4_354_819_198;
    let epoch = epoch.clamp(DEFAULT_EPOCH, LAST);
    // humantime writes UTC as `YYYY-MM-DDTHH:MM:SSZ`, fixed width for these
    // years.
    let text = humantime::format_rfc3339_seconds(
        std::time::UNIX_EPOCH + std::time::Duration::from_secs(epoch),
    )
    .to_string();
    let field = |at: usize, len: usize| -> u16 {
        text.get(at..at + len)
            .and_then(|f| f.parse().ok())
            .unwrap_or(0)
    };
    zip::DateTime::from_date_and_time(
        field(0, 4),
        field(5, 2) as u8,
        field(8, 2) as u8,
        field(11, 2) as u8,
        field(14, 2) as u8,
        field(17, 2) as u8,
    )
    .unwrap_or_default()
}

fn write_zip<W: Write + Seek>(files: &[StagedFile], epoch: u64, out: W) -> io::Result<()> {
    let mut zip = zip::ZipWriter::new(out);
    let time = zip_time(epoch);
    for file in files {
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .compression_level(Some(6))
            .last_modified_time(time)
            .unix_permissions(file.mode)
            .large_file(file.size >= 0xFFFF_FFFF);
        zip.start_file(file.name.as_str(), options)
            .map_err(io::Error::other)?;
        io::copy(&mut open(file)?.take(file.size), &mut zip)?;
    }
    zip.finish().map_err(io::Error::other)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zip_times_are_utc_civil_dates() {
        let t = zip_time(DEFAULT_EPOCH);
        assert_eq!((t.year(), t.month(), t.day(), t.hour()), (1980, 1, 1, 0));
        assert_eq!(zip_time(0), zip_time(DEFAULT_EPOCH));
        let t = zip_time(u64::MAX);
        assert_eq!((t.year(), t.month(), t.day()), (2107, 12, 31));
        let t = zip_time(951_782_400); // 2000-02-29T00:00:00Z
        assert_eq!((t.year(), t.month(), t.day()), (2000, 2, 29));
        let t = zip_time(1_767_225_600 + 3_723); // 2026-01-01T01:02:03Z
        assert_eq!(
            (
                t.year(),
                t.month(),
                t.day(),
                t.hour(),
                t.minute(),
                t.second()
            ),
            (2026, 1, 1, 1, 2, 2)
        );
    }
}
