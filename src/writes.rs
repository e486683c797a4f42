//! Writing where an attacker may have arranged the folder: the one rule of
//! every command that writes (`ecp package` and the `ecp try` that packages,
//! `ecp check --record`, `ecp managed --out`, `ecp new`, `ecp upgrade`),
//! the write-side twin of [`crate::files`].
//!
//! A write goes to a [`Place`]: a **base**, the path the user typed, taken
//! as it is, and the components **inside** it that the command owns.
//!
//! - The base is the user's own prefix: the extension folder they named,
//!   or the folder that holds a `--out`/`--record` destination. A link in
//!   it (`/tmp` on macOS, `~/src -> /data/src`) is theirs and is followed.
//! - Inside it, every component is looked at with `lstat`, from the base
//!   down to the file: each folder on the way must be a real folder (a
//!   missing one is created with `mkdir`, one at a time, which never
//!   follows a link); the destination must be missing or a regular file.
//!   A symlink, a FIFO, a socket, a device, a file where a folder belongs
//!   or a folder where a file belongs is refused, on the way or at the end.
//!   So `dist -> ../elsewhere` or a linked `.claude-plugin/` in a received
//!   folder, or `--record /dev/null`, is refused.
//! - An existing regular file is replaced atomically: a temporary file in
//!   the same checked folder, renamed over it (a rename replaces the entry,
//!   never what a link names). A removal removes only a regular file
//!   reached the same way.
//! - A command checks every place it will write or remove before the first
//!   write or removal; a refusal is "could not run" (exit 2): nothing is
//!   written and nothing removed. The checks are repeated at each write.
//!
//! Which components are owned: below the extension folder, everything
//! (`dist/`, `SHA256SUMS`, `.claude-plugin/plugin.json`, an `--out-dir`
//! written inside the folder); a destination the user names outside it
//! (`--out-dir`, `--out`, `--record`) owns its last component only, so the
//! destination itself is never a link, a special file or the wrong kind.
//!
//! The rule is about the folder as it was arranged before the run (a
//! cloned repository, an unpacked archive), not about another process
//! racing the run on the same machine: that process could as well write
//! the files itself.

use std::{
    io::Write,
    path::{Component, Path, PathBuf},
};

use tempfile::NamedTempFile;

/// Why ecp did not write.
#[derive(Debug, thiserror::Error)]
pub enum WriteProblem {
    /// A link or special file where ecp would write, or the wrong kind.
    #[error("{} is {what}; ecp writes only into real folders and regular files, never through a link or into a special file", shown(.path))]
    Unsafe { path: PathBuf, what: &'static str },
    #[error("cannot write {}: {}", shown(.path), crate::text::outside::value(&.source.to_string()))]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl WriteProblem {
    /// What to do about it.
    pub fn help(&self) -> Option<String> {
        match self {
            WriteProblem::Unsafe { .. } => Some(
                "remove it, or replace it with the real folder or a regular file, or write elsewhere (name a real folder); ecp writes only inside the folder you named, through no link".into(),
            ),
            WriteProblem::Io { .. } => None,
        }
    }

    fn io(path: &Path) -> impl FnOnce(std::io::Error) -> WriteProblem {
        let path = path.to_owned();
        move |source| WriteProblem::Io { path, source }
    }
}

/// A path as a message shows it: escaped and bounded (its names may come
/// from a received folder).
fn shown(path: &Path) -> String {
    crate::text::outside::line(&crate::input::shown(path), 1000)
}

/// What a file type is, in words, when ecp never writes through it.
pub fn special(kind: std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_symlink() {
        Some("a symlink")
    } else if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_socket() {
        Some("a socket")
    } else if kind.is_char_device() || kind.is_block_device() {
        Some("a device")
    } else if kind.is_file() || kind.is_dir() {
        None
    } else {
        Some("a special file")
    }
}

/// Where ecp writes: the user's base and the components it owns below.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    base: PathBuf,
    inside: PathBuf,
}

impl Place {
    /// A destination the user named (`--out`, `--record`): its folder is
    /// theirs, its last component is ecp's.
    pub fn destination(path: &Path) -> Place {
        match (path.parent(), path.file_name()) {
            (Some(parent), Some(name)) => Place {
                base: parent.to_owned(),
                inside: PathBuf::from(name),
            },
            _ => Place {
                base: path.to_owned(),
                inside: PathBuf::new(),
            },
        }
    }

