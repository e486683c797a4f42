//! Release assets as Qwen Code's installer reads them, and the one
//! `SHA256SUMS` file beside them.
//!
//! `qwen extensions install owner/repo` (Qwen Code 0.24.4,
//! `findReleaseAsset`) lower-cases each asset name and takes the **first**
//! asset in the release's list that starts with `{platform}.{arch}.`, else
//! the first that starts with `{platform}.`, else, only when the release
//! has exactly one asset and its name mentions no platform (`linux`,
//! `darwin`, `win32`), that one; otherwise it downloads the tag's source
//! tarball, and when anything fails, clones the repository. It
//! never looks at the extension, and the order of the list is GitHub's, not
//! the publisher's. So the rules here are about every order at once:
//!
//! - only installable archives (`.tar.gz`, `.zip`) carry a platform prefix;
//!   checksums live in [`SUMS`], whose name starts with no platform;
//! - a native extension ships one archive per `{platform}.{arch}`;
//! - a platform-less extension (manifest only, or a JavaScript bundle) ships
//!   the same archive once per platform, `{platform}.{name}.tar.gz`: the
//!   `{platform}.` step then finds it on every architecture, whatever else
//!   the release holds. "Upload only one asset" was the other choice; it
//!   breaks as soon as the sums (or a signature, or a provenance statement)
//!   are uploaded beside it, and Qwen then clones the repository, which for
//!   a built bundle lacks `dist/`.

use std::collections::BTreeMap;

/// The checksum file of a release folder: `sha256  name` lines.
pub const SUMS: &str = "SHA256SUMS";

/// Node's platform names (`process.platform`) Qwen runs on.
pub const PLATFORMS: [&str; 3] = ["linux", "darwin", "win32"];

/// Every platform and architecture a release is judged for.
pub const TARGETS: [(&str, &str); 6] = [
    ("linux", "x64"),
    ("linux", "arm64"),
    ("darwin", "x64"),
    ("darwin", "arm64"),
    ("win32", "x64"),
    ("win32", "arm64"),
];

/// Is this a file Qwen extracts (and so may install)? The extension is
/// compared as written: an upper-case `.TAR.GZ` is not taken for one.
pub fn is_archive(name: &str) -> bool {
    name.ends_with(".tar.gz") || name.ends_with(".zip")
}

/// What Qwen's installer does for one platform and architecture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution<'a> {
    /// One of these assets, whichever GitHub lists first (in list order).
    Assets(Vec<&'a str>),
    /// No asset matches: Qwen clones the repository instead.
    Clone,
}

/// The assets Qwen could install on `platform`/`arch` from a release with
/// these asset names, in any order of the list.
pub fn resolve<'a>(assets: &[&'a str], platform: &str, arch: &str) -> Resolution<'a> {
    let starting = |prefix: &str| -> Vec<&'a str> {
        assets
            .iter()
            .copied()
            .filter(|name| name.to_lowercase().starts_with(prefix))
            .collect()
    };
    let exact = starting(&format!("{platform}.{arch}."));
    if !exact.is_empty() {
        return Resolution::Assets(exact);
    }
    let any_arch = starting(&format!("{platform}."));
    if !any_arch.is_empty() {
        return Resolution::Assets(any_arch);
    }
    // The lone-asset step takes a name that mentions no platform at all.
    if let [only] = assets {
        let lower = only.to_lowercase();
        if !PLATFORMS.iter().any(|platform| lower.contains(platform)) {
            return Resolution::Assets(vec![only]);
        }
    }
    Resolution::Clone
}

/// The `{platform}.{arch}` an asset name is for, when it names one of
/// [`TARGETS`].
pub fn target_of(name: &str) -> Option<(&'static str, &'static str)> {
    let lower = name.to_lowercase();
    TARGETS
        .iter()
        .copied()
        .find(|(platform, arch)| lower.starts_with(&format!("{platform}.{arch}.")))
}

