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
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    rfc3339(since.as_secs(), since.subsec_millis())
}

fn rfc3339(secs: u64, millis: u32) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::rfc3339;

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(rfc3339(1_795_991_747, 123), "2026-11-29T22:35:47.123Z");
    }
}
