//! `ecp check`: a conformance runner that speaks MCP to any implementation
//! (an extension folder or archive started as Qwen starts it, any stdio
//! command, or a Streamable HTTP URL) and proves every promise of
//! profile-v1, faults included.
//!
//! - [`target`]: resolving and starting the target, the MCP session;
//! - [`catalogue`]: the checks' stable IDs, titles, groups, skip reasons;
//! - [`embedded`]: the contract data, refused whole when any part is missing;
//! - [`suite`]: the checks themselves;
//! - [`schema`]: judging a declared schema by what it accepts;
//! - [`upstream`]: the scripted upstream on loopback (the Generic HTTP
//!   Search V1 binding, or a real upstream's answers replayed);
//! - [`cassette`]: a real upstream's answers, recorded (`--upstream`) and
//!   replayed (`--cassette`); [`mutate`]: hostile answers of their shape.
//!
//! # The verdict
//!
//! No verdict is stronger than what ran. Each check ends pass, warn, fail,
//! not applicable (the rule does not bind this target) or not exercised
//! (it does, and this run did not reach it: [`catalogue`]). The run
//! [`Verdict`] is "does not conform" when a check failed, "conforms" only
//! when every applicable check was exercised, and otherwise "not
//! established": the checks that would decide never ran, most often a
//! mapping of another API checked against ecp's scripted V1 upstream
//! instead of its own (`--upstream URL`, `--cassette FILE`).
//!
//! "Not established" exits 2, "could not run": what was asked (prove
//! conformance) could not be done, and the run says what would do it.
//! It is not 1: nothing was found wrong, and 1 would send a reader looking
//! for a failed check that is not there. A run whose baseline failed
//! through a real upstream's answers (`undecided`) is one such run.
//!
//! # Against a real service
//!
//! `--upstream URL` runs the target against a recording proxy first: the
//! `--query` calls, then the profile's valid inputs, whose answers
//! [`suite`]'s `valid-inputs` replays, so a mapping that breaks the
//! service's own syntax with one of them fails, named with the input. The
//! suite tells its calls apart by a marker word each query starts with,
//! and, when a probe call shows the mapping drops them (a query language's
//! plain words), by their order, one at a time ([`upstream::Upstream::arm`]).

mod call;
pub mod canary;
pub mod cassette;
pub mod catalogue;
pub mod config_file;
pub mod conformance;
pub mod crash;
pub mod embedded;
pub mod hook;
pub mod lines;
mod listed;
pub mod mutate;
pub mod probe;
pub mod schema;
pub mod secret;
pub mod session;
pub mod suite;
pub mod target;
pub mod upstream;

use std::{collections::BTreeMap, time::Duration};

use serde::Serialize;

pub use call::{CallOutcome, CallUpstream, call_once, fixture_upstream};
pub use listed::list_surface;
use session::Session;
pub use suite::{CheckResult, Status};
use suite::{Suite, TOKEN_CANARY};
use target::{DEFAULT_CALL_TIMEOUT, Launch, ManifestServer, Target};

use crate::providers::http::{DEFAULT_BASE_URL_ENV, DEFAULT_TOKEN_ENV};

