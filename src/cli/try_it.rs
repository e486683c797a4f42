//! `ecp try`: the extension in Qwen Code in one step. A source folder is
//! packaged when its archive for this machine is missing, older than the
//! sources, or not one this machine's `ecp package` made
//! (`crate::package::made`: a committed `dist/` is never installed as the
//! folder); the archive (or one given, or the one Qwen's installer
//! would pick from a release folder) is linted, installed with `qwen
//! extensions install ARCHIVE --consent` (after uninstalling what an
//! earlier `ecp try` installed under the name), and `qwen mcp list` says
//! whether Qwen connects to it. Without Qwen on `PATH`, or with `--print`,
//! it prints the exact commands instead.

use std::path::{Path, PathBuf};

use super::{ColorChoice, Exit, Failure, Outcome, PackageArgs, TryArgs};
use crate::{
    extension::manifest::ManifestFacts,
    lint::{self, MANIFEST, Severity},
    package,
    qwen::{
        self,
        try_it::{self as drive, Connection, TryError},
    },
    release,
};

pub fn run(args: TryArgs, color: ColorChoice) -> Outcome {
    // Every argument is checked before anything is packaged or run.
    if let Some(program) = &args.qwen
        && !drive::is_program(program)
    {
        return Err(could_not_run(format!(
            "--qwen {}: no such program",
            crate::text::outside::value(&program.display().to_string())
        ))
        .help(Some("name the Qwen Code executable (`which qwen`), or leave --qwen out to use the one on PATH")));
    }
    let archive = archive_for(&args.path, color)?;
    let archive = std::path::absolute(&archive).unwrap_or(archive);
    let facts = lint_archive(&archive, color)?;
    let name = facts.name.clone().unwrap_or_default();
    let install = format!(
        "qwen extensions install {} --consent",
        qwen::shell_word(&archive)
    );
    let program = qwen::program(args.qwen.as_deref());
    let Some(program) = program.filter(|_| !args.print) else {
        if !args.print {
            eprintln!(
                "ecp try: Qwen Code is not on PATH (npm install -g @qwen-code/qwen-code; it needs Node.js 22 or newer); run these once it is:"
            );
        }
        println!("{install}\nqwen mcp list");
        return Ok(Exit::Success);
    };
    crate::children::watch_interrupts();
    let mut log = |line: &str| eprintln!("ecp try: {line}");
    if let Some(installed) = qwen::installed(&name) {
        drive::replace(
            &program,
            &name,
            &installed,
            &archive,
            args.replace,
            &mut log,
        )
        .map_err(failure)?;
    }
    log(&install);
    drive::run_qwen(&program, &["extensions", "install"], Some(&archive)).map_err(failure)?;
    let listed = drive::run_qwen(&program, &["mcp", "list"], None).map_err(failure)?;
    connected(&listed, &name, &facts)
}

/// The verdict from `qwen mcp list`: connected is success; disconnected
/// says what to set.
fn connected(listed: &str, name: &str, facts: &ManifestFacts) -> Outcome {
    match drive::connection(listed, name, facts.server.as_ref()) {
        Connection::Connected(line) => {
            println!("{}", crate::text::outside::line(&line, 500));
            println!("Installed in Qwen Code and connected: ask it something that needs {name}.");
            Ok(Exit::Success)
        }
        Connection::Disconnected { line, help } => {
            println!("{}", crate::text::outside::line(&line, 500));
            Err(Failure::new(
                Exit::No,
                format!("{name} is installed, but Qwen Code cannot connect to it"),
            )
            .help(Some(help)))
        }
        Connection::NotListed => Err(could_not_run(format!(
            "qwen mcp list does not list {name}:\n{}",
            crate::text::outside::block(listed, 20, 300)
        ))),
    }
}

/// A [`TryError`] as the command's failure.
fn failure(error: TryError) -> Failure {
    let exit = match error {
        TryError::Interrupted(_) => Exit::Interrupted,
        _ => Exit::CouldNotRun,
    };
    let help = error.help();
    Failure::new(exit, &error).help(help)
}

/// The archive to install: the one given, the one Qwen's installer takes
/// from a release folder, or a source folder's own (packaged first when it
/// is missing or older than the sources).
fn archive_for(path: &Path, color: ColorChoice) -> Result<PathBuf, Failure> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if release::is_archive(name) {
        return Ok(path.to_owned());
    }
    if !path.join(MANIFEST).exists() && lint::release::is_release_folder(path) {
        return drive::release_asset(path).map_err(failure);
    }
    let (_, facts) = lint::lint_path_with_facts(path)
        .map_err(|e| Failure::new(Exit::CouldNotRun, &e).help(e.help()))?;
    let facts = facts.unwrap_or_default();
    let archive = drive::host_archive(path, &facts).map_err(failure)?;
    match drive::stale(path, &archive) {
        None if package::made::made_here(path, &archive) => {
            eprintln!("ecp try: {} is current", archive.display());
            return Ok(archive);
        }
        None => eprintln!(
            "ecp try: packaging first ({} was not made by ecp package here, for this user: an archive that came with the folder is never installed as the folder)",
            archive.display()
        ),
        Some(why) => eprintln!("ecp try: packaging first ({why})"),
    }
    // The package steps on stderr: stdout is the qwen commands or the
    // server's line.
    let args = PackageArgs {
        path: path.to_owned(),
        formats: Vec::new(),
        out_dir: None,
        binary: None,
        skip_build: false,
        ignore_scripts: false,
        target: None,
        json: false,
        sign_key: None,
        clients: Vec::new(),
        npm: false,
        npm_name: None,
        registry: None,
        download_url: None,
    };
    crate::children::watch_interrupts();
    let settings = super::package::settings(&args)?;
    let mut log = |line: &str| eprintln!("ecp package: {line}");
    package::package(&settings, &mut log).map_err(|e| super::package::failure(e, color))?;
    Ok(archive)
}

/// Lints the archive as `ecp lint` would; errors stop the run.
pub(super) fn lint_archive(archive: &Path, color: ColorChoice) -> Result<ManifestFacts, Failure> {
    let mut report = lint::Report::default();
    let found = lint::archive::lint_archive(archive, &mut report)
        .map_err(|e| Failure::new(Exit::CouldNotRun, &e).help(e.help()))?;
    report.sort();
    if report.count(Severity::Error) > 0 {
        eprint!("{}", lint::report::human(&report, color.for_stderr()));
        return Err(Failure::new(
            Exit::No,
            format!(
                "{} does not pass ecp lint; Qwen would install it as it is",
                archive.display()
            ),
        ));
    }
    found
        .map(|found| found.manifest)
        .ok_or_else(|| could_not_run(format!("{} holds no manifest", archive.display())))
}

fn could_not_run(message: impl std::fmt::Display) -> Failure {
    Failure::new(Exit::CouldNotRun, message)
}
