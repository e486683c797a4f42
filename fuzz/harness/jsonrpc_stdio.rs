//! The stdio server's JSON-RPC handling: after a valid handshake, the input
//! as further lines, then end of input. Every request must be answered or
//! the server must end; nothing may panic or hang.

use std::{sync::OnceLock, time::Duration};

use ecp::{
    profile::ProviderItem,
    runtime::{self, Provider, ProviderBudget, ProviderError, RuntimeConfig},
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

struct Echo;

impl Provider for Echo {
    async fn search(&self, query: &str, _limit: usize) -> Result<Vec<ProviderItem>, ProviderError> {
        Ok(vec![ProviderItem {
            id: "fuzz".into(),
            content: query.into(),
            ..ProviderItem::default()
        }])
    }
}

fn config() -> RuntimeConfig {
    RuntimeConfig {
        name: "fuzz".into(),
        version: "0".into(),
        budget: ProviderBudget::DEFAULT,
    }
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    })
}

const HANDSHAKE: &str = concat!(
    r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"0"}}}"#,
    "\n",
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    "\n"
);

/// One input, as the fuzz target and the seed replay in `cargo test` run it.
pub fn run(data: &[u8]) {
    runtime().block_on(async {
        let (mut client, server) = tokio::io::duplex(1 << 20);
        let (read, write) = tokio::io::split(server);
        let serving = tokio::spawn(runtime::serve_lines(Echo, config(), read, write));
        let _ = client.write_all(HANDSHAKE.as_bytes()).await;
        let _ = client.write_all(data).await;
        let _ = client.write_all(b"\n").await;
        let _ = client.shutdown().await;
        let mut output = Vec::new();
        let _ =
            tokio::time::timeout(Duration::from_secs(10), client.read_to_end(&mut output)).await;
        // A panic of the server is the target's crash, under libFuzzer and
        // in the stable replay alike (tokio would otherwise keep it in the
        // task), and a server still running after its input ended is a hang.
        match tokio::time::timeout(Duration::from_secs(10), serving).await {
            Ok(Err(error)) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
            Ok(_) => {}
            Err(_) => panic!("the server did not end after its input did"),
        }
    });
}
