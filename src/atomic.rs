//! Files written whole or not at all: a temporary file beside the target,
//! renamed over it, so a reader sees the old file or the new one, never
//! half of one, and a failed run leaves no temporary behind. Used by `ecp
//! upgrade` on paths its guard has already passed through the one write
//! rule; every other command writes through [`crate::writes::Place`],
//! which does the same after checking the place.

use std::io::Write;
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

/// What could not be written, and where.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {source}", path.display())]
pub struct WriteError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

impl WriteError {
    fn at(path: &Path) -> impl FnOnce(std::io::Error) -> WriteError {
        let path = path.to_owned();
        move |source| WriteError { path, source }
    }
}

/// Writes `contents` to `path` (its folder is created), mode 0644 on Unix.
pub fn write(path: &Path, contents: &[u8]) -> Result<(), WriteError> {
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(parent).map_err(WriteError::at(parent))?;
    let mut temporary = NamedTempFile::new_in(parent).map_err(WriteError::at(parent))?;
    temporary
        .write_all(contents)
        .map_err(WriteError::at(path))?;
    publish(temporary, path)
}

/// Renames a finished temporary file over `path`, first giving it the mode
/// of a file others read (tempfile creates 0600).
pub fn publish(temporary: NamedTempFile, path: &Path) -> Result<(), WriteError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        temporary
            .as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))
            .map_err(WriteError::at(path))?;
    }
    temporary
        .persist(path)
        .map_err(|e| WriteError::at(path)(e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_whole_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b.txt");
        write(&path, b"first").unwrap();
        write(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        let names: Vec<_> = std::fs::read_dir(dir.path().join("a"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["b.txt"]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o644);
        }
    }

    #[test]
    fn a_folder_in_the_way_names_the_target() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("taken");
        std::fs::create_dir(&path).unwrap();
        let error = write(&path, b"x").unwrap_err();
        assert_eq!(error.path, path);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
