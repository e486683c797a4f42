//! A bounded reader of tar streams, written for review rather than
//! extraction: it reads headers the way GNU tar and Node's `tar` do (ustar
//! prefixes, GNU long names and long links, PAX `path`, `linkpath` and
//! `size`), and refuses whatever they would read differently from each
//! other or from lint, instead of guessing:
//!
//! - a header whose checksum is wrong, a truncated stream, a malformed
//!   number or PAX record;
//! - two long-name (or long-link) headers for one entry, or a PAX `path`
//!   together with a GNU long name;
//! - a global PAX header that sets `path`, `linkpath` or `size`;
//! - anything but zero bytes after the end-of-archive marker (a second
//!   archive appended there is extracted by some tools and not others);
//! - a folder, link, special entry or `/`-terminated name that declares
//!   data, a link name on a non-link, an empty path or a NUL in one, a
//!   checksum that matches only the signed sum, a ustar prefix of another
//!   version or beside a long name: Node's tar reads each of these
//!   differently from GNU tar, and could be shown a hidden entry.
//!
//! Every header is bounded ([`Limits`]): names and links, PAX records, the
//! number of entries and the bytes read in all. Entry data is never kept
//! unless the caller asks for it, and then only up to its own bound.

use std::io::{self, Read};

/// Bounds on what a stream may make the reader hold or do.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Longest name or link target, from any header, in bytes.
    pub max_name_bytes: u64,
    /// Largest PAX extended header.
    pub max_pax_bytes: u64,
    /// Most entries (headers that describe a file, folder, link...).
    pub max_entries: usize,
    /// Most bytes read from the (decompressed) stream in all.
    pub max_total_bytes: u64,
    /// Most bytes of entry names in all (what lint holds per entry).
    pub max_names_total: u64,
}

impl Limits {
    /// [`Limits::max_total_bytes`] by default: 512 MiB.
    pub const DEFAULT_MAX_TOTAL_BYTES: u64 = 512 * 1024 * 1024;
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_name_bytes: 4096,
            max_pax_bytes: 64 * 1024,
            max_entries: 200_000,
            max_total_bytes: Limits::DEFAULT_MAX_TOTAL_BYTES,
            max_names_total: 16 * 1024 * 1024,
        }
    }
}

/// What an entry is, by its type flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Directory,
    Symlink,
    HardLink,
    CharDevice,
    BlockDevice,
    Fifo,
    /// Any other type flag (GNU sparse, volume labels, vendor types...).
    Other(u8),
}

/// One entry's header, with the long name, long link and PAX records that
/// came before it applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The path as the extractors see it (bytes as UTF-8, lossily).
    pub path: String,
    pub kind: Kind,
    pub mode: u32,
    pub size: u64,
    pub link: Option<String>,
    /// The entry's own header block as read (what a rebuild must
    /// reproduce byte for byte).
    pub header: [u8; BLOCK],
}

