//! `ecp new`: gather the settings (flags, prompts on a terminal, defaults
//! with `--yes`), render, write, and say what to do next.

use std::{io::IsTerminal, path::PathBuf};

use dialoguer::{Input, Select, theme::ColorfulTheme};

use super::{Exit, Failure, NewArgs, Outcome, TemplateChoice};
use crate::scaffold::{self, NewSettings, ScaffoldError, Template};

/// A refusal: the name, a value or the target folder is not usable.
fn fail(error: &ScaffoldError) -> Failure {
    // A place the write rule refuses is input ecp cannot use (exit 2).
    let exit = match error {
        ScaffoldError::Unsafe(_) => Exit::CouldNotRun,
        _ => Exit::No,
    };
    Failure::new(exit, error).help(error.help())
}

/// A refusal of the flags together (exit 1).
fn refused(message: &str) -> Failure {
    Failure::new(Exit::No, message)
}

/// A prompt that could not be shown or read.
fn prompt_failed(error: dialoguer::Error) -> Failure {
    refused(&format!("prompt failed: {error}"))
}

/// Asks for a line, re-asking until `check` accepts it (its error is what
/// the prompt shows); Enter takes `default`, when there is one.
fn ask<E: std::fmt::Display>(
    prompt: &str,
    default: Option<String>,
    check: impl Fn(&str) -> Result<(), E>,
) -> Result<String, Failure> {
    let theme = ColorfulTheme::default();
    let mut input = Input::<String>::with_theme(&theme).with_prompt(prompt);
    if let Some(default) = default {
        input = input.default(default);
    }
    input
        .validate_with(|value: &String| check(value))
        .interact_text()
        .map_err(prompt_failed)
}

