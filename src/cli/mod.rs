//! The command line: all the clap definitions in one place, and a dispatch
//! to one `run` per subcommand. Library code never sees clap.

mod serve;

use std::{path::PathBuf, process::ExitCode};

use clap::{ArgGroup, Args, Parser, Subcommand};

use crate::providers::http::{DEFAULT_BASE_URL_ENV, DEFAULT_TOKEN_ENV};

#[derive(Debug, Parser)]
#[command(
    name = "ecp",
    version,
    about = "Build, lint, package, serve and check External Context Provider extensions for Qwen Code"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the profile adapter over stdio (MCP), for local testing
    Serve(ServeArgs),
}

/// `ecp serve`: one backend, chosen explicitly.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("backend").required(true).args(["fixture", "http"])))]
pub struct ServeArgs {
    /// Serve a fixture corpus: a JSON array or JSON Lines file of
    /// {"id", "content", "title"?, "uri"?, "updatedAt"?} items, ranked against the query
    #[arg(long, value_name = "FILE")]
    pub fixture: Option<PathBuf>,

    /// Serve a Generic HTTP Search V1 endpoint; its base URL and bearer
    /// credential come from the environment
    #[arg(long)]
    pub http: bool,

    /// Environment variable holding the base URL (https, or http on loopback)
    #[arg(long, value_name = "NAME", default_value = DEFAULT_BASE_URL_ENV, requires = "http")]
    pub base_url_env: String,

    /// Environment variable holding the bearer credential
    #[arg(long, value_name = "NAME", default_value = DEFAULT_TOKEN_ENV, requires = "http")]
    pub token_env: String,

    /// Provider time budget in milliseconds; keep it below the manifest's
    /// MCP `timeout` (reference: 5000 inside 8000)
    #[arg(long, value_name = "MS", default_value_t = 5000,
          value_parser = clap::value_parser!(u64).range(1..=600_000))]
    pub budget_ms: u64,
}

/// Parses the command line and runs the command.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => serve::run(args),
    }
}
