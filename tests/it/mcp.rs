//! MCP client helpers: spawn the built `ecp` binary as a stdio server and
//! talk to it with rmcp's client, capturing its stderr.

use std::{
    process::Stdio,
    sync::{Arc, Mutex},
    time::Duration,
};

use rmcp::{
    RoleClient, ServiceExt,
    model::{CallToolRequestParams, CallToolResult},
    service::RunningService,
    transport::TokioChildProcess,
};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

pub type Client = RunningService<RoleClient, ()>;

/// A spawned `ecp` server and everything it wrote to stderr so far.
pub struct Server {
    pub client: Client,
    stderr: Arc<Mutex<Vec<u8>>>,
    stderr_task: tokio::task::JoinHandle<()>,
}

/// An rmcp client that opens with `server/discover` for revision
/// 2026-07-28 (no `initialize`), once the server has agreed to it.
pub async fn discover_2026<T, E, A>(transport: T) -> Client
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    use rmcp::{ClientLifecycleMode, ClientServiceExt, model::ProtocolVersion};
    let client = ()
        .serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("server/discover");
    assert_eq!(
        client
            .peer_info()
            .expect("the discovered server")
            .protocol_version,
        ProtocolVersion::V_2026_07_28
    );
    client
}

pub fn ecp_command(args: &[&str], env: &[(&str, &str)]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_ecp"));
    command
        .args(args)
        .env_remove("PROVIDER_CONTEXT_BASE_URL")
        .env_remove("PROVIDER_CONTEXT_TOKEN");
    for (name, value) in env {
        command.env(name, value);
    }
    command
}

impl Server {
    pub async fn spawn(args: &[&str], env: &[(&str, &str)]) -> Server {
        let (transport, stderr) = TokioChildProcess::builder(ecp_command(args, env))
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn ecp");
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let stderr_task = {
            let buffer = buffer.clone();
            let mut stderr = stderr.expect("stderr is piped");
            tokio::spawn(async move {
                let mut chunk = [0u8; 4096];
                while let Ok(n) = stderr.read(&mut chunk).await {
                    if n == 0 {
                        break;
                    }
                    buffer.lock().unwrap().extend_from_slice(&chunk[..n]);
                }
            })
        };
        let client = ().serve(transport).await.expect("MCP initialize");
        Server {
            client,
            stderr: buffer,
            stderr_task,
        }
    }

    /// Closes stdin, waits for the process to exit, returns all of stderr.
    pub async fn finish(self) -> String {
        let _ = self.client.cancel().await;
        let _ = tokio::time::timeout(Duration::from_secs(10), self.stderr_task).await;
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    pub async fn search(&self, query: &str) -> CallToolResult {
        call(&self.client, json!({ "query": query })).await
    }
}

/// Calls `context_search` with raw arguments.
pub async fn call(client: &Client, arguments: Value) -> CallToolResult {
    let mut params = CallToolRequestParams::new("context_search");
    params.arguments = arguments.as_object().cloned();
    tokio::time::timeout(Duration::from_secs(30), client.call_tool(params))
        .await
        .expect("tools/call answered within 30 s")
        .expect("tools/call succeeded at the protocol level")
}

/// The single text block of a result.
pub fn text_of(result: &CallToolResult) -> &str {
    assert_eq!(
        result.content.len(),
        1,
        "exactly one content block: {result:?}"
    );
    result.content[0]
        .as_text()
        .map(|t| t.text.as_str())
        .expect("a text block")
}

/// Exactly one tool, `context_search`, with the canonical schemas and
/// annotations.
pub fn assert_canonical_tool(tools: &[rmcp::model::Tool]) {
    use ecp::contracts::{INPUT_SCHEMA_JSON, OUTPUT_SCHEMA_JSON};
    assert_eq!(tools.len(), 1, "{tools:?}");
    let tool = serde_json::to_value(&tools[0]).unwrap();
    assert_eq!(tool["name"], "context_search");
    assert_eq!(tool["annotations"], json!({"destructiveHint": false}));
    assert_eq!(
        tool["inputSchema"],
        serde_json::from_str::<Value>(INPUT_SCHEMA_JSON).unwrap()
    );
    assert_eq!(
        tool["outputSchema"],
        serde_json::from_str::<Value>(OUTPUT_SCHEMA_JSON).unwrap()
    );
}
