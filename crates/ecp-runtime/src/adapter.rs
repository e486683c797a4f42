//! The one entry point of every adapter. A generated extension's `dist/main`
//! and `ecp serve` both parse their flags and environment here (one
//! definition, so `ECP_NO_AUTH=1` or a budget variable means the same to
//! both) and run the server on stdio or, with `--listen`, as the remote
//! Streamable HTTP adapter.
//!
//! ```no_run
//! # struct MyProvider;
//! # impl ecp_runtime::Provider for MyProvider {
//! #     async fn search(&self, _: &str, _: usize)
//! #         -> Result<Vec<ecp_runtime::ProviderItem>, ecp_runtime::ProviderError> { Ok(vec![]) }
//! # }
//! fn main() -> std::process::ExitCode {
//!     ecp_runtime::Adapter::new("acme-context", env!("CARGO_PKG_VERSION"))
//!         .budget_env("ACME_CONTEXT_BUDGET_MS")
//!         .main(|| Ok::<_, String>(MyProvider))
//! }
//! ```

use std::{fmt::Display, process::ExitCode};

use crate::{
    Provider, ProviderBudget, RuntimeConfig,
    remote::{self, FLAGS_USAGE, RemoteConfig, RemoteSettings},
    serve_stdio,
};

/// How an adapter presents itself and where its budget comes from.
#[derive(Debug, Clone)]
pub struct Adapter {
    name: String,
    version: String,
    budget_env: Option<String>,
    budget: Option<ProviderBudget>,
}

/// Exit status of a command line the adapter cannot use.
const USAGE: u8 = 2;

