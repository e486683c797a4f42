//! The command line: all the clap definitions in one place, and a dispatch
//! to one `run` per subcommand. Library code never sees clap.

mod check;
mod doctor;
mod explain;
mod lint;
mod managed;
mod new;
mod outcome;
mod package;
mod paths;
mod serve;
mod stdout;
mod try_it;
mod upgrade;
mod verify;

use std::{io::IsTerminal, path::PathBuf, process::ExitCode};

use clap::{ArgGroup, Args, CommandFactory, Parser, Subcommand, ValueEnum};

use outcome::finish;
pub use outcome::{Exit, Failure, Outcome};

use crate::providers::http::{DEFAULT_BASE_URL_ENV, DEFAULT_TOKEN_ENV};

#[derive(Debug, Parser)]
#[command(
    name = "ecp",
    version,
    about = "Build, lint, package, serve and check External Context Provider extensions for Qwen Code"
)]
pub struct Cli {
    /// When to colour output (NO_COLOR is honoured in auto mode)
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    color: ColorChoice,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    /// Whether to colour what goes to stdout.
    pub fn for_stdout(self) -> bool {
        self.decide(std::io::stdout().is_terminal())
    }

    /// Whether to colour what goes to stderr: decided by stderr itself, so
    /// `ecp ... > report.txt` still colours the progress on the terminal.
    pub fn for_stderr(self) -> bool {
        self.decide(std::io::stderr().is_terminal())
    }

