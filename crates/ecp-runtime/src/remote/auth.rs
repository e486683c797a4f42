//! The OAuth resource server: JWT access tokens checked against a JWKS
//! (signature, issuer, audience equal to the resource URL, expiry, the
//! `context.read` scope) before any provider work.
//!
//! Signatures are verified with `ring`: RS256/384/512, PS256/384/512,
//! ES256, ES384 and EdDSA (Ed25519). `none` and the shared-secret HS*
//! algorithms are refused, as are tokens naming critical header extensions.
//! A token is never logged or echoed; refusals carry a fixed category only.

use std::{
    sync::Arc,
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use ring::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey};
use serde_json::Value;
use url::Url;

use crate::outbound::{BodyError, HttpClient, describe, read_body};

mod keys;

use keys::*;
pub use keys::{KeySet, KeySetError};

/// The scope every token must carry.
pub const REQUIRED_SCOPE: &str = "context.read";
/// Clock skew tolerated on `exp` and `nbf`.
const LEEWAY_SECS: f64 = 30.0;
/// Longer `Authorization` values are refused unread.
const MAX_TOKEN_BYTES: usize = 16 * 1024;
/// A remote key set is fetched again at most this often for an unknown `kid`.
const REFETCH_INTERVAL: Duration = Duration::from_secs(30);
/// A remote key set older than this is fetched again on the next request.
const MAX_KEY_SET_AGE: Duration = Duration::from_secs(3600);
/// Largest key set document accepted.
const MAX_JWKS_BYTES: usize = 1024 * 1024;
/// Verified tokens remembered at once (see [`VerifiedTokens`]).
const MAX_REMEMBERED_TOKENS: usize = 4096;

/// Why a request is refused. `Display` is the redacted category that goes
/// to the log and to `error_description`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No bearer token at all: 401 without an error code (RFC 6750 3.1).
    Missing,
    /// A token that is malformed, unverifiable, expired or not for us: 401.
    Invalid(&'static str),
    /// A valid token without `context.read`: 403.
    InsufficientScope,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Missing => f.write_str("no bearer token"),
            Refusal::Invalid(why) => f.write_str(why),
            Refusal::InsufficientScope => write!(f, "the token lacks the {REQUIRED_SCOPE} scope"),
        }
    }
}

/// Where the verification keys come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JwksSource {
    /// A file, read once at start.
    File(std::path::PathBuf),
    /// https, or http on loopback; fetched at start and again for an
    /// unknown `kid` (at most every 30 s) or when an hour old.
    Url(Url),
}

impl std::fmt::Display for JwksSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JwksSource::File(path) => write!(f, "{}", path.display()),
            JwksSource::Url(url) => write!(f, "{url}"),
        }
    }
}

/// A key set fetched over HTTP, kept fresh.
struct RemoteKeys {
    url: Url,
    client: HttpClient,
    current: tokio::sync::RwLock<(Arc<KeySet>, Instant)>,
    /// Held while fetching, so concurrent unknown `kid`s cause one fetch.
    fetching: tokio::sync::Mutex<()>,
    /// Counts the key sets fetched; remembered tokens name the one that
    /// verified them.
    generation: std::sync::atomic::AtomicU64,
}

/// How long connecting to the key set's host may take, at start and after.
const JWKS_CONNECT_LIMIT: Duration = Duration::from_secs(1);
/// How long the first fetch of the key set may take in all.
const JWKS_STARTUP_LIMIT: Duration = Duration::from_secs(3);
/// How long any fetch of the key set may take in all.
const JWKS_FETCH_LIMIT: Duration = Duration::from_secs(10);

impl RemoteKeys {
    async fn fetch(client: &HttpClient, url: &Url) -> Result<KeySet, KeySetError> {
        let fail = |what: String| KeySetError(format!("cannot fetch the key set {url}: {what}"));
        let fetch = async {
            let uri: hyper::Uri = url
                .as_str()
                .parse()
                .map_err(|_| fail("not a URL an HTTP request can name".to_owned()))?;
            let request = hyper::Request::get(uri)
                .header(hyper::header::ACCEPT, "application/json")
                .body(Default::default())
                .map_err(|error| fail(error.to_string()))?;
            let response = client
                .send(request)
                .await
                .map_err(|error| fail(describe(&error)))?;
            if !response.status().is_success() {
                return Err(fail(format!("HTTP {}", response.status().as_u16())));
            }
            read_body(response, MAX_JWKS_BYTES)
                .await
                .map_err(|error| match error {
                    BodyError::TooLarge => fail("the document is larger than 1 MiB".to_owned()),
                    BodyError::Transport => fail("the connection failed".to_owned()),
                })
        };
        let body = tokio::time::timeout(JWKS_FETCH_LIMIT, fetch)
            .await
            .map_err(|_| fail(format!("no answer within {} s", JWKS_FETCH_LIMIT.as_secs())))??;
        let text = String::from_utf8(body).map_err(|_| fail("not UTF-8".to_owned()))?;
        KeySet::parse(&text).map_err(|error| fail(error.0))
    }

