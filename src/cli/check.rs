//! `ecp check` and `ecp call`: the target from flags, the run on a Tokio
//! runtime, progress on a terminal, and the report.

use std::{io::IsTerminal, path::PathBuf};

use anstyle::AnsiColor;

use super::{CallArgs, CheckArgs, CheckFormat, ColorChoice, Exit, Failure, Outcome, TargetArgs};
use crate::{
    check::{self, CheckReport, CheckResult, CheckSettings, Status, Verdict, target::Target},
    providers::fixture::FixtureCorpus,
    surface::ToolsLock,
};

fn settings(path: Option<PathBuf>, args: &TargetArgs) -> Result<CheckSettings, Failure> {
    let target = match (path, &args.url, args.command.is_empty()) {
        (None, None, false) => Target::Command(args.command.clone()),
        (None, Some(url), true) => Target::Url(url.clone()),
        (path, None, true) => Target::Extension(path.unwrap_or_else(|| PathBuf::from("."))),
        _ => {
            return Err(could_not_run(
                "give one target: a PATH, --url URL, or -- CMD ARGS...",
            ));
        }
    };
    let bearer = match (&target, &args.token_env) {
        (Target::Url(_), Some(name)) => Some(std::env::var(name).map_err(|_| {
            could_not_run(&format!(
                "{name} is not set; it should hold the bearer token for --url"
            ))
        })?),
        _ => None,
    };
    let config_file = match &args.config_file {
        Some(spec) => Some(
            check::config_file::ConfigFile::open(
                spec,
                args.endpoint_pointer.as_deref(),
                args.token_env.as_deref(),
            )
            .map_err(blocked)?,
        ),
        None => None,
    };
    Ok(CheckSettings {
        config_file,
        base_url_env: args.base_url_env.clone(),
        token_env: args.token_env.clone(),
        bearer,
        ..CheckSettings::for_target(target)
    })
}

/// The settings for a target and a runtime to run against it; what stops
/// the command (exit 2) otherwise.
fn prepare(
    path: Option<PathBuf>,
    args: &TargetArgs,
) -> Result<(CheckSettings, tokio::runtime::Runtime), Failure> {
    // Ctrl-C stops the build of a source folder too (cargo runs in a group
    // of its own, see `crate::children`).
    crate::children::watch_interrupts();
    let settings = settings(path, args)?;
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| could_not_run(&format!("cannot start the async runtime: {e}")))?;
    Ok((settings, tokio))
}

/// Runs `work` (which starts targets) to its end or to Ctrl-C; either way
/// nothing a target started is left running ([`crate::children`]).
fn run_guarded<F: std::future::Future>(
    tokio: tokio::runtime::Runtime,
    work: F,
) -> Result<F::Output, Failure> {
    crate::children::adopt_orphans();
    let finished = tokio.block_on(async {
        // SIGTERM stops the run as Ctrl-C does (the watcher of
        // `crate::children` takes it too, so it no longer ends ecp).
        #[cfg(unix)]
        let mut terminate =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        let terminated = async {
            #[cfg(unix)]
            if let Some(signal) = terminate.as_mut() {
                signal.recv().await;
                return;
            }
            std::future::pending::<()>().await
        };
        tokio::select! {
            output = work => Some(output),
            _ = tokio::signal::ctrl_c() => None,
            () = terminated => None,
        }
    });
    // Dropping the runtime drops the sessions, which kill their groups.
    tokio.shutdown_background();
    crate::children::kill_adopted();
    finished
        .filter(|_| !crate::children::interrupted())
        .ok_or_else(|| {
            Failure::new(
                Exit::Interrupted,
                "interrupted: the target and every process it started were stopped",
            )
        })
}

fn could_not_run(message: &str) -> Failure {
    Failure::new(Exit::CouldNotRun, message)
}

fn blocked(blocked: check::Blocked) -> Failure {
    could_not_run(&blocked.said).help(blocked.help)
}

fn status_label(status: Status, color: bool) -> String {
    let (text, style) = match status {
        Status::Pass => ("pass", AnsiColor::Green.on_default().bold()),
        Status::Warn => ("warn", AnsiColor::Magenta.on_default().bold()),
        Status::Fail => ("FAIL", AnsiColor::Red.on_default().bold()),
        Status::NotApplicable => ("n/a", AnsiColor::Blue.on_default()),
        Status::NotExercised => ("not exercised", AnsiColor::Yellow.on_default().bold()),
    };
    let text = format!("{text:<13}");
    if color {
        format!("{style}{text}{style:#}")
    } else {
        text
    }
}

