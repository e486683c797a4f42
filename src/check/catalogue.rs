//! The catalogue of checks: stable IDs (CI configurations and reports refer
//! to them), titles, the group each belongs to, and why a check did not
//! run, in one place. The order is the order of a run and of a report.
//!
//! A check that did not run is one of two things, never a pass:
//! - **not applicable**: the profile's rule does not bind this target (no
//!   headers on stdio; the 2026-07-28 rules on a server whose `initialize`
//!   agreed on an older revision; hostile JSON of an upstream that answers
//!   in something else). It weighs nothing in the verdict.
//! - **not exercised**: the rule binds the target, but this run did not
//!   reach it (no successful call through ecp's upstream, an upstream ecp
//!   cannot set, a canary that never reached the target). It says how to
//!   exercise it ([`exercise`]), and while one is left the verdict is "not
//!   established", never "conforms".

use std::fmt;

/// What a check is about; a group is left unexercised together when the
/// target cannot be asked (no tool, no upstream of ecp's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// `tools/list`: the one tool, its schemas and annotations.
    Discovery,
    /// The input vectors and the refusals.
    Inputs,
    /// Against the scripted upstream (the Generic HTTP Search V1 binding,
    /// or a real upstream's recorded answers): the request, rendering,
    /// every fault, no retry, cancellation, hostile answers.
    Binding,
    /// Concurrency, and the promises kept by every result seen.
    Output,
    /// The rules of MCP revision 2026-07-28, through a second channel with
    /// raw requests (`server/discover`, `resultType`, cache hints, the
    /// per-request `_meta`, the standard HTTP headers).
    Protocol,
    /// Qwen's Auto Recall `UserPromptSubmit` hook (`ecp check --hook`),
    /// one process a prompt: what it reads, what it sends, what it prints.
    Hook,
    /// The tool surface against the one `--lock FILE` pins; only a run
    /// given a lock has it.
    Lock,
    /// The official MCP conformance suite's verdict (`--conformance`);
    /// only a run that asks for it has it.
    Conformance,
}

impl Group {
    /// The group's name in reports and summaries.
    pub fn name(self) -> &'static str {
        match self {
            Group::Discovery => "discovery",
            Group::Inputs => "inputs",
            Group::Binding => "upstream",
            Group::Output => "output",
            Group::Protocol => "protocol",
            Group::Hook => "hook",
            Group::Lock => "lock",
            Group::Conformance => "conformance",
        }
    }
}

macro_rules! checks {
    ($($variant:ident = $id:literal, $group:ident, $title:literal;)*) => {
        /// One check of `ecp check`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Check { $($variant,)* }

        impl Check {
            /// Every check, in the order of a run.
            pub const ALL: &'static [Check] = &[$(Check::$variant,)*];

            pub fn id(self) -> &'static str {
                match self { $(Check::$variant => $id,)* }
            }

            /// One line: what passing means.
            pub fn title(self) -> &'static str {
                match self { $(Check::$variant => $title,)* }
            }

            pub fn group(self) -> Group {
                match self { $(Check::$variant => Group::$group,)* }
            }
        }
    };
}

checks! {
    ToolOffered = "tool-offered", Discovery, "exactly context_search is offered";
    InputSchema = "input-schema", Discovery, "the input schema accepts exactly the profile's arguments";
    OutputSchema = "output-schema", Discovery, "the output schema accepts exactly the profile's results";
    Annotations = "annotations", Discovery, "annotations say destructiveHint: false";
    ToolsLocked = "tools-locked", Lock, "every tool's name, title, description, schemas and annotations are the ones --lock pins";
    ValidInputs = "valid-inputs", Inputs, "every valid input vector succeeds";
    InvalidInputs = "invalid-inputs", Inputs, "every invalid input vector is refused with isError";
    UnknownArgument = "unknown-argument", Inputs, "an unknown argument is refused";
    InputErrorsRedacted = "input-errors-redacted", Inputs, "input errors never echo the query";
    UpstreamRequest = "upstream-request", Binding, "the upstream request follows the binding";
    RenderVectors = "render-vectors", Binding, "every render vector is reproduced byte for byte";
    FaultTimeout = "fault-timeout", Binding, "an upstream past the budget gives the stable error in time";
    FaultRedirect = "fault-redirect", Binding, "a redirect gives the stable error";
    FaultRateLimit = "fault-rate-limit", Binding, "a 429 gives the stable error";
    FaultServerError = "fault-server-error", Binding, "a 500 gives the stable error";
    FaultMalformed = "fault-malformed", Binding, "malformed JSON gives the stable error";
    FaultOversized = "fault-oversized", Binding, "a body over 1 MiB gives the stable error";
    FaultInvalidUtf8 = "fault-invalid-utf8", Binding, "invalid UTF-8 gives the stable error";
    FaultSlowBody = "fault-slow-body", Binding, "a slow body gives the stable error in time";
    NoRetry = "no-retry", Binding, "one call makes at most one upstream request";
    Cancellation = "cancellation", Binding, "a cancelled call closes the upstream connection";
    HostileResponses = "hostile-responses", Binding, "hostile answers of the upstream's own shape keep every output promise";
    Concurrency = "concurrency", Output, "concurrent calls are all answered";
    StructuredContent = "structured-content", Output, "structuredContent validates against the output schema";
    TextSerialization = "text-serialization", Output, "the text is the exact profile serialization";
    TextEscaping = "text-escaping", Output, "the text escapes < and >";
    TextBound = "text-bound", Output, "the text is at most 4000 UTF-16 units";
    Discover = "discover", Protocol, "server/discover lists 2026-07-28, declares tools and names the server";
    ResultType = "result-type", Protocol, "2026-07-28 results say resultType: complete";
    CacheHints = "cache-hints", Protocol, "server/discover and tools/list carry valid ttlMs and cacheScope";
    StatelessCall = "stateless-call", Protocol, "a 2026-07-28 call without initialize keeps every output promise";
    RequestMeta = "request-meta", Protocol, "a request without _meta or under an unknown revision is refused";
    HttpHeaders = "http-headers", Protocol, "Mcp-Method, Mcp-Name and MCP-Protocol-Version that disagree with the body are refused";
    Redaction = "redaction", Output, "no query, token, endpoint or upstream body in any result or stderr";
    McpConformance = "mcp-conformance", Conformance, "the official MCP conformance suite finds no failure outside the baseline";
    McpConformanceBaseline = "mcp-conformance-baseline", Conformance, "every baselined check of the suite still fails";
    HookContext = "hook-context", Hook, "a found context is Qwen's hook output holding the profile's envelope text";
    HookSubmittedPrompt = "hook-submitted-prompt", Hook, "only submitted_prompt is searched, never the expanded prompt";
    HookOtherInput = "hook-other-input", Hook, "other events, malformed or oversized input search nothing and add nothing";
    HookRepositoryRoot = "hook-repository-root", Hook, "a prompt outside the repository root searches nothing";
    HookStripping = "hook-stripping", Hook, "fenced code, the credential and secret shapes never reach the upstream";
    HookQueryBound = "hook-query-bound", Hook, "at most 512 code points of the prompt are searched";
    HookNoRetry = "hook-no-retry", Hook, "one prompt makes at most one upstream request";
    HookFailOpen = "hook-fail-open", Hook, "every upstream fault prints {} and exits 0";
    HookInTime = "hook-in-time", Hook, "every run ends inside Qwen's 8000 ms hook timeout";
    HookRedaction = "hook-redaction", Hook, "no prompt, credential or upstream body on stdout or stderr";
}

