//! The remote adapter's settings: raw flags and environment variables in,
//! a validated [`RemoteConfig`] out. Every adapter reads them through
//! [`RemoteSettings::from_args`] ([`crate::Adapter`]): a generated
//! `dist/main --listen` and `ecp serve --listen` alike, so the flags, the
//! variables, the rules and the messages are the same.

use std::net::SocketAddr;

use url::Url;

use super::{AuthConfig, JwksSource, RemoteConfig};

/// Default cap on MCP requests in flight; more get 503.
pub const DEFAULT_MAX_CONCURRENT: usize = 256;
/// Default cap on a request body; larger get 413. A maximal query escapes
/// to well under 16 KiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 64 * 1024;
/// Default cap on open connections (past it a new one closes an idle one,
/// see `remote/connections.rs`), so the process stays far from its file
/// descriptor limit.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// Default cap on one peer's idle connections that have not carried an
/// authorized request; its next connection closes its oldest. A client
/// opens a few; a proxy's keep-alive connections carry tokens.
pub const DEFAULT_MAX_IDLE_PER_PEER: usize = 64;

/// The environment variable behind each flag.
pub mod env_names {
    /// `--resource-url`.
    pub const RESOURCE_URL: &str = "ECP_RESOURCE_URL";
    /// `--authorization-server`, a comma- or space-separated list.
    pub const AUTHORIZATION_SERVERS: &str = "ECP_AUTHORIZATION_SERVERS";
    /// `--jwks`.
    pub const JWKS: &str = "ECP_JWKS";
    /// `--no-auth`, as 1/0, true/false, yes/no or on/off.
    pub const NO_AUTH: &str = "ECP_NO_AUTH";
    /// `--max-concurrent`.
    pub const MAX_CONCURRENT: &str = "ECP_MAX_CONCURRENT";
    /// `--max-body-bytes`.
    pub const MAX_BODY_BYTES: &str = "ECP_MAX_BODY_BYTES";
    /// A variable only, no flag (as for the two below): connection limits
    /// are tuned by operators, rarely.
    pub const MAX_CONNECTIONS: &str = "ECP_MAX_CONNECTIONS";
    /// Idle connections of one peer that never carried an authorized
    /// request.
    pub const MAX_IDLE_PER_PEER: &str = "ECP_MAX_IDLE_PER_PEER";
}

/// An on/off variable such as `ECP_NO_AUTH`, read the same by `dist/main`
/// and `ecp serve` (clap's "boolish" words): `1`, `true`, `yes`, `on`, `y`,
/// `t` and their opposites, in any case; anything else is `None`.
pub fn switch(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" | "y" | "t" => Some(true),
        "0" | "false" | "no" | "off" | "n" | "f" => Some(false),
        _ => None,
    }
}

/// Unvalidated settings, as typed by an operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteSettings {
    /// `IP:PORT` to listen on (`--listen`).
    pub listen: String,
    /// `--resource-url`: the public URL clients use for the MCP endpoint.
    pub resource_url: Option<String>,
    /// `--authorization-server`, repeatable: accepted token issuers.
    pub authorization_servers: Vec<String>,
    /// `--jwks`: a JWKS file path or URL.
    pub jwks: Option<String>,
    /// `--no-auth`: serve without OAuth (loopback only).
    pub no_auth: bool,
    /// `--max-concurrent`: calls served at once.
    pub max_concurrent: usize,
    /// `--max-body-bytes`: the largest request body taken.
    pub max_body_bytes: usize,
    /// `ECP_MAX_CONNECTIONS` (no flag).
    pub max_connections: usize,
    /// `ECP_MAX_IDLE_PER_PEER` (no flag).
    pub max_idle_per_peer: usize,
}

/// A setting that cannot work, with the flag to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SettingsError(pub String);

fn error(message: impl Into<String>) -> SettingsError {
    SettingsError(message.into())
}

/// The flags `from_args` understands, for usage text.
pub const FLAGS_USAGE: &str = "--listen IP:PORT [--resource-url URL] \
[--authorization-server URL]... [--jwks FILE|URL] [--no-auth] \
[--max-concurrent N] [--max-body-bytes N]";

/// The numbers given as flags, as text.
#[derive(Default)]
struct GivenNumbers {
    max_concurrent: Option<String>,
    max_body_bytes: Option<String>,
}

impl RemoteSettings {
    /// Settings with every optional value unset.
    pub fn new(listen: impl Into<String>) -> Self {
        RemoteSettings {
            listen: listen.into(),
            resource_url: None,
            authorization_servers: Vec::new(),
            jwks: None,
            no_auth: false,
            max_concurrent: DEFAULT_MAX_CONCURRENT,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_idle_per_peer: DEFAULT_MAX_IDLE_PER_PEER,
        }
    }