    /// The current keys; fetched again first when `stale_after` has passed.
    async fn keys(&self, stale_after: Duration) -> Arc<KeySet> {
        let (keys, fetched) = self.current.read().await.clone();
        if fetched.elapsed() < stale_after {
            return keys;
        }
        let _fetching = self.fetching.lock().await;
        let (keys, fetched) = self.current.read().await.clone();
        if fetched.elapsed() < stale_after {
            return keys; // another request fetched while we waited
        }
        match Self::fetch(&self.client, &self.url).await {
            Ok(fresh) => {
                let fresh = Arc::new(fresh);
                *self.current.write().await = (fresh.clone(), Instant::now());
                self.generation
                    .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                fresh
            }
            Err(_) => {
                // Keep serving with the keys we have; try again later.
                self.current.write().await.1 = Instant::now();
                keys
            }
        }
    }
}

enum Keys {
    Fixed(KeySet),
    Remote(Box<RemoteKeys>),
}

/// What a token must satisfy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRules {
    /// The protected resource; a token's `aud` must name it.
    pub resource: String,
    /// Accepted `iss` values: the authorization servers.
    pub issuers: Vec<String>,
}

/// Tokens that passed every check, by the SHA-256 of the token, with their
/// `exp` and the key set generation that verified them. A client reuses its
/// access token for many calls and the signature is most of the cost
/// (ES256: ~60 µs), so a remembered token only has its expiry checked. A
/// new key set forgets them all; only tokens that passed are remembered.
#[derive(Default)]
struct VerifiedTokens(std::sync::Mutex<std::collections::HashMap<[u8; 32], (f64, u64)>>);

impl VerifiedTokens {
    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<[u8; 32], (f64, u64)>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether `digest` passed with key set `generation` and is unexpired.
    fn remembers(&self, digest: &[u8; 32], generation: u64, now: f64) -> bool {
        let mut entries = self.lock();
        match entries.get(digest) {
            Some(&(expiry, verified_by))
                if verified_by == generation && now <= expiry + LEEWAY_SECS =>
            {
                true
            }
            Some(_) => {
                entries.remove(digest);
                false
            }
            None => false,
        }
    }

    fn remember(&self, digest: [u8; 32], expiry: f64, generation: u64, now: f64) {
        let mut entries = self.lock();
        if entries.len() >= MAX_REMEMBERED_TOKENS {
            entries.retain(|_, (expiry, _)| now <= *expiry + LEEWAY_SECS);
            if entries.len() >= MAX_REMEMBERED_TOKENS {
                entries.clear();
            }
        }
        entries.insert(digest, (expiry, generation));
    }
}

fn token_digest(token: &str) -> [u8; 32] {
    let mut digest = [0; 32];
    digest.copy_from_slice(ring::digest::digest(&ring::digest::SHA256, token.as_bytes()).as_ref());
    digest
}

/// Validates bearer tokens for one resource.
pub struct Authenticator {
    rules: TokenRules,
    keys: Keys,
    verified: VerifiedTokens,
}

impl Authenticator {
    /// Loads (or fetches) the key set; fails when it is unusable, so a
    /// misconfigured server never starts.
    pub async fn load(rules: TokenRules, source: &JwksSource) -> Result<Self, KeySetError> {
        let keys = match source {
            JwksSource::File(path) => {
                let text = std::fs::read_to_string(path).map_err(|error| {
                    KeySetError(format!(
                        "cannot read the key set {}: {error}",
                        path.display()
                    ))
                })?;
                Keys::Fixed(
                    KeySet::parse(&text)
                        .map_err(|error| KeySetError(format!("{}: {}", path.display(), error.0)))?,
                )
            }
            JwksSource::Url(url) => {
                // Direct (no proxy), no redirect, no retry.
                let client = HttpClient::new(None, Some(JWKS_CONNECT_LIMIT)).map_err(|error| {
                    KeySetError(format!("cannot build an HTTP client: {error}"))
                })?;
                // A replica must answer its first `initialize` well inside a
                // client's discovery timeout (Qwen's is 5 s): an unreachable
                // key set is said within 1 s, a slow one within 3 s.
                let keys =
                    match tokio::time::timeout(JWKS_STARTUP_LIMIT, RemoteKeys::fetch(&client, url))
                        .await
                    {
                        Ok(fetched) => fetched?,
                        Err(_) => {
                            return Err(KeySetError(format!(
                                "cannot fetch the key set {url}: no answer within {} s",
                                JWKS_STARTUP_LIMIT.as_secs()
                            )));
                        }
                    };
                Keys::Remote(Box::new(RemoteKeys {
                    url: url.clone(),
                    client,
                    current: tokio::sync::RwLock::new((Arc::new(keys), Instant::now())),
                    fetching: tokio::sync::Mutex::new(()),
                    generation: std::sync::atomic::AtomicU64::new(0),
                }))
            }
        };
        Ok(Authenticator {
            rules,
            keys,
            verified: VerifiedTokens::default(),
        })
    }

