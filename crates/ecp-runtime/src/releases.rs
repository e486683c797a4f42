//! This crate's releases, newest first: what `ecp upgrade` shows an
//! extension's owner, and what `ecp lint` holds a vendored copy against (a
//! copy older than a release with a security fix is an error). Kept in step
//! with `CHANGELOG.md` by a test.

/// This crate's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// One release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Release {
    /// Its version, `MAJOR.MINOR.PATCH`.
    pub version: &'static str,
    /// What changed, one line each.
    pub notes: &'static [&'static str],
    /// What security problem it fixes, when it fixes one: every older copy
    /// has it.
    pub security_fix: Option<&'static str>,
}

/// Newest first; the first is [`VERSION`].
pub const RELEASES: &[Release] = &[
    Release {
        version: "0.6.2",
        notes: &[
            "`--listen`: the direct path, which answers a plain stateless `tools/call` before rmcp's message parsing, also answers `tools/list` (its result serialized once) and takes requests whose `_meta` holds only a progress token, which rmcp's own client (3.11.0) puts in every request; the bytes are the general path's, held equal by tests for every revision before 2026-07-28, id kind and argument shape",
        ],
        security_fix: None,
    },
    Release {
        version: "0.6.1",
        notes: &[
            "the TypeScript runtime (`ecp new --template local-ts`) no longer depends on the MCP TypeScript SDK or on undici: its own MCP server of the one tool (`src/runtime/server.ts`: `initialize` with the SDK 1.32.2's version negotiation, `ping`, `tools/list`, `tools/call`, -32601 naming any other method, `notifications/cancelled`, a request asking for a task refused as the SDK refused it), its own reading of JSON-RPC messages (`src/runtime/messages.ts`, held to the SDK's zod schemas by a test on generated messages; the SDK stays a development dependency for that and for the tests' client), and upstream requests on Node's `node:http` and `node:https` with the Rust runtime's proxy rules (`src/runtime/proxy.ts`: `CONNECT` for https with the proxy URL's credentials as Basic, `NO_PROXY` hosts, domains, ports and `*`). The answers are the same bytes; two differ: a cancellation of the request with id 0 now cancels it (the SDK skipped id 0), and no `accept-encoding` is sent (undici asked for gzip), as the Rust runtime sends none. `dist/main.js` is 27 KiB where it was 692, and the process peaks at 57 MiB after 2000 calls and 62 after 20000 (Node 20; 136 and more before), its heap growth held in on Node 20's V8",
        ],
        security_fix: None,
    },
    Release {
        version: "0.6.0",
        notes: &[
            "the error enums an extension matches (`ProviderError`, `AdapterError`, `http::ConfigError`, `profile::QueryError`) are `#[non_exhaustive]`: a later runtime may add a kind without breaking a mapping, whose `match` needs a `_` arm (a mapping that only builds and returns them is unchanged); reqwest is an optional dependency behind the `reqwest` feature, which only the hidden paths of 0.4.1 and earlier need (`ecp_runtime::reqwest`, `ProxyEnv::into_reqwest`): a current extension no longer compiles it, and `ecp upgrade` turns the feature on for a mapping that still names them",
            "the hidden paths that code of 0.4.1 and earlier names (`binding`, `proxy`, `search_response`, `install_tls_provider`, `profile::ecmascript`, `profile::ProviderItem`, `contracts::RENDER_VECTORS_JSON` and `TEST_VECTORS_JSON`) are `#[deprecated]`, each with what replaces it, so such a build still compiles and rustc says what to change; `ecp_runtime::reqwest`, a re-exported crate, cannot carry the mark and exists only with the `reqwest` feature",
        ],
        security_fix: None,
    },
    Release {
        version: "0.5.0",
        notes: &[
            "Auto Recall: `dist/main --hook user-prompt-submit --repository-root DIR [--timeout-ms 100..5000]` runs the extension's own provider once as Qwen Code's `UserPromptSubmit` command hook, with the contract of Qwen's own hook (`@qwen-code/external-context-mem0`): only `submitted_prompt` is read (at most 1 MiB of input), only when the input's `cwd` resolves inside the repository root; the query is the prompt without fenced code, the configured credential and secret shapes (assignments of a token, password, secret or API key, `Bearer` tokens, JWT-like and 32-character tokens), at most 512 code points (`hook::query`, its results those of Qwen's regular expressions, held by shared vectors with the TypeScript runtime); one search within the provider timeout (default 1500 ms), the whole hook within 6500 ms; the output is `hookSpecificOutput.additionalContext` holding the `context_search` envelope text, and `{}` with exit 0 on anything else (fail open)",
        ],
        security_fix: None,
    },
    Release {
        version: "0.4.3",
        notes: &[
            "a plain `http` endpoint on loopback (`localhost`, `127.0.0.0/8`, `::1`: the one place plain http is allowed, because the credential never crosses a network) is never sent through `HTTP_PROXY`, whatever `NO_PROXY` says; 0.4.2 and earlier sent it there, the bearer token in clear text, as undici's proxy agent does. An `https` loopback endpoint still follows the proxy variables (its `CONNECT` tunnel carries TLS)",
        ],
        security_fix: Some(
            "with `HTTP_PROXY` set and no `NO_PROXY` entry for it, a loopback http endpoint's credential went to the proxy in clear text",
        ),
    },
    Release {
        version: "0.4.2",
        notes: &[
            "the runtime's own outbound requests (a mapping's `http::Upstream`, the remote adapter's key set) go through one client of its own: hyper-util's pooled client behind the runtime's connector (TCP with nodelay, keepalive 15 s/15 s/3 and a 30 s user timeout; rustls with ring and the platform's certificate verifier, TLS 1.2 and 1.3, SNI, ALPN `http/1.1`; `HTTP(S)_PROXY` in absolute form for `http` and through a `CONNECT` tunnel for `https`, with the proxy URL's credentials as Basic). The rules are the reqwest client's it replaces: no redirect, no retry but the reconnect of a request never sent, idle connections closed after 90 s, the 1 MiB cap, a cancelled call closes its connection. It takes about 4 µs less CPU a request, and a current extension links no reqwest code (`dist/main` about 180 KB smaller); `ecp_runtime::reqwest` and `ProxyEnv::into_reqwest` stay, hidden, for code an earlier ecp generated, until 1.0",
            "`--listen` and stdio: on one thread (stdio, `--listen` on one core) the provider's future runs in the call's own task (no task spawned a call; a panic in it is still the stable failure); with several threads it keeps a task of its own, so that the budget still ends a call whose mapping blocks its thread (a new test holds it), the rendering moves the provider's strings instead of copying them, a score's digits are formatted on the stack, the answer's strings are escaped eight bytes at a time, and request paths are checked without allocating. With the client, 30 µs of CPU a call where 0.4.1 took 35 (`cargo xtask bench --ceiling`, OAuth, one core); an adapter made with `ecp new --server` (`opt-level = 3`) takes 26 to 28, about half the calls a second of a plain hyper server answering a fixed body on the same machine",
        ],
        security_fix: None,
    },
    Release {
        version: "0.4.1",
        notes: &[
            "a fresh lockfile resolves rustls 0.23.48, which deprecates ring's crypto provider (no post-quantum key exchange): the runtime installs it in one place with the deprecation allowed, so an extension's own `cargo build` prints no warning; ring stays the provider (aws-lc-rs would need a C toolchain and cmake on every provider's machine)",
            "`--listen`: the one `info` line per request is written in batches (at most 16 KiB, at most 50 ms late; a warning or error writes what waits and itself at once, and whatever ends the serving writes the batch and turns batching off), so a busy server makes one system call for many lines instead of one each, and a log collector on its stderr pipe is woken once per batch: 8% less server CPU per call measured with `wrk` on loopback (56 to 52 µs)",
            "`--listen` on one core (`taskset`, a container's CPU limit, as `std::thread::available_parallelism` reads it) serves on one thread (tokio's current-thread runtime) instead of a worker and the main thread: 10% less CPU a call measured with `wrk` on loopback (49 to 44 µs); with more cores, unchanged",
        ],
        security_fix: None,
    },
    Release {
        version: "0.4.0",
        notes: &[
            "the API is what an extension needs, 31 documented items: `Adapter`, `Provider`, `ProviderItem` (with `ProviderItem::from_json`), `ProviderError`, `ProviderBudget`, `RuntimeConfig`, `serve`/`serve_stdio` and their errors, `http` (`Upstream`, `Credential`, `Request`, `ConfigError`, `string`), `profile` (`render` with its `Envelope` and `ContextItem`, `query_from_arguments` with its `QueryError`, `retain_valid`, the tool name, limit and failure text), `contracts` (`render_vectors()`, `test_vectors()`), and `serde_json`/`url`; a snapshot in ecp's tests holds it",
            "everything else (the remote adapter's parts, the V1 binding, the log, the releases, the profile's bounds and ECMAScript rules, the embedded contract texts) moved to `ecp_runtime::internal`, hidden and not part of the API; the paths that code an earlier ecp generated names (the old binding copies of 0.1.x/0.2.x, the tests of 0.3.x) still resolve, hidden, until 1.0",
            "a generated extension's tests read the vectors with `contracts::render_vectors()`/`test_vectors()` and `ProviderItem::from_json`; `tests/contract.rs` no longer runs the vectors through the V1 binding (`tests/provider.rs` runs them through your mapping)",
        ],
        security_fix: None,
    },
    Release {
        version: "0.3.1",
        notes: &[
            "`rmcp` is required as `~3.11.0`: the Streamable HTTP endpoint is the runtime's port of rmcp 3.11's rules, and an extension's own lockfile can no longer pair it with an rmcp 3.x that was never compared (`cargo xtask rmcp-next` in ecp's repository compares the newest one)",
            "the error types (`ProviderError`, `AdapterError`, `RuntimeError`, `http::ConfigError`, `profile::QueryError`, the remote settings' and key sets' errors) derive `thiserror::Error`, with the same texts; no function is over 80 lines (the HTTP request handling, the MCP POST checks and the `--listen` settings are split), with no change of behaviour; every public item is documented (`#![warn(missing_docs)]`)",
        ],
        security_fix: None,
    },
    Release {
        version: "0.3.0",
        notes: &[
            "`ecp_runtime::http`: a hardened HTTP client for any provider mapping (base URL from the environment with the binding's rules, a path now allowed and request paths kept under it; a bearer or another header credential; GET with query parameters, POST with a JSON body; no redirects, no retries, `HTTP(S)_PROXY`/`NO_PROXY`, the 1 MiB cap declared and streamed, strict UTF-8 without its BOM, JSON as `JSON.parse` reads it, status mapping to the stable `ProviderError`s); the Generic HTTP Search V1 binding is a provider on it",
            "the server drops items without an id or content before the renderer keeps five (`profile::retain_valid`), so a mapping need neither filter nor limit; V1 output is unchanged",
        ],
        security_fix: None,
    },
    Release {
        version: "0.2.6",
        notes: &[
            "`--listen`: the connection table of 0.2.5 is replaced by one that never drops a request and that a flood cannot fill in any state (`remote/connections.rs`). A connection holds no place that counts against others until a whole request head has arrived: an idle one (waiting for a request) may be closed to make room, one with a request in flight or an answer still being written never is (0.2.5 could drop a connection whose request arrived as it was chosen, or cut an answer being written). The per-peer cap counts only idle connections that never carried an authorized request and is 64 (`ECP_MAX_IDLE_PER_PEER`); past 1024 open connections (`ECP_MAX_CONNECTIONS`) a new one closes the oldest idle connection of the peer holding the most, those that never carried an authorized request first, at once (0.2.5 waited up to 250 ms in the accept loop); an IPv6 peer is its /64. The 16 `/healthz` places, taken when every connection has a request in flight, are made room on the same way, so silent connections cannot hold them either. A `connections_closed` log line (at most every 10 s) counts what was closed",
        ],
        security_fix: None,
    },
    Release {
        version: "0.2.5",
        notes: &[
            "`--listen`: a flood of silent connections cannot fail health probes or calls: a peer holds at most 256 idle connections (none of their requests in flight), and when the 1024 the server takes are open, each new connection closes the oldest idle one of the peer holding the most; a connection with a request in flight is never closed. Before, about 1040 silent connections from one client took every connection and the `/healthz` reserve, and probes and calls got `503`",
        ],
        security_fix: None,
    },
    Release {
        version: "0.2.4",
        notes: &[
            "`--listen`: the MCP endpoint is the runtime's own port of rmcp's stateless Streamable HTTP rules (the same checks, statuses and bytes, held to rmcp's service by a test over more than 900 requests), with rmcp's model types and the same handler; rmcp's HTTP service (its per-request service loop, SSE and session code) is no longer built into `dist/main`, which is about 300 KB smaller",
            "a call cut short by the drain timeout is answered with the stable failure on every path (rmcp's service answered it `500` in plain text)",
            "`Adapter::try_run` returns why the adapter did not serve as an `AdapterError` (usage, budget, provider, failed), for callers with their own error reporting; `Adapter::run` (every `dist/main`) prints and exits as before",
        ],
        security_fix: None,
    },
    Release {
        version: "0.2.3",
        notes: &[
            "`--listen`: a plain stateless `tools/call` of `context_search` (any revision before 2026-07-28, no `_meta`) is answered by a direct path to the same handler, with the bytes rmcp would send, instead of through rmcp's per-request service; every other request still goes to rmcp",
            "rendering formats each score once, and a successful HTTP answer is written from the rendered envelope without building `structuredContent` as a value first",
            "the HTTP binding writes its request body without a map and reads the upstream document with a typed reader (`search_response::read_items`), falling back to the reading by value for what that one does not decide",
        ],
        security_fix: None,
    },
    Release {
        version: "0.2.2",
        notes: &[
            "rendering counts and escapes strings a byte at a time (the same text, byte for byte; the UTF-16 lengths of the bound from one table), and a string within its code-point bound is no longer walked to find its end",
            "JSON log lines (one per HTTP request) are written straight into their buffer instead of through a map",
        ],
        security_fix: None,
    },
    Release {
        version: "0.2.1",
        notes: &[
            "`--listen` with a JWKS URL: an unreachable key set host is reported within 1 s and a key set that does not arrive within 3 s stops the start, so a replica answers its first `initialize` well inside a client's 5 s discovery timeout or exits",
            "protocol revision 2026-07-28 (`server/discover`, no `initialize`) is served beside 2024-11-05 through 2025-11-25, on stdio and over HTTP",
        ],
        security_fix: None,
    },
    Release {
        version: "0.2.0",
        notes: &[
            "the runtime is a crate that extensions depend on, vendored under vendor/ecp-runtime; `ecp upgrade` replaces it",
            "one entry point, `Adapter`, parses the adapter's flags and environment for dist/main and ecp serve alike",
            "input that ends before `initialize` ends the server cleanly (exit 0)",
        ],
        security_fix: None,
    },
    Release {
        version: "0.1.0",
        notes: &["the runtime as ecp 0.1.0 copied it into src/profile/ and src/runtime/"],
        security_fix: None,
    },
];