/// Why a stream was refused.
#[derive(Debug, thiserror::Error)]
pub enum TarError {
    #[error("the archive ends inside {0}")]
    Truncated(&'static str),
    #[error("the header of entry {index} has a wrong checksum; extractors skip or refuse it")]
    Checksum { index: usize },
    #[error("entry {index} has a malformed {field}")]
    Number { index: usize, field: &'static str },
    #[error("a {what} of {size} bytes is larger than the {max} bytes lint reads")]
    HeaderTooLarge {
        what: &'static str,
        size: u64,
        max: u64,
    },
    #[error("more than {0} entries")]
    TooManyEntries(usize),
    #[error("more than {0} bytes unpacked")]
    TooLarge(u64),
    #[error("entry {index}: {why}; extractors read such headers differently")]
    Ambiguous { index: usize, why: &'static str },
    #[error("a malformed PAX record before entry {index}")]
    Pax { index: usize },
    #[error("data after the end-of-archive marker; some extractors read it as more entries")]
    TrailingData,
    #[error("{0}")]
    Io(#[from] io::Error),
}

const BLOCK: usize = 512;

/// Counts and bounds the bytes read from the stream.
struct Counted<R> {
    inner: R,
    read: u64,
    max: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        if self.read > self.max {
            return Err(io::Error::other(TooLargeMarker));
        }
        Ok(n)
    }
}

#[derive(Debug)]
struct TooLargeMarker;

impl std::fmt::Display for TooLargeMarker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("too large")
    }
}

impl std::error::Error for TooLargeMarker {}

fn io_error(error: io::Error, limits: &Limits, what: &'static str) -> TarError {
    if error
        .get_ref()
        .is_some_and(|inner| inner.is::<TooLargeMarker>())
    {
        TarError::TooLarge(limits.max_total_bytes)
    } else if error.kind() == io::ErrorKind::UnexpectedEof {
        TarError::Truncated(what)
    } else {
        TarError::Io(error)
    }
}

/// Parses a numeric header field: octal (space or NUL terminated) or GNU
/// base-256 (high bit set).
fn number(field: &[u8]) -> Option<u64> {
    if field.first().is_some_and(|b| b & 0x80 != 0) {
        if field[0] & 0x40 != 0 {
            return None; // negative
        }
        let mut value: u64 = u64::from(field[0] & 0x3f);
        for &byte in &field[1..] {
            value = value.checked_mul(256)?.checked_add(u64::from(byte))?;
        }
        return Some(value);
    }
    let text = field
        .iter()
        .position(|b| *b == 0)
        .map_or(field, |end| &field[..end]);
    let text = std::str::from_utf8(text).ok()?.trim_matches(' ');
    if text.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(text, 8).ok()
}

fn c_string(field: &[u8]) -> &[u8] {
    field
        .iter()
        .position(|b| *b == 0)
        .map_or(field, |end| &field[..end])
}

fn checksum_ok(header: &[u8; BLOCK]) -> bool {
    let Some(stored) = number(&header[148..156]) else {
        return false;
    };
    let unsigned: u64 = header
        .iter()
        .enumerate()
        .map(|(i, b)| {
            if (148..156).contains(&i) {
                32
            } else {
                u64::from(*b)
            }
        })
        .sum();
    // Only the unsigned sum: Node's tar does not accept the signed one that
    // GNU tar also takes, so a header only one of them reads is refused.
    stored == unsigned
}

/// Reads exactly `size` bytes of a metadata entry (long name, PAX), padded.
fn metadata<R: Read>(
    reader: &mut R,
    size: u64,
    max: u64,
    what: &'static str,
    limits: &Limits,
) -> Result<Vec<u8>, TarError> {
    if size > max {
        return Err(TarError::HeaderTooLarge { what, size, max });
    }
    let mut data = vec![0; size as usize];
    reader
        .read_exact(&mut data)
        .map_err(|e| io_error(e, limits, what))?;
    skip(reader, padding(size), limits, what)?;
    Ok(data)
}

fn padding(size: u64) -> u64 {
    (BLOCK as u64 - size % BLOCK as u64) % BLOCK as u64
}

fn skip<R: Read>(
    reader: &mut R,
    n: u64,
    limits: &Limits,
    what: &'static str,
) -> Result<(), TarError> {
    let copied =
        io::copy(&mut reader.take(n), &mut io::sink()).map_err(|e| io_error(e, limits, what))?;
    if copied < n {
        return Err(TarError::Truncated(what));
    }
    Ok(())
}

/// PAX records: `"<length> <key>=<value>\n"`, the length counting the
/// whole record.
fn pax_records(data: &[u8], index: usize) -> Result<Vec<(String, Vec<u8>)>, TarError> {
    let mut records = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        if rest.iter().all(|b| *b == 0) {
            break;
        }
        let space = rest
            .iter()
            .position(|b| *b == b' ')
            .ok_or(TarError::Pax { index })?;
        let length: usize = std::str::from_utf8(&rest[..space])
            .ok()
            .and_then(|n| n.parse().ok())
            .ok_or(TarError::Pax { index })?;
        if length <= space + 1 || length > rest.len() || rest[length - 1] != b'\n' {
            return Err(TarError::Pax { index });
        }
        let record = &rest[space + 1..length - 1];
        let equals = record
            .iter()
            .position(|b| *b == b'=')
            .ok_or(TarError::Pax { index })?;
        records.push((
            String::from_utf8_lossy(&record[..equals]).into_owned(),
            record[equals + 1..].to_vec(),
        ));
        rest = &rest[length..];
    }
    Ok(records)
}

/// What the metadata headers before an entry said.
#[derive(Default)]
struct Pending {
    long_name: Option<Vec<u8>>,
    long_link: Option<Vec<u8>>,
    pax_path: Option<Vec<u8>>,
    pax_link: Option<Vec<u8>>,
    pax_size: Option<u64>,
}

