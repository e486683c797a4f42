//! Outbound proxies from the environment, read as the reference reads them
//! (undici's `EnvHttpProxyAgent`):
//!
//! - `http_proxy`, else `HTTP_PROXY`, for `http` endpoints;
//! - `https_proxy`, else `HTTPS_PROXY`, for `https` endpoints; when neither
//!   is set, the HTTP proxy serves `https` too;
//! - `no_proxy`, else `NO_PROXY`: entries separated by commas or spaces; `*`
//!   alone turns proxying off; `host` matches that host exactly, `.domain`
//!   and `*.domain` match the domain's hosts; `host:port` only that port;
//!   IPv6 addresses with or without brackets.
//!
//! One rule differs from the reference (runtime 0.4.3): a plain `http`
//! endpoint on loopback (`localhost` and `*.localhost`, `127.0.0.0/8`,
//! `::1`) is never proxied, whatever `NO_PROXY` says. Plain http is allowed
//! only there, because the credential then never crosses a network; sent
//! to a proxy it would cross one in clear text (and the proxy's loopback is
//! not the caller's). An `https` loopback endpoint still follows the
//! variables: its `CONNECT` tunnel carries TLS. An empty value counts as
//! unset; `ALL_PROXY` is not read (neither is it by the reference).
//!
//! A proxy URL may carry `user:password@`, sent as `Proxy-Authorization:
//! Basic`. It is a credential: nothing here formats it, and the adapter's
//! errors never carry it (they are the stable message).

use url::Url;

/// One `NO_PROXY` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Bypass {
    /// `*`: no request is proxied.
    All,
    /// A host (lower-case, without brackets), or a domain suffix when it
    /// starts with `.`; with a port when the entry named one.
    Host { name: String, port: Option<u16> },
}

/// The proxy settings of one process.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyEnv {
    http: Option<Url>,
    https: Option<Url>,
    bypass: Vec<Bypass>,
}

fn parse_bypass(entry: &str) -> Option<Bypass> {
    let entry = entry.trim().to_ascii_lowercase();
    if entry.is_empty() {
        return None;
    }
    if entry == "*" {
        return Some(Bypass::All);
    }
    let entry = entry.strip_prefix('*').unwrap_or(&entry).to_owned();
    // `[::1]:8080`, `[::1]`, `::1` (several colons: an address, no port),
    // `host:8080`, `host`.
    let (name, port) = if let Some(rest) = entry.strip_prefix('[') {
        match rest.split_once(']') {
            Some((address, tail)) => (
                address.to_owned(),
                tail.strip_prefix(':').and_then(|p| p.parse().ok()),
            ),
            None => (rest.to_owned(), None),
        }
    } else if entry.matches(':').count() == 1 {
        let (host, port) = entry.split_once(':').unwrap_or((&entry, ""));
        match port.parse() {
            Ok(port) => (host.to_owned(), Some(port)),
            Err(_) => (entry.clone(), None),
        }
    } else {
        (entry.clone(), None)
    };
    Some(Bypass::Host { name, port })
}

/// Whether `url`'s host is this machine's loopback: `localhost` or a name
/// under it, an address in `127.0.0.0/8`, or `::1` (also IPv4-mapped).
fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(name)) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => {
            ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
        None => false,
    }
}

/// A proxy variable's value as a URL (`host:port` alone means `http://`).
fn proxy_url(value: &str) -> Option<Url> {
    let value = value.trim();
    if value.is_empty() {
        return None;
    }
    let url = if value.contains("://") {
        Url::parse(value)
    } else {
        Url::parse(&format!("http://{value}"))
    };
    url.ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
}

impl ProxyEnv {
    /// The settings from this process's environment.
    pub fn from_env() -> ProxyEnv {
        ProxyEnv::from_vars(|name| std::env::var(name).ok())
    }

    /// The settings from any variable lookup (the lower-case name wins).
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> ProxyEnv {
        let first = |names: [&str; 2]| {
            names
                .into_iter()
                .filter_map(&get)
                .find(|value| !value.trim().is_empty())
        };
        let http = first(["http_proxy", "HTTP_PROXY"]).and_then(|v| proxy_url(&v));
        let https = first(["https_proxy", "HTTPS_PROXY"]).and_then(|v| proxy_url(&v));
        let bypass = first(["no_proxy", "NO_PROXY"])
            .map(|list| {
                list.split([',', ' ', '\t', '\n'])
                    .filter_map(parse_bypass)
                    .collect()
            })
            .unwrap_or_default();
        ProxyEnv {
            http,
            https,
            bypass,
        }
    }

    /// Whether any proxy is configured.
    pub fn is_empty(&self) -> bool {
        self.http.is_none() && self.https.is_none()
    }

    fn bypassed(&self, url: &Url) -> bool {
        let host = url
            .host_str()
            .unwrap_or("")
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        let port = url.port_or_known_default();
        self.bypass.iter().any(|entry| match entry {
            Bypass::All => true,
            Bypass::Host { name, port: wanted } => {
                let host_matches = match name.strip_prefix('.') {
                    Some(domain) => host.ends_with(name.as_str()) || host == domain,
                    None => host == *name,
                };
                host_matches && wanted.is_none_or(|p| Some(p) == port)
            }
        })
    }

