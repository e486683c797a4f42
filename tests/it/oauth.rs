//! Test OAuth material and the remote adapter as a child process: key pairs
//! and their JWKS, access tokens minted and signed here (ES256 from a key
//! generated per run, RS256 from a test-only key in `fixtures/`), and
//! `ecp serve --listen 127.0.0.1:0` with its JSON stderr collected.

use std::{
    process::Stdio,
    sync::{Arc, Mutex},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use ring::{
    rand::SystemRandom,
    signature::{self, EcdsaKeyPair, KeyPair, RsaKeyPair, RsaPublicKeyComponents},
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

/// The issuer the tests' tokens name and the servers accept.
pub const ISSUER: &str = "https://auth.test.example";

/// A signing key and the `alg`/`kid` its tokens carry.
pub struct Signer {
    alg: &'static str,
    kid: String,
    key: SigningKey,
}

enum SigningKey {
    Rsa(RsaKeyPair),
    Ecdsa(EcdsaKeyPair),
}

impl Signer {
    /// RS256 with the committed 2048-bit test key (PKCS#1 DER) (ring cannot generate
    /// RSA keys; this one signs nothing but test tokens).
    pub fn rs256(kid: &str) -> Signer {
        let der = include_bytes!("fixtures/jwt-test-rsa.der");
        Signer {
            alg: "RS256",
            kid: kid.to_owned(),
            key: SigningKey::Rsa(RsaKeyPair::from_der(der).expect("test RSA key")),
        }
    }

    /// ES256 with a key generated for this run.
    pub fn es256(kid: &str) -> Signer {
        let rng = SystemRandom::new();
        let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap();
        Signer {
            alg: "ES256",
            kid: kid.to_owned(),
            key: SigningKey::Ecdsa(EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng).unwrap()),
        }
    }

    /// The public key as a JWK.
    pub fn jwk(&self) -> Value {
        let b64 = |bytes: &[u8]| URL_SAFE_NO_PAD.encode(bytes);
        match &self.key {
            SigningKey::Rsa(key) => {
                let public = RsaPublicKeyComponents::<Vec<u8>>::from(key.public());
                json!({
                    "kty": "RSA", "use": "sig", "alg": self.alg, "kid": self.kid,
                    "n": b64(&public.n), "e": b64(&public.e),
                })
            }
            SigningKey::Ecdsa(key) => {
                let point = key.public_key().as_ref();
                json!({
                    "kty": "EC", "crv": "P-256", "kid": self.kid,
                    "x": b64(&point[1..33]), "y": b64(&point[33..65]),
                })
            }
        }
    }

    /// A compact JWS of `claims` with this key.
    pub fn token(&self, claims: &Value) -> String {
        self.token_with_header(
            &json!({"alg": self.alg, "typ": "at+jwt", "kid": self.kid}),
            claims,
        )
    }

    pub fn token_with_header(&self, header: &Value, claims: &Value) -> String {
        let signed = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let rng = SystemRandom::new();
        let signature = match &self.key {
            SigningKey::Rsa(key) => {
                let mut signature = vec![0; key.public().modulus_len()];
                key.sign(
                    &signature::RSA_PKCS1_SHA256,
                    &rng,
                    signed.as_bytes(),
                    &mut signature,
                )
                .unwrap();
                signature
            }
            SigningKey::Ecdsa(key) => key.sign(&rng, signed.as_bytes()).unwrap().as_ref().to_vec(),
        };
        format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature))
    }
}

/// A JWKS document holding these keys.
pub fn jwks(signers: &[&Signer]) -> String {
    json!({"keys": signers.iter().map(|s| s.jwk()).collect::<Vec<_>>()}).to_string()
}

/// Claims a server for `resource` accepts, valid for five minutes.
pub fn claims(resource: &str) -> Value {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    json!({
        "iss": ISSUER,
        "sub": "user-42",
        "aud": resource,
        "iat": now,
        "exp": now + 300,
        "scope": "openid context.read",
    })
}

/// `claims(resource)` with some fields replaced (`null` removes one).
pub fn claims_with(resource: &str, changes: Value) -> Value {
    let mut claims = claims(resource);
    for (name, value) in changes.as_object().unwrap() {
        if value.is_null() {
            claims.as_object_mut().unwrap().remove(name);
        } else {
            claims[name] = value.clone();
        }
    }
    claims
}

/// A running `ecp serve --listen`; killed when dropped.
pub struct RemoteServer {
    child: tokio::process::Child,
    /// The MCP endpoint (the resource URL), `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// `http://127.0.0.1:PORT`.
    pub origin: String,
    lines: Arc<Mutex<Vec<String>>>,
}

impl RemoteServer {
    /// Starts `ecp serve ARGS --listen 127.0.0.1:0` and waits until it
    /// says where it listens.
    pub async fn start(args: &[&str], env: &[(&str, &str)]) -> RemoteServer {
        RemoteServer::launch(crate::mcp::ecp_command(&["serve"], env), args).await
    }

    /// Starts another adapter binary (a built `dist/main`) the same way.
    pub async fn start_program(
        program: &std::path::Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> RemoteServer {
        let mut command = tokio::process::Command::new(program);
        command.envs(env.iter().copied());
        RemoteServer::launch(command, args).await
    }

    async fn launch(mut command: tokio::process::Command, args: &[&str]) -> RemoteServer {
        command
            .args(args)
            .args(["--listen", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("spawn ecp serve --listen");
        let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let listening = tokio::time::timeout(Duration::from_secs(30), async {
            while let Ok(Some(line)) = stderr.next_line().await {
                lines.lock().unwrap().push(line.clone());
                if let Ok(event) = serde_json::from_str::<Value>(&line)
                    && event["event"] == "listening"
                {
                    return Some(event);
                }
            }
            None
        })
        .await
        .ok()
        .flatten()
        .unwrap_or_else(|| panic!("no listening line:\n{}", lines.lock().unwrap().join("\n")));
        {
            let lines = lines.clone();
            tokio::spawn(async move {
                while let Ok(Some(line)) = stderr.next_line().await {
                    lines.lock().unwrap().push(line);
                }
            });
        }
        RemoteServer {
            child,
            url: listening["resource"].as_str().unwrap().to_owned(),
            origin: format!("http://{}", listening["address"].as_str().unwrap()),
            lines,
        }
    }

    /// Everything written to stderr so far.
    pub fn stderr(&self) -> String {
        self.lines.lock().unwrap().join("\n")
    }

    /// The JSON log events named `event`.
    pub fn events(&self, event: &str) -> Vec<Value> {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|line| line["event"] == event)
            .collect()
    }

    pub fn terminate(&self) {
        let pid = self.child.id().expect("still running").to_string();
        let status = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        assert!(status.success());
    }

    pub async fn wait(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        tokio::time::timeout(limit, self.child.wait())
            .await
            .ok()
            .map(Result::unwrap)
    }
}

/// Server arguments accepting tokens from [`ISSUER`] signed by keys in the
/// JWKS file at `jwks`.
pub fn auth_args(jwks: &std::path::Path) -> Vec<String> {
    vec![
        "--authorization-server".into(),
        ISSUER.into(),
        "--jwks".into(),
        jwks.display().to_string(),
    ]
}
