//! Inputs: every valid input vector succeeds, every invalid one is refused
//! with `isError`, an unknown argument is refused, and no input error repeats
//! the query.

use super::*;

impl Suite<'_> {
    pub(super) async fn inputs(&mut self, baseline: &Baseline) {
        if let Baseline::Failed(why, how) = baseline {
            self.not_exercised(Check::ValidInputs, why, how);
        } else {
            self.valid_inputs().await;
        }
        self.invalid_inputs().await;
    }

    /// Valid inputs: each succeeds and keeps every output promise.
    async fn valid_inputs(&mut self) {
        let mut problems: Vec<(Check, String)> = Vec::new();
        let valid = &self.embedded.valid_inputs;
        for (name, arguments) in valid {
            match self.call(arguments.clone()).await {
                Err(error) => problems.push((Check::ValidInputs, format!("{name}: {error}"))),
                Ok(result) => problems.extend(
                    success_problems(&self.embedded.output_validator, &result)
                        .into_iter()
                        .filter(|(id, _)| *id == Check::ValidInputs)
                        .map(|(id, p)| (id, format!("{name}: {p}"))),
                ),
            }
        }
        let count = valid.len();
        let first = problems
            .iter()
            .find(|(check, _)| *check == Check::ValidInputs)
            .map(|(_, p)| p.clone());
        self.record(
            Check::ValidInputs,
            first.map_or_else(|| Ok(format!("{count} calls")), Err),
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
            failure.map_or_else(|| Ok(format!("{} refused", invalid.len())), Err),
        );
        let unknown = self
            .call(json!({"query": "deployment policy", "tenant": "acme"}))
            .await;
        self.record(
            Check::UnknownArgument,
            match unknown {
                Ok(result) if result.is_error == Some(true) => Ok("refused".into()),
                Ok(_) => Err("a call with an extra `tenant` argument succeeded".into()),
                Err(error) => Err(error),
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
            echoed.map_or_else(|| Ok("no echo".into()), Err),
        );
    }
}