/// The file stems (`linux.x64.acme-context`) of the archives `ecp package`
/// writes: one for a native build's `{platform}.{arch}`, or one per
/// platform for a platform-less extension.
pub fn stems(name: &str, native: Option<&str>) -> Vec<String> {
    match native {
        Some(platform) => vec![format!("{platform}.{name}")],
        None => PLATFORMS
            .iter()
            .map(|platform| format!("{platform}.{name}"))
            .collect(),
    }
}

/// What a native executable was built for, read from its header: ELF,
/// Mach-O (thin or universal) or PE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binary {
    /// Node's platform name: `linux` (any ELF), `darwin`, `win32`.
    pub platform: &'static str,
    /// Node's architecture names (`x64`, `arm64`, `ia32`, `arm`, or
    /// `other`); a universal Mach-O has several.
    pub archs: Vec<&'static str>,
}

impl Binary {
    /// Reads the first bytes of an executable; `None` when they are no
    /// header this knows.
    pub fn read(head: &[u8]) -> Option<Binary> {
        let u16_at = |at: usize, little: bool| {
            let b: [u8; 2] = head.get(at..at + 2)?.try_into().ok()?;
            Some(if little {
                u16::from_le_bytes(b)
            } else {
                u16::from_be_bytes(b)
            })
        };
        let u32_at = |at: usize, little: bool| {
            let b: [u8; 4] = head.get(at..at + 4)?.try_into().ok()?;
            Some(if little {
                u32::from_le_bytes(b)
            } else {
                u32::from_be_bytes(b)
            })
        };
        if head.starts_with(b"\x7fELF") {
            let little = *head.get(5)? == 1;
            let arch = match u16_at(18, little)? {
                0x3e => "x64",
                0xb7 => "arm64",
                0x03 => "ia32",
                0x28 => "arm",
                _ => "other",
            };
            return Some(Binary {
                platform: "linux",
                archs: vec![arch],
            });
        }
        let macho = |cpu: u32| match cpu {
            0x0100_0007 => "x64",
            0x0100_000c => "arm64",
            7 => "ia32",
            12 => "arm",
            _ => "other",
        };
        match u32_at(0, false)? {
            0xcffa_edfe | 0xcefa_edfe => {
                return Some(Binary {
                    platform: "darwin",
                    archs: vec![macho(u32_at(4, true)?)],
                });
            }
            // Universal: a big-endian count of (cputype, ...) records.
            0xcafe_babe => {
                let count = u32_at(4, false)?.min(16) as usize;
                let archs = (0..count)
                    .map(|i| u32_at(8 + i * 20, false).map(macho))
                    .collect::<Option<Vec<_>>>()?;
                return Some(Binary {
                    platform: "darwin",
                    archs,
                });
            }
            _ => {}
        }
        if head.starts_with(b"MZ") {
            let pe = u32_at(0x3c, true)? as usize;
            if head.get(pe..pe + 4)? != b"PE\0\0" {
                return None;
            }
            let arch = match u16_at(pe + 4, true)? {
                0x8664 => "x64",
                0xaa64 => "arm64",
                0x014c => "ia32",
                _ => "other",
            };
            return Some(Binary {
                platform: "win32",
                archs: vec![arch],
            });
        }
        None
    }

    /// Does it run natively on `platform`/`arch`?
    pub fn runs_on(&self, platform: &str, arch: &str) -> bool {
        self.platform == platform && self.archs.contains(&arch)
    }

    /// `linux x64`, `darwin x64+arm64`.
    pub fn describe(&self) -> String {
        format!("{} {}", self.platform, self.archs.join("+"))
    }
}

/// The largest `SHA256SUMS` read: a release has a handful of lines.
pub const MAX_SUMS_BYTES: u64 = 1024 * 1024;

/// A parsed `SHA256SUMS`: file name to lower-case hex digest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sums {
    pub entries: BTreeMap<String, String>,
}

/// A line of `SHA256SUMS` that is not `<64 hex>  <name>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {problem}")]
pub struct SumsError {
    pub line: usize,
    pub problem: String,
}