/// Why `ecp check` or `ecp call` could not run at all (exit 2). The
/// target's own failures are findings of the suite, not these.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// ecp's embedded contract data is incomplete: a defect of this build,
    /// refused rather than run with fewer checks.
    #[error(transparent)]
    Embedded(#[from] embedded::Broken),
    /// The scripted upstream, the fixture endpoint, a cassette's replay
    /// or the recording proxy could not listen on loopback.
    #[error("cannot start {what}: {error}")]
    Listen {
        what: &'static str,
        error: std::io::Error,
    },
    #[error("cannot build an HTTP client: {0}")]
    Client(reqwest::Error),
    /// The target could not be resolved or reached.
    #[error("{0}")]
    Target(String),
    /// The target did not start; `help`, when given, says more than the
    /// error's own.
    #[error("{error}")]
    Start {
        error: session::StartError,
        help: Option<String>,
    },
    /// The target cannot be run as given, or it started but what the run
    /// needs of it or of its upstream did not happen.
    #[error(transparent)]
    Blocked(#[from] Blocked),
    /// A cassette that cannot be read, used or saved.
    #[error(transparent)]
    Cassette(#[from] cassette::CassetteError),
    /// Settings that cannot go together.
    #[error("{0}")]
    Settings(String),
}

impl CheckError {
    /// What to do about it, when ecp knows.
    pub fn help(&self) -> Option<String> {
        match self {
            CheckError::Start { error, help } => {
                help.clone().or_else(|| error.help().map(str::to_owned))
            }
            CheckError::Blocked(blocked) => blocked.help.clone(),
            CheckError::Cassette(error) => error.help(),
            _ => None,
        }
    }
}

/// What stops a check or a call before its verdict, in words, with what to
/// do about it when ecp knows (the could-not-run form: `error: said`, then
/// `= help: help`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{said}")]
pub struct Blocked {
    pub said: String,
    pub help: Option<String>,
}

impl Blocked {
    pub fn new(said: impl Into<String>) -> Blocked {
        Blocked {
            said: said.into(),
            help: None,
        }
    }

    pub fn with_help(said: impl Into<String>, help: impl Into<String>) -> Blocked {
        Blocked {
            said: said.into(),
            help: Some(help.into()),
        }
    }
}

impl From<session::StartError> for CheckError {
    fn from(error: session::StartError) -> CheckError {
        CheckError::Start { error, help: None }
    }
}

/// How to run the suite.
#[derive(Debug, Clone)]
pub struct CheckSettings {
    pub target: Target,
    /// For a command target: the variables that carry the V1 endpoint and
    /// credential (defaults: PROVIDER_CONTEXT_BASE_URL/_TOKEN).
    pub base_url_env: Option<String>,
    pub token_env: Option<String>,
    /// For a URL target: a bearer token for the MCP endpoint itself.
    pub bearer: Option<String>,
    /// A configuration file that carries the target's endpoint
    /// (`--config-file`); a Qwen InstanceConfig a manifest names is found
    /// without it.
    pub config_file: Option<config_file::ConfigFile>,
    /// Which upstream the target is pointed at.
    pub upstream: UpstreamSource,
    /// `--lock`: the tool surface the target must list.
    pub lock: Option<crate::surface::ToolsLock>,
    /// `--conformance`: the official suite, ready to run.
    pub conformance: Option<conformance::Conformance>,
    /// Seeds the hostile answers.
    pub seed: u64,
    /// How many hostile answers the target meets.
    pub mutations: usize,
}

/// Where the answers of the target's upstream come from.
#[derive(Debug, Clone, Default)]
pub enum UpstreamSource {
    /// The scripted Generic HTTP Search V1 upstream.
    #[default]
    V1,
    /// The provider's real upstream at this URL: a few probe calls are
    /// recorded through a loopback proxy, then replayed.
    Record {
        url: String,
        queries: Vec<String>,
        /// Where to keep the cassette.
        keep: Option<std::path::PathBuf>,
    },
    /// A cassette recorded before.
    Cassette(std::path::PathBuf),
}

/// The seed of the hostile answers when none is given.
pub const DEFAULT_SEED: u64 = 29;
/// How many hostile answers a run sends when not told.
pub const DEFAULT_MUTATIONS: usize = 200;

/// A started target.
struct Opened {
    session: Session,
    include_tools: Option<Vec<String>>,
    /// The variables that carry its endpoint and credential, when ecp
    /// could set them.
    binding: Option<target::BindingEnv>,
    /// The credential the target was started with, as the manifest
    /// resolved it (a manifest may map the variable from another name).
    credential: Option<String>,
    /// How to reach it a second time, for the protocol checks.
    probe: probe::ProbeTarget,
}

/// The outcome of a run.
#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    pub target: String,
    /// The protocol revisions the target was judged by: the one its
    /// `initialize` agreed on, and 2026-07-28 when it speaks that too.
    pub revisions: Vec<String>,
    pub checks: Vec<CheckResult>,
    /// What the run establishes: [`Verdict`].
    pub verdict: Verdict,
    pub passed: usize,
    /// Conforming checks with something to look at (exit status 0).
    pub warned: usize,
    pub failed: usize,
    /// Checks whose rule does not bind this target.
    pub not_applicable: usize,
    /// Checks whose rule binds the target but that this run did not reach.
    pub not_exercised: usize,
    /// The groups of the checks not exercised, in the order of a run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unexercised_groups: Vec<&'static str>,
    /// Why the checks through the upstream decided nothing, when they did
    /// not (the baseline call through a real upstream's answers failed):
    /// such a run is not established (exit 2 unless a check failed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub undecided: Option<String>,
    /// What the mapping made of a real upstream's answer (`--upstream`,
    /// `--cassette`) to the baseline call: the items it kept, none included.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mapped: Option<suite::Mapped>,
    /// Whether this judged an Auto Recall hook (`--hook`) rather than an
    /// MCP server.
    #[serde(skip)]
    pub hook: bool,
    /// The tool surface the target listed, pinned (`--write-lock`).
    #[serde(skip)]
    pub surface: Option<crate::surface::ToolsLock>,
    /// The official suite's checks (`--conformance`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conformance: Option<conformance::ConformanceRun>,
}

/// What a run establishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Nothing failed, and every applicable check was exercised (exit 0).
    Conforms,
    /// A check failed (exit 1).
    DoesNotConform,
    /// Nothing failed, but an applicable check was not exercised: no
    /// verdict of conformance (exit 2).
    NotEstablished,
}