/// Why a prompt refuses an endpoint.
#[derive(Debug, thiserror::Error)]
enum EndpointRefused {
    #[error(transparent)]
    Rule(#[from] ScaffoldError),
    #[error("{0} is a reserved domain; give the endpoint your service is deployed at")]
    Reserved(String),
}

/// The endpoint a prompt accepts: an https URL that is not a placeholder.
fn real_endpoint(value: &str) -> Result<(), EndpointRefused> {
    scaffold::check_endpoint(value)?;
    match crate::lint::manifest::reserved_domain(value) {
        Some(domain) => Err(EndpointRefused::Reserved(domain.to_string())),
        None => Ok(()),
    }
}

fn settings(args: &NewArgs, interactive: bool) -> Result<NewSettings, Failure> {
    let template = match (args.template, interactive) {
        (Some(TemplateChoice::Local), _) => Template::Local,
        (Some(TemplateChoice::LocalTs), _) => Template::LocalTs,
        (Some(TemplateChoice::Remote), _) => Template::Remote,
        (None, false) => Template::Local,
        (None, true) => {
            let choice = Select::with_theme(&ColorfulTheme::default())
                .with_prompt("Template")
                .items([
                    "local    - a Rust adapter crate for your REST API (dist/main)",
                    "local-ts - a TypeScript adapter for your REST API, bundled into dist/main.js",
                    "remote   - a manifest for your own Streamable HTTP MCP endpoint",
                ])
                .default(0)
                .interact()
                .map_err(prompt_failed)?;
            [Template::Local, Template::LocalTs, Template::Remote][choice.min(2)]
        }
    };
    let mut settings = NewSettings::with_defaults(&args.name, template);
    settings.description = match (&args.description, interactive) {
        (Some(description), _) => description.clone(),
        (None, false) => settings.description,
        (None, true) => ask(
            "Description",
            Some(settings.description),
            scaffold::check_description,
        )?,
    };
    if template != Template::Remote {
        settings.env_prefix = match (&args.env_prefix, interactive) {
            (Some(prefix), _) => prefix.clone(),
            (None, false) => settings.env_prefix,
            (None, true) => ask(
                "Environment variable prefix",
                Some(settings.env_prefix),
                scaffold::check_env_prefix,
            )?,
        };
    }
    if template == Template::Remote {
        settings.endpoint = Some(match (&args.endpoint, interactive) {
            (Some(endpoint), _) => endpoint.clone(),
            (None, false) => settings.endpoint.unwrap_or_default(),
            // No default: the one `--yes` takes is a placeholder.
            (None, true) => ask(
                "Endpoint (https, where your MCP service is deployed)",
                None,
                real_endpoint,
            )?,
        });
    } else if args.endpoint.is_some() {
        return Err(refused("--endpoint applies to --template remote only"));
    }
    if args.server && template != Template::Local {
        return Err(refused(
            "--server applies to --template local only (the Rust adapter a remote endpoint runs; `ecp new NAME-adapter --server`)",
        ));
    }
    settings.server = args.server;
    if args.auth != crate::scaffold::Auth::Bearer && template == Template::Remote {
        return Err(refused(
            "--auth applies to the local templates (a remote extension's endpoint speaks OAuth)",
        ));
    }
    settings.auth = args.auth.clone();
    Ok(settings)
}

/// What to run after `ecp new`, in order: command and comment.
fn next_steps(settings: &NewSettings) -> Vec<(String, &'static str)> {
    match settings.template {
        Template::Local => vec![
            (
                "$EDITOR src/provider.rs".into(),
                "map your search API to profile items (as written it speaks V1)",
            ),
            ("cargo test".into(), "the contract vectors and your mapping"),
            ("ecp lint .".into(), "the pre-publish gate"),
            (
                "ecp package".into(),
                "build and write dist/*.tar.gz, *.zip, SHA256SUMS",
            ),
            ("ecp check .".into(), "conformance, faults included"),
            (
                "ecp check . --upstream URL --query WORDS --record tests/upstream.cassette.json"
                    .into(),
                "once it maps your API: proven against it, its answers kept for the tests",
            ),
            (
                "ecp call . \"deployment policy\" --fixture example".into(),
                "one call from ecp's example corpus, while it speaks V1",
            ),
            (
                "ecp try".into(),
                "into Qwen Code: installs this machine's archive",
            ),
        ],
        Template::LocalTs => vec![
            (
                "$EDITOR src/provider.ts".into(),
                "map your search API to profile items (as written it speaks V1)",
            ),
            (
                "npm ci && npm test".into(),
                "the contract vectors and your mapping",
            ),
            (
                "npm run build".into(),
                "dist/main.js, one self-contained file",
            ),
            ("ecp lint .".into(), "the pre-publish gate"),
            (
                "ecp package".into(),
                "npm ci, npm run build, then release/{linux,darwin,win32}.<name>.tar.gz",
            ),
            ("ecp check .".into(), "conformance, faults included"),
            (
                "ecp check . --upstream URL --query WORDS --record tests/upstream.cassette.json"
                    .into(),
                "once it maps your API: proven against it, its answers kept for the tests",
            ),
            (
                "ecp call . \"deployment policy\" --fixture example".into(),
                "one call from ecp's example corpus, while it speaks V1",
            ),
            (
                "ecp try".into(),
                "into Qwen Code: installs the bundle's archive",
            ),
        ],
        Template::Remote => remote_steps(settings.endpoint.as_deref().unwrap_or("")),
    }
}

/// The remote template's steps; with a placeholder endpoint (`--yes`
/// without `--endpoint`) the first is to set the real one, and the check
/// names `$ENDPOINT` rather than a URL that resolves nowhere.
fn remote_steps(endpoint: &str) -> Vec<(String, &'static str)> {
    let placeholder = crate::lint::manifest::reserved_domain(endpoint).is_some();
    let mut steps = Vec::new();
    if placeholder {
        steps.push((
            "$EDITOR qwen-extension.json".into(),
            "set httpUrl and oauth.audiences to your deployed endpoint",
        ));
    }
    steps.push(("ecp lint .".into(), "the pre-publish gate"));
    steps.push((
        "ecp package".into(),
        "dist/{linux,darwin,win32}.<name>.tar.gz and SHA256SUMS",
    ));
    let url = if placeholder {
        "\"$ENDPOINT\"".to_owned()
    } else {
        crate::qwen::shell_word(std::path::Path::new(endpoint))
    };
    steps.push((
        format!("ecp check --url {url} --token-env TOKEN"),
        "once it runs (README.md), with an access token in TOKEN",
    ));
    steps.push(("ecp try".into(), "into Qwen Code"));
    steps
}

/// Writes the tree and the client manifests `--clients` asks for into
/// `dir`; the manifests written. Their places pass the one write rule
/// before anything is written (a linked `.claude-plugin/` in a folder
/// given with --force).
fn write_project(
    dir: &std::path::Path,
    files: &[scaffold::GeneratedFile],
    args: &NewArgs,
) -> Result<Vec<&'static str>, Failure> {
    for client in &args.clients {
        if let Err(problem) = crate::channels::client_place(dir, *client).check_file() {
            let help = problem.help();
            return Err(Failure::new(Exit::CouldNotRun, problem).help(help));
        }
    }
    scaffold::write(dir, files, args.force).map_err(|error| fail(&error))?;
    match crate::channels::write_clients(dir, &args.clients) {
        Ok(written) => Ok(written),
        Err(crate::channels::ClientsError::Write(problem)) => {
            let help = problem.help();
            Err(Failure::new(Exit::CouldNotRun, problem).help(help))
        }
        Err(error) => Err(Failure::new(Exit::No, error)),
    }
}

