//! DSSE (Dead Simple Signing Envelope) v1, the envelope in-toto
//! attestations travel in: the signature covers the pre-authentication
//! encoding `DSSEv1 SP len(type) SP type SP len(payload) SP payload`, never
//! the JSON around it.

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use super::keys::{SigningKey, VerifyingKey};

/// The payload type of an in-toto statement.
pub const IN_TOTO_PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";

/// The most signatures an envelope read from a file may carry.
const MAX_SIGNATURES: usize = 16;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    /// The statement, base64 (standard alphabet, padded).
    pub payload: String,
    #[serde(rename = "payloadType")]
    pub payload_type: String,
    pub signatures: Vec<Signature>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signature {
    #[serde(default)]
    pub keyid: String,
    /// base64 of the signature bytes.
    pub sig: String,
}

/// Why an envelope does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvelopeError {
    #[error("the envelope is not DSSE JSON: {0}")]
    Malformed(String),
    #[error("the envelope carries a {0} payload, not an in-toto statement")]
    PayloadType(String),
    #[error("the envelope is not signed by the given key {given} (it is signed by {})", present.join(", "))]
    UnknownKey { given: String, present: Vec<String> },
    #[error("the signature by key {0} does not verify: the statement or the signature was changed")]
    BadSignature(String),
}

/// DSSE's pre-authentication encoding.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::STANDARD
}

impl Envelope {
    /// `statement` signed by `key`.
    pub fn sign(statement: &[u8], key: &SigningKey) -> Envelope {
        let signature = key.sign(&pae(IN_TOTO_PAYLOAD_TYPE, statement));
        Envelope {
            payload: b64().encode(statement),
            payload_type: IN_TOTO_PAYLOAD_TYPE.to_owned(),
            signatures: vec![Signature {
                keyid: key.verifying_key().key_id(),
                sig: b64().encode(signature),
            }],
        }
    }

    /// One line of JSON and a newline (a `.intoto.jsonl` file).
    pub fn to_line(&self) -> String {
        let mut line = serde_json::to_string(self).unwrap_or_default();
        line.push('\n');
        line
    }

    /// The first envelope of a `.intoto.jsonl` (or `.json`) text.
    pub fn parse(text: &str) -> Result<Envelope, EnvelopeError> {
        let first = text
            .lines()
            .find(|line| !line.trim().is_empty())
            .ok_or_else(|| EnvelopeError::Malformed("the file is empty".into()))?;
        let envelope: Envelope = serde_json::from_str(first.trim())
            .or_else(|_| serde_json::from_str(text))
            .map_err(|e| EnvelopeError::Malformed(e.to_string()))?;
        if envelope.signatures.len() > MAX_SIGNATURES {
            return Err(EnvelopeError::Malformed(format!(
                "more than {MAX_SIGNATURES} signatures"
            )));
        }
        Ok(envelope)
    }

    /// The payload's bytes, when it is an in-toto statement.
    pub fn statement(&self) -> Result<Vec<u8>, EnvelopeError> {
        if self.payload_type != IN_TOTO_PAYLOAD_TYPE {
            return Err(EnvelopeError::PayloadType(
                self.payload_type.chars().take(80).collect(),
            ));
        }
        b64()
            .decode(&self.payload)
            .map_err(|e| EnvelopeError::Malformed(format!("the payload is not base64 ({e})")))
    }

    /// The key ids the envelope names.
    pub fn key_ids(&self) -> Vec<String> {
        self.signatures
            .iter()
            .map(|s| s.keyid.chars().take(80).collect())
            .collect()
    }

    /// Whether `key` signed the payload: one of the signatures verifies with
    /// it over the pre-authentication encoding.
    pub fn verify(&self, key: &VerifyingKey) -> Result<(), EnvelopeError> {
        let payload = self.statement()?;
        let message = pae(&self.payload_type, &payload);
        let id = key.key_id();
        // The key id is a hint (DSSE): every signature is tried, and what
        // counts is that one verifies with the key.
        let verified = self.signatures.iter().any(|signature| {
            b64()
                .decode(&signature.sig)
                .is_ok_and(|bytes| key.verify(&message, &bytes))
        });
        if verified {
            return Ok(());
        }
        let named = self
            .signatures
            .iter()
            .any(|s| s.keyid == id || s.keyid.is_empty());
        if named {
            Err(EnvelopeError::BadSignature(id))
        } else {
            Err(EnvelopeError::UnknownKey {
                given: id,
                present: self.key_ids(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pae_is_the_specification_s_example() {
        // The DSSE protocol document's example.
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
        );
    }
}
