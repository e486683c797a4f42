//! The checks: discovery, inputs, rendering, and, when the target speaks
//! the Generic HTTP Search V1 binding, every fault of a scripted upstream.
//! Each check has a stable ID ([`super::catalogue`]) and ends pass, warn,
//! fail, not applicable (with why) or not exercised (with why, and how to
//! exercise it). By concern: [`discovery`], [`inputs`],
//! [`binding`] (and the faults), [`output`].

mod binding;
mod discovery;
mod inputs;
mod output;
mod protocol;
mod scripted;

pub use binding::NO_ITEM_KEPT;
pub use output::same_as_json_parse;
pub(crate) use output::success_problems;
pub use protocol::STATELESS;
pub use scripted::{Script, Scripted, start_upstream};

use std::{sync::Arc, time::Duration};

use rmcp::model::{CallToolResult, Tool};
use serde::Serialize;
use serde_json::{Value, json};

use super::{
    catalogue::{Check, FAULTS, Group, exercise, skip},
    embedded::Embedded,
    probe::ProbeTarget,
    schema,
    session::{CallError, Session, WatchedStderr},
    upstream::{Reply, SeenRequest, Tag, Upstream},
};
use crate::profile::{self, ContextItem, ecmascript::utf16_len};

/// Why a check failed: the sentence its result shows (with the run's
/// secrets taken out). A check's helpers answer `Result<String, Reason>`,
/// the pass's detail or this; what kept a call or a probe from an answer
/// becomes one through `From`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reason(String);

