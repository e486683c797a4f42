//! The runtime's stderr lines: `name: message` on stdio, one JSON object per
//! line over HTTP (for log collectors). Callers pass only redacted text:
//! never a query, a token, an endpoint's credential or an upstream body.

use serde_json::Value;

/// How stderr lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// `name: message`, for a person reading a terminal or Qwen's debug log.
    #[default]
    Plain,
    /// `{"time", "level", "server", "event", "message", ...fields}`.
    Json,
}

/// A line's severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// What happened, as expected.
    Info,
    /// Something an operator may want to look at.
    Warn,
    /// A failure.
    Error,
}

impl Level {
    fn as_str(self) -> &'static str {
        match self {
            Level::Info => "info",
            Level::Warn => "warn",
            Level::Error => "error",
        }
    }
}

/// Writes one line to stderr.
pub fn event(
    format: LogFormat,
    server: &str,
    level: Level,
    event: &str,
    message: std::fmt::Arguments<'_>,
    fields: &[(&str, Value)],
) {
    let line = match format {
        LogFormat::Plain => format!("{server}: {message}\n"),
        LogFormat::Json => json_line(server, level, event, message, fields),
    };
    batch::write(level, line.as_bytes());
}

/// Batches `Level::Info` lines (the remote adapter's one line per request,
/// see [`batch`]) until the guard is dropped, which writes what waits and
/// turns batching off: however the serving future ends, nothing is held.
pub fn batch_info_lines() -> Batching {
    batch::start();
    Batching(())
}

/// Batching of `Info` lines is on while this lives.
pub struct Batching(());

impl Drop for Batching {
    fn drop(&mut self) {
        batch::stop();
    }
}

/// Batching of the lines a busy server writes for every request.
///
/// Unbatched, each line is one `write` to stderr: one system call per HTTP
/// request and, when stderr is a pipe to a log collector, one wake-up of
/// the collector. Once [`batch_info_lines`] is called, `Info` lines wait in
/// a buffer of at most [`MAX_PENDING`] bytes for at most [`MAX_DELAY`], and
/// go out together; any other line writes what is waiting and itself at
/// once, in order. Dropping the [`super::Batching`] guard writes what waits; a
/// process killed before that may lose the last [`MAX_DELAY`] of `Info`
/// lines; warnings and errors are never held.
mod batch {
    use std::{
        io::Write,
        sync::{Condvar, Mutex, OnceLock, PoisonError},
        time::Duration,
    };

    use super::Level;

    /// The most bytes held before they are written.
    pub const MAX_PENDING: usize = 16 * 1024;
    /// The longest an `Info` line waits.
    pub const MAX_DELAY: Duration = Duration::from_millis(50);

    #[derive(Default)]
    struct Pending {
        on: bool,
        bytes: Vec<u8>,
    }

    fn state() -> &'static (Mutex<Pending>, Condvar) {
        static STATE: OnceLock<(Mutex<Pending>, Condvar)> = OnceLock::new();
        STATE.get_or_init(Default::default)
    }

    fn emit(bytes: &[u8]) {
        // One write for everything: stderr is unbuffered, and formatting
        // straight into it would cost a system call per fragment.
        let _ = std::io::stderr().lock().write_all(bytes);
    }

    pub fn write(level: Level, line: &[u8]) {
        let (lock, waiting) = state();
        let mut pending = lock.lock().unwrap_or_else(PoisonError::into_inner);
        if !pending.on {
            drop(pending);
            return emit(line);
        }
        let was_empty = pending.bytes.is_empty();
        pending.bytes.extend_from_slice(line);
        if level != Level::Info || pending.bytes.len() >= MAX_PENDING {
            // Written under the lock, so lines keep their order.
            emit(&pending.bytes);
            pending.bytes.clear();
        } else if was_empty {
            waiting.notify_one();
        }
    }

    /// Writes what waits; with `off`, turns batching off in the same hold
    /// of the lock (the flush thread stays, idle, and serves a later start).
    fn write_out(off: bool) {
        let (lock, _) = state();
        let mut pending = lock.lock().unwrap_or_else(PoisonError::into_inner);
        if !pending.bytes.is_empty() {
            emit(&pending.bytes);
            pending.bytes.clear();
        }
        if off {
            pending.on = false;
        }
    }

    pub fn stop() {
        write_out(true);
    }

    /// Turns batching on, with a thread that writes what waits: it sleeps
    /// until a line arrives, then [`MAX_DELAY`], then writes.
    pub fn start() {
        let (lock, _) = state();
        let mut pending = lock.lock().unwrap_or_else(PoisonError::into_inner);
        if pending.on {
            return;
        }
        pending.on = true;
        static FLUSHER: OnceLock<bool> = OnceLock::new();
        drop(pending);
        if FLUSHER.get().is_some() {
            return;
        }
        let spawned = std::thread::Builder::new()
            .name("log-flush".into())
            .spawn(|| {
                let (lock, waiting) = state();
                loop {
                    let pending = lock.lock().unwrap_or_else(PoisonError::into_inner);
                    let pending = waiting
                        .wait_while(pending, |p| p.bytes.is_empty())
                        .unwrap_or_else(PoisonError::into_inner);
                    drop(pending);
                    std::thread::sleep(MAX_DELAY);
                    write_out(false);
                }
            });
        if spawned.is_err() {
            // Without the thread nothing would write the batch: stay unbatched.
            lock.lock().unwrap_or_else(PoisonError::into_inner).on = false;
        } else {
            let _ = FLUSHER.set(true);
        }
    }
}