    fn decide(self, terminal: bool) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && terminal
            }
        }
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create a provider extension from a template
    #[command(
        after_help = "Examples:\n  ecp new acme-context                     # asks on a terminal; the local Rust template otherwise\n  ecp new acme-context --yes --dir ./ext   # the defaults, no questions\n  ecp new acme-context --template remote --endpoint https://context.acme.example/mcp   # your endpoint here: ecp lint refuses a reserved .example name before you publish"
    )]
    New(NewArgs),
    /// Check a manifest, an extension folder or a release archive before publishing
    #[command(
        after_help = "Examples:\n  ecp lint                                  # the extension in this folder\n  ecp lint dist/linux.x64.acme-context.tar.gz\n  ecp lint . --format sarif > ecp.sarif     # for code scanning\n\nExit status: 0 clean (warnings allowed), 1 findings (any with --deny-warnings), 2 could not run."
    )]
    Lint(LintArgs),
    /// Build reproducible release archives of an extension
    #[command(
        after_help = "Examples:\n  ecp package                               # lint, cargo build --release, dist/*.tar.gz, *.zip, SHA256SUMS, provenance\n  ecp package --sign-key signing.pem        # and a signed DSSE envelope of the provenance\n  ecp package --binary target/aarch64-apple-darwin/release/acme-context --target aarch64-apple-darwin\n  ecp package --json | jq .archives\n\nArchive times come from SOURCE_DATE_EPOCH, else the commit time of HEAD, else 1980-01-01 (the earliest time a zip entry holds)."
    )]
    Package(PackageArgs),
    /// Prove what a release archive is: its sums, provenance, signature, lint, and a rebuild
    #[command(
        after_help = "Examples:\n  ecp verify dist/linux.x64.acme-context.tar.gz\n  ecp verify linux.x64.acme-context.tar.gz --key acme-release.pub\n  ecp verify linux.x64.acme-context.tar.gz --rebuild https://github.com/acme/acme-context\n  ecp verify linux.x64.acme-context.tar.gz --format json | jq .verified\n\nExit status: 0 everything asked for is proven, 1 something is not, 2 could not run."
    )]
    Verify(VerifyArgs),
    /// Print the long explanation of a lint rule, a check, or a doctor finding
    #[command(
        after_help = "Examples:\n  ecp explain                # every rule, check and doctor finding\n  ecp explain include-tools   # a lint rule\n  ecp explain no-retry        # a check of ecp check\n  ecp explain shadowed        # a finding of ecp doctor"
    )]
    Explain(ExplainArgs),
    /// Run the adapter runtime: MCP over stdio, or Streamable HTTP with --listen
    #[command(
        after_help = "Examples:\n  ecp serve --fixture example                       # the built-in corpus over stdio\n  PROVIDER_CONTEXT_BASE_URL=https://search.internal PROVIDER_CONTEXT_TOKEN=... ecp serve --http\n  ecp serve --fixture example --listen 127.0.0.1:8080 --no-auth   # HTTP, loopback only"
    )]
    Serve(ServeArgs),
    /// Prove that an implementation conforms to the profile, faults included
    #[command(
        after_help = "Examples:\n  ecp check                                  # the extension in this folder (a Rust one is built first, fast)\n  ecp check dist/linux.x64.acme-context.tar.gz\n  ecp check -- node dist/main.js             # any stdio server\n  ecp check --url https://context.acme.example/mcp --token-env TOKEN\n  ecp check . --upstream https://kb.acme.example/api --query \"deploy policy\" --record tests/upstream.cassette.json\n  ecp check . --cassette tests/upstream.cassette.json   # offline, from what was recorded\n\nExit status: 0 conforms (warnings allowed, every applicable check exercised), 1 a check failed, 2 conformance not established (an applicable check was not exercised: the message says how to run it) or the target could not be started."
    )]
    Check(CheckArgs),
    /// Make one context_search call and pretty-print the result
    #[command(
        after_help = "Examples:\n  ecp call . \"deployment policy\" --fixture example   # no service needed\n  ecp call . \"deployment policy\"                     # the endpoint in *_BASE_URL, *_TOKEN\n  ecp call --url https://context.acme.example/mcp --token-env TOKEN \"deployment policy\""
    )]
    Call(CallArgs),
    /// Install the extension into Qwen Code on this machine (packaging it first if needed)
    #[command(
        after_help = "Examples:\n  ecp try                   # the extension in this folder: package if needed, install, connect\n  ecp try dist/linux.x64.acme-context.tar.gz\n  ecp try --print           # only print the qwen commands\n\nQwen cannot run a source folder as installed (a Rust one has no dist/main, a TypeScript one would copy node_modules): ecp try installs the release archive for this machine, as a user would get it. Exit status: 0 installed and connected (or printed), 1 installed but not connected, or the archive fails lint, 2 could not run."
    )]
    Try(TryArgs),
    /// Show what Qwen Code will really run for each External Context extension here
    #[command(
        after_help = "Examples:\n  ecp doctor                          # every External Context extension, this folder as the workspace\n  ecp doctor acme-context --workspace ~/src/project\n  ecp doctor --format json | jq '.extensions[].verdict'\n  ecp doctor --probe-settings              # which extension settings reach the server, measured\n\nIt reads Qwen's settings layers, folder trust, .env files, .mcp.json and installed extensions as Qwen Code 0.24.4 does, and never prints a variable's value. Exit status: 0 no findings, 1 findings, 2 could not run."
    )]
    Doctor(DoctorArgs),
    /// Write what an administrator deploys: system settings that pin the server, and a launcher
    #[command(
        after_help = "Examples:\n  ecp managed --extension dist/linux.x64.acme-context.tar.gz --out deploy \\\n    --env ACME_CONTEXT_BASE_URL=https://kb.acme.example --credential ACME_CONTEXT_TOKEN=/etc/qwen-code/acme.secret\n  ecp managed --extension ./acme-context-remote --out deploy   # a remote server: nothing to unpack\n\nThe settings entry carries includeTools [\"context_search\"], the manifest's timeout and no trust; fixed values are written in, credentials are read by the launcher. Exit status: 0 written, 1 refused (lint errors, a variable not given), 2 could not run."
    )]
    Managed(ManagedArgs),
    /// Bring an extension's vendored runtime up to the one this ecp carries
    #[command(
        after_help = "Examples:\n  ecp upgrade              # the extension in this folder\n  ecp upgrade ./acme-context --force   # replace a runtime that was edited locally\n\nAn edited src/provider.rs, edited tests and the manifest are never touched (an unedited V1 binding copy from before runtime 0.3.0 becomes the small mapping). Exit status: 0 upgraded or current, 1 refused (local edits), 2 could not run."
    )]
    Upgrade(UpgradeArgs),
    /// Print shell completions to stdout, for your shell to load
    #[command(
        after_help = "Where to put them:\n  bash:       ecp completions bash > ~/.local/share/bash-completion/completions/ecp\n  zsh:        ecp completions zsh > ~/.zfunc/_ecp   (with fpath+=~/.zfunc before compinit in ~/.zshrc)\n  fish:       ecp completions fish > ~/.config/fish/completions/ecp.fish\n  elvish:     ecp completions elvish >> ~/.config/elvish/rc.elv\n  powershell: ecp completions powershell >> $PROFILE\nThen open a new shell."
    )]
    Completions(CompletionsArgs),
}