impl Verdict {
    /// The verdict of `checks`.
    pub fn of(checks: &[CheckResult]) -> Verdict {
        if checks.iter().any(|c| c.status == Status::Fail) {
            Verdict::DoesNotConform
        } else if checks.iter().any(|c| c.status == Status::NotExercised) {
            Verdict::NotEstablished
        } else {
            Verdict::Conforms
        }
    }
}

impl CheckReport {
    /// Nothing failed, and every applicable check was exercised.
    pub fn ok(&self) -> bool {
        self.verdict == Verdict::Conforms
    }

    /// The distinct ways to exercise what was not, in the order of a run.
    pub fn to_exercise(&self) -> Vec<&'static str> {
        let mut hows: Vec<&'static str> = Vec::new();
        for how in self.checks.iter().filter_map(|c| c.exercise) {
            if !hows.contains(&how) {
                hows.push(how);
            }
        }
        hows
    }
}

impl CheckReport {
    /// The report of `checks` on `target`, counted and given a verdict;
    /// `hook` when they judged an Auto Recall hook.
    pub fn of(target: &Target, checks: Vec<CheckResult>, hook: bool) -> CheckReport {
        let count = |status| checks.iter().filter(|c| c.status == status).count();
        CheckReport {
            target: describe(target),
            revisions: Vec::new(),
            verdict: Verdict::of(&checks),
            passed: count(Status::Pass),
            warned: count(Status::Warn),
            failed: count(Status::Fail),
            not_applicable: count(Status::NotApplicable),
            not_exercised: count(Status::NotExercised),
            unexercised_groups: unexercised_groups(&checks),
            checks,
            undecided: None,
            mapped: None,
            hook,
            surface: None,
            conformance: None,
        }
    }
}

/// The groups of the checks not exercised, each once, in order.
fn unexercised_groups(checks: &[CheckResult]) -> Vec<&'static str> {
    let mut groups: Vec<&'static str> = Vec::new();
    for check in checks.iter().filter(|c| c.status == Status::NotExercised) {
        let name = check.check.group().name();
        if !groups.contains(&name) {
            groups.push(name);
        }
    }
    groups
}

