//! `ecp managed`: lints the extension, then writes the deployment (see
//! `crate::managed` for what and why).

use std::path::{Path, PathBuf};

use super::{ColorChoice, Exit, Failure, ManagedArgs, Outcome};
use crate::{
    lint::{self, Severity, manifest::ManifestFacts},
    managed::{self, Plan},
    release,
};

fn could_not_run(message: impl std::fmt::Display) -> Failure {
    Failure::new(Exit::CouldNotRun, message)
}

/// `NAME=VALUE` pairs of `flag`.
fn pairs(items: &[String], flag: &str) -> Result<Vec<(String, String)>, Failure> {
    items
        .iter()
        .map(|item| {
            let (name, value) = item
                .split_once('=')
                .filter(|(n, v)| !n.is_empty() && !v.is_empty())
                .ok_or_else(|| {
                    could_not_run(format!(
                        "{flag} takes NAME=VALUE, not `{}`",
                        crate::text::outside::value(item)
                    ))
                })?;
            if !managed::shell_name(name) {
                let error = managed::PlanError::NotAName(name.to_owned());
                return Err(could_not_run(format!("{flag}: {error}")).help(Some(error.help())));
            }
            Ok((name.to_owned(), value.to_owned()))
        })
        .collect()
}

/// The manifest facts of a remote extension's folder or manifest, linted.
fn lint_remote(path: &Path, color: ColorChoice) -> Result<ManifestFacts, Failure> {
    let (mut report, facts) =
        lint::lint_path_with_facts(path).map_err(|e| could_not_run(&e).help(e.help()))?;
    report.sort();
    if report.count(Severity::Error) > 0 {
        eprint!("{}", lint::report::human(&report, color.for_stderr()));
        return Err(Failure::new(
            Exit::No,
            format!("{} does not pass ecp lint", path.display()),
        ));
    }
    facts.ok_or_else(|| could_not_run(format!("{} holds no manifest", path.display())))
}

/// `--repository-root`: absolute, and not a file system root (the rule
/// the hook applies on each machine, said before anything is written).
fn repository_root(root: &Path) -> Result<(), Failure> {
    if root.is_absolute() && root.parent().is_some() {
        return Ok(());
    }
    Err(could_not_run(format!(
        "--repository-root {}: an absolute folder that is not a file system root",
        root.display()
    ))
    .help(Some(
        "the hook searches only for sessions inside it, e.g. --repository-root /srv/acme",
    )))
}

pub fn run(args: ManagedArgs, color: ColorChoice) -> Outcome {
    // The one write rule: `--out` is a new folder, never a link or a
    // special file; the folder that holds it is the user's.
    match crate::writes::Place::destination(&args.out).check_folder() {
        Ok(false) => {}
        Ok(true) => {
            return Err(
                could_not_run(format!("{} exists", args.out.display())).help(Some(
                    "name a folder that does not exist; ecp managed writes it whole",
                )),
            );
        }
        Err(problem) => {
            let help = problem.help();
            return Err(could_not_run(problem).help(help));
        }
    }
    let name_of = args
        .extension
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    let archive = release::is_archive(name_of);
    let facts = if archive {
        super::try_it::lint_archive(&args.extension, color)?
    } else {
        lint_remote(&args.extension, color)?
    };
    let (Some(name), Some(server)) = (facts.name.clone(), facts.server.clone()) else {
        return Err(Failure::new(
            Exit::No,
            "the manifest declares no MCP server to pin",
        ));
    };
    if server.http_url.is_none() && !archive {
        return Err(Failure::new(
            Exit::No,
            format!("{name} runs a local server: deploy its release archive"),
        )
        .help(Some(
            "ecp package writes it: ecp managed --extension dist/linux.x64.NAME.tar.gz",
        )));
    }
    let plan = Plan {
        install_dir: args
            .install_dir
            .unwrap_or_else(|| PathBuf::from("/opt/qwen-extensions").join(&name)),
        name,
        server,
        settings_path: args.settings_path,
        qwen: args.qwen,
        values: pairs(&args.values, "--env")?,
        credentials: pairs(&args.credentials, "--credential")?
            .into_iter()
            .map(|(n, f)| (n, PathBuf::from(f)))
            .collect(),
        auto_recall: args.repository_root,
    };
    if let Some(root) = &plan.auto_recall {
        repository_root(root)?;
    }
    plan.check().map_err(|e| {
        // A name no shell can carry is input ecp cannot use; the others
        // are a deployment that does not match the manifest.
        let exit = match e {
            managed::PlanError::NotAName(_) => Exit::CouldNotRun,
            _ => Exit::No,
        };
        Failure::new(exit, &e).help(Some(e.help()))
    })?;
    let written = managed::write(
        &args.out,
        &plan,
        archive.then_some(args.extension.as_path()),
    )
    .map_err(|e| could_not_run(format!("cannot write {}: {e}", args.out.display())))?;
    for path in &written {
        println!("{}", path.display());
    }
    eprintln!(
        "ecp managed: wrote the deployment of {}; {} says what goes where",
        plan.name,
        args.out.join("README.md").display()
    );
    Ok(Exit::Success)
}
