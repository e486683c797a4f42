//! `ecp verify`: the steps and what each proved, or one JSON document;
//! exit 0 only when every step asked for is proven.

use anstyle::AnsiColor;

use super::{CheckFormat, ColorChoice, Exit, Failure, Outcome, VerifyArgs};
use crate::verify::{self, Status, VerifyOptions};

fn label(status: Status, color: bool) -> String {
    let (text, style) = match status {
        Status::Proven => ("proven     ", AnsiColor::Green.on_default().bold()),
        Status::Failed => ("FAILED     ", AnsiColor::Red.on_default().bold()),
        Status::NotChecked => ("not checked", AnsiColor::Yellow.on_default()),
    };
    if color {
        format!("{style}{text}{style:#}")
    } else {
        text.to_owned()
    }
}

/// The bearer token of `--token-env NAME`, which goes with `--live URL`
/// only: a command or an installed extension gets its credentials from
/// its manifest.
fn bearer_of(live: Option<&verify::Live>, name: Option<&str>) -> Result<Option<String>, Failure> {
    let Some(name) = name else {
        return Ok(None);
    };
    if !matches!(live, Some(verify::Live::Url(_))) {
        return Err(Failure::new(
            Exit::CouldNotRun,
            "--token-env goes with --live URL: a command or an installed extension is started with the variables its manifest names",
        ));
    }
    match std::env::var(name) {
        Ok(token) if !token.trim().is_empty() => Ok(Some(token)),
        _ => Err(Failure::new(
            Exit::CouldNotRun,
            format!(
                "{} is not set; it should hold the bearer token for --live URL",
                crate::text::outside::line(name, 200)
            ),
        )),
    }
}

/// `--live URL|NAME`, or `--live -- CMD`.
fn live_of(live: Option<String>, command: Vec<String>) -> Result<Option<verify::Live>, Failure> {
    Ok(match (live, command.is_empty()) {
        (None, _) => None,
        (Some(given), false) if given.is_empty() => Some(verify::Live::Command(command)),
        (Some(given), true) if given.is_empty() => {
            return Err(Failure::new(
                Exit::CouldNotRun,
                "--live needs a URL, the name of an installed extension, or `-- CMD`",
            ));
        }
        (Some(_), false) => {
            return Err(Failure::new(
                Exit::CouldNotRun,
                "--live takes a URL or NAME, or a command after `--`, not both",
            ));
        }
        (Some(url), true) if url.starts_with("http://") || url.starts_with("https://") => {
            Some(verify::Live::Url(url))
        }
        (Some(name), true) => Some(verify::Live::Installed(name)),
    })
}

pub fn run(args: VerifyArgs, color: ColorChoice) -> Outcome {
    crate::input::InputError::check_exists(&args.archive)
        .map_err(|e| Failure::new(Exit::CouldNotRun, &e).help(Some(e.help())))?;
    if args.rebuild.is_some() {
        // Ctrl-C stops the rebuild's cargo or npm; no verdict is given then.
        crate::children::watch_interrupts();
    }
    let live = live_of(args.live, args.live_command)?;
    let options = VerifyOptions {
        archive: args.archive,
        key: args.key,
        rebuild: args.rebuild,
        provenance: args.provenance,
        bearer: bearer_of(live.as_ref(), args.token_env.as_deref())?,
        live,
    };
    let mut log = |line: &str| {
        eprintln!("ecp verify: {}", crate::text::outside::line(line, 2000));
    };
    let report = verify::verify(&options, &mut log);
    if crate::children::interrupted() {
        return Err(Failure::new(
            Exit::Interrupted,
            "interrupted: the rebuild and everything it started were stopped; no verdict",
        ));
    }
    let report = report.map_err(|error| {
        let help = error.help();
        Failure::new(Exit::CouldNotRun, error).help(Some(help))
    })?;
    match args.format {
        CheckFormat::Json => println!("{}", crate::text::outside::json_report(&report)),
        CheckFormat::Human => {
            let color = color.for_stdout();
            println!("ecp verify: {} (sha256 {})", report.archive, report.sha256);
            for check in &report.checks {
                println!(
                    "  {}  {:<10} {}",
                    label(check.status, color),
                    check.id,
                    check.detail
                );
            }
            let failed = report
                .checks
                .iter()
                .filter(|c| c.status == Status::Failed)
                .count();
            let unchecked: Vec<&str> = report
                .checks
                .iter()
                .filter(|c| c.status == Status::NotChecked)
                .map(|c| c.id)
                .collect();
            let open = if unchecked.is_empty() {
                String::new()
            } else {
                format!("; not checked: {}", unchecked.join(", "))
            };
            if report.origin_proven {
                println!("verified: every step asked for is proven, the signature included{open}");
            } else if report.verified {
                // Never "verified" without the signature: the release
                // agrees with itself, which anyone who rewrote it can do.
                println!(
                    "consistent, origin NOT proven: every step asked for is proven, but no signature was checked (pass --key PUBLIC_KEY){open}"
                );
            } else {
                println!("NOT verified: {failed} step(s) failed{open}");
            }
        }
    }
    Ok(if report.verified {
        Exit::Success
    } else {
        Exit::No
    })
}