/// `ecp new`.
#[derive(Debug, Args)]
pub struct NewArgs {
    /// The extension name, also its MCP server name: lower-case words joined
    /// by dashes, e.g. acme-context
    pub name: String,

    /// What to create: a Rust adapter crate (local), a TypeScript adapter
    /// bundled into dist/main.js (local-ts), or a manifest for a
    /// provider-operated endpoint (remote) [default: local; asked on a terminal]
    #[arg(long, value_enum)]
    pub template: Option<TemplateChoice>,

    /// Where to create it [default: ./<NAME>]
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,

    /// Never prompt; take the defaults for every missing value
    #[arg(long)]
    pub yes: bool,

    /// Write into a non-empty folder (files of the same name are replaced)
    #[arg(long)]
    pub force: bool,

    /// One line describing the extension
    #[arg(long)]
    pub description: Option<String>,

    /// The remote template's endpoint (https)
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,

    /// Build dist/main to serve over HTTP (`--listen`, the adapter behind a
    /// remote template's endpoint): `opt-level = 3`, about 10% less CPU a
    /// call for a binary about 1.7 MiB larger (local template only)
    #[arg(long)]
    pub server: bool,

    /// How the search service authenticates the adapter (local templates):
    /// `bearer` (the *_TOKEN variable as `authorization: Bearer`), a header
    /// of its own (`header:x-api-key`), or `none` (no *_TOKEN at all)
    #[arg(long, value_name = "none|bearer|header:NAME", default_value = "bearer")]
    pub auth: crate::scaffold::Auth,

    /// Prefix of the local template's environment variables [default: from NAME,
    /// e.g. ACME_CONTEXT for ACME_CONTEXT_BASE_URL and ACME_CONTEXT_TOKEN]
    #[arg(long, value_name = "PREFIX")]
    pub env_prefix: Option<String>,

    /// The clients to write manifests for, comma-separated: qwen (always),
    /// gemini, claude, mcpb (a desktop bundle; local templates only). Each
    /// is derived from qwen-extension.json; `ecp lint` holds them to it
    #[arg(long, value_enum, value_delimiter = ',', value_name = "CLIENTS")]
    pub clients: Vec<crate::channels::Client>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TemplateChoice {
    Local,
    LocalTs,
    Remote,
}

/// `ecp lint`.
#[derive(Debug, Args)]
pub struct LintArgs {
    /// An extension folder, a qwen-extension.json, a .tar.gz/.zip archive,
    /// or a release folder (archives and SHA256SUMS, as `ecp package`
    /// leaves dist/)
    #[arg(default_value = ".")]
    pub path: PathBuf,

    /// The release tag (vX.Y.Z) the manifest version must name
    #[arg(long, value_name = "TAG")]
    pub release_tag: Option<String>,

    /// Output format
    #[arg(long, value_enum, default_value_t = LintFormat::Human)]
    pub format: LintFormat,

