//! `ecp upgrade`: the runtime an extension vendors, brought to the one this
//! ecp carries; what changed, what was written, what to run next.

use super::{Exit, Failure, Outcome, UpgradeArgs};
use crate::upgrade;

pub fn run(args: UpgradeArgs) -> Outcome {
    let failed = |error: upgrade::UpgradeError| {
        let exit = match error {
            upgrade::UpgradeError::Edited { .. } => Exit::No,
            _ => Exit::CouldNotRun,
        };
        let help = error.help();
        Failure::new(exit, error).help(help)
    };
    // First what an interrupted upgrade left, so that it is said even when
    // the upgrade itself then stops.
    let recovered = match upgrade::recover(&args.path) {
        // Nothing to upgrade is not a failure: said plainly, exit 0.
        Err(error @ upgrade::UpgradeError::Remote(_)) => {
            println!("{error}; `ecp lint` and `ecp check` still apply to it");
            return Ok(Exit::Success);
        }
        other => other.map_err(failed)?,
    };
    let outcome = match upgrade::upgrade_recovered(&args.path, args.force, recovered.clone()) {
        Ok(outcome) => outcome,
        Err(error) => {
            for line in &recovered {
                eprintln!("note: {line}");
            }
            return Err(failed(error));
        }
    };
    if args.json {
        println!("{}", crate::text::outside::json_report(&outcome));
    } else {
        summary(&outcome);
    }
    Ok(Exit::Success)
}

/// The outcome for a person: what was recovered, the versions and notes,
/// what was written, and what to run next.
fn summary(outcome: &upgrade::Upgraded) {
    let typescript = outcome.from_layout == "typescript";
    let layout = match outcome.from_layout {
        "copied" => " (copied into src/ by ecp 0.1.0)",
        _ => "",
    };
    let runtime = if typescript {
        "the TypeScript runtime of ecp-runtime"
    } else {
        "ecp-runtime"
    };
    for line in &outcome.recovered {
        println!("{}: {line}", outcome.name);
    }
    if let Some(provider) = &outcome.provider {
        let file = if typescript { "" } else { "src/provider.rs " };
        println!("{}: {file}{provider}", outcome.name);
    }
    if let Some(tests) = &outcome.tests {
        println!("{}: {tests}", outcome.name);
    }
    if !outcome.changed {
        println!(
            "{}: {runtime} {} is current; nothing to do",
            outcome.name,
            if typescript {
                outcome.to
            } else {
                &outcome.from
            }
        );
        return;
    }
    println!(
        "{}: {runtime} {}{layout} -> {}",
        outcome.name, outcome.from, outcome.to
    );
    for release in &outcome.notes {
        let security = release
            .security_fix
            .map(|fix| format!(" (security fix: {fix})"))
            .unwrap_or_default();
        println!("  {}{security}", release.version);
        for note in release.notes {
            println!("    - {note}");
        }
    }
    if !outcome.forced.is_empty() {
        println!(
            "  replaced local edits (--force): {}",
            outcome.forced.join(", ")
        );
    }
    println!("  wrote: {}", outcome.written.join(", "));
    if !outcome.removed.is_empty() {
        println!("  removed: {}", outcome.removed.join(", "));
    }
    if !outcome.dropped.is_empty() {
        println!(
            "  Cargo.toml: dropped {} (only the old copies used them)",
            outcome.dropped.join(", ")
        );
    }
    if !outcome.aligned.is_empty() {
        println!(
            "  {}: aligned with the runtime: {}",
            if typescript {
                "package.json"
            } else {
                "Cargo.toml"
            },
            outcome.aligned.join(", ")
        );
    }
    println!();
    next(outcome);
}

/// What to run after an upgrade that changed something.
fn next(outcome: &upgrade::Upgraded) {
    if outcome.from_layout == "typescript" {
        let converted = outcome.written.iter().any(|w| w == "src/provider.ts");
        println!(
            "Next: npm ci && npm test && ecp package && ecp check .   ({})",
            if converted {
                "the generated src/provider.ts, its test and src/main.ts were replaced; nothing you wrote was touched"
            } else {
                "src/provider.ts, its test and src/main.ts are untouched"
            }
        );
        return;
    }
    let converted = outcome.written.iter().any(|w| w == "src/provider.rs");
    println!(
        "Next: cargo test && ecp package && ecp check .   ({})",
        if converted {
            "the generated src/provider.rs, src/main.rs and tests/ were replaced; nothing you wrote was touched"
        } else {
            "src/provider.rs and tests/ are untouched"
        }
    );
}
