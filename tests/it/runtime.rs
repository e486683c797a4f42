//! The runtime in-process over `tokio::io::duplex`, with providers that
//! misbehave in ways an HTTP upstream cannot: panics, slow futures and a
//! mapping that blocks its thread.

use std::time::Duration;

use ecp::{
    profile::{ProviderItem, SEARCH_FAILED},
    runtime::{self, Provider, ProviderBudget, ProviderError, RuntimeConfig},
};
use rmcp::ServiceExt;
use serde_json::json;

use crate::mcp::{Client, call, text_of};

enum Behaviour {
    Items,
    Panic,
    Sleep(Duration),
    /// Blocks the thread polling it (a synchronous call in a mapping).
    Block(Duration),
    Fail(ProviderError),
}

struct TestProvider(Behaviour);

impl Provider for TestProvider {
    async fn search(&self, query: &str, limit: usize) -> Result<Vec<ProviderItem>, ProviderError> {
        match &self.0 {
            Behaviour::Items => Ok(vec![ProviderItem {
                id: "echo".into(),
                content: format!("{query} (limit {limit})"),
                ..ProviderItem::default()
            }]),
            Behaviour::Panic => panic!("provider bug holding {query}"),
            Behaviour::Sleep(duration) => {
                tokio::time::sleep(*duration).await;
                Ok(Vec::new())
            }
            Behaviour::Block(duration) => {
                std::thread::sleep(*duration);
                Ok(Vec::new())
            }
            Behaviour::Fail(error) => Err(error.clone()),
        }
    }
}

async fn connect(behaviour: Behaviour, budget_ms: u64) -> Client {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let (reader, writer) = tokio::io::split(server_io);
    let config = RuntimeConfig {
        name: "test".into(),
        version: "0".into(),
        budget: ProviderBudget::from_millis(budget_ms).unwrap(),
    };
    tokio::spawn(runtime::serve(
        TestProvider(behaviour),
        config,
        reader,
        writer,
    ));
    ().serve(client_io).await.unwrap()
}

#[tokio::test]
async fn provider_receives_the_normalized_query_and_limit_five() {
    let client = connect(Behaviour::Items, 5000).await;
    let result = call(&client, json!({"query": "\u{feff} a \n\n b "})).await;
    assert!(text_of(&result).contains(r#""content":"a b (limit 5)""#));
}

#[tokio::test]
async fn a_panicking_provider_gives_the_stable_error() {
    let client = connect(Behaviour::Panic, 5000).await;
    let result = call(&client, json!({"query": "q"})).await;
    assert_eq!(result.is_error, Some(true));
    assert_eq!(text_of(&result), SEARCH_FAILED);
    // The server survives it.
    let result = call(&client, json!({"query": "again"})).await;
    assert_eq!(text_of(&result), SEARCH_FAILED);
}

#[tokio::test]
async fn the_budget_ends_a_slow_provider() {
    let client = connect(Behaviour::Sleep(Duration::from_secs(60)), 200).await;
    let result = call(&client, json!({"query": "q"})).await;
    assert_eq!(text_of(&result), SEARCH_FAILED);
}

/// With several threads the provider runs in a task of its own, so the
/// budget ends the call while a mapping blocks its thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_budget_ends_a_mapping_that_blocks_its_thread() {
    let client = connect(Behaviour::Block(Duration::from_secs(6)), 300).await;
    let started = std::time::Instant::now();
    let result = call(&client, json!({"query": "q"})).await;
    assert_eq!(text_of(&result), SEARCH_FAILED);
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "answered at the budget, not after the 6 s block: {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn every_provider_error_reads_the_same() {
    for error in [
        ProviderError::Timeout,
        ProviderError::Redirect(301),
        ProviderError::RateLimited,
        ProviderError::Status(503),
        ProviderError::Oversized,
        ProviderError::InvalidUtf8,
        ProviderError::Malformed,
        ProviderError::Transport,
        ProviderError::Internal,
    ] {
        let client = connect(Behaviour::Fail(error), 5000).await;
        let result = call(&client, json!({"query": "q"})).await;
        assert_eq!(text_of(&result), SEARCH_FAILED);
        assert_eq!(result.structured_content, None);
    }
}
