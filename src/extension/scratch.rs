//! Where an archive is unpacked only to be run for a moment (`ecp check
//! ARCHIVE`, and `ecp package`, which lists the archive's tools for
//! `tools.lock`): in memory when the machine has room for it there, else
//! the temporary folder.
//!
//! Why: the unpacked tree lives for one session and is then removed, and a
//! disk can make that cost far more than the archive itself. Measured
//! 2026-12-08 on the project's 2-core VM (ext4 mounted with `discard`,
//! after a build had kept the disk busy): creating a file in `/tmp` took
//! 700 to 830 µs, so the 2000-file package of the bench spent 1.7 s in its
//! unpacking alone, against 19 µs a file in `/dev/shm`.
//!
//! The rule, on Linux: a `TMPDIR` the user set is the user's choice and is
//! kept. Otherwise `$XDG_RUNTIME_DIR`, then `/dev/shm`, is taken when it is
//! a tmpfs that is writable, allows running programs (not `noexec`: the
//! archive's entry point runs from it) and has at least
//! [`MEMORY_ROOM`] free: twice the most any archive unpacks to
//! ([`super::tar::Limits::max_total_bytes`]), so even the largest archive
//! takes at most half of it. Anything else, or a folder that cannot be
//! made there, falls back to the temporary folder.

use std::path::{Path, PathBuf};

/// The free space a tmpfs must have to be used.
pub const MEMORY_ROOM: u64 = 2 * super::tar::Limits::DEFAULT_MAX_TOTAL_BYTES;

/// A new, empty folder to unpack an archive into, removed when dropped.
pub fn unpack_folder() -> std::io::Result<tempfile::TempDir> {
    let user_chose = std::env::var_os("TMPDIR").is_some_and(|v| !v.is_empty());
    if !user_chose {
        let candidates = [
            std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from),
            Some(PathBuf::from("/dev/shm")),
        ];
        for folder in candidates.into_iter().flatten() {
            if !in_memory_with_room(&folder, MEMORY_ROOM) {
                continue;
            }
            let made = tempfile::Builder::new()
                .prefix(".ecp-unpacked-")
                .tempdir_in(&folder);
            if let Ok(made) = made {
                return Ok(made);
            }
        }
    }
    tempfile::tempdir()
}

/// Whether `folder` is a tmpfs, writable, not `noexec`, with `room` bytes
/// free (for an unprivileged user).
#[cfg(target_os = "linux")]
pub fn in_memory_with_room(folder: &Path, room: u64) -> bool {
    use nix::sys::{
        statfs::{TMPFS_MAGIC, statfs},
        statvfs::{FsFlags, statvfs},
    };
    let Ok(kind) = statfs(folder) else {
        return false;
    };
    let Ok(space) = statvfs(folder) else {
        return false;
    };
    // Both are u64 on 64-bit Linux, narrower elsewhere.
    #[allow(clippy::useless_conversion)]
    let free = u64::from(space.blocks_available()).saturating_mul(u64::from(space.fragment_size()));
    kind.filesystem_type() == TMPFS_MAGIC
        && !space
            .flags()
            .intersects(FsFlags::ST_NOEXEC | FsFlags::ST_RDONLY)
        && free >= room
        && nix::unistd::access(folder, nix::unistd::AccessFlags::W_OK).is_ok()
}

/// Elsewhere the temporary folder is used.
#[cfg(not(target_os = "linux"))]
pub fn in_memory_with_room(_folder: &Path, _room: u64) -> bool {
    false
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// A folder on a disk is never taken, a tmpfs only with the room
    /// asked: the root of this checkout and `/proc` (not a tmpfs) never;
    /// a tmpfs mounted here (read from the kernel's own mount table, not
    /// through the function under test) with its free space and not
    /// beyond it.
    #[test]
    fn only_a_tmpfs_with_room_is_taken() {
        let checkout = Path::new(env!("CARGO_MANIFEST_DIR"));
        assert!(!in_memory_with_room(checkout, 0));
        assert!(!in_memory_with_room(Path::new("/proc"), 0));
        assert!(!in_memory_with_room(Path::new("/nowhere/at/all"), 0));
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
        let tmpfs: Vec<&str> = mounts
            .lines()
            .filter_map(|line| {
                let fields: Vec<&str> = line.split(' ').collect();
                let writable_exec = fields[3]
                    .split(',')
                    .all(|option| option != "ro" && option != "noexec");
                (fields[2] == "tmpfs" && writable_exec).then_some(fields[1])
            })
            .filter(|mount| nix::unistd::access(*mount, nix::unistd::AccessFlags::W_OK).is_ok())
            .collect();
        assert!(
            tmpfs.contains(&"/dev/shm"),
            "this machine has a writable /dev/shm: {tmpfs:?}"
        );
        for mount in tmpfs {
            assert!(in_memory_with_room(Path::new(mount), 0), "{mount}");
            assert!(!in_memory_with_room(Path::new(mount), u64::MAX), "{mount}");
        }
    }

    /// The folder made is empty, usable and gone when dropped; without a
    /// `TMPDIR` (as the test runs on CI and here) it is in memory.
    #[test]
    fn the_unpack_folder_is_new_and_removed() {
        let folder = unpack_folder().unwrap();
        let path = folder.path().to_owned();
        assert_eq!(std::fs::read_dir(&path).unwrap().count(), 0);
        std::fs::write(path.join("f"), "x").unwrap();
        if std::env::var_os("TMPDIR").is_none()
            && in_memory_with_room(Path::new("/dev/shm"), MEMORY_ROOM)
        {
            assert!(in_memory_with_room(&path, 0), "{}", path.display());
        }
        drop(folder);
        assert!(!path.exists());
    }
}
