//! JWKS parsing and bearer-token verification of the remote adapter: the
//! input split at its first 0xff byte into a key set and an Authorization
//! header value.

use std::sync::OnceLock;

use ecp::runtime::remote::auth::{Authenticator, KeySet, TokenRules};

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    })
}

/// A real ES256 key set, so that tokens reach signature checks.
const JWKS: &str = r#"{"keys":[{"kty":"EC","crv":"P-256","kid":"k1","alg":"ES256","use":"sig","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}"#;

/// One input, as the fuzz target and the seed replay in `cargo test` run it.
pub fn run(data: &[u8]) {
    let (jwks, header) = match data.iter().position(|b| *b == 0xff) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (&[][..], data),
    };
    if let Ok(text) = std::str::from_utf8(jwks) {
        let _ = KeySet::parse(text);
    }
    let Ok(keys) = KeySet::parse(JWKS) else {
        return;
    };
    let rules = TokenRules {
        resource: "https://context.example/mcp".into(),
        issuers: vec!["https://auth.example".into()],
    };
    let authenticator = Authenticator::with_keys(rules, keys);
    runtime().block_on(async {
        let _ = authenticator.authorize(Some(header)).await;
    });
}