fn describe(target: &Target) -> String {
    match target {
        Target::Extension(path) => path.display().to_string(),
        Target::Command(command) => command.join(" "),
        Target::Url(url) => url.clone(),
    }
}

/// Writes `note` to stderr, once per run: `--upstream` starts the target
/// twice (to record, then to check), and the build it runs is the same.
fn say_once(note: &str) {
    static SAID: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut said = SAID
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !said.iter().any(|s| s == note) {
        eprintln!("{note}");
        said.push(note.to_owned());
    }
}

/// How a target is reached, resolved once for `ecp check` and `ecp call`.
enum Reach {
    /// A process ecp starts (a local extension's server, or a command).
    Spawn(Launch),
    /// An MCP endpoint over HTTP (a remote extension's `httpUrl`, or `--url`).
    Http {
        url: String,
        call_timeout: Duration,
        include_tools: Option<Vec<String>>,
    },
}

/// The target of `settings`, resolved: with `endpoint` (a base URL and,
/// when given, a credential) its server is pointed there, reaching
/// loopback directly; without, it keeps its own environment. An HTTP
/// target without a timeout of its own gets `call_timeout`.
fn resolve(
    settings: &CheckSettings,
    endpoint: Option<(&str, Option<&str>)>,
    call_timeout: Duration,
) -> Result<Reach, CheckError> {
    match &settings.target {
        Target::Extension(path) => match target::from_extension(path, endpoint)? {
            ManifestServer::Local(mut launch) => {
                if let Some(note) = &launch.note {
                    say_once(note);
                }
                if let Some(endpoint) = endpoint {
                    let config = match &settings.config_file {
                        Some(config) => Some(config.clone()),
                        None => target::qwen_config_of(&launch)?,
                    };
                    if let Some(config) = config {
                        target::point_config(&mut launch, &config, endpoint)?;
                    }
                    target::reach_loopback_directly(&mut launch.env);
                }
                Ok(Reach::Spawn(launch))
            }
            ManifestServer::Remote {
                url,
                call_timeout,
                include_tools,
            } => Ok(Reach::Http {
                url,
                call_timeout,
                include_tools,
            }),
        },
        Target::Command(command) => {
            let [program, args @ ..] = command.as_slice() else {
                return Err(CheckError::Settings("no command given after --".into()));
            };
            let binding = target::BindingEnv {
                base_url: (settings.base_url_env.clone())
                    .unwrap_or_else(|| DEFAULT_BASE_URL_ENV.into()),
                token: Some(
                    (settings.token_env.clone()).unwrap_or_else(|| DEFAULT_TOKEN_ENV.into()),
                ),
            };
            let mut launch = Launch {
                program: program.clone(),
                note: None,
                args: args.to_vec(),
                cwd: None,
                env: BTreeMap::new(),
                call_timeout,
                include_tools: None,
                binding: Some(binding.clone()),
                _extracted: None,
                scratch: None,
            };
            match (endpoint, &settings.config_file) {
                (Some(endpoint), Some(config)) => {
                    target::point_config(&mut launch, config, endpoint)?;
                }
                (Some((base_url, token)), None) => {
                    launch.env.insert(binding.base_url, base_url.to_owned());
                    if let (Some(token), Some(var)) = (token, binding.token) {
                        launch.env.insert(var, token.to_owned());
                    }
                }
                (None, _) => {}
            }
            if endpoint.is_some() {
                target::reach_loopback_directly(&mut launch.env);
            }
            Ok(Reach::Spawn(launch))
        }
        Target::Url(url) => Ok(Reach::Http {
            url: url.clone(),
            call_timeout,
            include_tools: None,
        }),
    }
}