impl Reason {
    /// The reason `error` gives in words.
    pub fn of(error: &impl std::fmt::Display) -> Reason {
        Reason(error.to_string())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<String> for Reason {
    fn from(reason: String) -> Reason {
        Reason(reason)
    }
}

impl From<&str> for Reason {
    fn from(reason: &str) -> Reason {
        Reason(reason.to_owned())
    }
}

impl From<super::session::CallError> for Reason {
    fn from(error: super::session::CallError) -> Reason {
        Reason::of(&error)
    }
}

impl From<super::probe::ProbeError> for Reason {
    fn from(error: super::probe::ProbeError) -> Reason {
        Reason::of(&error)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Pass,
    /// Conforms, with something the provider should look at; does not
    /// change the exit status.
    Warn,
    Fail,
    /// The rule does not bind this target (why in the reason); it weighs
    /// nothing in the verdict.
    NotApplicable,
    /// The rule binds the target but this run did not reach it: no verdict
    /// of conformance while one is left ([`super::catalogue`]).
    NotExercised,
}

/// How the upstream tells the suite's calls apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tagging {
    /// By the marker word each query starts with (`fault-timeout ...`),
    /// which the request still carries: the calls may run at once.
    Words,
    /// By their order: the mapping rewrites the query's words, so the
    /// calls run one at a time, and the upstream is armed with each
    /// call's tag before it is sent ([`Upstream::arm`]).
    Order,
}

/// The outcome of one check.
#[derive(Debug, Clone, Serialize)]
pub struct CheckResult {
    #[serde(skip)]
    pub check: Check,
    /// [`Check::id`], in reports.
    pub id: &'static str,
    pub title: &'static str,
    pub status: Status,
    pub reason: String,
    /// How to exercise it, when it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exercise: Option<&'static str>,
}

/// The longest reason a check gives, in characters.
const MAX_REASON_CHARS: usize = 2000;

impl CheckResult {
    /// A result; its reason may quote what the target sent, so it is shown
    /// through [`crate::text::outside`] (escaped, masked, bounded) in every format.
    pub fn new(check: Check, status: Status, reason: String) -> CheckResult {
        CheckResult {
            check,
            id: check.id(),
            title: check.title(),
            status,
            reason: crate::text::outside::line(&reason, MAX_REASON_CHARS),
            exercise: None,
        }
    }
}

pub use super::canary::{BODY_CANARY, QUERY_CANARY, TOKEN_CANARY};

const MIB: usize = 1024 * 1024;

/// Sees each result as soon as it is decided (progress on a terminal).
pub type Progress<'a> = Option<Box<dyn Fn(&CheckResult) + 'a>>;

/// The run's state: the session, the upstream, and the results so far.
pub struct Suite<'a> {
    embedded: &'static Embedded,
    session: &'a Session,
    upstream: Option<&'a Upstream>,
    /// What the upstream answers with (with `upstream`).
    scripted: Option<Arc<Scripted>>,
    /// The baseline call's result, once it succeeded.
    baseline_result: Option<CallToolResult>,
    /// The first failure's text: every other must be the same.
    stable: Option<String>,
    include_tools: Option<Vec<String>>,
    results: Vec<CheckResult>,
    /// Every text any call returned, for the redaction check.
    texts: Vec<String>,
    /// Broken output promises of any success, by check ID.
    output_problems: Vec<(Check, String)>,
    /// How many successes were inspected.
    successes: usize,
    progress: Progress<'a>,
    /// How to reach the target a second time, for the protocol checks.
    probe: Option<ProbeTarget>,
    /// The probe's second process's stderr once the probe closed, and
    /// whether it was read to its end.
    probe_stderr: Option<(WatchedStderr, bool)>,
    /// The stateless revision the target was judged by, when it speaks one.
    revision: Option<&'static str>,
    /// Secrets no reason may show (a real upstream's credential, the
    /// bearer of an MCP endpoint): [`crate::check::secret`].
    secrets: crate::check::secret::Secrets,
    /// How to exercise a check a call that did not succeed left
    /// unexercised: the baseline's, once it failed.
    to_exercise: &'static str,
    /// What the mapping made of a real upstream's answer (the baseline's).
    mapped: Option<Mapped>,
    /// How the upstream tells the suite's calls apart.
    tagging: Tagging,
    /// Whether the target takes a credential variable (a service without
    /// authentication passes none): the token canary applies only then.
    takes_credential: bool,
    /// `--lock`: the tool surface the listing must be.
    lock: Option<crate::surface::ToolsLock>,
    /// The tool surface the target listed, pinned (`--write-lock`).
    surface: Option<crate::surface::ToolsLock>,
}

/// What a run returns: the results in order, the stateless revision the
/// target was judged by (when it speaks one), why the upstream checks
/// could not run through a real upstream's answers ([`Baseline::undecided`])
/// and what the mapping made of that answer ([`Mapped`]).
pub struct Ran {
    pub checks: Vec<CheckResult>,
    /// The tool surface the target listed, pinned, when it listed one.
    pub surface: Option<crate::surface::ToolsLock>,
    pub revision: Option<&'static str>,
    pub undecided: Option<String>,
    pub mapped: Option<Mapped>,
}

/// The items a mapping made of a real upstream's answer to the baseline
/// call: each id and the start of its content, as outside text.
#[derive(Debug, Clone, Serialize)]
pub struct Mapped {
    /// The words of the call.
    pub query: String,
    /// Empty when the mapping kept none.
    pub items: Vec<MappedItem>,
}

/// One item a mapping made: its id, and the first characters of its
/// content.
#[derive(Debug, Clone, Serialize)]
pub struct MappedItem {
    pub id: String,
    pub content: String,
}

/// How much of an id and of a content [`Mapped`] shows, in characters.
const MAPPED_ID_CHARS: usize = 60;
const MAPPED_CONTENT_CHARS: usize = 60;

impl Mapped {
    /// `items` as shown: secrets taken out, escaped and bounded through
    /// [`crate::text::outside`], at most the profile's five.
    fn of(query: &str, items: &[ContextItem], secrets: &crate::check::secret::Secrets) -> Mapped {
        let shown = |text: &str, max| crate::text::outside::line(&secrets.redact(text), max);
        Mapped {
            query: shown(query, MAPPED_CONTENT_CHARS),
            items: (items.iter().take(profile::PROVIDER_LIMIT))
                .map(|item| MappedItem {
                    id: shown(&item.id, MAPPED_ID_CHARS),
                    content: shown(&item.content, MAPPED_CONTENT_CHARS),
                })
                .collect(),
        }
    }
}

impl<'a> Suite<'a> {
    pub fn new(
        embedded: &'static Embedded,
        session: &'a Session,
        upstream: Option<(&'a Upstream, Arc<Scripted>)>,
        include_tools: Option<Vec<String>>,
        probe: Option<ProbeTarget>,
        progress: Progress<'a>,
    ) -> Suite<'a> {
        let (upstream, scripted) = upstream.unzip();
        Suite {
            embedded,
            session,
            upstream,
            scripted,
            baseline_result: None,
            stable: None,
            include_tools,
            results: Vec::new(),
            texts: Vec::new(),
            output_problems: Vec::new(),
            successes: 0,
            progress,
            probe,
            probe_stderr: None,
            revision: None,
            secrets: crate::check::secret::Secrets::default(),
            to_exercise: exercise::A_SUCCESS,
            mapped: None,
            tagging: Tagging::Words,
            takes_credential: true,
            lock: None,
            surface: None,
        }
    }

