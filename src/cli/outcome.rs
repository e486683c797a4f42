//! How every command ends: the one exit mapping ([`Exit`]), and a
//! [`Failure`] printed the same way by each (`error: ...`, then
//! `= help: ...`).

use std::process::ExitCode;

use super::stdout;

/// The one exit mapping of every command (clap's usage errors are 2 too,
/// and so are the adapter's, `ecp serve`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// It did what was asked: lint clean (warnings allowed), the target
    /// conforms (every applicable check exercised), the archives are
    /// written.
    Success,
    /// It ran, and the answer is no: findings at error level, a failed check,
    /// a call that returned `isError`, a refusal (lint errors that stop
    /// packaging, a non-empty folder, a name that breaks the rules, an edited
    /// runtime), a build that failed.
    No,
    /// It could not run: a path that is not there, input it cannot read, a
    /// target that cannot be started, arguments it cannot use, a check
    /// whose verdict is not established (checks that apply did not run).
    CouldNotRun,
    /// It was interrupted (Ctrl-C) and stopped what it had started: the
    /// shell's 128 + SIGINT.
    Interrupted,
    /// Its stdout was closed before it had written everything (`ecp ... |
    /// head -1`): it stopped there, quietly, with the shell's 128 + SIGPIPE
    /// (see `stdout.rs`).
    Closed,
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        match exit {
            Exit::Success => ExitCode::SUCCESS,
            Exit::No => ExitCode::FAILURE,
            Exit::CouldNotRun => ExitCode::from(2),
            Exit::Interrupted => ExitCode::from(130),
            Exit::Closed => ExitCode::from(stdout::CLOSED),
        }
    }
}

/// Why a command stops: the message, what to do about it, and the status.
/// [`super::main`] prints every one the same way: `error: ...`, then `= help: ...`.
#[derive(Debug)]
pub struct Failure {
    message: String,
    help: Option<String>,
    exit: Exit,
    /// Printed as it is (a diagnostic that already has its own frame).
    framed: bool,
}

impl Failure {
    pub fn new(exit: Exit, message: impl std::fmt::Display) -> Failure {
        Failure {
            message: message.to_string(),
            help: None,
            exit,
            framed: false,
        }
    }

    /// A finished diagnostic (`error: ...` and its frame), printed verbatim.
    pub fn framed(exit: Exit, text: String) -> Failure {
        Failure {
            message: text,
            help: None,
            exit,
            framed: true,
        }
    }

    pub fn help(mut self, help: Option<impl Into<String>>) -> Failure {
        self.help = help.map(Into::into);
        self
    }
}

/// What a command returns.
pub type Outcome = Result<Exit, Failure>;

/// Prints a failure as every command does, and gives the exit status.
pub(super) fn finish(outcome: Outcome) -> ExitCode {
    match outcome {
        Ok(exit) => exit.into(),
        Err(failure) => {
            if failure.framed {
                eprint!("{}", failure.message);
            } else {
                crate::input::print_error(&failure.message, failure.help.as_deref());
            }
            failure.exit.into()
        }
    }
}