/// Starts the target with its endpoint at `base_url` and, when `token` is
/// given, that credential (else its own, from the environment).
async fn open(
    settings: &CheckSettings,
    base_url: &str,
    token: Option<&str>,
) -> Result<Opened, CheckError> {
    match resolve(settings, Some((base_url, token)), DEFAULT_CALL_TIMEOUT)? {
        Reach::Spawn(launch) => {
            let credential = credential_of(&launch);
            // What the target wrote before it failed may hold its credential.
            let secrets = secret::Secrets::new(credential.as_deref());
            Ok(Opened {
                session: Session::spawn(&launch)
                    .await
                    .map_err(|error| CheckError::from(error.redacted(&secrets)))?,
                include_tools: launch.include_tools.clone(),
                credential,
                binding: launch.binding.clone(),
                probe: probe::ProbeTarget::Process(launch),
            })
        }
        Reach::Http {
            url,
            call_timeout,
            include_tools,
        } => Ok(Opened {
            session: Session::connect(&url, settings.bearer.clone(), call_timeout).await?,
            include_tools,
            binding: None,
            credential: None,
            probe: probe::ProbeTarget::Http {
                url,
                bearer: settings.bearer.clone(),
                call_timeout,
            },
        }),
    }
}

/// The credential `launch` gives its target, as its manifest resolved it
/// (a manifest may map the variable from another name), else from ecp's
/// own environment.
fn credential_of(launch: &Launch) -> Option<String> {
    let var = launch.binding.as_ref()?.token.as_ref()?;
    (launch.env.get(var).cloned()).or_else(|| std::env::var(var).ok())
}

/// The path of an upstream URL, ending in `/`, and the URL's origin.
fn split_upstream(url: &str) -> Result<(reqwest::Url, String), CheckError> {
    let parsed = crate::runtime::http::base_url(url).map_err(|rule| {
        CheckError::Settings(format!(
            "--upstream {}: {rule}",
            crate::text::outside::value(url)
        ))
    })?;
    let path = parsed.path().to_owned();
    let mut origin = parsed;
    origin.set_path("/");
    Ok((origin, path))
}

/// Why a recording call with `query` sent nothing to the upstream: the
/// target crashed (its stderr's line), or it took its endpoint from
/// elsewhere than `base_url_var`.
async fn unreached(
    opened: &Opened,
    query: &str,
    result: Result<rmcp::model::CallToolResult, session::CallError>,
    secrets: &secret::Secrets,
    base_url_var: &str,
) -> CheckError {
    // A failed call's stderr line may still be on its way.
    tokio::time::sleep(Duration::from_millis(50)).await;
    if let Some(crash) = crash::crash_line(&opened.session.stderr(), secrets) {
        return CheckError::Blocked(Blocked::with_help(
            format!(
                "the call with {query:?} failed in the target before it reached the upstream; its stderr says: {crash}"
            ),
            "fix the code its stderr names, then try the mapping on these words (`ecp call . WORDS`)".to_owned(),
        ));
    }
    let why = match result {
        Err(error) => secrets.redact(&error.to_string()),
        Ok(_) => "it answered without a request".into(),
    };
    CheckError::Blocked(Blocked::with_help(
        format!(
            "the call with {query:?} never reached the upstream: {}",
            crate::text::outside::line(&why, 500)
        ),
        format!(
            "the target must take its endpoint from {base_url_var} (set to the recording proxy)"
        ),
    ))
}