/// Reads every entry of a tar stream, calling `visit` with its header and
/// a reader of its data (at most `size` bytes; whatever `visit` leaves
/// unread is skipped). Returns the number of entries and the bytes read.
pub fn read<R: Read>(
    reader: R,
    limits: Limits,
    mut visit: impl FnMut(&Entry, &mut dyn Read) -> io::Result<()>,
) -> Result<(usize, u64), TarError> {
    let mut reader = Counted {
        inner: reader,
        read: 0,
        max: limits.max_total_bytes,
    };
    let mut entries = 0usize;
    let mut names_total = 0u64;
    let mut pending = Pending::default();
    let mut header = [0u8; BLOCK];
    loop {
        match reader.read_exact(&mut header) {
            Ok(()) => {}
            // A stream that ends without its marker: GNU tar and Node's tar
            // both accept it when it ends on a header boundary.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof && entries > 0 => {
                return Err(TarError::Truncated("the end-of-archive marker"));
            }
            Err(e) => return Err(io_error(e, &limits, "a header")),
        }
        if header.iter().all(|b| *b == 0) {
            finish(&mut reader, &pending, entries, &limits)?;
            return Ok((entries, reader.read));
        }
        if !checksum_ok(&header) {
            return Err(TarError::Checksum { index: entries });
        }
        let size = number(&header[124..136]).ok_or(TarError::Number {
            index: entries,
            field: "size",
        })?;
        if let flag @ (b'L' | b'K' | b'x' | b'g') = header[156] {
            metadata_header(&mut reader, flag, size, &mut pending, entries, &limits)?;
            continue;
        }
        entries += 1;
        if entries > limits.max_entries {
            return Err(TarError::TooManyEntries(limits.max_entries));
        }
        let (entry, name_bytes) = entry_of(&header, &mut pending, size, entries - 1)?;
        names_total += name_bytes as u64;
        if names_total > limits.max_names_total {
            return Err(TarError::HeaderTooLarge {
                what: "total of entry names",
                size: names_total,
                max: limits.max_names_total,
            });
        }
        let size = entry.size;
        if size > limits.max_total_bytes {
            return Err(TarError::TooLarge(limits.max_total_bytes));
        }
        let mut data = (&mut reader).take(size);
        visit(&entry, &mut data).map_err(|e| io_error(e, &limits, "an entry"))?;
        let left = data.limit();
        skip(&mut reader, left + padding(size), &limits, "an entry")?;
    }
}

/// After the all-zero block: only zeros may follow, and no long name or
/// PAX header may be left describing nothing.
fn finish<R: Read>(
    reader: &mut Counted<R>,
    pending: &Pending,
    entries: usize,
    limits: &Limits,
) -> Result<(), TarError> {
    let mut rest = [0u8; 8192];
    loop {
        let n = reader
            .read(&mut rest)
            .map_err(|e| io_error(e, limits, "the end"))?;
        if n == 0 {
            break;
        }
        if rest[..n].iter().any(|b| *b != 0) {
            return Err(TarError::TrailingData);
        }
    }
    if pending.long_name.is_some() || pending.pax_path.is_some() {
        return Err(TarError::Ambiguous {
            index: entries,
            why: "a long name or PAX header describes no entry",
        });
    }
    Ok(())
}

/// A metadata header, read whole (bounded): a GNU long name or link, or
/// a PAX header; what it says is kept in `pending` for the next entry.
fn metadata_header<R: Read>(
    reader: &mut Counted<R>,
    flag: u8,
    size: u64,
    pending: &mut Pending,
    entries: usize,
    limits: &Limits,
) -> Result<(), TarError> {
    if matches!(flag, b'L' | b'K') {
        let data = metadata(reader, size, limits.max_name_bytes, "long name", limits)?;
        return long_name(flag, &data, pending, entries);
    }
    let data = metadata(reader, size, limits.max_pax_bytes, "PAX header", limits)?;
    pax_header(flag, &data, pending, entries, limits)
}

