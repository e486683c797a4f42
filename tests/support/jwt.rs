//! Test OAuth material, shared by the integration tests and the bench:
//! key pairs and their JWKS, and access tokens minted and signed here
//! (ES256 from a key generated per run, RS256 from a test-only key).
#![allow(dead_code)] // each including crate uses a part

use std::time::{SystemTime, UNIX_EPOCH};

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use ring::{
    rand::SystemRandom,
    signature::{self, EcdsaKeyPair, KeyPair, RsaKeyPair, RsaPublicKeyComponents},
};
use serde_json::{Value, json};

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
        let der = include_bytes!("jwt-test-rsa.der");
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