    /// The suite for a target that takes a credential variable, or (false)
    /// one whose service needs none: then no request carries a token, and
    /// the token canary does not apply.
    pub fn with_credential(mut self, takes_credential: bool) -> Suite<'a> {
        self.takes_credential = takes_credential;
        self
    }

    /// The suite that holds the listing to `lock` ([`Check::ToolsLocked`]).
    pub fn with_lock(mut self, lock: Option<crate::surface::ToolsLock>) -> Suite<'a> {
        self.lock = lock;
        self
    }

    /// The suite with `secrets` taken out of every reason it gives.
    pub fn with_secrets(mut self, secrets: crate::check::secret::Secrets) -> Suite<'a> {
        self.secrets = secrets;
        self
    }

    fn record(&mut self, check: Check, outcome: Result<String, Reason>) {
        let (status, reason) = match outcome {
            Ok(reason) => (Status::Pass, reason),
            Err(reason) => (Status::Fail, reason.0),
        };
        let reason = self.secrets.redact(&reason);
        self.push(CheckResult::new(check, status, reason));
    }

    fn warn(&mut self, check: Check, reason: String) {
        let reason = self.secrets.redact(&reason);
        self.push(CheckResult::new(check, Status::Warn, reason));
    }

    /// The rule does not bind this target: `why`.
    fn not_applicable(&mut self, check: Check, why: &str) {
        let why = self.secrets.redact(why);
        self.push(CheckResult::new(check, Status::NotApplicable, why));
    }

    /// The rule binds the target, but this run did not reach it: `why`,
    /// and `how` to exercise it.
    fn not_exercised(&mut self, check: Check, why: &str, how: &'static str) {
        let why = self.secrets.redact(why);
        let mut result = CheckResult::new(check, Status::NotExercised, why);
        result.exercise = Some(how);
        self.push(result);
    }

    fn push(&mut self, result: CheckResult) {
        if let Some(progress) = &self.progress {
            progress(&result);
        }
        self.results.push(result);
    }

    async fn call(&mut self, arguments: Value) -> Result<CallToolResult, CallError> {
        let result = self.session.call(arguments.clone()).await;
        self.observe(&arguments, result)
    }

    /// Records what a call returned: its texts for the redaction check, and
    /// the output promises of a success.
    fn observe(
        &mut self,
        arguments: &Value,
        result: Result<CallToolResult, CallError>,
    ) -> Result<CallToolResult, CallError> {
        let arguments_label = match arguments.get("query").and_then(Value::as_str) {
            Some(query) if query.chars().count() <= 40 => format!("query {query:?}"),
            Some(query) => format!("a query of {} code points", query.chars().count()),
            None => "a call".to_owned(),
        };
        let result = result?;
        for block in &result.content {
            if let Some(text) = block.as_text() {
                self.texts.push(text.text.clone());
            }
        }
        if let Some(structured) = &result.structured_content {
            self.texts.push(structured.to_string());
        }
        if result.is_error != Some(true) {
            self.successes += 1;
            let problems = success_problems(&self.embedded.output_validator, &result);
            let context = arguments_label;
            self.output_problems.extend(
                problems
                    .into_iter()
                    .filter(|(id, _)| *id != Check::ValidInputs)
                    .map(|(id, p)| (id, format!("{context}: {p}"))),
            );
        }
        Ok(result)
    }

    /// Runs every check: [`Ran`].
    pub async fn run(mut self) -> Ran {
        let tool = self.discovery().await;
        if tool.is_none() {
            // Every later check needs the tool: each is in the report.
            for check in Check::ALL {
                if !matches!(
                    check.group(),
                    Group::Discovery | Group::Hook | Group::Lock | Group::Conformance
                ) {
                    self.not_exercised(*check, skip::NO_TOOL, exercise::TOOL);
                }
            }
            return Ran {
                checks: self.results,
                surface: self.surface,
                revision: None,
                undecided: None,
                mapped: None,
            };
        }
        let baseline = self.baseline().await;
        let undecided = baseline.undecided(self.scripted.as_deref());
        if !matches!(baseline, Baseline::Succeeded) {
            self.to_exercise = baseline.unexercised().1;
        }
        self.inputs(&baseline).await;
        match &baseline {
            Baseline::Succeeded => self.upstream_checks().await,
            Baseline::NoUpstream | Baseline::Failed(..) => {
                let (why, how) = baseline.unexercised();
                for check in Check::in_group(Group::Binding) {
                    self.not_exercised(check, why, how);
                }
            }
        }
        if let Baseline::Failed(why, how) = &baseline {
            for check in Check::in_group(Group::Output).filter(|c| *c != Check::Redaction) {
                self.not_exercised(check, why, how);
            }
            self.protocol_checks(&baseline).await;
        } else {
            self.concurrency().await;
            // The stateless call's output feeds the output checks too.
            self.protocol_checks(&baseline).await;
            self.output_checks(baseline.unexercised().1);
        }
        self.redaction(baseline.unexercised().1);
        let undecided = undecided.map(|why| self.secrets.redact(&why));
        Ran {
            checks: self.results,
            surface: self.surface,
            revision: self.revision,
            undecided,
            mapped: self.mapped,
        }
    }

    /// The protocol group, with the baseline's query for the stateless call.
    async fn protocol_checks(&mut self, baseline: &Baseline) {
        let query = match (&baseline, &self.scripted) {
            (Baseline::Succeeded, Some(scripted)) => binding::baseline_query(&scripted.script),
            _ => "ecp probe".to_owned(),
        };
        let probe = self.probe.take();
        self.protocol(probe.as_ref(), &query).await;
    }
}

