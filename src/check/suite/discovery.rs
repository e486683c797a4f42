//! Discovery: `tools/list` offers exactly `context_search` (through the
//! manifest's `includeTools`), its schemas accept exactly the profile's
//! arguments and results, and its annotations are honest.

use super::*;

impl Suite<'_> {
    /// Pins the whole listing (what `includeTools` leaves out too: a tool
    /// added to the server is a change of its surface) and holds it to the
    /// lock, when the run has one.
    fn pin(&mut self, tools: &[Tool]) {
        let listed: Vec<Value> = tools
            .iter()
            .map(|tool| serde_json::to_value(tool).unwrap_or(Value::Null))
            .collect();
        let surface = crate::surface::ToolsLock::of(&listed);
        if let Some(lock) = &self.lock {
            let outcome = match &surface {
                Err(error) => Err(Reason::of(error)),
                Ok(found) => match lock.drift(found).as_slice() {
                    [] => Ok(format!(
                        "{} tool(s), each as the lock pins it",
                        found.tools.len()
                    )),
                    drift => Err(Reason::from(
                        drift
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join("; "),
                    )),
                },
            };
            self.record(Check::ToolsLocked, outcome);
        }
        self.surface = surface.ok();
    }

    pub(super) async fn discovery(&mut self) -> Option<Tool> {
        let tools = match self.session.client.list_all_tools().await {
            Ok(tools) => tools,
            Err(error) => {
                self.record(
                    Check::ToolOffered,
                    Err(format!("tools/list failed: {error}").into()),
                );
                if self.lock.is_some() {
                    let why = "tools/list failed";
                    self.not_exercised(Check::ToolsLocked, why, exercise::TOOL);
                }
                return None;
            }
        };
        self.pin(&tools);
        let offered: Vec<&Tool> = tools
            .iter()
            .filter(|t| {
                self.include_tools
                    .as_ref()
                    .is_none_or(|include| include.iter().any(|i| i == t.name.as_ref()))
            })
            .collect();
        let names: Vec<&str> = offered.iter().map(|t| t.name.as_ref()).collect();
        let via = if self.include_tools.is_some() {
            " through includeTools"
        } else {
            ""
        };
        self.tool_offered(&names, via);
        let tool = tools
            .iter()
            .find(|t| t.name == crate::profile::TOOL_NAME)?
            .clone();
        let input = Value::Object((*tool.input_schema).clone());
        let judged = schema::judge_bounded(input, schema::Which::Input, schema::JUDGE_BUDGET).await;
        self.judged(Check::InputSchema, judged);
        let output = tool
            .output_schema
            .as_ref()
            .map(|s| Value::Object((**s).clone()));
        match output {
            Some(output) => {
                let judged =
                    schema::judge_bounded(output, schema::Which::Output, schema::JUDGE_BUDGET)
                        .await;
                self.judged(Check::OutputSchema, judged);
            }
            None => self.record(
                Check::OutputSchema,
                Err("no outputSchema is declared".into()),
            ),
        }
        self.annotations(&tool);
        Some(tool)
    }

    /// A schema's judgement: "cannot judge" is a warning that says so,
    /// never a FAIL of the target and never a pass.
    fn judged(&mut self, check: Check, judgement: schema::Judgement) {
        match judgement {
            schema::Judgement::Conforms(reason) => self.record(check, Ok(reason)),
            schema::Judgement::Fails(reason) => self.record(check, Err(reason.into())),
            schema::Judgement::CannotJudge(reason) => {
                self.warn(check, format!("cannot judge: {reason}"))
            }
        }
    }

    /// Exactly `context_search` after `includeTools`; a bare command may
    /// offer more (a warning), as long as a manifest includes only it.
    pub(super) fn tool_offered(&mut self, names: &[&str], via: &str) {
        const ID: Check = Check::ToolOffered;
        if !names.contains(&crate::profile::TOOL_NAME) {
            self.record(
                ID,
                Err(format!("no context_search{via}; offered: {names:?}").into()),
            );
        } else if names == [crate::profile::TOOL_NAME] {
            self.record(ID, Ok(format!("context_search, alone{via}")));
        } else if self.include_tools.is_some() {
            self.record(ID, Err(format!("offered{via}: {names:?}").into()));
        } else {
            let others: Vec<&&str> = names
                .iter()
                .filter(|n| **n != crate::profile::TOOL_NAME)
                .collect();
            self.warn(
                ID,
                format!(
                    "the server also offers {others:?}; its manifest must include only context_search (\"includeTools\": [\"context_search\"])"
                ),
            );
        }
    }

    /// `destructiveHint: false` is required; other hints are the provider's
    /// to add when they are accurate.
    pub(super) fn annotations(&mut self, tool: &Tool) {
        const ID: Check = Check::Annotations;
        let annotations = serde_json::to_value(&tool.annotations).unwrap_or(Value::Null);
        match annotations.get("destructiveHint") {
            Some(Value::Bool(false)) => {}
            Some(other) => {
                return self.record(
                    ID,
                    Err(format!("destructiveHint is {other}, not false").into()),
                );
            }
            None => return self.record(ID, Err("destructiveHint: false is missing".into())),
        }
        let extra: Vec<&str> = annotations
            .as_object()
            .map(|a| {
                a.keys()
                    .map(String::as_str)
                    .filter(|k| *k != "destructiveHint" && *k != "title")
                    .collect()
            })
            .unwrap_or_default();
        if extra.is_empty() {
            self.record(ID, Ok("destructiveHint: false".into()));
        } else {
            let shown: Vec<String> = extra
                .iter()
                .map(|k| format!("{k}: {}", annotations[*k]))
                .collect();
            self.warn(
                ID,
                format!(
                    "also declares {}; make sure it is accurate for this deployment (search may bill, log or change ranking state)",
                    shown.join(", ")
                ),
            );
        }
    }
}