    /// Fail (exit 1) on warnings too
    #[arg(long)]
    pub deny_warnings: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LintFormat {
    Human,
    Json,
    Sarif,
}

/// `ecp package`.
#[derive(Debug, Args)]
pub struct PackageArgs {
    /// The extension folder
    #[arg(default_value = ".")]
    pub path: PathBuf,

    /// Archive format; repeat for several [default: tar.gz and zip, or
    /// tar.gz alone for a manifest-only extension]
    #[arg(long = "format", value_enum, value_name = "FORMAT")]
    pub formats: Vec<ArchiveFormat>,

    /// Where to write the archives [default: PATH/dist, or PATH/release for
    /// a Node project, whose dist/ holds the bundle]
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,

    /// Ship this prebuilt executable as dist/main instead of building
    #[arg(long, value_name = "FILE")]
    pub binary: Option<PathBuf>,

    /// Node projects: package the bundle already built (no npm ci, no npm
    /// run build)
    #[arg(long)]
    pub skip_build: bool,

    /// Node projects: run npm ci with --ignore-scripts, so that no install
    /// script of package.json or of a dependency runs (npm run build still
    /// runs the build script)
    #[arg(long)]
    pub ignore_scripts: bool,

    /// Rust target triple to build for (and to name the archives after)
    #[arg(long, value_name = "TRIPLE")]
    pub target: Option<String>,

    /// Print one JSON document instead of the summary
    #[arg(long)]
    pub json: bool,

    /// Sign the provenance statement with this Ed25519 or ECDSA P-256 key
    /// (PEM or OpenSSH, unencrypted) into a DSSE envelope beside it
    #[arg(long, value_name = "KEY")]
    pub sign_key: Option<PathBuf>,

    /// Write these clients' manifests into the folder from
    /// qwen-extension.json first (comma-separated: gemini, claude, mcpb);
    /// every client manifest in the folder is packaged, and `manifest.json`
    /// (mcpb) also gives NAME.mcpb
    #[arg(long, value_enum, value_delimiter = ',', value_name = "CLIENTS")]
    pub clients: Vec<crate::channels::Client>,

    /// Also write a scoped npm package (`npm pack` layout) Qwen Code installs
    /// with `qwen extensions install @scope/name`: a TypeScript or a remote
    /// extension
    #[arg(long)]
    pub npm: bool,

    /// The npm package's name [default: package.json's name when scoped]
    #[arg(long, value_name = "@SCOPE/NAME", requires = "npm")]
    pub npm_name: Option<String>,

    /// Also write server.json for the MCP registry under this name
    /// (io.github.OWNER/NAME), validated against the registry's schema
    #[arg(long, value_name = "NAME")]
    pub registry: Option<String>,

    /// Where the release's assets are downloaded from (the MCP Bundle's URL
    /// in server.json), e.g. https://github.com/OWNER/REPO/releases/download/v0.1.0
    #[arg(long, value_name = "URL", requires = "registry")]
    pub download_url: Option<String>,
}

/// `ecp verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The release archive (SHA256SUMS and the provenance are read beside it)
    pub archive: PathBuf,

    /// The publisher's public key (PEM, or an OpenSSH .pub line) the
    /// provenance must be signed by
    #[arg(long, value_name = "KEY")]
    pub key: Option<PathBuf>,

    /// Rebuild the recorded commit from this git repository (a folder or a
    /// URL) in a scratch folder and compare the archive byte for byte. The
    /// rebuild runs the source's build code on this machine: cargo's build
    /// scripts (build.rs) and procedural macros, npm's install and build
    /// scripts; rebuild only what you would build anyway
    #[arg(long, value_name = "SOURCE")]
    pub rebuild: Option<String>,

    /// The statement or envelope, when it is not beside the archive
    #[arg(long, value_name = "FILE")]
    pub provenance: Option<PathBuf>,

    /// Hold a running server to the release's tools.lock: a Streamable
    /// HTTP endpoint (URL), an extension Qwen installed here (its NAME), or
    /// a command after `--` (`--live -- CMD ARGS...`); asked tools/list
    /// only, its endpoint pointed at a loopback port nothing answers
    #[arg(long, value_name = "URL|NAME", num_args = 0..=1, default_missing_value = "")]
    pub live: Option<String>,

