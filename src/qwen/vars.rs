//! Qwen's variables in an extension manifest, filled as Qwen Code 0.24.4
//! fills them: the one filler and the one finder of variable names that
//! `ecp check`, `ecp call`, `ecp doctor`, `ecp managed`, `ecp try` and
//! `ecp lint` use.
//!
//! The rules (`docs/qwen-settings-facts.md`, section 5, "Manifest
//! variables"):
//!
//! 1. **Qwen's own variables first.** Every string of `qwen-extension.json`
//!    (object keys are not touched) has each `${KEY}` replaced, where `KEY`
//!    runs to the first `}` on the same line: `extensionPath` and
//!    `CLAUDE_PLUGIN_ROOT` are the extension's folder (a link install's
//!    `source`), `workspacePath` the workspace, `/` and `pathSeparator` the
//!    platform's separator. Any other `${KEY}` is kept whole, so
//!    `${A${/}` stays literal and its `${/}` is not filled.
//! 2. **Then the environment.** In the result, `$NAME` (`NAME` one or more
//!    of `A-Z a-z 0-9 _`) and `${NAME}` (`NAME` anything up to the first
//!    `}`, at least one character) are replaced by the variable's value
//!    when it is set, even to the empty string. An unset one stays literal,
//!    `$NAME` or `${NAME}` as written. There is no default syntax:
//!    `${A:-b}` looks up a variable named `A:-b`, which is unset, so it
//!    stays literal. `SESSION_ID`, `QWEN_CODE_SESSION_ID` and Qwen's
//!    internal secrets (`QWEN_SERVER_TOKEN`, `QWEN_DAEMON_TOKEN`,
//!    `QWEN_CODE_EXTERNAL_TOOL_GUARD_TOKEN`,
//!    `QWEN_CODE_PRIVATE_ACP_CAPABILITY`, in any case) are never filled.
//! 3. **Once.** Each step is a single pass: a value filled in is not read
//!    again, so an environment value holding `$X` or `${extensionPath}`
//!    reaches the server as written, while an extension folder holding a
//!    `$` is read by step 2.
//!
//! The fields filled are therefore all of them: `command`, `args`, `cwd`,
//! `env` values, `url`, `httpUrl`, `headers` values, and the rest. A server
//! in a settings file gets only step 2 (with Qwen's settings fallback
//! environment), so there `${extensionPath}` is an unset variable.
//!
//! What differs between callers is a parameter, [`Places`] and
//! [`Environment`]: `ecp check` starts the process from ecp's environment;
//! doctor keeps values secret and asks only for names; managed writes the
//! fixed values an administrator gives; lint knows no environment.

use serde_json::Value;

/// Qwen's own variables, filled before the environment.
pub const OWN: [&str; 5] = [
    "extensionPath",
    "CLAUDE_PLUGIN_ROOT",
    "workspacePath",
    "/",
    "pathSeparator",
];

/// Names Qwen never fills from the environment (compared in upper case).
const NEVER: [&str; 6] = [
    "SESSION_ID",
    "QWEN_CODE_SESSION_ID",
    "QWEN_SERVER_TOKEN",
    "QWEN_DAEMON_TOKEN",
    "QWEN_CODE_EXTERNAL_TOOL_GUARD_TOKEN",
    "QWEN_CODE_PRIVATE_ACP_CAPABILITY",
];

/// What Qwen's own variables stand for.
#[derive(Debug, Clone, Copy)]
pub struct Places<'a> {
    /// `${extensionPath}` and `${CLAUDE_PLUGIN_ROOT}`.
    pub extension: &'a str,
    /// `${workspacePath}`; `None` keeps it literal (no workspace is known,
    /// as for a settings file written ahead of any session).
    pub workspace: Option<&'a str>,
    /// `${/}` and `${pathSeparator}`.
    pub separator: &'a str,
}

impl Places<'static> {
    /// Stand-ins for finding names: a folder and a workspace that end a
    /// `$NAME` as a real absolute path does.
    pub const STAND_IN: Places<'static> = Places {
        extension: "/",
        workspace: Some("/"),
        separator: "/",
    };
}

/// Where `$NAME` / `${NAME}` get their values.
#[derive(Clone, Copy)]
pub enum Environment<'a> {
    /// Nothing is looked up: every reference stays literal (lint, and
    /// doctor, which keeps values to itself).
    Kept,
    /// The value of a name, `None` when it is unset.
    Lookup(&'a dyn Fn(&str) -> Option<String>),
}