/// The JSON object of one line, written straight into its buffer (no
/// intermediate map: this runs for every HTTP request). A field named like
/// one of the fixed keys would repeat it; callers use other names.
fn json_line(
    server: &str,
    level: Level,
    event: &str,
    message: std::fmt::Arguments<'_>,
    fields: &[(&str, Value)],
) -> String {
    let message = match message.as_str() {
        Some(fixed) => std::borrow::Cow::Borrowed(fixed),
        None => std::borrow::Cow::Owned(message.to_string()),
    };
    let time = rfc3339_now();
    let fixed = [
        ("time", time.as_str()),
        ("level", level.as_str()),
        ("server", server),
        ("event", event),
        ("message", &message),
    ];
    let mut line = Vec::with_capacity(256);
    // Writing JSON into a Vec cannot fail.
    let key = |line: &mut Vec<u8>, name: &str| {
        line.push(if line.is_empty() { b'{' } else { b',' });
        let _ = serde_json::to_writer(&mut *line, name);
        line.push(b':');
    };
    for (name, text) in fixed {
        key(&mut line, name);
        let _ = serde_json::to_writer(&mut line, text);
    }
    for (name, value) in fields {
        key(&mut line, name);
        let _ = serde_json::to_writer(&mut line, value);
    }
    line.extend_from_slice(b"}\n");
    // serde_json writes UTF-8 only.
    String::from_utf8(line).unwrap_or_default()
}

/// The current UTC time as `2026-11-29T22:35:47.123Z`.
fn rfc3339_now() -> String {
    rfc3339(std::time::SystemTime::now())
}

fn rfc3339(time: std::time::SystemTime) -> String {
    humantime::format_rfc3339_millis(time).to_string()
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use serde_json::{Value, json};

    use super::{Level, json_line, rfc3339};

    #[test]
    fn json_lines_are_one_object_in_a_fixed_key_order() {
        let weird = "a \"quoted\" \\ name\n\u{1}";
        let line = json_line(
            weird,
            Level::Warn,
            "request",
            format_args!("POST {} {}", "mcp", 200),
            &[("status", json!(200)), ("reason", json!("x\"y"))],
        );
        assert!(
            line.ends_with("}\n") && line.matches('\n').count() == 1,
            "{line}"
        );
        let parsed: Value = serde_json::from_str(&line).unwrap();
        let keys: Vec<&str> = parsed
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "time", "level", "server", "event", "message", "status", "reason"
            ]
        );
        assert_eq!(parsed["server"], weird);
        assert_eq!(parsed["level"], "warn");
        assert_eq!(parsed["message"], "POST mcp 200");
        assert_eq!(parsed["status"], 200);
        assert_eq!(parsed["reason"], "x\"y");
        let time = parsed["time"].as_str().unwrap();
        assert!(time.len() == 24 && time.ends_with('Z'), "{time}");
    }

    #[test]
    fn timestamps_are_rfc3339_utc() {
        let at = |secs: u64, millis: u64| {
            rfc3339(UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_millis(millis))
        };
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(at(1_795_991_747, 123), "2026-11-29T22:35:47.123Z");
    }
}
