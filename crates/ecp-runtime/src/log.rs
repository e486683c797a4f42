//! The runtime's stderr lines: `name: message` on stdio, one JSON object per
//! line over HTTP (for log collectors). Callers pass only redacted text:
//! never a query, a token, an endpoint's credential or an upstream body.

use serde_json::{Map, Value};

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
    Info,
    Warn,
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
        LogFormat::Json => {
            let mut line = Map::new();
            line.insert("time".into(), Value::String(rfc3339_now()));
            line.insert("level".into(), Value::String(level.as_str().into()));
            line.insert("server".into(), Value::String(server.into()));
            line.insert("event".into(), Value::String(event.into()));
            line.insert("message".into(), Value::String(message.to_string()));
            for (name, value) in fields {
                line.insert((*name).into(), value.clone());
            }
            format!("{}\n", Value::Object(line))
        }
    };
    // One write per line: stderr is unbuffered, and formatting straight into
    // it would cost a system call per fragment (and interleave lines).
    let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
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

    use super::rfc3339;

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