impl Adapter {
    /// `name` is `serverInfo.name` and the prefix of every stderr line.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Adapter {
        Adapter {
            name: name.into(),
            version: version.into(),
            budget_env: None,
            budget: None,
        }
    }

    /// The variable that may set the provider budget, in milliseconds
    /// (a generated extension's `{PREFIX}_BUDGET_MS`).
    pub fn budget_env(mut self, name: impl Into<String>) -> Adapter {
        self.budget_env = Some(name.into());
        self
    }

    /// A budget the caller has already decided (`ecp serve --budget-ms`);
    /// it wins over the variable.
    pub fn budget(mut self, budget: ProviderBudget) -> Adapter {
        self.budget = Some(budget);
        self
    }

    /// Reads the process's own arguments and runs; see [`Adapter::run`].
    pub fn main<P, E>(self, provider: impl FnOnce() -> Result<P, E>) -> ExitCode
    where
        P: Provider,
        E: Display,
    {
        self.run(std::env::args().skip(1).collect(), provider)
    }

    /// Runs with `args`: none serves MCP on stdio; `--version` and `--help`
    /// answer and exit; `--hook user-prompt-submit ...` runs once as Qwen's
    /// Auto Recall hook ([`crate::hook`]: it prints `{}` on any failure and
    /// always succeeds); anything else is the remote adapter's flags
    /// ([`FLAGS_USAGE`], with their `ECP_*` variables). `provider` is built
    /// once the settings are known to be good. Exit status: 0 after a clean
    /// end, 1 when the configuration or the server fails, 2 for a command
    /// line it cannot use; each failure is one stderr line naming the
    /// program.
    pub fn run<P, E>(self, args: Vec<String>, provider: impl FnOnce() -> Result<P, E>) -> ExitCode
    where
        P: Provider,
        E: Display,
    {
        let name = self.name.clone();
        match self.try_run(args, provider) {
            Ok(()) => ExitCode::SUCCESS,
            Err(AdapterError::Usage(message)) => {
                eprintln!("{name}: {message}\n(run {name} --help for usage)");
                ExitCode::from(USAGE)
            }
            Err(error) => {
                eprintln!("{name}: {error}");
                ExitCode::FAILURE
            }
        }
    }

    /// [`Adapter::run`] for a caller with its own error reporting (`ecp
    /// serve`): why it did not serve, or stopped, as a value.
    // `--version` and `--help` answer on stdout; no MCP runs then.
    #[allow(clippy::print_stdout)]
    pub fn try_run<P, E>(
        self,
        args: Vec<String>,
        provider: impl FnOnce() -> Result<P, E>,
    ) -> Result<(), AdapterError>
    where
        P: Provider,
        E: Display,
    {
        let remote = match args.first().map(String::as_str) {
            None => None,
            Some("--version" | "-V") if args.len() == 1 => {
                println!("{} {}", self.name, self.version);
                return Ok(());
            }
            Some("--help" | "-h") => {
                println!("{}", self.usage());
                return Ok(());
            }
            Some("--hook") => {
                // Auto Recall: fails open, so it never ends in an error.
                crate::hook::run(&self.name, &args[1..], provider);
                return Ok(());
            }
            Some(_) => {
                Some(remote_config(args).map_err(|error| AdapterError::Usage(error.to_string()))?)
            }
        };
        let budget = self.resolve_budget().map_err(AdapterError::Budget)?;
        // One core (taskset, a container's CPU limit): one thread serves
        // without the wake-ups between threads (measured: 10% less CPU a
        // call); more cores: a worker each.
        let one_core = std::thread::available_parallelism().is_ok_and(|n| n.get() == 1);
        let tokio = if remote.is_some() && !one_core {
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
        } else {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
        };
        let tokio = tokio.map_err(|error| {
            AdapterError::Failed(format!("cannot start the async runtime: {error}"))
        })?;
        let provider = provider().map_err(|error| AdapterError::Provider(error.to_string()))?;
        let config = RuntimeConfig {
            name: self.name.clone(),
            version: self.version.clone(),
            budget,
        };
        let served = match remote {
            None => tokio.block_on(serve_stdio(provider, config)),
            Some(remote) => {
                tokio.block_on(remote::serve_http_until_signal(provider, config, remote))
            }
        };
        // A blocking stdin read may still be parked; do not wait for it.
        tokio.shutdown_background();
        served.map_err(|error| AdapterError::Failed(error.to_string()))
    }

    /// What `--help` prints.
    pub fn usage(&self) -> String {
        let name = &self.name;
        let budget = self
            .budget_env
            .as_deref()
            .map(|var| format!("\n{var} sets the provider budget in milliseconds (default 5000)."))
            .unwrap_or_default();
        format!(
            "usage: {name}   (an MCP server on stdio)\n       {name} {FLAGS_USAGE}\n       \
             {name} --hook user-prompt-submit --repository-root DIR [--timeout-ms 100..5000]\n       \
             {name} --version\n\n\
             Each --listen flag has a variable: ECP_RESOURCE_URL, ECP_AUTHORIZATION_SERVERS,\n\
             ECP_JWKS, ECP_NO_AUTH (1/0, true/false, yes/no, on/off), ECP_MAX_CONCURRENT,\n\
             ECP_MAX_BODY_BYTES; ECP_MAX_CONNECTIONS (default 1024) and ECP_MAX_IDLE_PER_PEER\n\
             (default 64) have no flag.{budget}\nSee README.md for the provider's own variables."
        )
    }

    fn resolve_budget(&self) -> Result<ProviderBudget, String> {
        if let Some(budget) = self.budget {
            return Ok(budget);
        }
        let Some(var) = &self.budget_env else {
            return Ok(ProviderBudget::DEFAULT);
        };
        match std::env::var(var) {
            Err(_) => Ok(ProviderBudget::DEFAULT),
            Ok(value) => value
                .trim()
                .parse()
                .ok()
                .and_then(ProviderBudget::from_millis)
                .ok_or_else(|| format!("{var} must be a number of milliseconds from 1 to 600000")),
        }
    }
}

/// Why [`Adapter::try_run`] did not serve, or stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AdapterError {
    /// A command line it cannot use (the `--listen` flags or their `ECP_*`
    /// variables).
    #[error("{0}")]
    Usage(String),
    /// A provider budget variable it cannot use.
    #[error("{0}")]
    Budget(String),
    /// A provider it cannot build (its own settings: a variable not set, a
    /// fixture that does not parse), in the provider's words.
    #[error("configuration error: {0}")]
    Provider(String),
    /// The server could not start, or failed while serving.
    #[error("{0}")]
    Failed(String),
}

/// The remote adapter's configuration from its flags and the process
/// environment.
pub fn remote_config(args: Vec<String>) -> Result<RemoteConfig, remote::SettingsError> {
    RemoteSettings::from_args(args, |name| std::env::var(name).ok())
        .and_then(RemoteSettings::validate)
}