fn line(result: &CheckResult, color: bool) -> String {
    format!(
        "  {}  {:<24} {} ({})",
        status_label(result.status, color),
        result.id,
        result.title,
        result.reason
    )
}

/// `--record PATH` and `--write-lock PATH` are checked by the one write
/// rule before anything runs: a FIFO, a device, a link or a folder there is
/// refused; a regular file is replaced once the run has what goes there.
fn check_destinations(args: &CheckArgs) -> Result<(), Failure> {
    for (flag, path) in [
        ("--record", &args.record),
        ("--write-lock", &args.write_lock),
    ] {
        if let Some(path) = path
            && let Err(problem) = crate::writes::Place::destination(path).check_file()
        {
            let help = problem.help();
            return Err(could_not_run(&format!("{flag}: {problem}")).help(help));
        }
    }
    Ok(())
}

/// `--lock FILE`, read and checked before the target starts.
fn read_lock(path: Option<&std::path::Path>) -> Result<Option<ToolsLock>, Failure> {
    let Some(path) = path else {
        return Ok(None);
    };
    ToolsLock::read(path).map(Some).map_err(|error| {
        could_not_run(&format!("--lock: {error}")).help(Some(
            "pin a reviewed server's tools with `ecp check ... --write-lock tools.lock`",
        ))
    })
}

/// `--write-lock FILE`: the tool surface the target listed, pinned.
fn write_lock(path: &std::path::Path, report: &CheckReport) -> Result<(), Failure> {
    let Some(surface) = &report.surface else {
        return Err(could_not_run(
            "--write-lock: the target's tools/list could not be pinned (it failed, two tools share a name, or a definition is nested past 256 levels)",
        ));
    };
    crate::writes::Place::destination(path)
        .write(surface.to_text().as_bytes())
        .map_err(|problem| {
            let help = problem.help();
            could_not_run(&format!("--write-lock: {problem}")).help(help)
        })?;
    eprintln!(
        "ecp check: pinned {} tool(s) into {}",
        surface.tools.len(),
        path.display()
    );
    Ok(())
}

/// `--conformance`: the baseline read and the suite installed (once)
/// before the target starts.
fn prepare_conformance(
    args: &CheckArgs,
) -> Result<Option<check::conformance::Conformance>, Failure> {
    use check::conformance::{Baseline, Conformance, install, profile_baseline};
    let Some(revision) = &args.conformance else {
        return Ok(None);
    };
    if args.target.url.is_some() && args.target.token_env.is_some() {
        return Err(
            could_not_run("--conformance: the official suite sends no bearer token").help(Some(
                "run it against a loopback instance without authorization (`dist/main --listen 127.0.0.1:PORT --no-auth`), or against the extension's folder or archive (through ecp's stdio shim)",
            )),
        );
    }
    let baseline = match &args.conformance_baseline {
        Some(path) => {
            let shown = path.display().to_string();
            let text =
                crate::files::read_text(path, None, check::conformance::baseline::MAX_BYTES as u64)
                    .map_err(|error| {
                        could_not_run(&format!("--conformance-baseline {shown}: {error}"))
                    })?;
            Baseline::parse(&shown, &text).map_err(|error| {
                could_not_run(&format!("--conformance-baseline: {error}")).help(Some(
                    "a baseline is the suite's --expected-failures YAML: `server:`, then `- scenario:check` entries, each under a `# why` comment",
                ))
            })?
        }
        None => profile_baseline(revision).ok_or_else(|| {
            could_not_run(&format!(
                "ecp holds no baseline for {revision}: a defect of this build"
            ))
        })?,
    };
    let folder = install::folder().ok_or_else(|| {
        could_not_run("no folder for the conformance suite: HOME is not set").help(Some(format!(
            "set {} to a folder ecp may write",
            install::DIR_ENV
        )))
    })?;
    // Ctrl-C during the install stops npm too, and its staging folder is
    // removed ([`crate::children`]).
    crate::children::watch_interrupts();
    let installed = install::ensure(&folder, &|said| eprintln!("ecp check: {said}"));
    if crate::children::interrupted() {
        return Err(Failure::new(
            Exit::Interrupted,
            "interrupted: npm was stopped and nothing was installed",
        ));
    }
    let installed = installed.map_err(blocked)?;
    Ok(Some(Conformance {
        revision: revision.clone(),
        installed,
        baseline,
    }))
}