impl Sums {
    /// Reads `sha256sum` output: `<hex>  <name>` or `<hex> *<name>`, one
    /// per line; a name listed twice with different digests is an error.
    pub fn parse(text: &str) -> Result<Sums, SumsError> {
        let mut entries = BTreeMap::new();
        for (index, line) in text.lines().enumerate() {
            let line_number = index + 1;
            let fail = |problem: &str| SumsError {
                line: line_number,
                problem: problem.to_owned(),
            };
            if line.trim().is_empty() {
                continue;
            }
            let (digest, rest) = line
                .split_once(' ')
                .ok_or_else(|| fail("expected `<sha256>  <file name>`"))?;
            let name = rest
                .strip_prefix(' ')
                .or_else(|| rest.strip_prefix('*'))
                .ok_or_else(|| fail("expected two spaces between the digest and the name"))?;
            if digest.len() != 64 || !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(fail("the digest is not 64 hexadecimal digits"));
            }
            if name.is_empty()
                || name.contains(['/', '\\'])
                || name.starts_with('.')
                || name.chars().any(char::is_control)
            {
                return Err(fail(
                    "the name must be a file in the release folder (no path, no leading dot)",
                ));
            }
            let digest = digest.to_ascii_lowercase();
            if let Some(earlier) = entries.insert(name.to_owned(), digest.clone())
                && earlier != digest
            {
                return Err(fail(&format!(
                    "{name} is listed twice with different digests"
                )));
            }
        }
        Ok(Sums { entries })
    }

    /// `sha256sum` format, sorted by name.
    pub fn render(&self) -> String {
        self.entries
            .iter()
            .map(|(name, digest)| format!("{digest}  {name}\n"))
            .collect()
    }
}

/// A target triple Qwen's asset names have no platform or architecture for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unsupported target `{0}`: the archive name needs linux, darwin or windows and x86_64, aarch64, i686 or armv7"
)]
pub struct UnsupportedTarget(pub String);

/// Node's platform and architecture names for a Rust target triple, as
/// Qwen matches them in release asset names (`linux.x64.`).
pub fn platform_of(triple: &str) -> Result<(&'static str, &'static str), UnsupportedTarget> {
    let platform = if triple.contains("-linux") {
        "linux"
    } else if triple.contains("-apple-darwin") {
        "darwin"
    } else if triple.contains("-windows") {
        "win32"
    } else {
        return Err(UnsupportedTarget(triple.to_owned()));
    };
    let arch = match triple.split('-').next().unwrap_or("") {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        "i686" | "i586" => "ia32",
        "armv7" | "arm" => "arm",
        _ => return Err(UnsupportedTarget(triple.to_owned())),
    };
    Ok((platform, arch))
}

