//! `ecp doctor`: the report, and the exit status fleet tooling reads.

use super::{CheckFormat, DoctorArgs, Exit, Failure, Outcome};
use crate::{doctor, qwen::machine};

pub fn run(args: DoctorArgs) -> Outcome {
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