    /// With --live URL: the variable holding a bearer token for the
    /// endpoint (an OAuth-protected remote adapter); the token is sent to
    /// that URL only
    #[arg(long, value_name = "NAME", requires = "live")]
    pub token_env: Option<String>,

    /// With --live: the command that starts the server
    #[arg(last = true, value_name = "CMD", requires = "live")]
    pub live_command: Vec<String>,

    /// Output format
    #[arg(long, value_enum, default_value_t = CheckFormat::Human)]
    pub format: CheckFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ArchiveFormat {
    #[value(name = "tar.gz")]
    TarGz,
    Zip,
}

/// Where `ecp check` and `ecp call` find the server.
#[derive(Debug, Args)]
pub struct TargetArgs {
    /// A Streamable HTTP MCP endpoint
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,

    /// For `-- CMD`: the variable that carries the V1 endpoint
    /// [default: PROVIDER_CONTEXT_BASE_URL]
    #[arg(long, value_name = "NAME")]
    pub base_url_env: Option<String>,

    /// For `-- CMD`: the variable that carries the V1 credential
    /// [default: PROVIDER_CONTEXT_TOKEN]; for `--url`: the variable holding a
    /// bearer token for the endpoint itself
    #[arg(long, value_name = "NAME")]
    pub token_env: Option<String>,

    /// A target that reads its endpoint from a configuration file: VAR
    /// names the file (a Qwen InstanceConfig for
    /// QWEN_EXTERNAL_CONTEXT_MEM0_CONFIG); the target gets a copy pointed at
    /// ecp's upstream
    #[arg(long, value_name = "VAR=PATH", conflicts_with = "url")]
    pub config_file: Option<String>,

    /// With --config-file: the JSON pointer of the endpoint URL in a file
    /// that is not a Qwen InstanceConfig (e.g. /endpoint/url)
    #[arg(long, value_name = "POINTER", requires = "config_file")]
    pub endpoint_pointer: Option<String>,

    /// Any stdio MCP server: the program and its arguments, after `--`
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// `ecp check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// An extension folder or a .tar.gz/.zip archive [default: .]
    pub path: Option<PathBuf>,

    #[command(flatten)]
    pub target: TargetArgs,

    /// Check against your own API: record a few calls to it through a
    /// loopback proxy, then replay its answers with every fault
    #[arg(long, value_name = "URL", conflicts_with_all = ["cassette", "url"])]
    pub upstream: Option<String>,

    /// With --upstream: a probe query, once per call [default: "ecp probe"]
    #[arg(long = "query", value_name = "TEXT", requires = "upstream")]
    pub queries: Vec<String>,

    /// With --upstream: keep the recorded exchanges in FILE (credentials
    /// removed), for --cassette
    #[arg(long, value_name = "FILE", requires = "upstream")]
    pub record: Option<PathBuf>,

    /// Check offline against recorded answers (from --record)
    #[arg(long, value_name = "FILE", conflicts_with = "url")]
    pub cassette: Option<PathBuf>,

    /// Seed of the hostile answers (same seed, same answers)
    #[arg(long, value_name = "N", default_value_t = crate::check::DEFAULT_SEED)]
    pub seed: u64,

    /// How many hostile answers to send
    #[arg(long, value_name = "N", default_value_t = crate::check::DEFAULT_MUTATIONS)]
    pub mutations: usize,

    /// Hold the target's tools/list to the tool surface FILE pins (a
    /// tools.lock): every tool's name, title, description, schemas and
    /// annotations, in canonical form (RFC 8785); a change fails
    /// `tools-locked`, naming the tool and the field
    #[arg(long, value_name = "FILE", conflicts_with = "hook")]
    pub lock: Option<PathBuf>,