/// The triple this ecp was built for, the default target.
pub fn host_triple() -> String {
    let arch = std::env::consts::ARCH;
    match std::env::consts::OS {
        "linux" => format!("{arch}-unknown-linux-gnu"),
        "macos" => format!("{arch}-apple-darwin"),
        "windows" => format!("{arch}-pc-windows-msvc"),
        other => format!("{arch}-unknown-{other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_exact_prefix_wins_then_the_platform_then_a_lone_asset() {
        let native = [
            "SHA256SUMS",
            "linux.x64.acme-context.tar.gz",
            "linux.x64.acme-context.zip",
            "darwin.arm64.acme-context.tar.gz",
        ];
        assert_eq!(
            resolve(&native, "linux", "x64"),
            Resolution::Assets(vec![
                "linux.x64.acme-context.tar.gz",
                "linux.x64.acme-context.zip"
            ])
        );
        // Intel Macs get the arm64 build through the `darwin.` step.
        assert_eq!(
            resolve(&native, "darwin", "x64"),
            Resolution::Assets(vec!["darwin.arm64.acme-context.tar.gz"])
        );
        assert_eq!(resolve(&native, "win32", "x64"), Resolution::Clone);
        assert_eq!(
            resolve(&["acme-context.tar.gz"], "win32", "arm64"),
            Resolution::Assets(vec!["acme-context.tar.gz"])
        );
        assert_eq!(
            resolve(&["acme-context.tar.gz", "SHA256SUMS"], "linux", "x64"),
            Resolution::Clone
        );
        // A lone asset that names another platform is not taken.
        assert_eq!(
            resolve(&["darwin-acme.tar.gz"], "linux", "x64"),
            Resolution::Clone
        );
        // Upper case is lowered, as Qwen does.
        assert_eq!(
            resolve(&["Linux.X64.a.tar.gz", "b"], "linux", "x64"),
            Resolution::Assets(vec!["Linux.X64.a.tar.gz"])
        );
    }

    #[test]
    fn platform_less_stems_are_found_on_every_target_beside_the_sums() {
        let mut names: Vec<String> = stems("acme-context", None)
            .iter()
            .map(|stem| format!("{stem}.tar.gz"))
            .collect();
        names.push(SUMS.to_owned());
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        for (platform, arch) in TARGETS {
            let Resolution::Assets(found) = resolve(&names, platform, arch) else {
                panic!("{platform} {arch} clones");
            };
            assert_eq!(found, [format!("{platform}.acme-context.tar.gz")]);
        }
    }

    #[test]
    fn executable_headers_name_their_platform_and_architecture() {
        // This test binary itself.
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let binary = Binary::read(&me[..4096]).unwrap();
        let arch = match std::env::consts::ARCH {
            "x86_64" => "x64",
            "aarch64" => "arm64",
            other => other,
        };
        #[cfg(target_os = "linux")]
        assert!(binary.runs_on("linux", arch), "{binary:?}");
        let _ = (binary, arch);
        let mut elf = vec![0x7f, b'E', b'L', b'F', 2, 1];
        elf.resize(20, 0);
        elf[18] = 0xb7;
        assert_eq!(Binary::read(&elf).unwrap().describe(), "linux arm64");
        let mut thin = vec![0xcf, 0xfa, 0xed, 0xfe];
        thin.extend(0x0100_0007u32.to_le_bytes());
        assert_eq!(Binary::read(&thin).unwrap().describe(), "darwin x64");
        let mut fat = vec![0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 2];
        for cpu in [0x0100_0007u32, 0x0100_000c] {
            fat.extend(cpu.to_be_bytes());
            fat.extend([0; 16]);
        }
        let universal = Binary::read(&fat).unwrap();
        assert!(universal.runs_on("darwin", "x64") && universal.runs_on("darwin", "arm64"));
        let mut pe = vec![0u8; 0x86];
        pe[..2].copy_from_slice(b"MZ");
        pe[0x3c] = 0x80;
        pe[0x80..0x84].copy_from_slice(b"PE\0\0");
        pe[0x84..0x86].copy_from_slice(&0xaa64u16.to_le_bytes());
        assert_eq!(Binary::read(&pe).unwrap().describe(), "win32 arm64");
        for junk in [&b"#!/bin/sh\n"[..], b"MZ", b"\x7fELF", b""] {
            assert_eq!(Binary::read(junk), None, "{junk:?}");
        }
    }

    #[test]
    fn sums_parse_both_separators_refuse_paths_and_render_sorted() {
        let a = "a".repeat(64);
        let b = "B".repeat(64);
        let sums = Sums::parse(&format!("{a}  z.tar.gz\n{b} *a.zip\n\n")).unwrap();
        assert_eq!(
            sums.render(),
            format!("{}  a.zip\n{a}  z.tar.gz\n", "b".repeat(64))
        );
        for bad in [
            "abc  x.tar.gz",
            &format!("{a} x.tar.gz"),
            &format!("{a}  ../x.tar.gz"),
            &format!("{a}  .hidden"),
            &format!("{a}  x\r"),
            &format!("{a}  x\n{b}  x"),
        ] {
            assert!(Sums::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            Sums::parse(&format!("{a}  x\n{a}  x"))
                .unwrap()
                .entries
                .len(),
            1
        );
    }
}