    /// An authenticator over keys already in hand.
    pub fn with_keys(rules: TokenRules, keys: KeySet) -> Self {
        Authenticator {
            rules,
            keys: Keys::Fixed(keys),
            verified: VerifiedTokens::default(),
        }
    }

    fn generation(&self) -> u64 {
        match &self.keys {
            Keys::Fixed(_) => 0,
            Keys::Remote(remote) => remote.generation.load(std::sync::atomic::Ordering::SeqCst),
        }
    }

    /// Checks an `Authorization` header value.
    pub async fn authorize(&self, authorization: Option<&[u8]>) -> Result<(), Refusal> {
        let token = bearer_token(authorization)?;
        let digest = token_digest(token);
        let now = now_secs();
        if self.verified.remembers(&digest, self.generation(), now) {
            return Ok(());
        }
        let parsed = ParsedToken::parse(token)?;
        let verified = match &self.keys {
            Keys::Fixed(keys) => parsed.verify(keys),
            Keys::Remote(remote) => {
                let keys = remote.keys(MAX_KEY_SET_AGE).await;
                match parsed.verify(&keys) {
                    Err(Refusal::Invalid(NO_KEY)) => {
                        parsed.verify(&*remote.keys(REFETCH_INTERVAL).await)
                    }
                    other => other,
                }
            }
        };
        verified?;
        let claims = parsed.claims()?;
        let expiry = self.check_claims(&claims, now)?;
        self.verified
            .remember(digest, expiry, self.generation(), now);
        Ok(())
    }

    /// Checks the claims of a verified token; `Ok` holds its `exp`.
    fn check_claims(&self, claims: &Value, now: f64) -> Result<f64, Refusal> {
        let Some(expiry) = claims.get("exp").and_then(Value::as_f64) else {
            return Err(Refusal::Invalid("the token has no expiry (exp)"));
        };
        if now > expiry + LEEWAY_SECS {
            return Err(Refusal::Invalid("the token has expired"));
        }
        if let Some(not_before) = claims.get("nbf") {
            match not_before.as_f64() {
                Some(nbf) if now + LEEWAY_SECS >= nbf => {}
                _ => return Err(Refusal::Invalid("the token is not valid yet (nbf)")),
            }
        }
        let issuer = claims.get("iss").and_then(Value::as_str);
        if !issuer.is_some_and(|iss| self.rules.issuers.iter().any(|known| known == iss)) {
            return Err(Refusal::Invalid("the token is from another issuer"));
        }
        let for_us = |aud: &Value| {
            aud.as_str()
                .is_some_and(|aud| same_resource(aud, &self.rules.resource))
        };
        let audience_ok = match claims.get("aud") {
            Some(Value::Array(audiences)) => audiences.iter().any(for_us),
            Some(aud) => for_us(aud),
            None => false,
        };
        if !audience_ok {
            return Err(Refusal::Invalid("the token is for another audience"));
        }
        if has_scope(claims, REQUIRED_SCOPE) {
            Ok(expiry)
        } else {
            Err(Refusal::InsufficientScope)
        }
    }
}

const NO_KEY: &str = "no key in the key set matches the token";

/// The token of an `Authorization: Bearer ...` header (scheme
/// case-insensitive); anything else is a missing token.
fn bearer_token(authorization: Option<&[u8]>) -> Result<&str, Refusal> {
    let value = authorization.ok_or(Refusal::Missing)?;
    if value.len() > MAX_TOKEN_BYTES {
        return Err(Refusal::Invalid("the token is too long"));
    }
    let value = std::str::from_utf8(value).map_err(|_| Refusal::Missing)?;
    let (scheme, token) = value.split_once(' ').ok_or(Refusal::Missing)?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(Refusal::Missing);
    }
    let token = token.trim_matches(' ');
    if token.is_empty() {
        return Err(Refusal::Missing);
    }
    Ok(token)
}

