//! The remote adapter's MCP endpoint held to rmcp's Streamable HTTP service,
//! configured as runtime 0.2.3 ran it, on any request: the first byte picks
//! the HTTP method, whether OAuth is on and the request target (`/mcp` or
//! an absolute one), `name: value` lines up to a blank line are the
//! headers, the rest is the body. Both answer in this
//! process around the same handler and corpus; status, content type,
//! `Allow` and body must be the same bytes.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use ecp::providers::fixture::FixtureCorpus;
use ecp::runtime::{ContextSearchServer, ProviderBudget, RuntimeConfig, remote};
use http_body_util::{BodyExt, Full};
use hyper::{HeaderMap, Method, header::HeaderName, header::HeaderValue};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::never::NeverSessionManager,
};

type Oracle = StreamableHttpService<ContextSearchServer<FixtureCorpus>, NeverSessionManager>;

struct Sides {
    runtime: tokio::runtime::Runtime,
    server: ContextSearchServer<FixtureCorpus>,
    /// Without OAuth (rmcp's loopback `Host` list), and with it.
    oracles: [Oracle; 2],
}

const CORPUS: &str = include_str!("../../templates/corpus/example.jsonl");

fn sides() -> &'static Sides {
    static SIDES: OnceLock<Sides> = OnceLock::new();
    SIDES.get_or_init(|| {
        let corpus = FixtureCorpus::parse(CORPUS, std::path::Path::new("example.jsonl")).unwrap();
        let config = RuntimeConfig {
            name: "fuzz".to_owned(),
            version: "0".to_owned(),
            budget: ProviderBudget::DEFAULT,
        };
        let server = ContextSearchServer::new(Arc::new(corpus), config);
        let oracle = |oauth: bool| {
            let config = StreamableHttpServerConfig::default()
                .with_legacy_session_mode(false)
                .with_json_response(true)
                .with_sse_keep_alive(None)
                .with_sse_retry(None);
            let config = if oauth {
                config.disable_allowed_hosts()
            } else {
                config
            };
            let server = server.clone();
            StreamableHttpService::new(
                move || Ok(server.clone()),
                Arc::new(NeverSessionManager::default()),
                config,
            )
        };
        Sides {
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap(),
            oracles: [oracle(false), oracle(true)],
            server,
        }
    })
}

const METHODS: [Method; 8] = [
    Method::POST,
    Method::POST,
    Method::POST,
    Method::POST,
    Method::GET,
    Method::DELETE,
    Method::PUT,
    Method::OPTIONS,
];

/// One input, as the fuzz target and the seed replay in `cargo test` run it.
pub fn run(data: &[u8]) {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let method = METHODS[usize::from(first & 7)].clone();
    let oauth = first & 8 != 0;
    let target = match first >> 4 & 3 {
        1 => "http://127.0.0.1:8080/mcp",
        2 => "http://example.com/mcp",
        _ => "/mcp",
    };
    let uri: hyper::Uri = target.parse().unwrap();
    let split = rest.windows(2).position(|w| w == b"\n\n");
    let (head, body) = match split {
        Some(at) => (&rest[..at], &rest[at + 2..]),
        None => (rest, &b""[..]),
    };
    let mut headers = HeaderMap::new();
    for line in head.split(|&b| b == b'\n') {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(&line[..colon]),
            HeaderValue::from_bytes(line[colon + 1..].trim_ascii()),
        ) else {
            continue;
        };
        headers.append(name, value);
    }
    // The adapter refuses a second `Host` before the MCP endpoint.
    if headers.get_all(hyper::header::HOST).iter().count() > 1 {
        return;
    }
    let sides = sides();
    sides.runtime.block_on(async {
        let ours = remote::answer_mcp(&sides.server, &method, &uri, &headers, body, oauth).await;
        let mut request = hyper::Request::builder().method(method).uri(uri.clone());
        for (name, value) in &headers {
            request = request.header(name, value);
        }
        let request = request
            .body(Full::new(Bytes::copy_from_slice(body)))
            .unwrap();
        let response = sides.oracles[usize::from(oauth)].handle(request).await;
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .map(|v| v.to_str().unwrap().to_owned())
        };
        let theirs = (
            response.status().as_u16(),
            header("content-type"),
            header("allow"),
        );
        let their_body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(
            (
                ours.status,
                ours.content_type.map(str::to_owned),
                ours.allow.map(str::to_owned)
            ),
            theirs,
            "{headers:?} {:?}",
            String::from_utf8_lossy(body)
        );
        assert_eq!(
            ours.body,
            their_body,
            "{headers:?} {:?}",
            String::from_utf8_lossy(body)
        );
    });
}