    /// `path` inside the extension folder `folder`, every component below
    /// `folder` ecp's; a `path` not written below `folder` is a
    /// [`Place::destination`].
    pub fn within(folder: &Path, path: &Path) -> Place {
        match path.strip_prefix(folder) {
            Ok(rest) if rest.components().all(|c| matches!(c, Component::Normal(_))) => Place {
                base: folder.to_owned(),
                inside: rest.to_owned(),
            },
            _ => Place::destination(path),
        }
    }

    /// The path itself.
    pub fn path(&self) -> PathBuf {
        match (
            self.base.as_os_str().is_empty(),
            self.inside.as_os_str().is_empty(),
        ) {
            (true, true) => PathBuf::from("."),
            (false, true) => self.base.clone(),
            _ => self.base.join(&self.inside),
        }
    }

    /// `name` (relative, without `..`) inside this place.
    pub fn join(&self, name: impl AsRef<Path>) -> Place {
        Place {
            base: self.base.clone(),
            inside: self.inside.join(name),
        }
    }

    /// The folder that holds this place (the base itself at the top).
    fn parent(&self) -> Place {
        Place {
            base: self.base.clone(),
            inside: self.inside.parent().map(Path::to_owned).unwrap_or_default(),
        }
    }

    /// `lstat` of every owned component: folders on the way, and at the
    /// end a folder or (`file`) a regular file. Whether the end exists.
    fn walk(&self, file: bool) -> Result<bool, WriteProblem> {
        let parts: Vec<Component> = self.inside.components().collect();
        if file && parts.is_empty() {
            return Err(WriteProblem::Unsafe {
                path: self.path(),
                what: "a folder where a file belongs",
            });
        }
        let mut path = self.base.clone();
        for (index, part) in parts.iter().enumerate() {
            let Component::Normal(name) = part else {
                return Err(WriteProblem::Unsafe {
                    path: self.path(),
                    what: "a path that leaves the folder",
                });
            };
            path.push(name);
            let kind = match std::fs::symlink_metadata(&path) {
                Ok(metadata) => metadata.file_type(),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(false),
                Err(source) => return Err(WriteProblem::Io { path, source }),
            };
            let refuse = |what| {
                Err(WriteProblem::Unsafe {
                    path: path.clone(),
                    what,
                })
            };
            if let Some(what) = special(kind) {
                return refuse(what);
            }
            let last = index + 1 == parts.len();
            if last && file {
                if !kind.is_file() {
                    return refuse("a folder where a file belongs");
                }
            } else if !kind.is_dir() {
                return refuse("a file where a folder belongs");
            }
        }
        Ok(true)
    }

    /// Checks a folder ecp writes into; whether it exists.
    pub fn check_folder(&self) -> Result<bool, WriteProblem> {
        self.walk(false)
    }

    /// Checks a file ecp writes, replaces or removes; whether it exists.
    pub fn check_file(&self) -> Result<bool, WriteProblem> {
        self.walk(true)
    }