impl Check {
    /// The checks of `group`, in order.
    pub fn in_group(group: Group) -> impl Iterator<Item = Check> {
        Check::ALL
            .iter()
            .copied()
            .filter(move |c| c.group() == group)
    }

    /// A check by its ID.
    pub fn from_id(id: &str) -> Option<Check> {
        Check::ALL.iter().copied().find(|c| c.id() == id)
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// The faults of the scripted upstream, by check: the first word of the
/// query selects the fault, and what it is.
pub const FAULTS: &[(Check, &str)] = &[
    (
        Check::FaultTimeout,
        "an upstream that answers after the budget",
    ),
    (Check::FaultRedirect, "a 302 redirect"),
    (Check::FaultRateLimit, "a 429 with a body"),
    (Check::FaultServerError, "a 500 with a body"),
    (Check::FaultMalformed, "malformed JSON"),
    (Check::FaultOversized, "a body over 1 MiB"),
    (Check::FaultInvalidUtf8, "a body that is not UTF-8"),
    (Check::FaultSlowBody, "a body that trickles past the budget"),
];

/// Why a group did not run.
pub mod skip {
    /// The target offers no `context_search`: nothing to call.
    pub const NO_TOOL: &str = "no context_search tool to call";
    /// The target does not take the V1 binding's variables (a URL, a
    /// remote manifest, a custom provider).
    pub const NO_BINDING: &str =
        "the target does not take the V1 binding's endpoint and credential variables";
    /// The HTTP headers on stdio (not applicable).
    pub const STDIO: &str = "stdio carries no headers";
}

/// How to exercise a check that was not: flags of `ecp check`, then what
/// they need. The summary of a run that is not established repeats them.
pub mod exercise {
    /// The baseline failed through ecp's scripted Generic HTTP Search V1
    /// upstream: most often a mapping of another API.
    pub const ANOTHER_API: &str = "run it against the API it maps: --upstream URL --query WORDS --record FILE (live, kept as a cassette), then --cassette FILE (offline, in CI)";
    /// The baseline failed through a real upstream's answers.
    pub const RECORD_AGAIN: &str = "record again with words the service finds (--upstream URL --query WORDS --record FILE) and try the mapping on them (`ecp call . WORDS`)";
    /// ecp could not point the target at an upstream of its own.
    pub const STARTED: &str = "check the server as ecp starts it, with its endpoint and credential in *_BASE_URL and *_TOKEN variables: its extension folder or archive, or -- CMD (--base-url-env, --token-env), with --upstream URL or --cassette FILE for another API";
    /// No `context_search` to call.
    pub const TOOL: &str = "offer the context_search tool (see the tool-offered check)";
    /// `--mutations 0`.
    pub const MUTATIONS: &str = "run without --mutations 0";
    /// The protocol group's second channel failed.
    pub const DISCOVER: &str = "fix what the discover check names";
    /// A call that succeeds, to judge.
    pub const A_SUCCESS: &str = "a call that succeeds: see the valid-inputs check";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_kebab_case_and_every_fault_is_a_binding_check() {
        let mut seen = std::collections::HashSet::new();
        for check in Check::ALL {
            assert!(seen.insert(check.id()), "{check} twice");
            assert!(
                check
                    .id()
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "{check}"
            );
            assert_eq!(Check::from_id(check.id()), Some(*check));
        }
        let faults: Vec<Check> = Check::in_group(Group::Binding)
            .filter(|c| c.id().starts_with("fault-"))
            .collect();
        assert_eq!(faults, FAULTS.iter().map(|(c, _)| *c).collect::<Vec<_>>());
    }
}