/// `(major, minor, patch)` of a plain `X.Y.Z` version.
pub fn parse_version(version: &str) -> Option<(u64, u64, u64)> {
    let mut parts = version.trim().split('.').map(|p| p.parse::<u64>().ok());
    let parsed = (parts.next()??, parts.next()??, parts.next()??);
    parts.next().is_none().then_some(parsed)
}

/// The releases after `version`, newest first (all of them when it is not
/// a version).
pub fn newer_than(version: &str) -> Vec<&'static Release> {
    newer_in(RELEASES, version)
}

/// The releases of `releases` (newest first) after `version`.
pub fn newer_in<'a>(releases: &'a [Release], version: &str) -> Vec<&'a Release> {
    let old = parse_version(version);
    releases
        .iter()
        .filter(|r| match (parse_version(r.version), old) {
            (Some(new), Some(old)) => new > old,
            _ => true,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_release_is_this_crate_and_the_changelog_agrees() {
        assert_eq!(RELEASES[0].version, VERSION);
        let changelog = include_str!("../CHANGELOG.md");
        let headings: Vec<&str> = changelog
            .lines()
            .filter_map(|l| l.strip_prefix("## "))
            .collect();
        let versions: Vec<&str> = RELEASES.iter().map(|r| r.version).collect();
        assert_eq!(headings, versions);
        for pair in RELEASES.windows(2) {
            assert!(parse_version(pair[0].version) > parse_version(pair[1].version));
        }
    }

    #[test]
    fn newer_than_lists_what_an_upgrade_brings() {
        assert!(newer_than(VERSION).is_empty());
        assert_eq!(newer_than("0.1.0")[0].version, VERSION);
        assert_eq!(newer_than("not a version").len(), RELEASES.len());
        assert_eq!(parse_version("1.2.3"), Some((1, 2, 3)));
        assert_eq!(parse_version("1.2"), None);
        assert_eq!(parse_version("1.2.3.4"), None);
    }
}
