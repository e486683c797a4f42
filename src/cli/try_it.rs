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

use std::{
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
};

use super::{ColorChoice, Exit, Failure, Outcome, PackageArgs, TryArgs};
use crate::{
    extension::build,
    lint::{self, MANIFEST, Severity, manifest::ManifestFacts},
    package, qwen, release,
};

pub fn run(args: TryArgs, color: ColorChoice) -> Outcome {
    // Every argument is checked before anything is packaged or run.
    if let Some(program) = &args.qwen
        && !is_program(program)
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
    if let Some(installed) = qwen::installed(&name) {
        replace(&program, &name, &installed, &archive, args.replace)?;
    }
    eprintln!("ecp try: {install}");
    run_qwen(&program, &["extensions", "install"], Some(&archive))?;
    let listed = run_qwen(&program, &["mcp", "list"], None)?;
    connected(&listed, &name, facts.server.as_ref())
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
        return release_asset(path);
    }
    let (_, facts) = lint::lint_path_with_facts(path)
        .map_err(|e| Failure::new(Exit::CouldNotRun, &e).help(e.help()))?;
    let facts = facts.unwrap_or_default();
    let archive = host_archive(path, &facts)?;
    match stale(path, &archive) {
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

/// The asset Qwen's installer picks on this machine from a release folder.
fn release_asset(folder: &Path) -> Result<PathBuf, Failure> {
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .map_err(|e| could_not_run(format!("{}: {e}", folder.display())))?
        .flatten()
        .filter_map(|entry| entry.file_name().to_str().map(str::to_owned))
        .collect();
    names.sort();
    let assets: Vec<&str> = names.iter().map(String::as_str).collect();
    let (os, arch) =
        package::platform_of(&package::host_triple()).map_err(|e| could_not_run(e.to_string()))?;
    // Qwen takes the first match in GitHub's order, which may be a file it
    // cannot extract (`ecp lint` of the folder says so); this takes an
    // archive among the matches.
    let found = match release::resolve(&assets, os, arch) {
        release::Resolution::Assets(found) => found,
        release::Resolution::Clone => Vec::new(),
    };
    match found.iter().find(|name| release::is_archive(name)) {
        Some(archive) => Ok(folder.join(archive)),
        None => Err(could_not_run(format!(
            "{} holds no archive Qwen would install on {os}.{arch}",
            folder.display()
        ))),
    }
}

/// Where `ecp package` writes the archive of the extension in `folder` for
/// this machine.
fn host_archive(folder: &Path, facts: &ManifestFacts) -> Result<PathBuf, Failure> {
    let name = facts
        .name
        .as_deref()
        .ok_or_else(|| could_not_run(format!("{} has no name", folder.join(MANIFEST).display())))?;
    let (os, arch) =
        package::platform_of(&package::host_triple()).map_err(|e| could_not_run(e.to_string()))?;
    let native = facts
        .entry_point
        .as_ref()
        .is_some_and(|e| e.kind == crate::extension::manifest::EntryKind::Native);
    let out = if build::is_node_project(folder) {
        "release"
    } else {
        "dist"
    };
    let stem = if native {
        format!("{os}.{arch}.{name}")
    } else {
        format!("{os}.{name}")
    };
    Ok(folder.join(out).join(format!("{stem}.tar.gz")))
}

/// Why the archive must be made again: missing, or a source file newer
/// than it (build output, dependencies and git's folder are not sources).
/// `None` when it is current. At most 20,000 entries are looked at; past
/// that the archive is made again.
fn stale(folder: &Path, archive: &Path) -> Option<String> {
    let Ok(made) = std::fs::metadata(archive).and_then(|m| m.modified()) else {
        return Some(format!("{} does not exist yet", archive.display()));
    };
    crate::files::changed_since(folder, made)
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

/// Uninstalls what an earlier `ecp try` installed under `name` (its source
/// is this archive), or anything with `--replace`; refuses otherwise.
fn replace(
    program: &Path,
    name: &str,
    installed: &qwen::Installed,
    archive: &Path,
    forced: bool,
) -> Result<(), Failure> {
    let ours = installed.source.as_deref() == Some(&*archive.to_string_lossy());
    if !ours && !forced {
        let from = installed.source.as_deref().unwrap_or("an unknown source");
        return Err(could_not_run(format!(
            "Qwen Code already has {name} installed, from {}",
            crate::text::outside::line(from, 300)
        ))
        .help(Some(format!(
            "pass --replace to uninstall it first, or run `qwen extensions uninstall {name}` yourself"
        ))));
    }
    eprintln!(
        "ecp try: qwen extensions uninstall {name} (installed from {})",
        if ours {
            "this archive"
        } else {
            "elsewhere; --replace"
        }
    );
    run_qwen(program, &["extensions", "uninstall", name], None).map(drop)
}

/// Runs `qwen ARGS [ARCHIVE]` with no stdin; its output when it succeeds,
/// could-not-run with its last lines when it fails.
fn run_qwen(program: &Path, args: &[&str], archive: Option<&Path>) -> Result<String, Failure> {
    let mut command = Command::new(program);
    command.args(args);
    if let Some(archive) = archive {
        command.arg(archive).arg("--consent");
    }
    let shown = format!("qwen {}", args.join(" "));
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // In a group of its own: Ctrl-C stops it through `crate::children`.
    let output: Output = crate::children::spawn(&mut command)
        .and_then(crate::children::Child::wait_with_output)
        .map_err(|e| could_not_run(format!("cannot run {}: {e}", program.display())))?;
    if crate::children::interrupted() {
        return Err(Failure::new(
            Exit::Interrupted,
            format!("interrupted: {shown} was stopped"),
        ));
    }
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    if output.status.success() {
        return Ok(text);
    }
    Err(could_not_run(format!(
        "{shown} failed ({}):\n{}",
        output.status,
        crate::text::outside::block(&text, 20, 300)
    )))
}

/// The verdict from `qwen mcp list`: connected is success; disconnected
/// names the manifest's variables that are not set here.
fn connected(
    listed: &str,
    name: &str,
    server: Option<&crate::extension::manifest::ServerFacts>,
) -> Outcome {
    match qwen::server_state(listed, name) {
        Some((true, line)) => {
            println!("{}", crate::text::outside::line(&line, 500));
            println!("Installed in Qwen Code and connected: ask it something that needs {name}.");
            Ok(Exit::Success)
        }
        Some((false, line)) => {
            println!("{}", crate::text::outside::line(&line, 500));
            let help = disconnected_help(server);
            Err(Failure::new(
                Exit::No,
                format!("{name} is installed, but Qwen Code cannot connect to it"),
            )
            .help(Some(help)))
        }
        None => Err(could_not_run(format!(
            "qwen mcp list does not list {name}:\n{}",
            crate::text::outside::block(listed, 20, 300)
        ))),
    }
}

/// What to do when Qwen cannot connect: a remote server must answer and be
/// signed in to; a local one needs the variables its manifest passes.
fn disconnected_help(server: Option<&crate::extension::manifest::ServerFacts>) -> String {
    if let Some(url) = server.and_then(|s| s.http_url.as_deref()) {
        return format!(
            "a remote server connects once {} answers and Qwen Code has signed in to it (its OAuth sign-in); `ecp check --url URL --token-env TOKEN` checks the endpoint itself",
            crate::text::outside::value(url)
        );
    }
    let unset = unset_variables(server);
    if unset.is_empty() {
        return "`ecp call . \"a query\"` shows what the server says when it starts".to_owned();
    }
    format!(
        "set {} in the environment Qwen Code starts from",
        unset.join(" and ")
    )
}

/// The variables the server's `env` refers to that are unset here (read
/// as Qwen fills a manifest, [`crate::qwen::vars::names_in`]).
fn unset_variables(server: Option<&crate::extension::manifest::ServerFacts>) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for (_, value) in server.map(|s| s.env.as_slice()).unwrap_or_default() {
        for name in crate::qwen::vars::names_in(value) {
            if std::env::var_os(&name).is_none() && !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names
}

/// Whether `path` is a file this user may run (on Unix: an execute bit).
fn is_program(path: &Path) -> bool {
    let Ok(metadata) = std::fs::metadata(path) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        metadata.is_file() && metadata.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        metadata.is_file()
    }
}

fn could_not_run(message: impl std::fmt::Display) -> Failure {
    Failure::new(Exit::CouldNotRun, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_disconnected_server_gets_the_help_its_kind_needs() {
        let remote = crate::extension::manifest::ServerFacts {
            http_url: Some("https://context.acme.dev/mcp".into()),
            ..Default::default()
        };
        let help = disconnected_help(Some(&remote));
        assert!(
            help.contains("https://context.acme.dev/mcp answers") && help.contains("signed in"),
            "{help}"
        );
        let local = crate::extension::manifest::ServerFacts {
            env: vec![(
                "X_BASE_URL".into(),
                "${ECP_TRY_TEST_SURELY_UNSET_VARIABLE}".into(),
            )],
            ..Default::default()
        };
        assert_eq!(
            disconnected_help(Some(&local)),
            "set ECP_TRY_TEST_SURELY_UNSET_VARIABLE in the environment Qwen Code starts from"
        );
        // Qwen's own variables are none; `$NAME` is one, as Qwen reads it.
        let builtins = crate::extension::manifest::ServerFacts {
            env: vec![(
                "X_CONFIG".into(),
                "${extensionPath}${/}a${pathSeparator}$ECP_TRY_TEST_OTHER_UNSET".into(),
            )],
            ..Default::default()
        };
        assert_eq!(
            unset_variables(Some(&builtins)),
            ["ECP_TRY_TEST_OTHER_UNSET"]
        );
        assert!(disconnected_help(None).contains("ecp call"));
    }
}
