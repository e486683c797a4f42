//! The keys a token may be signed with: a JWKS parsed into keys ring can
//! verify with (RSA, RSA-PSS, ECDSA P-256/P-384, Ed25519), each with the
//! algorithms it accepts.

use super::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Algorithm {
    Rs256,
    Rs384,
    Rs512,
    Ps256,
    Ps384,
    Ps512,
    Es256,
    Es384,
    EdDsa,
}

impl Algorithm {
    pub(super) fn parse(name: &str) -> Option<Algorithm> {
        Some(match name {
            "RS256" => Algorithm::Rs256,
            "RS384" => Algorithm::Rs384,
            "RS512" => Algorithm::Rs512,
            "PS256" => Algorithm::Ps256,
            "PS384" => Algorithm::Ps384,
            "PS512" => Algorithm::Ps512,
            "ES256" => Algorithm::Es256,
            "ES384" => Algorithm::Es384,
            "EdDSA" => Algorithm::EdDsa,
            _ => return None,
        })
    }
}

/// A verification key, decoded once when the key set is loaded.
#[derive(Debug)]
pub(super) enum KeyMaterial {
    Rsa {
        n: Vec<u8>,
        e: Vec<u8>,
    },
    /// An uncompressed SEC1 point (`04 || x || y`).
    P256(Vec<u8>),
    P384(Vec<u8>),
    Ed25519(Vec<u8>),
}

#[derive(Debug)]
pub(super) struct Key {
    pub(super) kid: Option<String>,
    /// The key's own `alg`, when it pins one.
    pub(super) alg: Option<Algorithm>,
    pub(super) material: KeyMaterial,
}

impl Key {
    pub(super) fn accepts(&self, alg: Algorithm) -> bool {
        if self.alg.is_some_and(|pinned| pinned != alg) {
            return false;
        }
        matches!(
            (&self.material, alg),
            (
                KeyMaterial::Rsa { .. },
                Algorithm::Rs256
                    | Algorithm::Rs384
                    | Algorithm::Rs512
                    | Algorithm::Ps256
                    | Algorithm::Ps384
                    | Algorithm::Ps512
            ) | (KeyMaterial::P256(_), Algorithm::Es256)
                | (KeyMaterial::P384(_), Algorithm::Es384)
                | (KeyMaterial::Ed25519(_), Algorithm::EdDsa)
        )
    }

    pub(super) fn verifies(&self, alg: Algorithm, message: &[u8], signature: &[u8]) -> bool {
        let rsa = |params: &'static signature::RsaParameters| match &self.material {
            KeyMaterial::Rsa { n, e } => RsaPublicKeyComponents { n, e }
                .verify(params, message, signature)
                .is_ok(),
            _ => false,
        };
        match (alg, &self.material) {
            (Algorithm::Rs256, _) => rsa(&signature::RSA_PKCS1_2048_8192_SHA256),
            (Algorithm::Rs384, _) => rsa(&signature::RSA_PKCS1_2048_8192_SHA384),
            (Algorithm::Rs512, _) => rsa(&signature::RSA_PKCS1_2048_8192_SHA512),
            (Algorithm::Ps256, _) => rsa(&signature::RSA_PSS_2048_8192_SHA256),
            (Algorithm::Ps384, _) => rsa(&signature::RSA_PSS_2048_8192_SHA384),
            (Algorithm::Ps512, _) => rsa(&signature::RSA_PSS_2048_8192_SHA512),
            (Algorithm::Es256, KeyMaterial::P256(point)) => {
                UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, point)
                    .verify(message, signature)
                    .is_ok()
            }
            (Algorithm::Es384, KeyMaterial::P384(point)) => {
                UnparsedPublicKey::new(&signature::ECDSA_P384_SHA384_FIXED, point)
                    .verify(message, signature)
                    .is_ok()
            }
            (Algorithm::EdDsa, KeyMaterial::Ed25519(x)) => {
                UnparsedPublicKey::new(&signature::ED25519, x)
                    .verify(message, signature)
                    .is_ok()
            }
            _ => false,
        }
    }
}

/// Why a key set cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct KeySetError(pub(super) String);

/// A JSON Web Key Set (RFC 7517), reduced to the signing keys we can verify
/// with. Keys of other types, curves or uses are skipped.
#[derive(Debug)]
pub struct KeySet(pub(super) Vec<Key>);

impl KeySet {
    /// The signing keys of a JWKS document; an error when it holds none
    /// this verifier can use.
    pub fn parse(text: &str) -> Result<KeySet, KeySetError> {
        let document: Value = serde_json::from_str(text)
            .map_err(|error| KeySetError(format!("the key set is not JSON: {error}")))?;
        let Some(keys) = document.get("keys").and_then(Value::as_array) else {
            return Err(KeySetError(
                "the key set has no \"keys\" array (expected a JWKS document)".to_owned(),
            ));
        };
        let keys: Vec<Key> = keys.iter().filter_map(parse_key).collect();
        if keys.is_empty() {
            return Err(KeySetError(
                "the key set holds no usable signing key (RSA, EC P-256/P-384 or Ed25519)"
                    .to_owned(),
            ));
        }
        Ok(KeySet(keys))
    }

    /// How many keys it holds.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Keys that may have signed a token with this `kid` and `alg`.
    pub(super) fn candidates<'a>(
        &'a self,
        kid: Option<&'a str>,
        alg: Algorithm,
    ) -> impl Iterator<Item = &'a Key> + 'a {
        self.0
            .iter()
            .filter(move |key| key.accepts(alg) && (kid.is_none() || key.kid.as_deref() == kid))
    }
}

pub(super) fn parse_key(jwk: &Value) -> Option<Key> {
    let text = |name: &str| jwk.get(name).and_then(Value::as_str);
    let bytes = |name: &str| text(name).and_then(|v| URL_SAFE_NO_PAD.decode(v).ok());
    if text("use").is_some_and(|usage| usage != "sig") {
        return None;
    }
    let alg = match text("alg") {
        None => None,
        Some(name) => Some(Algorithm::parse(name)?),
    };
    let material = match (text("kty")?, text("crv")) {
        ("RSA", _) => KeyMaterial::Rsa {
            n: strip_leading_zeros(bytes("n")?),
            e: strip_leading_zeros(bytes("e")?),
        },
        ("EC", Some(curve @ ("P-256" | "P-384"))) => {
            let width = if curve == "P-256" { 32 } else { 48 };
            let (x, y) = (bytes("x")?, bytes("y")?);
            if x.len() != width || y.len() != width {
                return None;
            }
            let point = [&[4u8][..], &x, &y].concat();
            if curve == "P-256" {
                KeyMaterial::P256(point)
            } else {
                KeyMaterial::P384(point)
            }
        }
        ("OKP", Some("Ed25519")) => KeyMaterial::Ed25519(bytes("x").filter(|x| x.len() == 32)?),
        _ => return None,
    };
    Some(Key {
        kid: text("kid").map(str::to_owned),
        alg,
        material,
    })
}

/// ring wants RSA integers without leading zero bytes.
pub(super) fn strip_leading_zeros(mut bytes: Vec<u8>) -> Vec<u8> {
    let zeros = bytes.iter().take_while(|&&b| b == 0).count();
    bytes.drain(..zeros);
    bytes
}
