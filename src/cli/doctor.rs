//! `ecp doctor`: the report, and the exit status fleet tooling reads.

use super::{CheckFormat, DoctorArgs, Exit, Failure, Outcome};
use crate::{doctor, qwen::machine};

pub fn run(args: DoctorArgs) -> Outcome {
    if let Some(seen) = &args.probe_child {
        return doctor::probe::child(seen)
            .map(|()| Exit::Success)
            .map_err(|e| Failure::new(Exit::CouldNotRun, format!("the probe server: {e}")));
    }
    if args.probe_settings {
        return probe(args.qwen.as_deref(), args.format);
    }
    let workspace = match args.workspace {
        Some(workspace) => std::path::absolute(&workspace).unwrap_or(workspace),
        None => std::env::current_dir().map_err(|e| {
            Failure::new(
                Exit::CouldNotRun,
                format!("cannot read the current folder: {e}"),
            )
        })?,
    };
    let scope = machine::Scope::current(workspace).ok_or_else(|| {
        Failure::new(
            Exit::CouldNotRun,
            "HOME is not set: ecp doctor reads Qwen's files under the home folder",
        )
    })?;
    let report = doctor::examine(&machine::Machine::read(&scope), args.name.as_deref());
    let exit = if report.has_findings() {
        Exit::No
    } else {
        Exit::Success
    };
    let text = match args.format {
        CheckFormat::Human => doctor::human(&report),
        CheckFormat::Json => {
            doctor::json(&report, if report.has_findings() { 1 } else { 0 }) + "\n"
        }
    };
    match std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes()) {
        Ok(()) => Ok(exit),
        Err(e) if super::stdout::is_closed(&e) => Ok(Exit::Closed),
        Err(e) => Err(Failure::new(
            Exit::CouldNotRun,
            format!("cannot write to stdout: {e}"),
        )),
    }
}

fn probe(qwen: Option<&std::path::Path>, format: CheckFormat) -> Outcome {
    let program = crate::qwen::program(qwen).ok_or_else(|| {
        Failure::new(Exit::CouldNotRun, "Qwen Code is not on PATH").help(Some(
            "npm install -g @qwen-code/qwen-code (it needs Node.js 22 or newer), or pass --qwen PROGRAM",
        ))
    })?;
    let ecp = std::env::current_exe()
        .map_err(|e| Failure::new(Exit::CouldNotRun, format!("cannot find ecp itself: {e}")))?;
    eprintln!("ecp doctor: installing a probe extension into a scratch Qwen home (about 10 s)");
    let probe = doctor::probe::run(&program, &ecp)
        .map_err(|e| Failure::new(Exit::CouldNotRun, e.to_string()))?;
    let text = match format {
        CheckFormat::Human => doctor::probe::human(&probe),
        CheckFormat::Json => crate::text::outside::json_report(&probe) + "\n",
    };
    match std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes()) {
        Ok(()) => Ok(Exit::Success),
        Err(e) if super::stdout::is_closed(&e) => Ok(Exit::Closed),
        Err(e) => Err(Failure::new(
            Exit::CouldNotRun,
            format!("cannot write to stdout: {e}"),
        )),
    }
}