pub fn run_check(args: CheckArgs, color: ColorChoice) -> Outcome {
    check_destinations(&args)?;
    let lock = read_lock(args.lock.as_deref())?;
    let conformance = prepare_conformance(&args)?;
    let (mut settings, tokio) = prepare(args.path, &args.target)?;
    settings.lock = lock;
    settings.conformance = conformance;
    settings.seed = args.seed;
    settings.mutations = args.mutations;
    settings.upstream = match (args.upstream, args.cassette) {
        (Some(url), _) => check::UpstreamSource::Record {
            url,
            queries: if args.queries.is_empty() {
                vec!["ecp probe".to_owned()]
            } else {
                args.queries
            },
            keep: args.record,
        },
        (None, Some(path)) => check::UpstreamSource::Cassette(path),
        (None, None) => check::UpstreamSource::V1,
    };
    let human = args.format == CheckFormat::Human;
    let progress_color = color.for_stderr();
    let show_progress = human && std::io::stderr().is_terminal();
    let progress: check::suite::Progress = show_progress.then(|| {
        Box::new(move |result: &CheckResult| eprintln!("{}", line(result, progress_color)))
            as Box<dyn Fn(&CheckResult)>
    });
    if show_progress {
        eprintln!("ecp check: starting the target and a scripted upstream on 127.0.0.1...");
    }
    let run = async {
        match args.hook {
            true => check::hook::run(&settings, args.repository_root.as_deref(), progress).await,
            false => check::run(&settings, progress).await,
        }
    };
    let report = match run_guarded(tokio, run)? {
        Ok(report) => report,
        Err(error) => return Err(could_not_run(&error.to_string()).help(error.help())),
    };
    if let Some(path) = &args.write_lock {
        write_lock(path, &report)?;
    }
    if human {
        let color = color.for_stdout();
        println!("ecp check: {}", report.target);
        if !report.hook {
            println!("protocol: {}", revisions_line(&report));
        }
        if let Some(mapped) = &report.mapped {
            println!("{}", mapped_lines(mapped));
        }
        for result in &report.checks {
            println!("{}", line(result, color));
        }
        if let Some(suite) = &report.conformance {
            println!("{}", suite_lines(suite));
        }
        println!("{}", summary(&report));
    } else {
        println!("{}", crate::text::outside::json_report(&report));
    }
    exit_of(&report, &settings.target)
}

/// The official suite's run: what it was, its counts, and every check
/// that needs a look (failed, warned, stale); `--format json` lists all.
fn suite_lines(suite: &check::conformance::ConformanceRun) -> String {
    use check::conformance::{SuiteStatus, Via};
    let via = match suite.via {
        Via::Shim => "stdio, through ecp's loopback HTTP shim",
        Via::Http => "HTTP",
    };
    let mut text = format!(
        "{} by {} ({via}; baseline: {}):",
        suite.suite, suite.revision, suite.baseline
    );
    let order = [SuiteStatus::Fail, SuiteStatus::Warn, SuiteStatus::Stale];
    let rest = [
        SuiteStatus::Pass,
        SuiteStatus::Expected,
        SuiteStatus::Shim,
        SuiteStatus::Info,
        SuiteStatus::Skipped,
    ];
    let mut counts = Vec::new();
    for status in order.iter().chain(&rest) {
        let n = suite.checks.iter().filter(|c| c.status == *status).count();
        if n > 0 {
            counts.push(format!("{n} {}", status.label()));
        }
    }
    text.push_str(&format!(" {}", counts.join(", ")));
    for status in order {
        for check in suite.checks.iter().filter(|c| c.status == status) {
            text.push_str(&format!(
                "\n  {:<8} {} ({})",
                status.label(),
                check.id,
                check.reason
            ));
        }
    }
    text
}

