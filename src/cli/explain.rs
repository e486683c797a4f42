//! `ecp explain <RULE>`: the long form of a lint rule.

use std::process::ExitCode;

use super::ExplainArgs;
use crate::lint::Rule;

pub fn run(args: ExplainArgs) -> ExitCode {
    let Some(id) = args.rule else {
        for rule in Rule::ALL {
            println!(
                "{:<26} {:<8} {}",
                rule.id(),
                rule.severity(),
                rule.summary()
            );
        }
        return ExitCode::SUCCESS;
    };
    match Rule::from_id(id.trim()) {
        Some(rule) => {
            println!(
                "{} ({})\n\n{}\n\n{}",
                rule.id(),
                rule.severity(),
                rule.summary(),
                rule.explanation()
            );
            ExitCode::SUCCESS
        }
        None => {
            eprintln!("ecp explain: no rule `{id}`; `ecp explain` lists them all");
            ExitCode::from(2)
        }
    }
}