    /// Reads `--flag VALUE` / `--flag=VALUE` arguments (starting with
    /// `--listen`), then fills what they leave unset from the environment
    /// (see [`env_names`]).
    pub fn from_args(
        args: impl IntoIterator<Item = String>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<RemoteSettings, SettingsError> {
        let mut settings = RemoteSettings::new("");
        let numbers = settings.read_flags(args)?;
        let env = |name: &str| env(name).filter(|value| !value.trim().is_empty());
        settings.fill_from_environment(&env, numbers)?;
        Ok(settings)
    }

    /// Reads the flags into `self` (`--listen` is required); the numbers
    /// given as flags are returned as text, to be read with the
    /// environment's.
    fn read_flags(
        &mut self,
        args: impl IntoIterator<Item = String>,
    ) -> Result<GivenNumbers, SettingsError> {
        let mut listen = None;
        let mut numbers = GivenNumbers::default();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((flag, value)) => (flag.to_owned(), Some(value.to_owned())),
                None => (arg, None),
            };
            if flag == "--no-auth" {
                if inline.is_some() {
                    return Err(error("--no-auth takes no value"));
                }
                self.no_auth = true;
                continue;
            }
            let mut value = || {
                inline
                    .clone()
                    .or_else(|| args.next())
                    .ok_or_else(|| error(format!("{flag} needs a value")))
            };
            match flag.as_str() {
                "--listen" => listen = Some(value()?),
                "--resource-url" => self.resource_url = Some(value()?),
                "--authorization-server" => self.authorization_servers.push(value()?),
                "--jwks" => self.jwks = Some(value()?),
                "--max-concurrent" => numbers.max_concurrent = Some(value()?),
                "--max-body-bytes" => numbers.max_body_bytes = Some(value()?),
                other => {
                    return Err(error(format!(
                        "unknown option {other}; expected {FLAGS_USAGE}"
                    )));
                }
            }
        }
        self.listen = listen.ok_or_else(|| error("--listen IP:PORT is required"))?;
        Ok(numbers)
    }

    /// Fills what the flags left unset from the environment (`env` gives
    /// no blank values), and reads the numbers.
    fn fill_from_environment(
        &mut self,
        env: &dyn Fn(&str) -> Option<String>,
        given: GivenNumbers,
    ) -> Result<(), SettingsError> {
        if self.resource_url.is_none() {
            self.resource_url = env(env_names::RESOURCE_URL);
        }
        if self.authorization_servers.is_empty()
            && let Some(list) = env(env_names::AUTHORIZATION_SERVERS)
        {
            self.authorization_servers = split_list(&list);
        }
        if self.jwks.is_none() {
            self.jwks = env(env_names::JWKS);
        }
        if !self.no_auth
            && let Some(value) = env(env_names::NO_AUTH)
        {
            self.no_auth = switch(&value).ok_or_else(|| {
                error(format!(
                    "{} must be 1/0, true/false, yes/no or on/off, not {value:?}",
                    env_names::NO_AUTH
                ))
            })?;
        }
        let number = |flag: &str, var: &str, given: Option<String>, default: usize| match given
            .or_else(|| env(var))
        {
            None => Ok(default),
            Some(text) => text.trim().parse().map_err(|_| {
                error(format!(
                    "{flag} (or {var}) must be a whole number, not {text:?}"
                ))
            }),
        };
        self.max_concurrent = number(
            "--max-concurrent",
            env_names::MAX_CONCURRENT,
            given.max_concurrent,
            DEFAULT_MAX_CONCURRENT,
        )?;
        self.max_body_bytes = number(
            "--max-body-bytes",
            env_names::MAX_BODY_BYTES,
            given.max_body_bytes,
            DEFAULT_MAX_BODY_BYTES,
        )?;
        let variable = |var: &str, default: usize| match env(var) {
            None => Ok(default),
            Some(text) => text
                .trim()
                .parse()
                .map_err(|_| error(format!("{var} must be a whole number, not {text:?}"))),
        };
        self.max_connections = variable(env_names::MAX_CONNECTIONS, DEFAULT_MAX_CONNECTIONS)?;
        self.max_idle_per_peer = variable(env_names::MAX_IDLE_PER_PEER, DEFAULT_MAX_IDLE_PER_PEER)?;
        Ok(())
    }

    /// Checks every rule and returns the configuration to serve.
    pub fn validate(self) -> Result<RemoteConfig, SettingsError> {
        let listen: SocketAddr = self.listen.parse().map_err(|_| {
            error(format!(
                "--listen {:?} is not IP:PORT (e.g. 127.0.0.1:8080, or 0.0.0.0:8080 behind a TLS proxy)",
                self.listen
            ))
        })?;
        let loopback = listen.ip().is_loopback();
        // The root cause first: --no-auth off loopback is refused before
        // anything else is asked for.
        if self.no_auth && !loopback {
            return Err(error(format!(
                "--no-auth serves without OAuth and is only allowed on a loopback address \
                 (127.0.0.1 or [::1]), not {listen}; drop --no-auth and configure OAuth, or listen on loopback"
            )));
        }
        let resource = match &self.resource_url {
            None if loopback => None,
            None => {
                return Err(error(format!(
                    "--resource-url (or {}) is required when listening on {listen}: \
                     give the public https URL clients use, e.g. https://context.example.com/mcp",
                    env_names::RESOURCE_URL
                )));
            }
            Some(text) => Some(resource_url(text)?),
        };
        if !(1..=65_536).contains(&self.max_concurrent) {
            return Err(error("--max-concurrent must be between 1 and 65536"));
        }
        if !(1024..=16 * 1024 * 1024).contains(&self.max_body_bytes) {
            return Err(error(
                "--max-body-bytes must be between 1024 and 16777216 (16 MiB)",
            ));
        }
        if !(1..=65_536).contains(&self.max_connections) {
            return Err(error(format!(
                "{} must be between 1 and 65536",
                env_names::MAX_CONNECTIONS
            )));
        }
        if !(1..=65_536).contains(&self.max_idle_per_peer) {
            return Err(error(format!(
                "{} must be between 1 and 65536",
                env_names::MAX_IDLE_PER_PEER
            )));
        }
        let auth = if self.no_auth {
            if !self.authorization_servers.is_empty() || self.jwks.is_some() {
                return Err(error(
                    "--no-auth conflicts with --authorization-server and --jwks; drop one or the other",
                ));
            }
            None
        } else {
            Some(self.auth_config()?)
        };
        Ok(RemoteConfig {
            listen,
            resource,
            auth,
            max_concurrent: self.max_concurrent,
            max_body_bytes: self.max_body_bytes,
            max_connections: self.max_connections,
            max_idle_per_peer: self.max_idle_per_peer,
        })
    }

    fn auth_config(&self) -> Result<AuthConfig, SettingsError> {
        if self.authorization_servers.is_empty() {
            return Err(error(format!(
                "--authorization-server (or {}) is required: the issuer URL of the OAuth \
                 server whose tokens to accept (or --no-auth on loopback for local testing)",
                env_names::AUTHORIZATION_SERVERS
            )));
        }
        for server in &self.authorization_servers {
            checked_url("--authorization-server", server)?;
        }
        let Some(jwks) = &self.jwks else {
            return Err(error(format!(
                "--jwks (or {}) is required: the authorization server's JWKS URL or a JWKS file",
                env_names::JWKS
            )));
        };
        let jwks = if jwks.starts_with("https://") || jwks.starts_with("http://") {
            JwksSource::Url(checked_url("--jwks", jwks)?)
        } else {
            JwksSource::File(jwks.into())
        };
        Ok(AuthConfig {
            authorization_servers: self.authorization_servers.clone(),
            jwks,
        })
    }
}