/// What the mapping made of a real answer, already outside text: a line
/// that says how many items, then one per item (its id and the start of
/// its content).
fn mapped_lines(mapped: &check::suite::Mapped) -> String {
    let mut text = match mapped.items.len() {
        0 => format!(
            "mapped: no item kept of the upstream's answer to \"{}\"",
            mapped.query
        ),
        1 => format!(
            "mapped: 1 item of the upstream's answer to \"{}\":",
            mapped.query
        ),
        n => format!(
            "mapped: {n} items of the upstream's answer to \"{}\":",
            mapped.query
        ),
    };
    for item in &mapped.items {
        text.push_str(&format!("\n  {}: {}", item.id, item.content));
    }
    text
}

/// The last line of a human report: the counts and the verdict.
fn summary(report: &check::CheckReport) -> String {
    let contract = match report.hook {
        true => "Qwen's Auto Recall hook contract",
        false => "the External Context MCP Profile v1",
    };
    let verdict = match report.verdict {
        Verdict::DoesNotConform => format!("does NOT conform to {contract}"),
        Verdict::Conforms => format!("conforms to {contract}"),
        Verdict::NotEstablished => format!(
            "conformance to {contract} is NOT established: the {} checks were not exercised",
            words(&report.unexercised_groups)
        ),
    };
    format!(
        "{} passed, {} warned, {} failed, {} not applicable, {} not exercised: {verdict}",
        report.passed, report.warned, report.failed, report.not_applicable, report.not_exercised
    )
}

/// 0 conforms, 1 does not, 2 not established (what was asked, a verdict,
/// could not be given: the message says what would give it).
fn exit_of(report: &check::CheckReport, target: &Target) -> Outcome {
    match (report.verdict, &report.undecided) {
        (Verdict::Conforms, _) => Ok(Exit::Success),
        (Verdict::DoesNotConform, _) => Ok(Exit::No),
        (Verdict::NotEstablished, Some(why)) => Err(could_not_run(&format!(
            "the checks through the upstream could not run, so conformance is not established: {why}"
        ))
        .help(Some(if why.starts_with(check::suite::NO_ITEM_KEPT) {
            "the mapping must keep the items of a real answer: try it on words the service finds (`ecp call . WORDS` shows what it makes of them), read each field as the service writes it (a number is not a string), then record again (`--upstream URL --query WORDS --record FILE`)"
        } else {
            "the target must get a 2xx answer it reads through its upstream: record again (`--upstream URL --query WORDS --record FILE`) with words the service finds, and try the mapping on them (`ecp call . WORDS`)"
        }))),
        (Verdict::NotEstablished, None) => {
            let unexercised: Vec<&str> = (report.checks.iter())
                .filter(|c| c.status == Status::NotExercised)
                .map(|c| c.id)
                .collect();
            let help: Vec<String> = (report.to_exercise().into_iter())
                .map(|how| exercise_help(how, target))
                .collect();
            Err(could_not_run(&format!(
                "conformance is not established: {} applicable checks were not exercised ({}: {})",
                unexercised.len(),
                words(&report.unexercised_groups),
                unexercised.join(", ")
            ))
            .help(Some(help.join("\n  = help: "))))
        }
    }
}

/// How to exercise what was not, as a command for `target` when it is one.
fn exercise_help(how: &str, target: &Target) -> String {
    let on = match target {
        Target::Extension(path) => format!(
            "ecp check {}",
            crate::text::outside::value(&path.display().to_string())
        ),
        Target::Command(_) | Target::Url(_) => return how.to_owned(),
    };
    if how == check::catalogue::exercise::ANOTHER_API {
        format!(
            "a mapping of another API is exercised against that API: `{on} --upstream URL --query WORDS --record {CASSETTE}` (live, recorded), then `{on} --cassette {CASSETTE}` (offline: commit the cassette, the release workflow checks with it)"
        )
    } else {
        how.to_owned()
    }
}

/// Where a generated extension keeps its cassette (its release workflow
/// checks with it).
const CASSETTE: &str = "tests/upstream.cassette.json";

