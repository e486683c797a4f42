//! The rules of a remote server: https, OAuth, no credential header, no
//! reserved or placeholder domain.

use super::*;

use crate::text::secrets::CREDENTIAL_HEADERS;

impl Checker<'_> {
    pub(super) fn remote(&mut self, server: &Node, url: &Node, pointer: &str) {
        let url_text = url.as_str().unwrap_or("");
        if !url_text.trim().to_ascii_lowercase().starts_with("https://") {
            self.report(
                Rule::RemoteHttps,
                url.span,
                &pointer_push(pointer, "httpUrl"),
                "`httpUrl` is not an https URL".into(),
                "publish the endpoint over TLS: \"https://context.acme.example/mcp\"",
            );
        }
        if let Some(domain) = reserved_domain(url_text) {
            self.report(
                Rule::RemotePlaceholder,
                url.span,
                &pointer_push(pointer, "httpUrl"),
                format!("`httpUrl` is a placeholder: {domain} is reserved and reaches no provider's service"),
                "set the deployed endpoint in `httpUrl` and `oauth.audiences`, or run `ecp new NAME --template remote --endpoint URL` again",
            );
        }
        let oauth_pointer = pointer_push(pointer, "oauth");
        match server.get("oauth") {
            None => self.report(
                Rule::RemoteOauth,
                opening(server),
                pointer,
                "the remote server has no `oauth`".into(),
                "add \"oauth\": {\"enabled\": true, \"scopes\": [\"context.read\"], \"audiences\": [\"<httpUrl>\"]}",
            ),
            Some(oauth) => {
                let enabled = matches!(oauth.get("enabled").map(|n| &n.value), Some(Value::Bool(true)));
                let non_empty = |key: &str| {
                    oauth
                        .get(key)
                        .and_then(Node::as_array)
                        .is_some_and(|list| list.iter().any(|n| n.as_str().is_some_and(|s| !s.is_empty())))
                };
                let missing: Vec<&str> = [
                    (!enabled).then_some("`enabled: true`"),
                    (!non_empty("scopes")).then_some("a scope"),
                    (!non_empty("audiences")).then_some("an audience"),
                ]
                .into_iter()
                .flatten()
                .collect();
                if !missing.is_empty() {
                    self.report(
                        Rule::RemoteOauth,
                        oauth.span,
                        &oauth_pointer,
                        format!("`oauth` lacks {}", missing.join(", ")),
                        "use {\"enabled\": true, \"scopes\": [\"context.read\"], \"audiences\": [\"<httpUrl>\"]}",
                    );
                }
            }
        }
        if let Some(headers) = server.get("headers").and_then(Node::as_object) {
            for header in headers {
                let lower = header.key.to_ascii_lowercase();
                if CREDENTIAL_HEADERS.contains(&lower.as_str()) || secrets::is_secret_key(&lower) {
                    self.report(
                        Rule::RemoteCredentialHeader,
                        header.key_span,
                        &pointer_push(&pointer_push(pointer, "headers"), &header.key),
                        format!("header `{}` carries a credential", header.key),
                        "remove the header; the remote path authenticates with OAuth",
                    );
                }
            }
        }
    }
}

/// The reserved or placeholder domain `url` points at, as it reads in a
/// finding: the `.example`, `.test`, `.invalid` and `.localhost` names
/// (RFC 2606, RFC 6761), `localhost`, and `example.com`, `.net`, `.org`;
/// and a loopback or unspecified IP address (`127.0.0.1`, `[::1]`).
pub fn reserved_domain(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url.trim()).ok()?;
    // Like `localhost`: an address that is this machine (or none) on every
    // user's machine reaches no provider's service.
    let this_machine = |loopback: bool, unspecified: bool| {
        (loopback || unspecified).then(|| {
            let host = parsed.host_str().unwrap_or_default();
            format!("`{host}` (a loopback address)")
        })
    };
    let host = match parsed.host()? {
        url::Host::Ipv4(ip) => return this_machine(ip.is_loopback(), ip.is_unspecified()),
        url::Host::Ipv6(ip) => return this_machine(ip.is_loopback(), ip.is_unspecified()),
        url::Host::Domain(host) => host,
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let under = |domain: &str| host == domain || host.ends_with(&format!(".{domain}"));
    ["example", "test", "invalid", "localhost"]
        .iter()
        .find(|tld| under(tld))
        .map(|tld| match host == *tld {
            true => format!("`{host}`"),
            false => format!("`{host}` (under .{tld})"),
        })
        .or_else(|| {
            ["example.com", "example.net", "example.org"]
                .iter()
                .find(|domain| under(domain))
                .map(|domain| format!("`{host}` (under {domain})"))
        })
}