/// `--upstream`: starts the target against a recording proxy in front of
/// the real upstream, calls it once per query, and returns what passed,
/// with the credential the target was given (which no output may show).
async fn record(
    settings: &CheckSettings,
    url: &str,
    queries: &[String],
) -> Result<(cassette::Cassette, Option<String>), CheckError> {
    let (origin, base_path) = split_upstream(url)?;
    crate::runtime::install_tls_provider();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(CheckError::Client)?;
    let forward = std::sync::Arc::new(upstream::Forward { origin, client });
    let proxy = upstream::Upstream::try_start(move |_| upstream::Reply::Forward(forward.clone()))
        .await
        .map_err(|error| CheckError::Listen {
            what: "the recording proxy",
            error,
        })?;
    let opened = open(settings, &format!("{}{base_path}", proxy.base_url), None).await?;
    let Some(binding) = opened.binding.clone() else {
        opened.session.close().await;
        return Err(CheckError::Settings(
            "--upstream needs a target that takes its endpoint from a *_BASE_URL variable (a local extension, or -- CMD with --base-url-env) or from a configuration file (--config-file VAR=PATH)".into(),
        ));
    };
    let from_env = |var: &String| std::env::var(var).ok();
    let secret = (opened.credential.clone()).or_else(|| binding.token.as_ref().and_then(from_env));
    // The target's errors and the upstream's may echo it.
    let secrets = secret::Secrets::new(secret.as_deref());
    let mut exchanges = Vec::new();
    for query in queries {
        let before = proxy.exchanges().len();
        let result = opened
            .session
            .call(serde_json::json!({ "query": query }))
            .await;
        // The exchange is logged before its answer goes out; a request the
        // target sent without waiting may still be on its way.
        for _ in 0..20 {
            if proxy.exchanges().len() > before {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let new = proxy.exchanges().into_iter().skip(before);
        let new: Vec<_> = new.map(|exchange| (query.clone(), exchange)).collect();
        if new.is_empty() {
            let error = unreached(&opened, query, result, &secrets, &binding.base_url).await;
            opened.session.close().await;
            return Err(error);
        }
        if let Some(Err(why)) = new
            .iter()
            .map(|(_, e)| e.response.clone())
            .find(Result::is_err)
        {
            opened.session.close().await;
            return Err(CheckError::Blocked(Blocked::with_help(
                format!(
                    "{}: {}",
                    crate::text::outside::value(url),
                    secrets.redact(&why.to_string())
                ),
                format!(
                    "check that {} answers from this machine",
                    crate::text::outside::value(url)
                ),
            )));
        }
        exchanges.extend(new);
    }
    let inputs = record_inputs(&opened.session, &proxy).await;
    opened.session.close().await;
    let mut cassette =
        cassette::Cassette::from_exchanges(&base_path, &exchanges, secret.as_deref());
    cassette.add_inputs(&inputs, secret.as_deref());
    Ok((cassette, secret))
}

/// The profile's valid inputs sent through the target to the real
/// upstream: what the service answers each is replayed when
/// `valid-inputs` runs, so that a mapping that breaks the service's own
/// syntax with one of them fails there, named with the input. A call that
/// never reached the upstream, or that the upstream did not answer,
/// leaves nothing (the replay then answers with the baseline's answer).
async fn record_inputs(
    session: &Session,
    proxy: &upstream::Upstream,
) -> Vec<(String, String, upstream::Exchange)> {
    let Ok(embedded) = embedded::Embedded::get() else {
        return Vec::new();
    };
    let mut recorded = Vec::new();
    for (name, arguments) in &embedded.valid_inputs {
        let before = proxy.exchanges().len();
        let _ = session.call(arguments.clone()).await;
        for _ in 0..20 {
            if proxy.exchanges().len() > before {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let query = (arguments.get("query").and_then(serde_json::Value::as_str))
            .unwrap_or_default()
            .to_owned();
        recorded.extend(
            (proxy.exchanges().into_iter().skip(before))
                .filter(|exchange| exchange.response.is_ok())
                .map(|exchange| (query.clone(), name.clone(), exchange)),
        );
    }
    recorded
}

/// The answers the target's upstream gives during the run, the base path,
/// and the credential a recording gave the target.
async fn script(
    settings: &CheckSettings,
    embedded: &'static embedded::Embedded,
) -> Result<(suite::Script, String, Option<String>), CheckError> {
    match &settings.upstream {
        UpstreamSource::V1 => Ok((
            suite::Script::V1 {
                vectors: embedded.render_vectors.clone(),
            },
            "/".to_owned(),
            None,
        )),
        UpstreamSource::Record { url, queries, keep } => {
            if matches!(settings.target, Target::Url(_)) {
                return Err(CheckError::Settings(
                    "--upstream needs a target ecp starts (a folder, an archive or -- CMD), not --url".into(),
                ));
            }
            let (cassette, secret) = record(settings, url, queries).await?;
            if let Some(path) = keep {
                cassette.save(path)?;
                eprintln!(
                    "recorded {} exchange(s) into {}",
                    cassette.exchanges.len(),
                    path.display()
                );
            }
            let base = cassette.base_path.clone();
            Ok((suite::Script::Recorded(cassette), base, secret))
        }
        UpstreamSource::Cassette(path) => {
            if matches!(settings.target, Target::Url(_)) {
                return Err(CheckError::Settings(
                    "--cassette needs a target ecp starts (a folder, an archive or -- CMD), not --url".into(),
                ));
            }
            let cassette = cassette::Cassette::load(path)?;
            let base = cassette.base_path.clone();
            Ok((suite::Script::Recorded(cassette), base, None))
        }
    }
}

/// Starts the target and runs every check. `progress` sees each result as
/// it is decided. `Err` when the target cannot be started at all.
pub async fn run(
    settings: &CheckSettings,
    progress: suite::Progress<'_>,
) -> Result<CheckReport, CheckError> {
    let embedded = embedded::Embedded::get()?;
    let (script, base_path, recorded_secret) = script(settings, embedded).await?;
    let scripted = std::sync::Arc::new(suite::Scripted {
        script,
        seed: settings.seed,
        mutations: settings.mutations,
    });
    let upstream = suite::start_upstream(scripted.clone()).await?;
    let opened = open(
        settings,
        &format!("{}{base_path}", upstream.base_url),
        Some(TOKEN_CANARY),
    )
    .await?;
    let suite = Suite::new(
        embedded,
        &opened.session,
        opened.binding.is_some().then_some((&upstream, scripted)),
        opened.include_tools.clone(),
        Some(opened.probe.clone()),
        progress,
    )
    .with_secrets(secret::Secrets::new(
        (settings.bearer.iter().chain(&recorded_secret)).map(String::as_str),
    ))
    .with_credential((opened.binding.as_ref()).is_none_or(|b| b.token.is_some()))
    .with_lock(settings.lock.clone());
    let suite::Ran {
        checks,
        surface,
        revision: stateless,
        undecided,
        mapped,
    } = suite.run().await;
    let revisions: Vec<String> = opened
        .session
        .client
        .peer_info()
        .map(|info| info.protocol_version.to_string())
        .into_iter()
        .chain(stateless.map(str::to_owned))
        .collect();
    opened.session.close().await;
    let mut checks = checks;
    let suite_run = match &settings.conformance {
        // A revision the target does not speak binds it to nothing, as
        // the protocol checks of 2026-07-28 are not applicable to a
        // target that agreed on an older one.
        Some(asked) if !revisions.contains(&asked.revision) => {
            checks.extend(conformance::not_spoken(&asked.revision, &revisions));
            None
        }
        Some(asked) => {
            if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
                eprintln!(
                    "ecp check: running {} by {} against the target...",
                    conformance::install::SUITE,
                    asked.revision
                );
            }
            let ran = conformance::run(asked, &opened.probe).await?;
            checks.extend(conformance::judge(&ran));
            Some(ran)
        }
        None => None,
    };
    let mut report = CheckReport::of(&settings.target, checks, false);
    report.conformance = suite_run;
    report.revisions = revisions;
    // It may quote the target: shown as outside text, as reasons are.
    report.undecided = undecided.map(|why| crate::text::outside::line(&why, 2000));
    report.mapped = mapped;
    report.surface = surface;
    Ok(report)
}
