//! ecp-runtime's JWT verifier (on ring) against jsonwebtoken 12 with its
//! RustCrypto backend (it has no ring backend; the other is aws-lc-rs): the
//! same tokens, first-use verification (distinct tokens, so the runtime's
//! cache of verified tokens never answers), and forged tokens both must
//! refuse. Run with
//! `cargo run --release --manifest-path bench/jwt-comparison/Cargo.toml`;
//! its own workspace, outside CI. The findings are in docs/status.md
//! ("Status and decisions for the next session").
#[path = "../../../tests/support/jwt.rs"]
mod jwt;
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use ecp_runtime::internal::remote::{Authenticator, KeySet, TokenRules};
use jsonwebtoken::{DecodingKey, Validation, jwk::JwkSet};
use serde_json::json;
use std::time::Instant;

fn theirs(set: &JwkSet, token: &str, resource: &str) -> bool {
    let Ok(header) = jsonwebtoken::decode_header(token) else {
        return false;
    };
    let Some(jwk) = header.kid.as_deref().and_then(|k| set.find(k)) else {
        return false;
    };
    let Ok(key) = DecodingKey::from_jwk(jwk) else {
        return false;
    };
    let mut v = Validation::new(header.alg);
    v.set_audience(&[resource]);
    v.set_issuer(&[jwt::ISSUER]);
    v.leeway = 30;
    match jsonwebtoken::decode::<serde_json::Value>(token, &key, &v) {
        Ok(data) => data.claims["scope"]
            .as_str()
            .is_some_and(|s| s.split(' ').any(|x| x == "context.read")),
        Err(_) => false,
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let resource = "https://context.acme.example/mcp";
    for signer in [jwt::Signer::es256("k1"), jwt::Signer::rs256("k1")] {
        let jwks = jwt::jwks(&[&signer]);
        let set: JwkSet = serde_json::from_str(&jwks).unwrap();
        let ours = Authenticator::with_keys(
            TokenRules {
                resource: resource.into(),
                issuers: vec![jwt::ISSUER.into()],
            },
            KeySet::parse(&jwks).unwrap(),
        );
        let n = 2000;
        let tokens: Vec<String> = (0..n)
            .map(|i| signer.token(&jwt::claims_with(resource, json!({"jti": format!("t{i}")}))))
            .collect();
        let started = Instant::now();
        for t in &tokens {
            assert!(
                ours.authorize(Some(format!("Bearer {t}").as_bytes()))
                    .await
                    .is_ok()
            );
        }
        let a = started.elapsed().as_secs_f64() * 1e6 / n as f64;
        let started = Instant::now();
        for t in &tokens {
            assert!(theirs(&set, t, resource));
        }
        let b = started.elapsed().as_secs_f64() * 1e6 / n as f64;
        let alg = jsonwebtoken::decode_header(&tokens[0]).unwrap().alg;
        println!(
            "{alg:?}: ecp-runtime {a:.1} µs, jsonwebtoken {b:.1} µs per first-use verification"
        );

        // Forged: what each accepts.
        let claims = jwt::claims(resource);
        let body = URL_SAFE_NO_PAD.encode(claims.to_string());
        let good = signer.token(&claims);
        let sig = good.rsplit('.').next().unwrap().to_owned();
        let with_header = |h: serde_json::Value| signer.token_with_header(&h, &claims);
        let alg_name = format!("{alg:?}");
        let cases: Vec<(&str, String)> = vec![
            (
                "alg none",
                format!(
                    "{}.{body}.",
                    URL_SAFE_NO_PAD.encode(json!({"alg":"none","kid":"k1"}).to_string())
                ),
            ),
            (
                "crit unknown extension",
                with_header(json!({"alg": alg_name, "kid":"k1", "crit":["exp-x"], "exp-x": 1})),
            ),
            ("duplicate alg in header", {
                let h = format!(r#"{{"alg":"{alg_name}","kid":"k1","alg":"none"}}"#);
                format!("{}.{body}.{sig}", URL_SAFE_NO_PAD.encode(h))
            }),
            ("padded base64 signature", format!("{}=", good)),
            ("trailing data segment", format!("{good}.x")),
            (
                "another audience",
                signer.token(&jwt::claims("https://other.example/mcp")),
            ),
            (
                "expired (exp in 1970)",
                signer.token(&jwt::claims_with(resource, json!({"exp": 1}))),
            ),
            (
                "unknown kid",
                with_header(json!({"alg": alg_name, "kid": "k2"})),
            ),
            ("HS256 keyed with the public JWK", {
                use ring::hmac;
                let h = URL_SAFE_NO_PAD.encode(json!({"alg":"HS256","kid":"k1"}).to_string());
                let key = hmac::Key::new(hmac::HMAC_SHA256, jwks.as_bytes());
                let tag = hmac::sign(&key, format!("{h}.{body}").as_bytes());
                format!("{h}.{body}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
            }),
        ];
        for (name, token) in cases {
            let o = ours
                .authorize(Some(format!("Bearer {token}").as_bytes()))
                .await
                .is_ok();
            let t = theirs(&set, &token, resource);
            println!(
                "  {name}: ecp-runtime {}, jsonwebtoken {}",
                if o { "ACCEPTS" } else { "refuses" },
                if t { "ACCEPTS" } else { "refuses" }
            );
        }
    }
}