/// The one filler: Qwen's own variables (unless `places` is `None`, as for
/// a settings file), then the environment.
#[derive(Clone, Copy)]
pub struct Filler<'a> {
    pub places: Option<Places<'a>>,
    pub environment: Environment<'a>,
}

impl<'a> Filler<'a> {
    /// A manifest string with its own variables filled and the environment
    /// looked up by `lookup`.
    pub fn manifest(places: Places<'a>, lookup: &'a dyn Fn(&str) -> Option<String>) -> Self {
        Filler {
            places: Some(places),
            environment: Environment::Lookup(lookup),
        }
    }

    /// `text` as Qwen fills it.
    pub fn fill(&self, text: &str) -> String {
        let text = match &self.places {
            Some(places) => own(text, places),
            None => text.to_owned(),
        };
        match self.environment {
            Environment::Kept => text,
            Environment::Lookup(lookup) => environment(&text, lookup),
        }
    }

    /// Every string of `value` filled (object keys kept).
    pub fn fill_json(&self, value: &Value) -> Value {
        match value {
            Value::String(s) => Value::String(self.fill(s)),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.fill_json(v)).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), self.fill_json(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// The names Qwen looks up in the environment for `text`, once its own
    /// variables are filled, each once, in order; never-filled names left
    /// out.
    pub fn names(&self, text: &str) -> Vec<String> {
        let text = match &self.places {
            Some(places) => own(text, places),
            None => text.to_owned(),
        };
        let mut names: Vec<String> = Vec::new();
        scan(&text, |name| {
            if !never(name) && !names.iter().any(|n| n == name) {
                names.push(name.to_owned());
            }
            None
        });
        names
    }
}

/// The names a manifest string takes from the environment (Qwen's own
/// variables are none).
pub fn names_in(text: &str) -> Vec<String> {
    Filler {
        places: Some(Places::STAND_IN),
        environment: Environment::Kept,
    }
    .names(text)
}

/// The names of every string of `value` (see [`names_in`]), each once.
pub fn names_in_json(value: &Value) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    each_string(value, &mut |text| {
        for name in names_in(text) {
            if !names.contains(&name) {
                names.push(name);
            }
        }
    });
    names
}

fn each_string(value: &Value, f: &mut dyn FnMut(&str)) {
    match value {
        Value::String(s) => f(s),
        Value::Array(items) => items.iter().for_each(|v| each_string(v, f)),
        Value::Object(map) => map.values().for_each(|v| each_string(v, f)),
        _ => {}
    }
}

fn never(name: &str) -> bool {
    let upper = name.to_uppercase();
    NEVER.contains(&upper.as_str())
}

/// Step 1: `${KEY}` (to the first `}`, on one line) replaced when `KEY` is
/// one of Qwen's own, kept whole otherwise.
fn own(text: &str, places: &Places) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let inner = &rest[at + 2..];
        let Some(end) = inner.find(['}', '\n', '\r', '\u{2028}', '\u{2029}']) else {
            out.push_str(&rest[at..]);
            return out;
        };
        if !inner[end..].starts_with('}') {
            // A line ends before the `}`: no variable starts at this `$`.
            out.push('$');
            rest = &rest[at + 1..];
            continue;
        }
        let whole = &rest[at..at + 3 + end];
        let value = match &inner[..end] {
            "extensionPath" | "CLAUDE_PLUGIN_ROOT" => Some(places.extension),
            "workspacePath" => places.workspace,
            "/" | "pathSeparator" => Some(places.separator),
            _ => None,
        };
        out.push_str(value.unwrap_or(whole));
        rest = &inner[end + 1..];
    }
    out.push_str(rest);
    out
}

/// Step 2: `$NAME` / `${NAME}` replaced by `lookup`'s value, kept when it
/// has none or the name is never filled.
fn environment(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    scan(text, |name| if never(name) { None } else { lookup(name) })
}

