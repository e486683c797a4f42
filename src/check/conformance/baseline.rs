//! A baseline of expected failures, in the suite's own `--expected-failures`
//! YAML (`server:` and a list of `scenario:check` entries), where every
//! entry must say why: a comment above its group, or after it on its line.
//! A whole scenario is refused (the rest of it would stop counting), and
//! so is an entry without a reason.

/// The largest baseline read, in bytes, and the most entries.
pub const MAX_BYTES: usize = 256 * 1024;
pub const MAX_ENTRIES: usize = 2048;

/// A parsed baseline, with its text (what the suite is given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Baseline {
    /// Where it came from, for the report.
    pub source: String,
    pub text: String,
    pub entries: Vec<Entry>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// `scenario:check`.
    pub id: String,
    pub reason: String,
}

/// Why a baseline was refused: the line and the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {rule}")]
pub struct BaselineError {
    pub file: String,
    pub line: usize,
    pub rule: String,
}

impl Entry {
    /// One `- scenario:check [# reason]` line's entry (after the dash),
    /// under `group`'s reason; the rule it breaks otherwise.
    fn parse(entry: &str, group: &str) -> Result<Entry, String> {
        let (id, inline) = match entry.split_once(" #") {
            Some((id, why)) => (id.trim(), why.trim()),
            None => (entry.trim(), ""),
        };
        let why = if inline.is_empty() { group } else { inline };
        if why.is_empty() {
            return Err(format!(
                "{id}: every entry says why, in a comment above its group or after it"
            ));
        }
        let Some((scenario, check)) = id.split_once(':') else {
            return Err(format!(
                "{id}: name one check (`scenario:check`), not a whole scenario"
            ));
        };
        let name = |part: &str| {
            !part.is_empty()
                && (part.chars()).all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
        };
        if !name(scenario) || !name(check) {
            return Err(format!("{id:?} is not `scenario:check`"));
        }
        Ok(Entry {
            id: id.to_owned(),
            reason: why.to_owned(),
        })
    }
}

impl Baseline {
    /// Parses `text`, read from `source`.
    pub fn parse(source: &str, text: &str) -> Result<Baseline, BaselineError> {
        let refuse = |line: usize, rule: String| BaselineError {
            file: source.to_owned(),
            line,
            rule,
        };
        if text.len() > MAX_BYTES {
            return Err(refuse(1, format!("over {MAX_BYTES} bytes")));
        }
        let mut entries: Vec<Entry> = Vec::new();
        let mut reason = String::new();
        let mut commenting = false;
        let mut in_server = false;
        for (at, raw) in text.lines().enumerate() {
            let number = at + 1;
            let line = raw.trim();
            if let Some(comment) = line.strip_prefix('#') {
                if !commenting {
                    reason.clear();
                }
                commenting = true;
                if !reason.is_empty() {
                    reason.push(' ');
                }
                reason.push_str(comment.trim());
                continue;
            }
            commenting = false;
            if line.is_empty() {
                reason.clear();
                continue;
            }
            if let Some(entry) = line.strip_prefix("- ") {
                if !in_server {
                    return Err(refuse(number, "an entry outside `server:`".into()));
                }
                let parsed = Entry::parse(entry, &reason).map_err(|rule| refuse(number, rule))?;
                if entries.iter().any(|e| e.id == parsed.id) {
                    return Err(refuse(number, format!("{} twice", parsed.id)));
                }
                if entries.len() == MAX_ENTRIES {
                    return Err(refuse(number, format!("over {MAX_ENTRIES} entries")));
                }
                entries.push(parsed);
                continue;
            }
            match line {
                "server:" => {
                    in_server = true;
                    reason.clear();
                }
                _ => {
                    let shown = crate::text::outside::line(line, 80);
                    return Err(refuse(
                        number,
                        format!(
                            "{shown}: a baseline holds `server:` and its `- scenario:check` entries only"
                        ),
                    ));
                }
            }
        }
        Ok(Baseline {
            source: source.to_owned(),
            text: text.to_owned(),
            entries,
        })
    }

    /// The entry of `id`, when it is baselined.
    pub fn get(&self, id: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.id == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_takes_the_reason_of_its_group_or_its_line() {
        let text = "# The suite's file, for a one-tool server.\nserver:\n  # No prompts:\n  # tools only.\n  - prompts-list:prompts-list\n  - prompts-get-simple:prompts-get-simple\n  - ping:ping  # one of its own\n";
        let baseline = Baseline::parse("b.yml", text).unwrap();
        let reasons: Vec<(&str, &str)> = (baseline.entries.iter())
            .map(|e| (e.id.as_str(), e.reason.as_str()))
            .collect();
        assert_eq!(
            reasons,
            [
                ("prompts-list:prompts-list", "No prompts: tools only."),
                (
                    "prompts-get-simple:prompts-get-simple",
                    "No prompts: tools only."
                ),
                ("ping:ping", "one of its own"),
            ]
        );
    }

    #[test]
    fn an_entry_without_a_reason_a_scenario_or_another_key_is_refused_with_its_line() {
        for (text, line, rule) in [
            ("server:\n  - ping:ping\n", 2, "every entry says why"),
            (
                "# the file's header\nserver:\n  - ping:ping\n",
                3,
                "every entry says why",
            ),
            ("server:\n  # why\n  - ping\n", 3, "not a whole scenario"),
            (
                "server:\n  # why\n\n  - ping:ping\n",
                4,
                "every entry says why",
            ),
            ("client:\n  # why\n  - a:b\n", 1, "`server:` and its"),
            ("# why\n- ping:ping\n", 2, "outside `server:`"),
            (
                "server:\n  # why\n  - ping:ping\n  - ping:ping\n",
                4,
                "twice",
            ),
            (
                "server:\n  # why\n  - \"ping:ping\"\n",
                3,
                "is not `scenario:check`",
            ),
        ] {
            let error = Baseline::parse("b.yml", text).unwrap_err();
            assert_eq!(error.line, line, "{text:?}: {error}");
            assert!(error.rule.contains(rule), "{text:?}: {error}");
        }
    }

    #[test]
    fn a_baseline_past_its_bounds_is_refused() {
        let huge = format!("server:\n# why\n{}", "- a:b\n".repeat(MAX_BYTES / 6 + 1));
        assert!(
            Baseline::parse("b", &huge)
                .unwrap_err()
                .rule
                .contains("bytes")
        );
        let many: String = (0..=MAX_ENTRIES).map(|i| format!("- s:c{i}\n")).collect();
        let error = Baseline::parse("b", &format!("server:\n# why\n{many}")).unwrap_err();
        assert!(error.rule.contains("entries"), "{error}");
    }
}