    /// Checks this folder, then creates what is missing of it, one
    /// component at a time (the base as the user named it).
    pub fn create_folder(&self) -> Result<(), WriteProblem> {
        self.check_folder()?;
        std::fs::create_dir_all(&self.base).map_err(WriteProblem::io(&self.base))?;
        let mut path = self.base.clone();
        for part in self.inside.components() {
            path.push(part);
            match std::fs::create_dir(&path) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(source) => return Err(WriteProblem::Io { path, source }),
            }
        }
        // What exists now is what was checked, or refused.
        self.check_folder().map(|_| ())
    }

    /// A temporary file in this folder (created when missing), named
    /// `prefix…suffix`.
    pub fn temporary(&self, prefix: &str, suffix: &str) -> Result<NamedTempFile, WriteProblem> {
        self.create_folder()?;
        let path = self.path();
        tempfile::Builder::new()
            .prefix(prefix)
            .suffix(suffix)
            .tempfile_in(&path)
            .map_err(WriteProblem::io(&path))
    }

    /// Renames a finished temporary file (from [`Place::temporary`] of the
    /// parent) over this file, mode 0644.
    pub fn publish(&self, temporary: NamedTempFile) -> Result<(), WriteProblem> {
        self.check_file()?;
        let path = self.path();
        {
            use std::os::unix::fs::PermissionsExt;
            temporary
                .as_file()
                .set_permissions(std::fs::Permissions::from_mode(0o644))
                .map_err(WriteProblem::io(&path))?;
        }
        temporary
            .persist(&path)
            .map_err(|e| WriteProblem::io(&path)(e.error))?;
        Ok(())
    }

    /// Writes `contents` to this file, whole or not at all.
    pub fn write(&self, contents: &[u8]) -> Result<(), WriteProblem> {
        self.check_file()?;
        let mut temporary = self.parent().temporary(".ecp-write-", ".tmp")?;
        temporary
            .write_all(contents)
            .map_err(WriteProblem::io(&self.path()))?;
        self.publish(temporary)
    }

    /// Removes this file when it is a regular file; whether it was there.
    pub fn remove_file(&self) -> Result<bool, WriteProblem> {
        if !self.check_file()? {
            return Ok(false);
        }
        let path = self.path();
        std::fs::remove_file(&path).map_err(WriteProblem::io(&path))?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mkfifo(path: &Path) {
        let made = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(made.success());
    }

    fn unsafe_what(result: Result<impl std::fmt::Debug, WriteProblem>) -> &'static str {
        match result {
            Err(WriteProblem::Unsafe { what, .. }) => what,
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn writes_replace_and_remove_regular_files_in_real_folders() {
        let temp = tempfile::tempdir().unwrap();
        let folder = temp.path().join("ext");
        std::fs::create_dir(&folder).unwrap();
        let file = Place::within(&folder, &folder.join("dist/a/b.txt"));
        file.write(b"first").unwrap();
        file.write(b"second").unwrap();
        assert_eq!(std::fs::read(file.path()).unwrap(), b"second");
        let names: Vec<_> = std::fs::read_dir(folder.join("dist/a"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["b.txt"]);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(file.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o644);
        assert!(file.remove_file().unwrap());
        assert!(!file.remove_file().unwrap());
    }

    #[test]
    fn links_and_special_files_are_refused_on_the_way_and_at_the_end() {
        let temp = tempfile::tempdir().unwrap();
        let folder = temp.path().join("ext");
        let elsewhere = temp.path().join("elsewhere");
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("victim"), "kept").unwrap();
        std::os::unix::fs::symlink(&elsewhere, folder.join("dist")).unwrap();
        std::os::unix::fs::symlink(elsewhere.join("victim"), folder.join("link")).unwrap();
        mkfifo(&folder.join("pipe"));
        std::fs::create_dir(folder.join("taken")).unwrap();
        std::fs::write(folder.join("plain"), "x").unwrap();
        let at = |name: &str| Place::within(&folder, &folder.join(name));
        assert_eq!(unsafe_what(at("dist/victim").write(b"x")), "a symlink");
        assert_eq!(unsafe_what(at("dist/victim").remove_file()), "a symlink");
        assert_eq!(unsafe_what(at("dist").create_folder()), "a symlink");
        assert_eq!(unsafe_what(at("link").write(b"x")), "a symlink");
        assert_eq!(unsafe_what(at("pipe").write(b"x")), "a FIFO");
        assert_eq!(
            unsafe_what(at("taken").write(b"x")),
            "a folder where a file belongs"
        );
        assert_eq!(
            unsafe_what(at("plain/x").write(b"x")),
            "a file where a folder belongs"
        );
        assert_eq!(
            std::fs::read_to_string(elsewhere.join("victim")).unwrap(),
            "kept"
        );
        assert!(folder.join("link").is_symlink());
        // The destination itself is checked; its folder is the user's.
        let record = Place::destination(&folder.join("pipe"));
        assert_eq!(unsafe_what(record.write(b"x")), "a FIFO");
        let through_users_link = Place::destination(&folder.join("dist/new.json"));
        through_users_link.write(b"{}").unwrap();
        assert!(elsewhere.join("new.json").is_file());
    }

    #[test]
    fn an_out_dir_outside_the_folder_owns_its_last_component() {
        let folder = Path::new("ext");
        assert_eq!(
            Place::within(folder, Path::new("ext/dist/x")),
            Place {
                base: "ext".into(),
                inside: "dist/x".into()
            }
        );
        assert_eq!(
            Place::within(folder, Path::new("/srv/out")),
            Place {
                base: "/srv".into(),
                inside: "out".into()
            }
        );
        assert_eq!(
            Place::within(folder, Path::new("ext/../out")),
            Place {
                base: "ext/..".into(),
                inside: "out".into()
            }
        );
        assert_eq!(
            Place::destination(Path::new("out")).path(),
            Path::new("out")
        );
    }
}