    /// Pin the target's tools/list into FILE (a tools.lock, for --lock)
    #[arg(long, value_name = "FILE", conflicts_with = "hook")]
    pub write_lock: Option<PathBuf>,

    /// Also run the official MCP conformance suite (installed once from
    /// npm, pinned) against the target, a stdio server through ecp's
    /// loopback HTTP shim, by REVISION's requirements (2025-11-25 or
    /// 2026-07-28); failures the profile's baseline does not excuse fail
    /// `mcp-conformance`
    #[arg(
        long,
        value_name = "REVISION",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = crate::check::conformance::DEFAULT_REVISION,
        value_parser = clap::builder::PossibleValuesParser::new(crate::check::conformance::REVISIONS),
        conflicts_with = "hook"
    )]
    pub conformance: Option<String>,

    /// With --conformance: the expected failures of the suite's form
    /// (`server:` and `- scenario:check` entries, each with a `#` reason)
    /// instead of the profile's baseline
    #[arg(long, value_name = "FILE", requires = "conformance")]
    pub conformance_baseline: Option<PathBuf>,

    /// Judge the Auto Recall hook instead of the MCP server: Qwen's
    /// `UserPromptSubmit` hook contract, one process a prompt (a folder or
    /// archive runs its entry point with `--hook user-prompt-submit`)
    #[arg(long, conflicts_with_all = ["url", "upstream"])]
    pub hook: bool,

    /// With --hook -- CMD: the repository root the hook's command is
    /// configured with (a folder or archive gets one ecp makes)
    #[arg(long, value_name = "DIR", requires = "hook")]
    pub repository_root: Option<PathBuf>,

    /// Output format
    #[arg(long, value_enum, default_value_t = CheckFormat::Human)]
    pub format: CheckFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CheckFormat {
    Human,
    Json,
}

/// `ecp call`.
#[derive(Debug, Args)]
#[command(override_usage = "ecp call [OPTIONS] [PATH | --url URL | -- CMD ARGS...] <QUERY>")]
pub struct CallArgs {
    /// An extension folder or a .tar.gz/.zip archive [default: .]; with one
    /// argument, it is the query
    #[arg(value_name = "PATH")]
    pub first: Option<String>,

    /// The query
    #[arg(value_name = "QUERY")]
    pub second: Option<String>,

    /// Answer from a corpus instead of a live endpoint: a JSON array or JSON
    /// Lines file of {"id", "content", ...} items, or `example` for the
    /// built-in one. The extension's *_BASE_URL and *_TOKEN point at a
    /// Generic HTTP Search V1 endpoint on 127.0.0.1 that serves it.
    #[arg(long, value_name = "FILE|example")]
    pub fixture: Option<PathBuf>,

    /// Answer from a cassette `ecp check --upstream URL --record FILE`
    /// recorded: the extension's *_BASE_URL and *_TOKEN point at a replay
    /// on 127.0.0.1 that gives the recorded answer to the same request (else
    /// the first successful one), offline
    #[arg(long, value_name = "FILE", conflicts_with = "fixture")]
    pub cassette: Option<PathBuf>,

    #[command(flatten)]
    pub target: TargetArgs,
}

/// `ecp upgrade`.
#[derive(Debug, Args)]
pub struct UpgradeArgs {
    /// The extension folder
    #[arg(default_value = ".")]
    pub path: PathBuf,

    /// Replace the runtime even when its files were edited locally
    #[arg(long)]
    pub force: bool,

    /// Print one JSON document instead of the summary
    #[arg(long)]
    pub json: bool,
}

/// `ecp try`.
#[derive(Debug, Args)]
pub struct TryArgs {
    /// The extension folder, a release archive, or a release folder
    #[arg(default_value = ".")]
    pub path: PathBuf,

    /// Only print the `qwen` commands that install it
    #[arg(long)]
    pub print: bool,

    /// Uninstall an extension of the same name that `ecp try` did not install
    #[arg(long)]
    pub replace: bool,

