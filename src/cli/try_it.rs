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

use super::{ColorChoice, Exit, Failure, Outcome, PackageArgs, TryArgs, TryClient};
use crate::{
    channels::{Client, try_in},
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
    let client = match args.client {
        TryClient::Qwen => Client::Qwen,
        TryClient::Gemini => Client::Gemini,
        TryClient::Claude => Client::Claude,
    };
    let word = try_in::client_word(client);
    for (flag, program) in [("--qwen", &args.qwen), ("--program", &args.program)] {
        if let Some(program) = program
            && !drive::is_program(program)
        {
            return Err(could_not_run(format!(
                "{flag} {}: no such program",
                crate::text::outside::value(&program.display().to_string())
            ))
            .help(Some(format!(
                "name the {} executable (`which {word}`), or leave {flag} out to use the one on PATH",
                client.title()
            ))));
        }
    }
    if client != Client::Qwen {
        return other_client(&args, client, color);
    }
    let archive = archive_for(&args.path, color)?;
    let archive = std::path::absolute(&archive).unwrap_or(archive);
    let facts = lint_archive(&archive, color)?;
    let name = facts.name.clone().unwrap_or_default();
    let install = format!(
        "qwen extensions install {} --consent",
        qwen::shell_word(&archive)
    );
    let program = qwen::program(args.qwen.as_deref().or(args.program.as_deref()));
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

/// `ecp try --client gemini|claude`: the archive unpacked where the client
/// will keep reading it, installed through the client's CLI, and the
/// client's own `mcp list` verdict ([`try_in`]).
fn other_client(args: &TryArgs, client: Client, color: ColorChoice) -> Outcome {
    let word = try_in::client_word(client);
    let archive = archive_for(&args.path, color)?;
    let archive = std::path::absolute(&archive).unwrap_or(archive);
    let facts = lint_archive(&archive, color)?;
    let name = facts.name.clone().unwrap_or_default();
    let root = try_in::stage_root(client).ok_or_else(|| {
        could_not_run("no folder to unpack into: HOME is not set").help(Some(format!(
            "set {} to a folder ecp may write",
            try_in::DIR_ENV
        )))
    })?;
    let folder = try_in::stage(&archive, &name, client, &root).map_err(failure)?;
    let steps = try_in::install_steps(client, &folder, &name);
    let program = (args.program.clone()).or_else(|| qwen::program_named(word));
    let Some(program) = program.filter(|_| !args.print) else {
        if !args.print {
            eprintln!(
                "ecp try: {} is not on PATH ({}); the archive is unpacked into {}; run these once it is:",
                client.title(),
                match client {
                    Client::Gemini => "npm install -g @google/gemini-cli",
                    _ => "npm install -g @anthropic-ai/claude-code",
                },
                folder.display()
            );
        }
        for step in &steps {
            println!("{}", step.shown(word));
        }
        println!("{word} mcp list");
        return Ok(Exit::Success);
    };
    crate::children::watch_interrupts();
    if client == Client::Gemini
        && let Some(source) = try_in::gemini_installed(&name)
    {
        let ours = source.as_deref() == Some(&*folder.to_string_lossy());
        if !ours && !args.replace {
            return Err(failure(TryError::InstalledElsewhere {
                client: client.title(),
                uninstall: format!("gemini extensions uninstall {name}"),
                name: name.clone(),
                from: source.unwrap_or_else(|| "an unknown source".to_owned()),
            }));
        }
        let shown = format!("gemini extensions uninstall {name}");
        eprintln!("ecp try: {shown}");
        let uninstall = [
            "extensions".to_owned(),
            "uninstall".to_owned(),
            name.clone(),
        ];
        drive::run_client(&program, &shown, &uninstall, None).map_err(failure)?;
    }
    for step in &steps {
        let shown = step.shown(word);
        eprintln!("ecp try: {shown}");
        drive::run_client(&program, &shown, &step.args, step.env).map_err(failure)?;
    }
    let list = ["mcp".to_owned(), "list".to_owned()];
    let listed =
        drive::run_client(&program, &format!("{word} mcp list"), &list, None).map_err(failure)?;
    client_verdict(client, &listed, &name, &facts)
}

/// The verdict from the client's `mcp list`, as [`connected`] reads Qwen's.
fn client_verdict(client: Client, listed: &str, name: &str, facts: &ManifestFacts) -> Outcome {
    let title = client.title();
    let (line, help) = match try_in::status(client, listed, name) {
        try_in::Status::Connected(line) => {
            println!("{}", crate::text::outside::line(&line, 500));
            println!("Installed in {title} and connected: ask it something that needs {name}.");
            return Ok(Exit::Success);
        }
        try_in::Status::Disconnected(line) => (
            line,
            drive::disconnected_help_for(facts.server.as_ref(), title),
        ),
        try_in::Status::Disabled(line) => (
            line,
            "Gemini CLI starts no stdio server in a folder it does not trust: trust this folder when Gemini asks (start `gemini` here), or run it from a trusted one".to_owned(),
        ),
        try_in::Status::NotListed => {
            return Err(could_not_run(format!(
                "{} mcp list does not list {name}:\n{}",
                try_in::client_word(client),
                crate::text::outside::block(listed, 20, 300)
            )));
        }
    };
    println!("{}", crate::text::outside::line(&line, 500));
    Err(Failure::new(
        Exit::No,
        format!("{name} is installed, but {title} does not connect to it"),
    )
    .help(Some(help)))
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
