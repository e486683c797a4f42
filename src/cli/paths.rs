//! One path rule for every command: each path argument is checked against
//! what its command takes ([`Takes`]) before the command starts, so a file
//! where a folder is expected (or the reverse) is a could-not-run error
//! (exit 2) that names the path once and says what to pass instead, the
//! same for `package`, `upgrade`, `new --dir`, `lint`, `check`, `call` and
//! `verify`.

use std::path::Path;

use super::{Command, Exit, Failure};
use crate::input::Takes;

/// The first path argument of `command` that is not what it takes.
pub(super) fn check(command: &Command) -> Result<(), Failure> {
    let mut checks: Vec<(&Path, Takes, &str)> = Vec::new();
    match command {
        Command::Package(args) => {
            checks.push((&args.path, Takes::Folder, "package"));
            if let Some(out) = &args.out_dir {
                checks.push((out, Takes::NewFolder, "package --out-dir"));
            }
            if let Some(binary) = &args.binary {
                checks.push((binary, Takes::File, "package --binary"));
            }
            if let Some(key) = &args.sign_key {
                checks.push((key, Takes::File, "package --sign-key"));
            }
        }
        Command::Upgrade(args) => checks.push((&args.path, Takes::Folder, "upgrade")),
        Command::Managed(args) => {
            checks.push((&args.extension, Takes::Anything, "managed --extension"));
            checks.push((&args.out, Takes::NewFolder, "managed --out"));
        }
        Command::Doctor(args) => {
            if let Some(workspace) = &args.workspace {
                checks.push((workspace, Takes::Folder, "doctor --workspace"));
            }
        }
        Command::Try(args) => {
            checks.push((&args.path, Takes::FolderOrArchive, "try"));
            if let Some(qwen) = &args.qwen {
                checks.push((qwen, Takes::File, "try --qwen"));
            }
        }
        Command::New(args) => {
            if let Some(dir) = &args.dir {
                checks.push((dir, Takes::NewFolder, "new --dir"));
            }
        }
        Command::Lint(args) => checks.push((&args.path, Takes::Anything, "lint")),
        Command::Check(args) => {
            if let Some(path) = &args.path {
                checks.push((path, Takes::FolderOrArchive, "check"));
            }
            if let Some(cassette) = &args.cassette {
                checks.push((cassette, Takes::File, "check --cassette"));
            }
            if let Some(record) = &args.record {
                checks.push((record, Takes::File, "check --record"));
            }
        }
        Command::Call(args) => {
            let elsewhere = args.target.url.is_some() || !args.target.command.is_empty();
            // With two positionals the first is the extension (with one,
            // it is the query).
            if let (Some(path), Some(_), false) = (&args.first, &args.second, elsewhere) {
                checks.push((Path::new(path), Takes::FolderOrArchive, "call"));
            }
            if let Some(fixture) = args
                .fixture
                .as_deref()
                .filter(|f| *f != Path::new("example"))
            {
                checks.push((fixture, Takes::File, "call --fixture"));
            }
        }
        Command::Verify(args) => {
            checks.push((&args.archive, Takes::Archive, "verify"));
            if let Some(key) = &args.key {
                checks.push((key, Takes::File, "verify --key"));
            }
            if let Some(provenance) = &args.provenance {
                checks.push((provenance, Takes::File, "verify --provenance"));
            }
        }
        Command::Explain(_) | Command::Serve(_) | Command::Completions(_) => {}
    }
    for (path, takes, name) in checks {
        takes
            .check(path, name)
            .map_err(|error| Failure::new(Exit::CouldNotRun, &error).help(Some(error.help())))?;
    }
    Ok(())
}