/// "a", "a and b", "a, b and c".
fn words(items: &[&str]) -> String {
    match items {
        [] => "no".to_owned(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// Whether `value` names a folder or archive rather than a query.
fn looks_like_path(value: &str) -> bool {
    value == "."
        || value.contains('/')
        || value.ends_with(".tar.gz")
        || value.ends_with(".zip")
        || std::path::Path::new(value).is_dir()
}

/// (path, query) from `ecp call`'s one or two positional arguments.
fn call_positionals(args: &CallArgs) -> Result<(Option<PathBuf>, String), Failure> {
    let elsewhere = args.target.url.is_some() || !args.target.command.is_empty();
    match (&args.first, &args.second) {
        (Some(path), Some(query)) if !elsewhere => Ok((Some(PathBuf::from(path)), query.clone())),
        (Some(_), Some(_)) => Err(could_not_run(
            "give one target: a PATH, --url URL or -- CMD, and then only the query",
        )
        .help(Some(
            "ecp call --url https://context.example.com/mcp \"deployment policy\"",
        ))),
        (Some(only), None) if !elsewhere && looks_like_path(only) => Err(could_not_run(
            &format!("missing the query: `{only}` is the extension; the query comes after it"),
        )
        .help(Some(format!("ecp call {only} \"deployment policy\"")))),
        (Some(query), None) => Ok((None, query.clone())),
        (None, _) => Err(could_not_run("missing the query").help(Some(
            "ecp call . \"deployment policy\" (add --fixture example to try it without a live endpoint)",
        ))),
    }
}

pub fn run_call(args: CallArgs) -> Outcome {
    let (path, query) = call_positionals(&args)?;
    let fixture = match &args.fixture {
        None => None,
        Some(spec) => match FixtureCorpus::open(spec) {
            Ok(corpus) => Some(corpus),
            Err(error) => return Err(could_not_run(&error.to_string())),
        },
    };
    let cassette = match &args.cassette {
        None => None,
        Some(path) => match check::cassette::Cassette::load(path) {
            Ok(cassette) => Some(cassette),
            Err(error) => return Err(could_not_run(&error.to_string()).help(error.help())),
        },
    };
    let (settings, tokio) = prepare(path, &args.target)?;
    let outcome = run_guarded(tokio, async {
        let served = match (fixture, cassette) {
            (Some(corpus), _) => Some(check::CallUpstream::fixture(corpus).await?),
            (None, Some(cassette)) => Some(check::CallUpstream::cassette(cassette).await?),
            (None, None) => None,
        };
        check::call_once(&settings, &query, served.as_ref()).await
    })?;
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(error) => return Err(could_not_run(&error.to_string()).help(error.help())),
    };
    let result = &outcome.result;
    let failed = result.is_error == Some(true);
    match (&result.structured_content, failed) {
        (Some(structured), false) => {
            println!("{}", crate::text::outside::json_report(structured));
        }
        _ => {
            // A failure's text is the server's: shown, not obeyed.
            for block in &result.content {
                if let Some(text) = block.as_text() {
                    println!("{}", crate::text::outside::block(&text.text, 200, 4000));
                }
            }
        }
    }
    if failed {
        // The stable error says nothing on purpose; a local server's own
        // redacted line says which failure it was.
        match outcome.stderr.as_deref().map(str::trim_end) {
            None => {}
            Some("") => eprintln!("the call failed; the server wrote nothing to stderr"),
            Some(stderr) => {
                eprintln!("the call failed; the server's stderr said:");
                let shown = crate::text::outside::block(
                    stderr,
                    crate::text::outside::BLOCK_LINES,
                    crate::text::outside::LINE_CHARS,
                );
                for line in shown.lines() {
                    eprintln!("    {line}");
                }
            }
        }
        Ok(Exit::No)
    } else {
        Ok(Exit::Success)
    }
}

/// The revisions a target was judged by, in words: the handshake's and the
/// stateless one; "not" only when the protocol checks found it does not
/// speak 2026-07-28, else that it is not established.
fn revisions_line(report: &check::CheckReport) -> String {
    let stateless = check::suite::STATELESS;
    match report.revisions.as_slice() {
        [] => "no revision agreed".to_owned(),
        [handshake, modern, ..] => {
            format!("{handshake} (initialize) and {modern} (server/discover)")
        }
        [handshake] => {
            let older = report.checks.iter().any(|c| {
                c.id == "discover"
                    && c.status == check::suite::Status::NotApplicable
                    && c.reason.starts_with("the target speaks ")
            });
            if older {
                format!("{handshake} (initialize); not {stateless}")
            } else {
                format!(
                    "{handshake} (initialize); {stateless} not established (see the discover check)"
                )
            }
        }
    }
}