    /// The proxy a request to `url` goes through, if any (never one for
    /// plain `http` on loopback).
    pub fn proxy_for(&self, url: &Url) -> Option<&Url> {
        let proxy = match url.scheme() {
            "https" => self.https.as_ref().or(self.http.as_ref()),
            "http" if is_loopback(url) => None,
            "http" => self.http.as_ref(),
            _ => None,
        }?;
        (!self.bypassed(url)).then_some(proxy)
    }

    /// The settings as a reqwest proxy; `None` when no proxy is set. Kept
    /// for provider code an earlier ecp generated (the runtime itself goes
    /// through `proxy_for`); only with the `reqwest` feature, gone in 1.0.
    #[cfg(feature = "reqwest")]
    pub fn into_reqwest(self) -> Option<reqwest::Proxy> {
        if self.is_empty() {
            return None;
        }
        Some(reqwest::Proxy::custom(move |url| {
            self.proxy_for(url).cloned()
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> ProxyEnv {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ProxyEnv::from_vars(move |name| {
            vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        })
    }

    fn via(env: &ProxyEnv, url: &str) -> Option<String> {
        env.proxy_for(&Url::parse(url).unwrap())
            .map(|u| u.host_str().unwrap().to_owned())
    }

    #[test]
    fn schemes_pick_their_variable_and_http_serves_https_too() {
        let both = env(&[
            ("HTTP_PROXY", "http://plain:3128"),
            ("HTTPS_PROXY", "http://secure:3128"),
        ]);
        assert_eq!(
            via(&both, "http://search.acme.example:9/x").as_deref(),
            Some("plain")
        );
        assert_eq!(
            via(&both, "https://api.acme.example/").as_deref(),
            Some("secure")
        );
        let http_only = env(&[("HTTP_PROXY", "plain:3128")]);
        assert_eq!(
            via(&http_only, "https://api.acme.example/").as_deref(),
            Some("plain")
        );
        let https_only = env(&[("HTTPS_PROXY", "http://secure:3128")]);
        assert_eq!(via(&https_only, "http://127.0.0.1:9/"), None);
        let lower_wins = env(&[
            ("http_proxy", "http://lower:1"),
            ("HTTP_PROXY", "http://upper:1"),
        ]);
        assert_eq!(via(&lower_wins, "http://x/").as_deref(), Some("lower"));
        let empty_is_unset = env(&[("http_proxy", ""), ("HTTP_PROXY", "http://upper:1")]);
        assert_eq!(via(&empty_is_unset, "http://x/").as_deref(), Some("upper"));
        assert!(env(&[]).is_empty());
        assert!(env(&[("HTTP_PROXY", "socks5://x:1")]).is_empty());
    }

    #[test]
    fn no_proxy_takes_hosts_domains_ports_and_a_star() {
        let base = [
            ("HTTP_PROXY", "http://p:3128"),
            ("HTTPS_PROXY", "http://p:3128"),
        ];
        let with = |no_proxy: &str| {
            let mut vars = base.to_vec();
            vars.push(("NO_PROXY", no_proxy));
            env(&vars)
        };
        // Plain http on loopback is never proxied (the credential would
        // cross a network in clear text); https on loopback follows the
        // variables.
        for url in [
            "http://127.0.0.1:8080/",
            "http://127.1.2.3/",
            "http://localhost:8080/",
            "http://LOCALHOST./",
            "http://api.localhost/",
            "http://[::1]:8080/",
            "http://[::ffff:127.0.0.1]/",
        ] {
            assert_eq!(via(&with(""), url), None, "{url}");
        }
        assert!(via(&with(""), "https://localhost:8443/").is_some());
        assert!(via(&with(""), "http://localhost.evil.example/").is_some());
        assert!(via(&with(""), "http://128.0.0.1/").is_some());
        let e =
            with("localhost, 127.0.0.1 ::1,.corp.example,*.internal.example,api.acme.example:8443");
        assert_eq!(via(&e, "http://127.0.0.1:8080/"), None);
        assert_eq!(via(&e, "http://localhost:8080/"), None);
        assert_eq!(via(&e, "http://[::1]:8080/"), None);
        assert_eq!(via(&e, "https://search.corp.example/"), None);
        assert_eq!(via(&e, "https://corp.example/"), None);
        assert_eq!(via(&e, "https://a.internal.example/"), None);
        assert_eq!(via(&e, "https://api.acme.example:8443/"), None);
        assert!(
            via(&e, "https://api.acme.example/").is_some(),
            "another port"
        );
        assert!(via(&e, "https://notcorp.example/").is_some());
        assert!(via(&e, "https://localhost.evil.example/").is_some());
        assert_eq!(via(&with("*"), "https://anything.example/"), None);
        assert_eq!(via(&with("[::1]:8080"), "http://[::1]:8080/"), None);
        let lower = env(&[
            ("HTTP_PROXY", "http://p:1"),
            ("no_proxy", "a.example"),
            ("NO_PROXY", "b.example"),
        ]);
        assert_eq!(via(&lower, "http://a.example/"), None);
        assert!(via(&lower, "http://b.example/").is_some());
    }
}
