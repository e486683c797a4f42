//! Signing and verifying keys for provenance envelopes: Ed25519 or ECDSA
//! P-256, read from the files the usual tools write.
//!
//! | file | written by |
//! |---|---|
//! | `-----BEGIN PRIVATE KEY-----` (PKCS#8) | `openssl genpkey -algorithm ed25519`, `openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256` |
//! | `-----BEGIN EC PRIVATE KEY-----` (SEC1) | `openssl ecparam -name prime256v1 -genkey` |
//! | `-----BEGIN OPENSSH PRIVATE KEY-----` | `ssh-keygen -t ed25519`, `ssh-keygen -t ecdsa -b 256` (without a passphrase) |
//! | `-----BEGIN PUBLIC KEY-----` (SPKI) | `openssl pkey -pubout` |
//! | `ssh-ed25519 AAAA...`, `ecdsa-sha2-nistp256 AAAA...` | `ssh-keygen` (`.pub`) |
//!
//! A verifying key may also be given as the private key file. The key id
//! is the SHA-256 of the public key's DER SubjectPublicKeyInfo, in hex, so
//! the same key has the same id whichever file it came from. Signatures are
//! deterministic: Ed25519 by construction, ECDSA by RFC 6979; an ECDSA
//! signature is ASN.1 DER, as DSSE verifiers expect.

use std::path::{Path, PathBuf};

use ed25519_dalek::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePublicKey};
use ed25519_dalek::{Signer as _, Verifier as _};

/// The most a key file may hold: keys are a few hundred bytes.
const MAX_KEY_BYTES: u64 = 64 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("cannot read the key {}: {reason}", path.display())]
    Read { path: PathBuf, reason: String },
    #[error("the key {} is encrypted; ecp reads unencrypted keys", path.display())]
    Encrypted { path: PathBuf },
    #[error("the key {} is {what}; ecp signs with Ed25519 or ECDSA P-256 keys", path.display())]
    Unsupported { path: PathBuf, what: String },
    #[error("the key {} is not a key ecp can read: {reason}", path.display())]
    Malformed { path: PathBuf, reason: String },
    #[error("the key {} is a public key; signing needs the private key", path.display())]
    PublicOnly { path: PathBuf },
}

impl KeyError {
    /// What to do about it.
    pub fn help(&self) -> &'static str {
        match self {
            KeyError::Read { .. } => "give the path of a readable key file",
            KeyError::Encrypted { .. } => {
                "decrypt a copy for the signing step (`ssh-keygen -p -N '' -f COPY`, or `openssl pkey -in KEY -out COPY`) and keep it where only the build can read it"
            }
            KeyError::Unsupported { .. } | KeyError::Malformed { .. } => {
                "create one with `openssl genpkey -algorithm ed25519 -out signing.pem` or `ssh-keygen -t ed25519 -N '' -f signing`"
            }
            KeyError::PublicOnly { .. } => {
                "pass the private key to --sign-key; publish the public key (`openssl pkey -in KEY -pubout`) for reviewers"
            }
        }
    }
}

/// Which algorithm a key is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    Ed25519,
    EcdsaP256,
}

impl Algorithm {
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Ed25519 => "ed25519",
            Algorithm::EcdsaP256 => "ecdsa-sha2-nistp256",
        }
    }
}

/// A private key that signs.
pub enum SigningKey {
    Ed25519(Box<ed25519_dalek::SigningKey>),
    EcdsaP256(Box<p256::ecdsa::SigningKey>),
}

/// A public key that verifies.
#[derive(Debug, Clone)]
pub enum VerifyingKey {
    Ed25519(ed25519_dalek::VerifyingKey),
    EcdsaP256(p256::ecdsa::VerifyingKey),
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key material.
        write!(f, "SigningKey({})", self.verifying_key().key_id())
    }
}

impl SigningKey {
    pub fn load(path: &Path) -> Result<SigningKey, KeyError> {
        match parse_key(&read_key_file(path)?, path)? {
            Parsed::Private(key) => Ok(key),
            Parsed::Public(_) => Err(KeyError::PublicOnly {
                path: path.to_owned(),
            }),
        }
    }

    pub fn verifying_key(&self) -> VerifyingKey {
        match self {
            SigningKey::Ed25519(key) => VerifyingKey::Ed25519(key.verifying_key()),
            SigningKey::EcdsaP256(key) => VerifyingKey::EcdsaP256(*key.verifying_key()),
        }
    }