/// A list of URLs separated by commas and/or whitespace.
pub fn split_list(list: &str) -> Vec<String> {
    list.split(|c: char| c == ',' || c.is_ascii_whitespace())
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// An https URL, or http on a loopback host.
fn checked_url(flag: &str, text: &str) -> Result<Url, SettingsError> {
    let url = Url::parse(text).map_err(|e| error(format!("{flag} {text:?} is not a URL: {e}")))?;
    let loopback = match url.host() {
        Some(url::Host::Domain(domain)) => domain == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    match url.scheme() {
        "https" => Ok(url),
        "http" if loopback => Ok(url),
        _ => Err(error(format!(
            "{flag} {text:?} must be https (http only on a loopback host)"
        ))),
    }
}

fn resource_url(text: &str) -> Result<Url, SettingsError> {
    let url = checked_url("--resource-url", text)?;
    if url.query().is_some() || url.fragment().is_some() || !url.username().is_empty() {
        return Err(error(format!(
            "--resource-url {text:?} must not carry a query, a fragment or credentials"
        )));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str], env: &[(&str, &str)]) -> Result<RemoteSettings, SettingsError> {
        RemoteSettings::from_args(args.iter().map(|a| a.to_string()), |name| {
            env.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn flags_win_over_the_environment() {
        let settings = parse(
            &[
                "--listen",
                "0.0.0.0:8080",
                "--jwks=keys.json",
                "--max-concurrent",
                "8",
            ],
            &[
                ("ECP_JWKS", "ignored.json"),
                (
                    "ECP_AUTHORIZATION_SERVERS",
                    "https://a.example, https://b.example",
                ),
                ("ECP_RESOURCE_URL", "https://ctx.example/mcp"),
            ],
        )
        .unwrap();
        assert_eq!(settings.jwks.as_deref(), Some("keys.json"));
        assert_eq!(settings.max_concurrent, 8);
        assert_eq!(
            settings.authorization_servers,
            ["https://a.example", "https://b.example"]
        );
        let config = settings.validate().unwrap();
        assert_eq!(
            config.auth.unwrap().jwks,
            JwksSource::File("keys.json".into())
        );
    }

    #[test]
    fn unsafe_settings_are_refused_with_the_flag_to_fix() {
        let refuse = |args: &[&str]| {
            parse(args, &[])
                .and_then(RemoteSettings::validate)
                .unwrap_err()
                .0
        };
        assert!(refuse(&["--listen", "0.0.0.0:8080"]).contains("--resource-url"));
        assert!(
            refuse(&[
                "--listen",
                "0.0.0.0:8080",
                "--no-auth",
                "--resource-url",
                "https://x.example/mcp"
            ])
            .contains("loopback")
        );
        assert!(refuse(&["--listen", "127.0.0.1:0"]).contains("--authorization-server"));
        assert!(
            refuse(&[
                "--listen",
                "127.0.0.1:0",
                "--authorization-server",
                "http://auth.example"
            ])
            .contains("https")
        );
        assert!(
            refuse(&[
                "--listen",
                "127.0.0.1:0",
                "--authorization-server",
                "https://auth.example"
            ])
            .contains("--jwks")
        );
        assert!(refuse(&["--listen", "localhost:80"]).contains("IP:PORT"));
        assert!(refuse(&["--listen", "127.0.0.1:0", "--bogus"]).contains("unknown option --bogus"));
        assert!(refuse(&["--listen"]).contains("needs a value"));
        assert!(
            refuse(&[
                "--listen",
                "127.0.0.1:0",
                "--no-auth",
                "--max-concurrent",
                "0"
            ])
            .contains("between 1")
        );
        assert!(
            refuse(&[
                "--listen",
                "127.0.0.1:0",
                "--no-auth",
                "--resource-url",
                "https://x.example/mcp?a=1"
            ])
            .contains("query")
        );
    }

    #[test]
    fn connection_limits_come_from_their_variables_only() {
        let defaults = parse(&["--listen", "127.0.0.1:0", "--no-auth"], &[]).unwrap();
        assert_eq!(defaults.max_connections, DEFAULT_MAX_CONNECTIONS);
        assert_eq!(defaults.max_idle_per_peer, DEFAULT_MAX_IDLE_PER_PEER);
        let config = parse(
            &["--listen", "127.0.0.1:0", "--no-auth"],
            &[
                ("ECP_MAX_CONNECTIONS", "32"),
                ("ECP_MAX_IDLE_PER_PEER", " 4 "),
            ],
        )
        .unwrap()
        .validate()
        .unwrap();
        assert_eq!((config.max_connections, config.max_idle_per_peer), (32, 4));
        let refused = |var: &str, value: &str| {
            parse(&["--listen", "127.0.0.1:0", "--no-auth"], &[(var, value)])
                .and_then(RemoteSettings::validate)
                .unwrap_err()
                .0
        };
        assert!(
            refused("ECP_MAX_CONNECTIONS", "many")
                .contains("ECP_MAX_CONNECTIONS must be a whole number")
        );
        assert!(
            refused("ECP_MAX_IDLE_PER_PEER", "0")
                .contains("ECP_MAX_IDLE_PER_PEER must be between 1")
        );
        let unknown = parse(&["--listen", "127.0.0.1:0", "--max-connections", "8"], &[]);
        assert!(
            unknown
                .unwrap_err()
                .0
                .contains("unknown option --max-connections")
        );
    }

    #[test]
    fn loopback_without_auth_derives_its_resource_at_bind_time() {
        let config = parse(&["--listen", "[::1]:0", "--no-auth"], &[])
            .unwrap()
            .validate()
            .unwrap();
        assert!(config.auth.is_none());
        assert!(config.resource.is_none());
    }
}