/// A compact JWS, split and decoded but not yet trusted.
struct ParsedToken<'a> {
    signed: &'a str,
    alg: Algorithm,
    kid: Option<String>,
    payload: Vec<u8>,
    signature: Vec<u8>,
}

impl<'a> ParsedToken<'a> {
    fn parse(token: &'a str) -> Result<ParsedToken<'a>, Refusal> {
        const MALFORMED: Refusal = Refusal::Invalid("the token is not a signed JWT");
        let mut parts = token.split('.');
        let (Some(header), Some(payload), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(MALFORMED);
        };
        let decode = |part: &str| URL_SAFE_NO_PAD.decode(part).map_err(|_| MALFORMED);
        let header: Value = serde_json::from_slice(&decode(header)?).map_err(|_| MALFORMED)?;
        if header.get("crit").is_some() {
            return Err(Refusal::Invalid(
                "the token names critical header extensions",
            ));
        }
        let alg = header
            .get("alg")
            .and_then(Value::as_str)
            .and_then(Algorithm::parse)
            .ok_or(Refusal::Invalid(
                "the token's signature algorithm is not accepted",
            ))?;
        Ok(ParsedToken {
            signed: &token[..token.len() - signature.len() - 1],
            alg,
            kid: header.get("kid").and_then(Value::as_str).map(str::to_owned),
            payload: decode(payload)?,
            signature: decode(signature)?,
        })
    }

    fn verify(&self, keys: &KeySet) -> Result<(), Refusal> {
        let mut candidates = keys.candidates(self.kid.as_deref(), self.alg).peekable();
        if candidates.peek().is_none() {
            return Err(Refusal::Invalid(NO_KEY));
        }
        if candidates.any(|key| key.verifies(self.alg, self.signed.as_bytes(), &self.signature)) {
            Ok(())
        } else {
            Err(Refusal::Invalid("the token's signature does not verify"))
        }
    }

    fn claims(&self) -> Result<Value, Refusal> {
        match serde_json::from_slice(&self.payload) {
            Ok(claims @ Value::Object(_)) => Ok(claims),
            _ => Err(Refusal::Invalid("the token's claims are not a JSON object")),
        }
    }
}

/// Resource URLs compare equal when they differ only by a trailing slash.
fn same_resource(a: &str, b: &str) -> bool {
    a.strip_suffix('/').unwrap_or(a) == b.strip_suffix('/').unwrap_or(b)
}

/// `scope` (RFC 9068: space-separated) or `scp` (a list, or a string).
fn has_scope(claims: &Value, wanted: &str) -> bool {
    let in_text = |text: &str| text.split(' ').any(|scope| scope == wanted);
    ["scope", "scp"]
        .iter()
        .filter_map(|name| claims.get(*name))
        .any(|value| match value {
            Value::String(text) => in_text(text),
            Value::Array(scopes) => scopes.iter().any(|s| s.as_str() == Some(wanted)),
            _ => false,
        })
}

fn now_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |since| since.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> TokenRules {
        TokenRules {
            resource: "https://ctx.example/mcp".to_owned(),
            issuers: vec!["https://auth.example".to_owned()],
        }
    }

    fn authenticator() -> Authenticator {
        Authenticator::with_keys(
            rules(),
            KeySet(vec![Key {
                kid: None,
                alg: None,
                material: KeyMaterial::Ed25519(vec![0; 32]),
            }]),
        )
    }

    fn claims(extra: Value) -> Value {
        let mut claims = serde_json::json!({
            "iss": "https://auth.example",
            "aud": "https://ctx.example/mcp",
            "exp": 2000.0,
            "scope": "openid context.read",
        });
        for (name, value) in extra.as_object().unwrap() {
            if value.is_null() {
                claims.as_object_mut().unwrap().remove(name);
            } else {
                claims[name] = value.clone();
            }
        }
        claims
    }

