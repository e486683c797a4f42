//! `ecp serve`: the embedded runtime with a fixture or HTTP backend, on
//! stdio or (with `--listen`) as the remote Streamable HTTP adapter. The
//! runtime's [`Adapter`] reads the `--listen` flags and their `ECP_*`
//! variables, exactly as it does for every generated `dist/main`.

use std::io::IsTerminal;

use super::{Exit, Failure, Outcome, ServeArgs};
use crate::{
    providers::{
        fixture::FixtureCorpus,
        http::{HttpSearchConfig, HttpSearchProvider},
    },
    runtime::{Adapter, AdapterError, ProviderBudget},
};

const NAME: &str = "ecp serve";

/// Said on stderr when a person, not an MCP client, is on stdin.
fn terminal_hint(args: &ServeArgs) -> String {
    let backend = match &args.fixture {
        Some(path) => format!("--fixture {}", path.display()),
        None => "--http".to_owned(),
    };
    format!(
        "{NAME}: waiting for an MCP client on stdin (JSON-RPC, one message per line); Ctrl-D ends.\n\
         To try it by hand: ecp call \"deployment policy\" -- ecp serve {backend}"
    )
}

/// The `--listen` flags as the adapter reads them; their variables are the
/// adapter's to read.
fn remote_args(args: &ServeArgs) -> Vec<String> {
    let Some(listen) = &args.listen else {
        return Vec::new();
    };
    let mut out = vec!["--listen".to_owned(), listen.clone()];
    let mut push = |flag: &str, value: Option<String>| {
        if let Some(value) = value {
            out.push(flag.to_owned());
            out.push(value);
        }
    };
    push("--resource-url", args.resource_url.clone());
    for server in &args.authorization_server {
        push("--authorization-server", Some(server.clone()));
    }
    push("--jwks", args.jwks.clone());
    push(
        "--max-concurrent",
        args.max_concurrent.map(|n| n.to_string()),
    );
    push(
        "--max-body-bytes",
        args.max_body_bytes.map(|n| n.to_string()),
    );
    if args.no_auth {
        out.push("--no-auth".to_owned());
    }
    out
}

/// Serves until the input ends or SIGTERM; what stops it before serving
/// goes through the one exit mapping like every command: a command line or
/// a configuration it cannot use, or a server that cannot start, is
/// could-not-run (2).
pub fn run(args: ServeArgs) -> Outcome {
    let Some(budget) = ProviderBudget::from_millis(args.budget_ms) else {
        return Err(Failure::new(
            Exit::CouldNotRun,
            format!("--budget-ms {} is out of range", args.budget_ms),
        )
        .help(Some(
            "give the provider budget in milliseconds, from 1 to 600000 (reference: 5000)",
        )));
    };
    if args.listen.is_none() && std::io::stdin().is_terminal() {
        eprintln!("{}", terminal_hint(&args));
    }
    let adapter = Adapter::new(NAME, env!("CARGO_PKG_VERSION")).budget(budget);
    let remote = remote_args(&args);
    let served = match &args.fixture {
        Some(path) => adapter.try_run(remote, || FixtureCorpus::open(path)),
        None => adapter.try_run(remote, || {
            HttpSearchConfig::from_env(&args.base_url_env, &args.token_env)
                .map(HttpSearchProvider::new)
        }),
    };
    served.map(|()| Exit::Success).map_err(|error| {
        let help = match &error {
            AdapterError::Usage(_) => {
                "see `ecp serve --help` for the flags and their ECP_* variables"
            }
            AdapterError::Budget(_) => "see `ecp serve --help`",
            AdapterError::Provider(_) if args.fixture.is_some() => {
                "give --fixture a JSON array or JSON Lines file of items, or `example`"
            }
            AdapterError::Provider(_) => {
                "export the variables named by --base-url-env and --token-env before starting"
            }
            // `AdapterError` is non-exhaustive: a kind a later runtime adds
            // gets the general help.
            _ => "fix what it names (the address, the key set, the input) and start it again",
        };
        let message = match error {
            AdapterError::Provider(message) => message,
            other => other.to_string(),
        };
        Failure::new(Exit::CouldNotRun, message).help(Some(help))
    })
}
