//! `ecp serve`: the embedded runtime with a fixture or HTTP backend, on
//! stdio or (with `--listen`) as the remote Streamable HTTP adapter. The
//! runtime's [`Adapter`] reads the `--listen` flags and their `ECP_*`
//! variables, exactly as it does for every generated `dist/main`.

use std::{io::IsTerminal, process::ExitCode};

use super::ServeArgs;
use crate::{
    providers::{
        fixture::FixtureCorpus,
        http::{HttpSearchConfig, HttpSearchProvider},
    },
    runtime::{Adapter, ProviderBudget},
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

pub fn run(args: ServeArgs) -> ExitCode {
    let Some(budget) = ProviderBudget::from_millis(args.budget_ms) else {
        eprintln!("{NAME}: --budget-ms must be between 1 and 600000");
        return ExitCode::FAILURE;
    };
    if args.listen.is_none() && std::io::stdin().is_terminal() {
        eprintln!("{}", terminal_hint(&args));
    }
    let adapter = Adapter::new(NAME, env!("CARGO_PKG_VERSION")).budget(budget);
    let remote = remote_args(&args);
    match &args.fixture {
        Some(path) => adapter.run(remote, || FixtureCorpus::open(path)),
        None => adapter.run(remote, || {
            HttpSearchConfig::from_env(&args.base_url_env, &args.token_env)
                .map(HttpSearchProvider::new)
        }),
    }
}
