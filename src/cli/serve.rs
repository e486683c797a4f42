//! `ecp serve`: the embedded stdio runtime with a fixture or HTTP backend.

use std::process::ExitCode;

use super::ServeArgs;
use crate::{
    providers::{
        fixture::FixtureCorpus,
        http::{HttpSearchConfig, HttpSearchProvider},
    },
    runtime::{self, Provider, ProviderBudget, RuntimeConfig},
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
    let tokio = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(tokio) => tokio,
        Err(error) => return fail(format_args!("cannot start the async runtime: {error}")),
    };
    let code = match &args.fixture {
        Some(path) => match FixtureCorpus::load(path) {
            Ok(corpus) => tokio.block_on(serve(corpus, runtime_config)),
            Err(error) => fail(error),
        },
        None => match HttpSearchConfig::from_env(&args.base_url_env, &args.token_env) {
            Ok(http) => tokio.block_on(serve(HttpSearchProvider::new(http), runtime_config)),
            Err(error) => fail(format_args!("configuration error: {error}")),
        },
    };
    // A blocking stdin read may still be parked; do not wait for it.
    tokio.shutdown_background();
    code
}

async fn serve<P: Provider>(provider: P, config: RuntimeConfig) -> ExitCode {
    match runtime::serve_stdio(provider, config).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => fail(error),
    }
}