    /// The Qwen Code program to run (default: `qwen` on PATH)
    #[arg(long, value_name = "PROGRAM", conflicts_with_all = ["client", "program"])]
    pub qwen: Option<PathBuf>,

    /// The client to install into, through its own CLI: Qwen Code, Gemini
    /// CLI (from the archive's gemini-extension.json) or Claude Code (its
    /// .claude-plugin/plugin.json, as a plugin of a local marketplace)
    #[arg(long, value_enum, default_value_t = TryClient::Qwen)]
    pub client: TryClient,

    /// The client's program to run (default: `qwen`, `gemini` or `claude`
    /// on PATH)
    #[arg(long, value_name = "PROGRAM")]
    pub program: Option<PathBuf>,
}

/// The clients `ecp try` installs into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TryClient {
    Qwen,
    Gemini,
    Claude,
}

/// `ecp doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// The installed extension to examine [default: every External Context
    /// extension, one whose server includes context_search]
    pub name: Option<String>,

    /// The workspace Qwen would be started in [default: this folder]
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,

    /// Output format
    #[arg(long, value_enum, default_value_t = CheckFormat::Human)]
    pub format: CheckFormat,

    /// Measure which extension-settings paths reach an MCP server, with the
    /// real qwen in a scratch home (never yours)
    #[arg(long, conflicts_with_all = ["name", "workspace"])]
    pub probe_settings: bool,

    /// The Qwen Code program for --probe-settings (default: `qwen` on PATH)
    #[arg(long, value_name = "PROGRAM", requires = "probe_settings")]
    pub qwen: Option<PathBuf>,

    /// The probe's own server (started by Qwen during --probe-settings)
    #[arg(long, value_name = "FILE", hide = true)]
    pub probe_child: Option<PathBuf>,
}

/// `ecp managed`.
#[derive(Debug, Args)]
pub struct ManagedArgs {
    /// The release archive of a local extension, or a remote extension's
    /// folder or manifest
    #[arg(long, value_name = "PATH")]
    pub extension: PathBuf,

    /// The folder to write (must not exist)
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,

    /// Where the archive is unpacked on each machine [default:
    /// /opt/qwen-extensions/<NAME>]
    #[arg(long, value_name = "DIR")]
    pub install_dir: Option<PathBuf>,

    /// Where the system settings file is installed
    #[arg(
        long,
        value_name = "FILE",
        default_value = "/etc/qwen-code/settings.json"
    )]
    pub settings_path: PathBuf,

    /// The Qwen Code program the launcher starts
    #[arg(long, value_name = "PROGRAM", default_value = "qwen")]
    pub qwen: String,

    /// A fixed value of a manifest variable, written into the settings
    /// (an endpoint); repeatable
    #[arg(long = "env", value_name = "NAME=VALUE")]
    pub values: Vec<String>,

    /// A secret manifest variable the launcher reads from an
    /// administrator-owned file; repeatable
    #[arg(long = "credential", value_name = "NAME=FILE")]
    pub credentials: Vec<String>,

    /// Auto Recall instead of the MCP server: the extension's entry point
    /// as Qwen's UserPromptSubmit hook (searches before each prompt; the
    /// extension's MCP server is excluded, never both)
    #[arg(long, requires = "repository_root")]
    pub auto_recall: bool,

    /// With --auto-recall: the absolute folder whose sessions (cwd inside
    /// it) are searched for
    #[arg(long, value_name = "DIR", requires = "auto_recall")]
    pub repository_root: Option<PathBuf>,
}

/// `ecp explain`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// An ID as `ecp lint`, `ecp check` or `ecp doctor` prints it (e.g. include-tools, no-retry, shadowed); omit to list all
    pub rule: Option<String>,
}

/// `ecp completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to write completions for
    pub shell: clap_complete::Shell,
}

/// `ecp serve`: one backend, chosen explicitly.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("backend").required(true).args(["fixture", "http"])))]
pub struct ServeArgs {
    /// Serve a fixture corpus: a JSON array or JSON Lines file of
    /// {"id", "content", "title"?, "uri"?, "updatedAt"?} items, ranked against
    /// the query; `example` is the built-in one
    #[arg(long, value_name = "FILE|example")]
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