pub fn run(args: NewArgs) -> Outcome {
    // The name is checked before anything is asked.
    if let Err(error) = scaffold::check_name(&args.name) {
        return Err(fail(&error));
    }
    let remote = args.template == Some(TemplateChoice::Remote);
    if remote && args.clients.contains(&crate::channels::Client::Mcpb) {
        return Err(Failure::new(
            Exit::No,
            "an MCP Bundle carries a local server: --clients mcpb is for the local and local-ts templates (a remote extension reaches the registry through `ecp package --registry`)",
        ));
    }
    let interactive = !args.yes && std::io::stdin().is_terminal();
    let settings = settings(&args, interactive)?;
    let files = match scaffold::plan(&settings) {
        Ok(files) => files,
        Err(error) => return Err(fail(&error)),
    };
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(&settings.name));
    let clients = write_project(&dir, &files, &args)?;
    let kind = match settings.template {
        Template::Local => "local adapter",
        Template::LocalTs => "local TypeScript adapter",
        Template::Remote => "remote manifest",
    };
    println!(
        "Created {} ({kind}) in {}: {} files",
        settings.name,
        dir.display(),
        files.len() + clients.len()
    );
    if !clients.is_empty() {
        println!(
            "Client manifests (derived from qwen-extension.json; `ecp package --clients` writes them again): {}",
            clients.join(", ")
        );
    }
    println!();
    println!("Next:");
    println!("  cd {}", dir.display());
    let steps = next_steps(&settings);
    let width = steps.iter().map(|(c, _)| c.len()).max().unwrap_or(0);
    for (command, comment) in steps {
        println!("  {command:<width$}   # {comment}");
    }
    if let Some(endpoint) = settings
        .endpoint
        .as_deref()
        .filter(|e| crate::lint::manifest::reserved_domain(e).is_some())
    {
        println!();
        println!(
            "Before release, give the endpoint: httpUrl is {endpoint}, a placeholder under a reserved domain, which `ecp lint` and `ecp package` refuse (remote-placeholder). Run `ecp new {} --template remote --endpoint URL --force`, or edit httpUrl and oauth.audiences in qwen-extension.json.",
            settings.name
        );
    }
    if settings.template != Template::Remote {
        println!();
        println!(
            "Against your own service: export {0}_BASE_URL=https://... {0}_TOKEN=..., then `ecp call . \"deployment policy\"`.",
            settings.env_prefix
        );
    }
    Ok(Exit::Success)
}