    /// The signature of `message`: 64 bytes for Ed25519, DER for ECDSA.
    pub fn sign(&self, message: &[u8]) -> Vec<u8> {
        match self {
            SigningKey::Ed25519(key) => key.sign(message).to_bytes().to_vec(),
            SigningKey::EcdsaP256(key) => {
                let signature: p256::ecdsa::Signature = key.sign(message);
                signature.to_der().as_bytes().to_vec()
            }
        }
    }
}

impl VerifyingKey {
    /// A public key file, or the public half of a private key file.
    pub fn load(path: &Path) -> Result<VerifyingKey, KeyError> {
        VerifyingKey::from_text(&read_key_file(path)?, path)
    }

    /// A verifying key from the text of a key file (`path` names it in
    /// messages).
    pub fn from_text(text: &str, path: &Path) -> Result<VerifyingKey, KeyError> {
        Ok(match parse_key(text, path)? {
            Parsed::Private(key) => key.verifying_key(),
            Parsed::Public(key) => key,
        })
    }

    pub fn algorithm(&self) -> Algorithm {
        match self {
            VerifyingKey::Ed25519(_) => Algorithm::Ed25519,
            VerifyingKey::EcdsaP256(_) => Algorithm::EcdsaP256,
        }
    }

    /// DER SubjectPublicKeyInfo.
    pub fn spki_der(&self) -> Vec<u8> {
        let document = match self {
            VerifyingKey::Ed25519(key) => key.to_public_key_der(),
            VerifyingKey::EcdsaP256(key) => p256::pkcs8::EncodePublicKey::to_public_key_der(key),
        };
        // Encoding a valid key cannot fail.
        document.map(|d| d.as_bytes().to_vec()).unwrap_or_default()
    }

    /// The key id: the SHA-256 of [`VerifyingKey::spki_der`], in hex.
    pub fn key_id(&self) -> String {
        crate::digest::sha256(&self.spki_der())
    }

    /// Whether `signature` is this key's signature of `message`.
    pub fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        match self {
            VerifyingKey::Ed25519(key) => ed25519_dalek::Signature::from_slice(signature)
                .is_ok_and(|signature| key.verify_strict(message, &signature).is_ok()),
            VerifyingKey::EcdsaP256(key) => p256::ecdsa::Signature::from_der(signature)
                .is_ok_and(|signature| key.verify(message, &signature).is_ok()),
        }
    }
}

enum Parsed {
    Private(SigningKey),
    Public(VerifyingKey),
}

/// A key file's text: a regular file of at most [`MAX_KEY_BYTES`].
fn read_key_file(path: &Path) -> Result<String, KeyError> {
    crate::files::read_text(path, None, MAX_KEY_BYTES).map_err(|problem| KeyError::Read {
        path: path.to_owned(),
        reason: problem.to_string(),
    })
}