    /// Serve MCP Streamable HTTP on IP:PORT instead of stdio: the remote
    /// adapter, an OAuth resource server (see docs/remote-adapter.md in
    /// ecp's repository)
    #[arg(long, value_name = "IP:PORT", help_heading = "Remote adapter")]
    pub listen: Option<String>,

    /// The public URL of the MCP endpoint (token audience); defaults to
    /// http://IP:PORT/mcp on loopback [env: ECP_RESOURCE_URL]
    #[arg(
        long,
        value_name = "URL",
        requires = "listen",
        help_heading = "Remote adapter"
    )]
    pub resource_url: Option<String>,

    /// Issuer URL of an OAuth authorization server whose tokens to accept
    /// (repeatable) [env: ECP_AUTHORIZATION_SERVERS, a comma-separated list]
    #[arg(
        long,
        value_name = "URL",
        requires = "listen",
        help_heading = "Remote adapter"
    )]
    pub authorization_server: Vec<String>,

    /// The authorization server's JWKS: a URL (https) or a file [env: ECP_JWKS]
    #[arg(
        long,
        value_name = "FILE|URL",
        requires = "listen",
        help_heading = "Remote adapter"
    )]
    pub jwks: Option<String>,

    /// Serve without OAuth; only allowed on a loopback address [env:
    /// ECP_NO_AUTH: 1/0, true/false, yes/no, on/off]
    #[arg(long, requires = "listen", help_heading = "Remote adapter")]
    pub no_auth: bool,

    /// At most this many MCP requests at once; more get 503 and Retry-After
    /// [default: 256] [env: ECP_MAX_CONCURRENT]
    #[arg(
        long,
        value_name = "N",
        requires = "listen",
        help_heading = "Remote adapter"
    )]
    pub max_concurrent: Option<usize>,

    /// Larger request bodies get 413 [default: 65536] [env: ECP_MAX_BODY_BYTES]
    #[arg(
        long,
        value_name = "BYTES",
        requires = "listen",
        help_heading = "Remote adapter"
    )]
    pub max_body_bytes: Option<usize>,
}

/// Parses the command line and runs the command.
pub fn main() -> ExitCode {
    stdout::quiet_when_closed(run)
}

fn run() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // Help, the version and usage errors, as `Cli::parse` prints them,
        // but a closed stdout is the one quiet status.
        Err(error) => {
            return match error.print() {
                Err(e) if stdout::is_closed(&e) => Exit::Closed.into(),
                _ => ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2)),
            };
        }
    };
    if let Err(failure) = paths::check(&cli.command) {
        return finish(Err(failure));
    }
    let outcome = match cli.command {
        Command::New(args) => new::run(args),
        Command::Lint(args) => lint::run(args, cli.color),
        Command::Package(args) => package::run(args, cli.color),
        Command::Verify(args) => verify::run(args, cli.color),
        Command::Explain(args) => explain::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Upgrade(args) => upgrade::run(args),
        Command::Try(args) => try_it::run(args, cli.color),
        Command::Doctor(args) => doctor::run(args),
        Command::Managed(args) => managed::run(args, cli.color),
        Command::Check(args) => check::run_check(args, cli.color),
        Command::Call(args) => check::run_call(args),
        Command::Completions(args) => {
            let mut script = Vec::new();
            clap_complete::generate(args.shell, &mut Cli::command(), "ecp", &mut script);
            match std::io::Write::write_all(&mut std::io::stdout(), &script) {
                Ok(()) => Ok(Exit::Success),
                Err(e) if stdout::is_closed(&e) => Ok(Exit::Closed),
                Err(e) => Err(Failure::new(
                    Exit::CouldNotRun,
                    format!("cannot write to stdout: {e}"),
                )),
            }
        }
    };
    finish(outcome)
}
