//! A closed stdout stops `ecp` quietly, as it stops `cat`: `ecp explain
//! RULE | head -1` ends without a panic message or a backtrace.
//!
//! The convention, the same for every command: when the reader of stdout
//! (or stderr) goes away before ecp has written everything, ecp stops at
//! that write, prints nothing more, and exits with status 141, the shell's
//! 128 + SIGPIPE, which is what `cat`, `ls` or `grep` end with there (they
//! die of the signal). Not 0: a cut-off report is not a verdict, and with
//! `set -o pipefail` an `ecp lint . | head -1` must not read as clean.
//!
//! ecp keeps Rust's default of ignoring SIGPIPE (the crate forbids the
//! `unsafe` that changing it takes, and `ecp check`, `call` and `serve`
//! need a write to a server's stdin or a client's socket that went away to
//! be an error they report, not the end of ecp). So a write to a closed
//! stdout fails with `BrokenPipe`, and `println!` turns that into a panic
//! ("failed printing to stdout: Broken pipe"); [`quiet_when_closed`] runs
//! the command, catches exactly that panic after it has unwound (every
//! process a command started is dropped, so stopped, on the way), and
//! turns it into the quiet 141. Any other panic stays a panic.

use std::{any::Any, panic, process::ExitCode};

use super::Exit;

/// The status of a command whose stdout was closed: 128 + SIGPIPE.
pub(super) const CLOSED: u8 = 141;

/// Runs `command`; a write to a closed stdout or stderr ends it with
/// [`Exit::Closed`] and no message.
pub(super) fn quiet_when_closed(command: impl FnOnce() -> ExitCode) -> ExitCode {
    let default_hook = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        if !is_closed_pipe(info.payload()) {
            default_hook(info);
        }
    }));
    match panic::catch_unwind(panic::AssertUnwindSafe(command)) {
        Ok(code) => code,
        Err(payload) if is_closed_pipe(payload.as_ref()) => Exit::Closed.into(),
        Err(payload) => panic::resume_unwind(payload),
    }
}

/// Whether `error` is the reader of a pipe having gone away.
pub(super) fn is_closed(error: &std::io::Error) -> bool {
    error.kind() == std::io::ErrorKind::BrokenPipe
}

/// Whether a panic is `print!`'s on a closed stdout or stderr: its message
/// is "failed printing to stdout: " and the error, and the error is one the
/// platform reports for a pipe without a reader.
fn is_closed_pipe(payload: &(dyn Any + Send)) -> bool {
    let message = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("");
    let Some(error) = message
        .strip_prefix("failed printing to stdout: ")
        .or_else(|| message.strip_prefix("failed printing to stderr: "))
    else {
        return false;
    };
    // EPIPE on unix; ERROR_BROKEN_PIPE and ERROR_NO_DATA on Windows.
    let codes: &[i32] = if cfg!(windows) { &[109, 232] } else { &[32] };
    codes.iter().any(|&code| {
        let known = std::io::Error::from_raw_os_error(code);
        is_closed(&known) && error == known.to_string()
    })
}
