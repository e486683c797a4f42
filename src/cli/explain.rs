//! `ecp explain [ID]`: the long form of any ID ecp prints: a lint rule, a
//! check of `ecp check`, or a finding of `ecp doctor`. The three catalogues
//! stay with their commands; [`Code`] composes them, and a test holds every
//! ID unique across the three, so an ID names one thing wherever it is read.

use super::{Exit, ExplainArgs, Failure, Outcome};
use crate::{check::catalogue::Check, doctor, lint::Rule};

/// One ID of any command's catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// A rule of `ecp lint`.
    Lint(Rule),
    /// A check of `ecp check`.
    Check(Check),
    /// A finding of `ecp doctor`.
    Doctor(doctor::Code),
}

impl Code {
    /// Every code: lint's rules, check's checks, doctor's findings.
    pub fn all() -> impl Iterator<Item = Code> {
        let lint = Rule::ALL.iter().copied().map(Code::Lint);
        let check = Check::ALL.iter().copied().map(Code::Check);
        let doctor = doctor::Code::ALL.iter().copied().map(Code::Doctor);
        lint.chain(check).chain(doctor)
    }

    /// Looks an ID up in every catalogue.
    pub fn from_id(id: &str) -> Option<Code> {
        Code::all().find(|code| code.id() == id)
    }

    /// The stable ID.
    pub fn id(self) -> &'static str {
        match self {
            Code::Lint(rule) => rule.id(),
            Code::Check(check) => check.id(),
            Code::Doctor(code) => code.id(),
        }
    }

    /// The command that prints it, and how much it weighs there.
    pub fn kind(self) -> String {
        match self {
            Code::Lint(rule) => format!("lint {}", rule.severity()),
            Code::Check(check) => format!("check, {}", check.group().name()),
            Code::Doctor(_) => "doctor finding".to_owned(),
        }
    }

    /// One line.
    pub fn summary(self) -> &'static str {
        match self {
            Code::Lint(rule) => rule.summary(),
            Code::Check(check) => check.title(),
            Code::Doctor(code) => code.summary(),
        }
    }

    /// The long form; a check's says what passing it means and what a run
    /// that did not exercise it gives.
    pub fn explanation(self) -> String {
        match self {
            Code::Lint(rule) => rule.explanation().to_owned(),
            Code::Check(check) => format!(
                "`ecp check` passes it when {} (group {}). A check that did not run is either not applicable (the rule does not bind this target) or not exercised: then the report says how to exercise it, and the verdict is \"not established\", never \"conforms\".",
                check.title(),
                check.group().name()
            ),
            Code::Doctor(code) => code.explanation().to_owned(),
        }
    }
}

pub fn run(args: ExplainArgs) -> Outcome {
    let Some(id) = args.rule else {
        for code in Code::all() {
            println!("{:<32} {:<18} {}", code.id(), code.kind(), code.summary());
        }
        return Ok(Exit::Success);
    };
    match Code::from_id(id.trim()) {
        Some(code) => {
            println!(
                "{} ({})\n\n{}\n\n{}",
                code.id(),
                code.kind(),
                code.summary(),
                code.explanation()
            );
            Ok(Exit::Success)
        }
        None => Err(Failure::new(
            Exit::CouldNotRun,
            format!(
                "no rule, check or doctor finding `{}`",
                crate::text::outside::value(&id)
            ),
        )
        .help(Some("`ecp explain` lists them all"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every ID of the three catalogues is unique across all of them, so
    /// `ecp explain ID` (and a reader of any report) finds one thing.
    #[test]
    fn every_id_names_one_rule_check_or_finding() {
        let mut seen = std::collections::HashMap::new();
        for code in Code::all() {
            if let Some(first) = seen.insert(code.id(), code) {
                panic!("`{}` names both {first:?} and {code:?}", code.id());
            }
            assert_eq!(Code::from_id(code.id()), Some(code));
            assert!(!code.summary().is_empty() && !code.explanation().is_empty());
        }
        // Each catalogue is in: a lint rule, a check and a doctor finding.
        for (id, kind) in [
            ("include-tools", "lint error"),
            ("no-retry", "check, upstream"),
            ("shadowed", "doctor finding"),
        ] {
            assert_eq!(seen[id].kind(), kind);
        }
    }
}
