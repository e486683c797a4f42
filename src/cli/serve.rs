//! `ecp serve`: the embedded runtime with a fixture or HTTP backend, on
//! stdio or (with `--listen`) as the remote Streamable HTTP adapter.

use std::{io::IsTerminal, process::ExitCode};

use super::ServeArgs;
use crate::{
    providers::{
        fixture::FixtureCorpus,
        http::{HttpSearchConfig, HttpSearchProvider},
    },
    runtime::{
        self, Provider, ProviderBudget, RuntimeConfig,
        remote::{self, RemoteConfig, RemoteSettings},
    },
};

const NAME: &str = "ecp serve";

fn fail(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("{NAME}: {message}");
    ExitCode::FAILURE
}

pub fn run(args: ServeArgs) -> ExitCode {
    let Some(budget) = ProviderBudget::from_millis(args.budget_ms) else {
        return fail("--budget-ms must be between 1 and 600000");
    };
    let runtime_config = RuntimeConfig {
        name: NAME.to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        budget,
    };
    let remote = match remote_config(&args) {
        Ok(remote) => remote,
        Err(error) => return fail(error),
    };
    if remote.is_none() && std::io::stdin().is_terminal() {
        eprintln!("{}", terminal_hint(&args));
    }
    let tokio = if remote.is_some() {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    };
    let tokio = match tokio {
        Ok(tokio) => tokio,
        Err(error) => return fail(format_args!("cannot start the async runtime: {error}")),
    };
    let code = match &args.fixture {
        Some(path) => match FixtureCorpus::open(path) {
            Ok(corpus) => tokio.block_on(serve(corpus, runtime_config, remote)),
            Err(error) => fail(error),
        },
        None => match HttpSearchConfig::from_env(&args.base_url_env, &args.token_env) {
            Ok(http) => {
                tokio.block_on(serve(HttpSearchProvider::new(http), runtime_config, remote))
            }
            Err(error) => fail(format_args!("configuration error: {error}")),
        },
    };
    // A blocking stdin read may still be parked; do not wait for it.
    tokio.shutdown_background();
    code
}

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

/// The remote adapter's configuration when `--listen` is given.
fn remote_config(args: &ServeArgs) -> Result<Option<RemoteConfig>, String> {
    let Some(listen) = &args.listen else {
        return Ok(None);
    };
    let settings = RemoteSettings {
        resource_url: args.resource_url.clone(),
        authorization_servers: args
            .authorization_server
            .iter()
            .flat_map(|list| remote::split_list(list))
            .collect(),
        jwks: args.jwks.clone(),
        no_auth: args.no_auth,
        max_concurrent: args.max_concurrent,
        max_body_bytes: args.max_body_bytes,
        ..RemoteSettings::new(listen)
    };
    settings
        .validate()
        .map(Some)
        .map_err(|error| format!("configuration error: {error}"))
}

async fn serve<P: Provider>(
    provider: P,
    config: RuntimeConfig,
    remote: Option<RemoteConfig>,
) -> ExitCode {
    let served = match remote {
        None => runtime::serve_stdio(provider, config).await,
        Some(remote) => remote::serve_http_until_signal(provider, config, remote).await,
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => fail(error),
    }
}
