//! `ecp package`: settings from flags and the environment, a summary or one
//! JSON document, the lint report when linting stops the run.

use std::io::IsTerminal;

use super::{ArchiveFormat, ColorChoice, Exit, Failure, Outcome, PackageArgs};
use crate::{
    lint::report,
    package::{self, DEFAULT_EPOCH, Format, PackageError, PackageSettings},
    provenance::keys::SigningKey,
};

/// A `SOURCE_DATE_EPOCH` that is not a number of seconds.
#[derive(Debug, thiserror::Error)]
#[error("SOURCE_DATE_EPOCH must be a number of seconds, not {0:?}")]
struct BadEpoch(String);

/// `SOURCE_DATE_EPOCH`, else the commit time of the folder's `HEAD`, else
/// [`DEFAULT_EPOCH`].
fn epoch(folder: &std::path::Path) -> Result<u64, BadEpoch> {
    match std::env::var("SOURCE_DATE_EPOCH") {
        Err(_) => Ok(crate::provenance::source::commit_time(folder).unwrap_or(DEFAULT_EPOCH)),
        Ok(value) => value.trim().parse().map_err(|_| BadEpoch(value)),
    }
}

/// The run's settings from the flags and the environment; a key that
/// cannot sign stops the run before a build is spent.
pub(super) fn settings(args: &PackageArgs) -> Result<PackageSettings, Failure> {
    let epoch = epoch(&args.path).map_err(|error| Failure::new(Exit::CouldNotRun, error))?;
    let sign_key = match args.sign_key.as_deref().map(SigningKey::load).transpose() {
        Ok(key) => key.map(std::sync::Arc::new),
        Err(error) => {
            let help = error.help();
            return Err(Failure::new(Exit::CouldNotRun, error).help(Some(help)));
        }
    };
    Ok(PackageSettings {
        out_dir: args.out_dir.clone().unwrap_or_else(|| {
            let node = crate::extension::build::is_node_project(&args.path);
            args.path.join(if node { "release" } else { "dist" })
        }),
        folder: args.path.clone(),
        formats: args
            .formats
            .iter()
            .map(|f| match f {
                ArchiveFormat::TarGz => Format::TarGz,
                ArchiveFormat::Zip => Format::Zip,
            })
            .collect(),
        binary: args.binary.clone(),
        skip_build: args.skip_build,
        ignore_scripts: args.ignore_scripts,
        target: args.target.clone(),
        progress: !args.json && std::io::stderr().is_terminal(),
        epoch,
        sign_key,
        channels: package::Channels {
            clients: args.clients.clone(),
            npm: args.npm.then(|| args.npm_name.clone()),
            registry: args.registry.clone(),
            download_url: args.download_url.clone(),
        },
    })
}

/// How a failed run exits: input that cannot be read, or a place the one
/// write rule refuses, is "could not run",
/// Ctrl-C is "interrupted", everything else (lint errors, a failed build,
/// a refused file) is a "no"; lint's report goes to stderr first.
pub(super) fn failure(error: PackageError, color: ColorChoice) -> Failure {
    if let PackageError::LintFindings { report, .. } = &error {
        eprint!("{}", report::human(report, color.for_stderr()));
    }
    let exit = match error {
        // Input ecp cannot use: a folder it cannot read, or a place the
        // write rule refuses (nothing was written or removed).
        PackageError::Lint(_) | PackageError::Unsafe(_) | PackageError::Arguments { .. } => {
            Exit::CouldNotRun
        }
        PackageError::Interrupted(_) => Exit::Interrupted,
        _ => Exit::No,
    };
    let help = error.help();
    Failure::new(exit, error).help(help)
}

pub fn run(args: PackageArgs, color: ColorChoice) -> Outcome {
    // Ctrl-C stops cargo or npm and returns through the usual exit.
    crate::children::watch_interrupts();
    let settings = settings(&args)?;
    let quiet = args.json;
    let mut log = |line: &str| {
        if !quiet {
            eprintln!("ecp package: {line}");
        }
    };
    let packaged = package::package(&settings, &mut log).map_err(|e| failure(e, color))?;
    if args.json {
        println!("{}", crate::text::outside::json_report(&packaged));
    } else {
        summary(&packaged);
    }
    Ok(Exit::Success)
}

/// What was packaged, for a person: the staged files, each archive with
/// its digest, the sums and the provenance.
fn summary(packaged: &package::Packaged) {
    let version = packaged.version.as_deref().unwrap_or("(no version)");
    let platform = match (&packaged.platform, packaged.bundle) {
        (Some(platform), _) => platform.as_str(),
        (None, true) => "every platform (a JavaScript bundle Node runs)",
        (None, false) => "every platform (manifest only)",
    };
    println!("Packaged {} {version} for {platform}", packaged.name);
    for file in &packaged.files {
        println!(
            "  {:<40} {}  {:>10}",
            file.name,
            file.mode,
            package::size(file.bytes)
        );
    }
    for archive in &packaged.archives {
        println!(
            "{}  {}",
            archive.path.display(),
            package::size(archive.bytes)
        );
        println!("  sha256 {}", archive.sha256);
    }
    if let Some(server_json) = &packaged.registry {
        println!("{}  for the MCP registry", server_json.display());
    }
    println!("{}", packaged.sums.display());
    println!("{}", packaged.provenance.display());
    if let (Some(envelope), Some(id)) = (&packaged.envelope, &packaged.key_id) {
        println!("{}  signed by key {id}", envelope.display());
    }
}