/// Walks `text`'s references left to right, replacing each by `value`'s
/// answer for its name, or keeping it.
fn scan(text: &str, mut value: impl FnMut(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let word = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        let (name, length) = if word > 0 {
            (&after[..word], word)
        } else if let Some(inner) = after.strip_prefix('{')
            && let Some(end) = inner.find('}')
            && end > 0
        {
            (&inner[..end], end + 2)
        } else {
            out.push('$');
            rest = after;
            continue;
        };
        match value(name) {
            Some(filled) => out.push_str(&filled),
            None => out.push_str(&rest[at..at + 1 + length]),
        }
        rest = &after[length..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/u".into()),
            "EMPTY" => Some(String::new()),
            "WITH_VARS" => Some("$HOME ${extensionPath}".into()),
            "SESSION_ID" | "qwen_server_token" => Some("leaked".into()),
            "A:-b" => None,
            _ => None,
        }
    }

    const PLACES: Places<'static> = Places {
        extension: "/ext",
        workspace: Some("/ws"),
        separator: "/",
    };

    /// The filling rules, one row each (input, output), as Qwen Code
    /// 0.24.4 fills a manifest string (`docs/qwen-settings-facts.md` §5).
    #[test]
    fn fills_as_qwen_does() {
        let filler = Filler::manifest(PLACES, &env);
        let table = [
            ("${extensionPath}${/}dist${/}main", "/ext/dist/main"),
            ("${CLAUDE_PLUGIN_ROOT}/main.js", "/ext/main.js"),
            ("${workspacePath}${pathSeparator}x", "/ws/x"),
            ("$HOME/a ${HOME}/b", "/home/u/a /home/u/b"),
            ("[$EMPTY][${EMPTY}]", "[][]"),
            ("$MISSING ${MISSING}", "$MISSING ${MISSING}"),
            // No default syntax.
            ("${HOME:-/tmp}", "${HOME:-/tmp}"),
            // `$NAME` is the longest run of word characters.
            ("$HOMEx $HOME-x $1", "$HOMEx /home/u-x $1"),
            // Not references.
            ("$ ${ ${} $", "$ ${ ${} $"),
            ("$$HOME", "$/home/u"),
            // Never filled, in any case.
            (
                "$SESSION_ID ${qwen_server_token}",
                "$SESSION_ID ${qwen_server_token}",
            ),
            // Once: a filled value is not read again.
            ("$WITH_VARS", "$HOME ${extensionPath}"),
            // An own key runs to the first `}`: the whole is kept.
            ("${A${/}B", "${A${/}B"),
            ("${A${extensionPath}", "${A${extensionPath}"),
            // A line ends the own key, not the environment's.
            ("${extension\nPath}", "${extension\nPath}"),
            ("${/}é${/}", "/é/"),
        ];
        for (text, filled) in table {
            assert_eq!(filler.fill(text), filled, "{text:?}");
        }
    }

    #[test]
    fn a_settings_string_gets_only_the_environment() {
        let filler = Filler {
            places: None,
            environment: Environment::Lookup(&env),
        };
        assert_eq!(
            filler.fill("${extensionPath}/$HOME"),
            "${extensionPath}//home/u"
        );
        assert_eq!(
            filler.names("${extensionPath}/$HOME"),
            ["extensionPath", "HOME"]
        );
    }

    #[test]
    fn an_unknown_workspace_and_a_kept_environment_stay_literal() {
        let filler = Filler {
            places: Some(Places {
                workspace: None,
                ..PLACES
            }),
            environment: Environment::Kept,
        };
        assert_eq!(
            filler.fill("${workspacePath}/${extensionPath}/$HOME"),
            "${workspacePath}//ext/$HOME"
        );
    }

    #[test]
    fn names_are_those_the_environment_is_asked_for() {
        assert_eq!(
            names_in("${extensionPath}${/}dist$HOME/${ACME_URL}x$ 1 ${CLAUDE_PLUGIN_ROOT} $HOME"),
            ["HOME", "ACME_URL"]
        );
        assert_eq!(names_in("$SESSION_ID ${A:-b} $A${/}B"), ["A:-b", "A"]);
        let manifest =
            serde_json::json!({"env": {"K": "$X"}, "args": ["${Y}", 1], "headers": {"H": "$X"}});
        assert_eq!(names_in_json(&manifest), ["X", "Y"]);
    }

    #[test]
    fn hostile_text_does_not_panic() {
        let filler = Filler::manifest(PLACES, &env);
        for text in [
            "$",
            "${",
            "${}",
            "$é",
            "${é",
            "${/",
            "$\u{2028}${\u{2029}}",
            "}{$",
        ] {
            let _ = filler.fill(text);
            let _ = filler.names(text);
        }
    }
}