/// A GNU long name (`L`) or long link (`K`), kept for the next entry; two
/// of one kind are ambiguous.
fn long_name(flag: u8, data: &[u8], pending: &mut Pending, entries: usize) -> Result<(), TarError> {
    let slot = if flag == b'L' {
        &mut pending.long_name
    } else {
        &mut pending.long_link
    };
    if slot.is_some() {
        return Err(TarError::Ambiguous {
            index: entries,
            why: "two GNU long-name headers for one entry",
        });
    }
    *slot = Some(c_string(data).to_vec());
    Ok(())
}

/// A PAX header: a local one (`x`) sets the next entry's path, link and
/// size; a global one (`g`) may set none of them.
fn pax_header(
    flag: u8,
    data: &[u8],
    pending: &mut Pending,
    entries: usize,
    limits: &Limits,
) -> Result<(), TarError> {
    for (key, value) in pax_records(data, entries)? {
        let relevant = matches!(key.as_str(), "path" | "linkpath" | "size");
        if flag == b'g' {
            if relevant {
                return Err(TarError::Ambiguous {
                    index: entries,
                    why: "a global PAX header sets a path or a size",
                });
            }
            continue;
        }
        match key.as_str() {
            "path" => {
                if value.len() as u64 > limits.max_name_bytes {
                    return Err(TarError::HeaderTooLarge {
                        what: "PAX path",
                        size: value.len() as u64,
                        max: limits.max_name_bytes,
                    });
                }
                pending.pax_path = Some(value);
            }
            "linkpath" => pending.pax_link = Some(value),
            "size" => {
                let parsed = std::str::from_utf8(&value)
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .ok_or(TarError::Pax { index: entries })?;
                pending.pax_size = Some(parsed);
            }
            _ => {}
        }
    }
    Ok(())
}

/// The kind a type flag names.
fn kind_of(flag: u8) -> Kind {
    match flag {
        b'0' | 0 | b'7' => Kind::File,
        b'1' => Kind::HardLink,
        b'2' => Kind::Symlink,
        b'3' => Kind::CharDevice,
        b'4' => Kind::BlockDevice,
        b'5' => Kind::Directory,
        b'6' => Kind::Fifo,
        other => Kind::Other(other),
    }
}

/// The entry `header` describes, with what the metadata headers before it
/// said (taken from `pending`), and the length of its raw path; refused
/// where GNU tar and Node's tar would read it differently.
fn entry_of(
    header: &[u8; BLOCK],
    pending: &mut Pending,
    size: u64,
    index: usize,
) -> Result<(Entry, usize), TarError> {
    if pending.long_name.is_some() && pending.pax_path.is_some() {
        return Err(TarError::Ambiguous {
            index,
            why: "both a GNU long name and a PAX path",
        });
    }
    let ustar = &header[257..263] == b"ustar\0";
    let has_prefix = ustar && header[345] != 0;
    // GNU tar and Node's tar disagree on a prefix with another ustar
    // version, and on a prefix beside a long name or PAX path.
    if has_prefix
        && (&header[263..265] != b"00" || pending.long_name.is_some() || pending.pax_path.is_some())
    {
        return Err(TarError::Ambiguous {
            index,
            why: "a ustar prefix that extractors read differently",
        });
    }
    let name = c_string(&header[0..100]);
    let path_bytes = match (pending.pax_path.take(), pending.long_name.take()) {
        (Some(path), _) | (None, Some(path)) => path,
        (None, None) if has_prefix => {
            let prefix = c_string(&header[345..500]);
            [prefix, b"/", name].concat()
        }
        (None, None) => name.to_vec(),
    };
    let link_bytes = pending
        .pax_link
        .take()
        .or(pending.long_link.take())
        .unwrap_or_else(|| c_string(&header[157..257]).to_vec());
    let size = pending.pax_size.take().unwrap_or(size);
    let mode = number(&header[100..108]).ok_or(TarError::Number {
        index,
        field: "mode",
    })? as u32;
    let kind = kind_of(header[156]);
    // Node's tar reads the next block as a header after a directory, a
    // name ending in `/`, or a non-link with a link name, whatever the
    // size says; GNU tar skips the size. Such headers would hide entries
    // from one of them, so only a regular file may carry data.
    let data_allowed = kind == Kind::File && !path_bytes.ends_with(b"/");
    if size > 0 && !data_allowed {
        return Err(TarError::Ambiguous {
            index,
            why: "a folder, link or special entry that declares data",
        });
    }
    let non_link_with_link = !matches!(kind, Kind::Symlink | Kind::HardLink) && header[157] != 0;
    if path_bytes.is_empty() || path_bytes.contains(&0) || non_link_with_link {
        return Err(TarError::Ambiguous {
            index,
            why: "an empty path, a NUL in a path or a link name on a non-link",
        });
    }
    let entry = Entry {
        path: String::from_utf8_lossy(&path_bytes).into_owned(),
        kind,
        mode,
        size,
        link: matches!(kind, Kind::Symlink | Kind::HardLink)
            .then(|| String::from_utf8_lossy(&link_bytes).into_owned()),
        header: *header,
    };
    Ok((entry, path_bytes.len()))
}

