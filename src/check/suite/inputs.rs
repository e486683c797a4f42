//! Inputs: every valid input vector succeeds, every invalid one is refused
//! with `isError`, an unknown argument is refused, and no input error repeats
//! the query.

use super::*;
use crate::check::cassette::Tape;

impl Suite<'_> {
    pub(super) async fn inputs(&mut self, baseline: &Baseline) {
        if let Baseline::Failed(why, how) = baseline {
            self.not_exercised(Check::ValidInputs, why, how);
        } else {
            self.valid_inputs().await;
        }
        self.invalid_inputs().await;
    }

    /// Valid inputs: each succeeds and keeps every output promise. Through
    /// a real upstream's answers, each call is answered with what the
    /// service itself answered that input when it was recorded
    /// (`--upstream` records them; [`Cassette::has_inputs`]), so a mapping
    /// that breaks on one of them against the service fails here.
    async fn valid_inputs(&mut self) {
        let mut first = None;
        let valid = &self.embedded.valid_inputs;
        let cassette = match self.scripted.as_deref().map(|s| &s.script) {
            Some(Script::Recorded(cassette)) => Some(cassette.clone()),
            _ => None,
        };
        for (name, arguments) in valid {
            let before = self.upstream.map_or(0, |u| u.requests().len());
            let result = self.call(arguments.clone()).await;
            let answered = self.upstream.and_then(|upstream| {
                let requests = upstream.requests();
                let cassette = cassette.as_ref()?;
                (requests.iter().skip(before)).find_map(|r| cassette.recorded_for(r).cloned())
            });
            let problem = match result {
                Err(error) => Some(format!("{name}: {error}")),
                Ok(result) if result.is_error == Some(true) => {
                    Some(refused_valid_input(name, arguments, answered.as_ref()))
                }
                Ok(result) => (success_problems(&self.embedded.output_validator, &result))
                    .into_iter()
                    .find(|(id, _)| *id == Check::ValidInputs)
                    .map(|(_, p)| format!("{name}: {p}")),
            };
            if let Some(problem) = problem {
                first.get_or_insert(problem);
            }
        }
        let count = valid.len();
        let against = match &cassette {
            None => String::new(),
            Some(cassette) if cassette.has_inputs() => {
                ", each answered as the real service answered it".to_owned()
            }
            Some(_) => ", answered with the recorded baseline answer: the cassette holds no answer of the service to them (record it again with --upstream URL --record FILE to judge them against the service)".to_owned(),
        };
        self.record(
            Check::ValidInputs,
            first.map_or_else(
                || Ok(format!("{count} calls{against}")),
                |reason| Err(reason.into()),
            ),
        );
    }

    /// Invalid inputs: each refused, and no message repeats the query.
    async fn invalid_inputs(&mut self) {
        let mut failure = None;
        let invalid = &self.embedded.invalid_inputs;
        let mut echoed = None;
        for (name, arguments) in invalid {
            match self.call(arguments.clone()).await {
                Ok(result)
                    if result.is_error == Some(true) && result.structured_content.is_none() =>
                {
                    // A query long enough to recognise must not come back.
                    let query = arguments
                        .get("query")
                        .and_then(Value::as_str)
                        .map(str::trim)
                        .unwrap_or("");
                    if query.chars().count() >= 8
                        && result
                            .content
                            .iter()
                            .any(|b| b.as_text().is_some_and(|t| t.text.contains(query)))
                    {
                        echoed.get_or_insert(format!("the error for `{name}` repeats the query"));
                    }
                }
                Ok(_) => {
                    failure.get_or_insert(format!("{name}: accepted"));
                }
                Err(error) => {
                    failure.get_or_insert(format!("{name}: {error}"));
                }
            }
        }
        self.record(
            Check::InvalidInputs,
            failure.map_or_else(
                || Ok(format!("{} refused", invalid.len())),
                |reason| Err(reason.into()),
            ),
        );
        let unknown = self
            .call(json!({"query": "deployment policy", "tenant": "acme"}))
            .await;
        self.record(
            Check::UnknownArgument,
            match unknown {
                Ok(result) if result.is_error == Some(true) => Ok("refused".into()),
                Ok(_) => Err("a call with an extra `tenant` argument succeeded".into()),
                Err(error) => Err(error.into()),
            },
        );
        let echo_cases = [
            json!({"query": QUERY_CANARY, "corpus": "all"}),
            json!({"query": format!("{QUERY_CANARY} {}", "x".repeat(2000))}),
            json!({"query": [QUERY_CANARY]}),
        ];
        for arguments in echo_cases {
            if let Ok(result) = self.call(arguments).await
                && result
                    .content
                    .iter()
                    .any(|b| b.as_text().is_some_and(|t| t.text.contains(QUERY_CANARY)))
            {
                echoed.get_or_insert("an input error repeats the query".to_owned());
            }
        }
        self.record(
            Check::InputErrorsRedacted,
            echoed.map_or_else(|| Ok("no echo".into()), |reason| Err(reason.into())),
        );
    }
}

/// Why a valid input's stable error is the mapping's finding: what the
/// real service answered the request the mapping made of it, when that
/// answer was recorded.
fn refused_valid_input(name: &str, arguments: &Value, answered: Option<&Tape>) -> String {
    let query = arguments.get("query").and_then(Value::as_str).unwrap_or("");
    let shown = if query.chars().count() <= 40 {
        format!(" ({query:?})")
    } else {
        String::new()
    };
    let input = format!("the profile's valid input `{name}`{shown} gave an error");
    match answered {
        Some(tape) if !tape.succeeded() => format!(
            "{input}: the real service answered HTTP {} to the request the mapping made of it ({} {}): escape the query for the service's own syntax (a query language reads quotes, operators and brackets), or send it where the service reads plain text",
            tape.status,
            tape.method,
            tape.target.split('?').next().unwrap_or("")
        ),
        Some(_) => format!(
            "{input}, though the real service answered it with a success: the mapping cannot read the service's answer to it"
        ),
        None => input,
    }
}