fn parse_key(text: &str, path: &Path) -> Result<Parsed, KeyError> {
    let malformed = |reason: String| KeyError::Malformed {
        path: path.to_owned(),
        reason,
    };
    let unsupported = |what: &str| KeyError::Unsupported {
        path: path.to_owned(),
        what: what.to_owned(),
    };
    // Text before the PEM block (openssl's "Bag Attributes", comments) is
    // not part of the key.
    let text = match text.find("-----BEGIN ") {
        Some(start) => &text[start..],
        None => text,
    };
    let text = text.trim();
    let label = text
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .strip_prefix("-----BEGIN ")
        .and_then(|rest| rest.strip_suffix("-----"));
    match label {
        Some("PRIVATE KEY") => {
            if let Ok(key) = ed25519_dalek::SigningKey::from_pkcs8_pem(text) {
                return Ok(Parsed::Private(SigningKey::Ed25519(Box::new(key))));
            }
            match p256::ecdsa::SigningKey::from_pkcs8_pem(text) {
                Ok(key) => Ok(Parsed::Private(SigningKey::EcdsaP256(Box::new(key)))),
                Err(_) => Err(unsupported("a PKCS#8 key of another algorithm or curve")),
            }
        }
        Some("EC PRIVATE KEY") => {
            let secret = p256::SecretKey::from_sec1_pem(text)
                .map_err(|_| unsupported("an EC key on another curve than P-256"))?;
            Ok(Parsed::Private(SigningKey::EcdsaP256(Box::new(
                p256::ecdsa::SigningKey::from(&secret),
            ))))
        }
        Some("PUBLIC KEY") => {
            if let Ok(key) = ed25519_dalek::VerifyingKey::from_public_key_pem(text) {
                return Ok(Parsed::Public(VerifyingKey::Ed25519(key)));
            }
            match p256::ecdsa::VerifyingKey::from_public_key_pem(text) {
                Ok(key) => Ok(Parsed::Public(VerifyingKey::EcdsaP256(key))),
                Err(_) => Err(unsupported("a public key of another algorithm or curve")),
            }
        }
        Some("OPENSSH PRIVATE KEY") => openssh_private(text, path),
        Some("ENCRYPTED PRIVATE KEY") => Err(KeyError::Encrypted {
            path: path.to_owned(),
        }),
        Some("RSA PRIVATE KEY") => Err(unsupported("an RSA key")),
        Some(other) => Err(malformed(format!(
            "a PEM `{}` block, not a key",
            other.chars().take(40).collect::<String>()
        ))),
        None if text.starts_with("ssh-") || text.starts_with("ecdsa-") => {
            let key = ssh_key::PublicKey::from_openssh(text)
                .map_err(|e| malformed(format!("not an OpenSSH public key line ({e})")))?;
            openssh_public(key.key_data(), path).map(Parsed::Public)
        }
        None => Err(malformed(
            "neither PEM nor an OpenSSH public key line".into(),
        )),
    }
}

fn openssh_private(text: &str, path: &Path) -> Result<Parsed, KeyError> {
    let malformed = |reason: String| KeyError::Malformed {
        path: path.to_owned(),
        reason,
    };
    let key = ssh_key::PrivateKey::from_openssh(text)
        .map_err(|e| malformed(format!("not an OpenSSH private key ({e})")))?;
    if key.is_encrypted() {
        return Err(KeyError::Encrypted {
            path: path.to_owned(),
        });
    }
    let signing = match key.key_data() {
        ssh_key::private::KeypairData::Ed25519(pair) => SigningKey::Ed25519(Box::new(
            ed25519_dalek::SigningKey::from_bytes(&pair.private.to_bytes()),
        )),
        ssh_key::private::KeypairData::Ecdsa(ssh_key::private::EcdsaKeypair::NistP256 {
            private,
            ..
        }) => {
            let key = p256::ecdsa::SigningKey::from_slice(private.as_slice())
                .map_err(|_| malformed("its P-256 scalar is out of range".into()))?;
            SigningKey::EcdsaP256(Box::new(key))
        }
        other => {
            return Err(KeyError::Unsupported {
                path: path.to_owned(),
                what: format!(
                    "an OpenSSH {} key",
                    other.algorithm().map(|a| a.to_string()).unwrap_or_default()
                ),
            });
        }
    };
    // The public half stored beside the private one must be its own.
    let stored = openssh_public(key.public_key().key_data(), path)?;
    if stored.spki_der() != signing.verifying_key().spki_der() {
        return Err(malformed(
            "its public key does not belong to its private key".into(),
        ));
    }
    Ok(Parsed::Private(signing))
}

fn openssh_public(data: &ssh_key::public::KeyData, path: &Path) -> Result<VerifyingKey, KeyError> {
    let malformed = |reason: &str| KeyError::Malformed {
        path: path.to_owned(),
        reason: reason.to_owned(),
    };
    match data {
        ssh_key::public::KeyData::Ed25519(key) => ed25519_dalek::VerifyingKey::from_bytes(&key.0)
            .map(VerifyingKey::Ed25519)
            .map_err(|_| malformed("its Ed25519 point is invalid")),
        ssh_key::public::KeyData::Ecdsa(ssh_key::public::EcdsaPublicKey::NistP256(point)) => {
            p256::ecdsa::VerifyingKey::from_sec1_bytes(point.as_bytes())
                .map(VerifyingKey::EcdsaP256)
                .map_err(|_| malformed("its P-256 point is invalid"))
        }
        other => Err(KeyError::Unsupported {
            path: path.to_owned(),
            what: format!("an OpenSSH {} key", other.algorithm()),
        }),
    }
}
