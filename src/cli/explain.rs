//! `ecp explain <RULE>`: the long form of a lint rule.

use super::{Exit, ExplainArgs, Failure, Outcome};
use crate::lint::Rule;

pub fn run(args: ExplainArgs) -> Outcome {
    let Some(id) = args.rule else {
        for rule in Rule::ALL {
            println!(
                "{:<26} {:<8} {}",
                rule.id(),
                rule.severity(),
                rule.summary()
            );
        }
        return Ok(Exit::Success);
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
            Ok(Exit::Success)
        }
        None => Err(
            Failure::new(Exit::CouldNotRun, format!("no lint rule `{id}`"))
                .help(Some("`ecp explain` lists them all")),
        ),
    }
}