    #[test]
    fn claims_are_checked_in_a_fixed_order() {
        let auth = authenticator();
        let check = |extra: Value, now: f64| auth.check_claims(&claims(extra), now);
        assert_eq!(check(serde_json::json!({}), 1000.0), Ok(2000.0));
        assert_eq!(check(serde_json::json!({}), 2029.0), Ok(2000.0), "leeway");
        assert_eq!(
            check(serde_json::json!({}), 2031.0),
            Err(Refusal::Invalid("the token has expired"))
        );
        assert_eq!(
            check(serde_json::json!({"exp": null}), 1000.0),
            Err(Refusal::Invalid("the token has no expiry (exp)"))
        );
        assert_eq!(
            check(serde_json::json!({"nbf": 1100.0}), 1000.0),
            Err(Refusal::Invalid("the token is not valid yet (nbf)"))
        );
        assert_eq!(
            check(serde_json::json!({"iss": "https://evil.example"}), 1000.0),
            Err(Refusal::Invalid("the token is from another issuer"))
        );
        assert_eq!(
            check(
                serde_json::json!({"aud": ["x", "https://ctx.example/mcp/"]}),
                1000.0
            ),
            Ok(2000.0)
        );
        assert_eq!(
            check(serde_json::json!({"aud": "https://ctx.example/"}), 1000.0),
            Err(Refusal::Invalid("the token is for another audience"))
        );
        assert_eq!(
            check(serde_json::json!({"scope": "context.readonly"}), 1000.0),
            Err(Refusal::InsufficientScope)
        );
        assert_eq!(
            check(
                serde_json::json!({"scope": null, "scp": ["context.read"]}),
                1000.0
            ),
            Ok(2000.0)
        );
    }

    #[tokio::test]
    async fn a_verified_token_is_remembered_until_it_expires() {
        use ring::{
            rand::SystemRandom,
            signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair},
        };
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        let auth = Authenticator::with_keys(
            rules(),
            KeySet(vec![Key {
                kid: None,
                alg: None,
                material: KeyMaterial::P256(key.public_key().as_ref().to_vec()),
            }]),
        );
        let now = now_secs();
        let signed = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(r#"{"alg":"ES256"}"#),
            URL_SAFE_NO_PAD.encode(claims(serde_json::json!({"exp": now + 300.0})).to_string())
        );
        let signature = key.sign(&rng, signed.as_bytes()).unwrap();
        let token = format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()));
        let forged = format!("{signed}.{}", URL_SAFE_NO_PAD.encode([7u8; 64]));

        let header = |token: &str| format!("Bearer {token}");
        assert_eq!(
            auth.authorize(Some(header(&token).as_bytes())).await,
            Ok(())
        );
        assert!(auth.verified.remembers(&token_digest(&token), 0, now));
        assert!(
            !auth.verified.remembers(&token_digest(&token), 1, now),
            "another key set"
        );
        assert_eq!(
            auth.authorize(Some(header(&forged).as_bytes())).await,
            Err(Refusal::Invalid("the token's signature does not verify"))
        );
        assert!(!auth.verified.remembers(&token_digest(&forged), 0, now));
        // Past its expiry a remembered token is forgotten, so checked again.
        assert!(
            !auth
                .verified
                .remembers(&token_digest(&token), 0, now + 400.0)
        );
        assert!(auth.verified.lock().is_empty());
    }

    #[test]
    fn only_bearer_headers_carry_a_token() {
        assert_eq!(bearer_token(None), Err(Refusal::Missing));
        assert_eq!(bearer_token(Some(b"Basic abc")), Err(Refusal::Missing));
        assert_eq!(bearer_token(Some(b"Bearer ")), Err(Refusal::Missing));
        assert_eq!(bearer_token(Some(b"bearer a.b.c")), Ok("a.b.c"));
    }

    #[test]
    fn unsigned_and_shared_secret_tokens_are_refused_unread() {
        let header = |alg: &str| URL_SAFE_NO_PAD.encode(format!(r#"{{"alg":"{alg}"}}"#));
        for alg in ["none", "HS256"] {
            let token = format!("{}.e30.", header(alg));
            assert_eq!(
                ParsedToken::parse(&token).err(),
                Some(Refusal::Invalid(
                    "the token's signature algorithm is not accepted"
                ))
            );
        }
        assert!(ParsedToken::parse("a.b").is_err());
        assert!(ParsedToken::parse("a.b.c.d").is_err());
    }

    #[test]
    fn key_sets_keep_only_usable_signing_keys() {
        let set = KeySet::parse(
            r#"{"keys":[
                {"kty":"oct","k":"c2VjcmV0"},
                {"kty":"RSA","use":"enc","n":"AQAB","e":"AQAB"},
                {"kty":"EC","crv":"P-521","x":"AA","y":"AA"},
                {"kty":"OKP","crv":"Ed25519","x":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","kid":"k1"}
            ]}"#,
        )
        .unwrap();
        assert_eq!(set.len(), 1);
        assert!(KeySet::parse(r#"{"keys":[]}"#).is_err());
        assert!(KeySet::parse("[]").is_err());
    }
}