/// One raw ustar header block, with a right checksum, for any name (the
/// first 100 bytes), type flag, size and mode. The tests, the benchmarks and
/// the fuzz seeds build hostile archives with it; `ecp package` writes with
/// the `tar` crate.
pub fn raw_header(name: &[u8], flag: u8, size: u64, mode: u32) -> [u8; BLOCK] {
    let mut h = [0u8; BLOCK];
    let length = name.len().min(100);
    h[..length].copy_from_slice(&name[..length]);
    h[100..107].copy_from_slice(format!("{:07o}", mode & 0o7777777).as_bytes());
    h[108..115].copy_from_slice(b"0000000");
    h[116..123].copy_from_slice(b"0000000");
    h[124..135].copy_from_slice(format!("{:011o}", size.min(0o77777777777)).as_bytes());
    h[136..147].copy_from_slice(b"00000000000");
    h[156] = flag;
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|b| u32::from(*b)).sum();
    h[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(name: &str, flag: u8, size: u64) -> [u8; BLOCK] {
        raw_header(name.as_bytes(), flag, size, 0o644)
    }

    fn padded(data: &[u8]) -> Vec<u8> {
        let mut v = data.to_vec();
        v.resize(data.len().div_ceil(BLOCK) * BLOCK, 0);
        v
    }

    fn entries(stream: &[u8]) -> Result<Vec<Entry>, TarError> {
        let mut seen = Vec::new();
        read(stream, Limits::default(), |entry, _| {
            seen.push(entry.clone());
            Ok(())
        })?;
        Ok(seen)
    }

    #[test]
    fn reads_names_long_names_and_pax_paths() {
        let long = "d/".repeat(120) + "file";
        let pax = format!("{} path=pax/name\n", "path=pax/name\n".len() + 3);
        let stream = [
            header("a.txt", b'0', 3).to_vec(),
            padded(b"abc"),
            header("././@LongLink", b'L', long.len() as u64).to_vec(),
            padded(long.as_bytes()),
            header("short", b'0', 0).to_vec(),
            header("pax", b'x', pax.len() as u64).to_vec(),
            padded(pax.as_bytes()),
            header("ignored", b'5', 0).to_vec(),
            vec![0; BLOCK * 2],
        ]
        .concat();
        let found = entries(&stream).unwrap();
        let paths: Vec<&str> = found.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["a.txt", long.as_str(), "pax/name"]);
        assert_eq!(found[2].kind, Kind::Directory);
    }

    #[test]
    fn refuses_what_extractors_read_differently() {
        let good = [header("a", b'0', 0).to_vec(), vec![0; BLOCK * 2]].concat();
        assert!(entries(&good).is_ok());
        let trailing = [good.clone(), header("b", b'0', 0).to_vec()].concat();
        assert!(matches!(entries(&trailing), Err(TarError::TrailingData)));
        let mut bad_sum = header("a", b'0', 0);
        bad_sum[0] = b'b';
        assert!(matches!(entries(&bad_sum), Err(TarError::Checksum { .. })));
        let two_long = [
            header("L", b'L', 1).to_vec(),
            padded(b"x"),
            header("L", b'L', 1).to_vec(),
            padded(b"y"),
            header("a", b'0', 0).to_vec(),
        ]
        .concat();
        assert!(matches!(
            entries(&two_long),
            Err(TarError::Ambiguous { .. })
        ));
        let huge_name = [header("L", b'L', 1 << 30).to_vec()].concat();
        assert!(matches!(
            entries(&huge_name),
            Err(TarError::HeaderTooLarge { .. })
        ));
        let truncated = header("a", b'0', 100).to_vec();
        assert!(matches!(entries(&truncated), Err(TarError::Truncated(_))));
    }
}