/// Whether the calls through the scripted upstream can succeed at all.
pub(super) enum Baseline {
    /// The target is not pointed at an upstream of ecp's (a URL, a remote
    /// manifest, a target without the variables).
    NoUpstream,
    /// The baseline call succeeded.
    Succeeded,
    /// It did not: why, the reason every dependent check is not exercised
    /// with, and how to exercise them.
    Failed(String, &'static str),
}

impl Baseline {
    /// Why the run decides nothing about the upstream checks, when it
    /// does not: the baseline failed through a real upstream's answers
    /// (`--upstream`, `--cassette`), where the upstream checks are the
    /// point of the run. (Against the scripted V1 upstream the same
    /// checks are not exercised too, and the run is not established
    /// either; a mapping of another API is told to use a cassette.)
    fn undecided(&self, scripted: Option<&Scripted>) -> Option<String> {
        match (self, scripted.map(|s| &s.script)) {
            (Baseline::Failed(reason, _), Some(Script::Recorded(_))) => Some(reason.clone()),
            _ => None,
        }
    }

    /// Why the checks through the upstream did not run, and how to run
    /// them (for a baseline that succeeded: how to exercise whatever a
    /// run still leaves, e.g. a canary that never reached the target).
    fn unexercised(&self) -> (&str, &'static str) {
        match self {
            Baseline::NoUpstream => (skip::NO_BINDING, exercise::STARTED),
            Baseline::Failed(why, how) => (why, how),
            Baseline::Succeeded => ("", exercise::ANOTHER_API),
        }
    }
}
