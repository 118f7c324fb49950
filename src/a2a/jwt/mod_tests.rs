//! Tokens minted here with keys of the test's own (ring), checked as a request's would be.

use super::*;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair as _};
use serde_json::json;
use std::time::{SystemTime, UNIX_EPOCH};

/// A signing key of the test and its public JWK.
enum Signer {
    Es256(EcdsaKeyPair),
    EdDsa(Ed25519KeyPair),
}

impl Signer {
    fn es256() -> Signer {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        Signer::Es256(
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap(),
        )
    }

    fn eddsa() -> Signer {
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).unwrap();
        Signer::EdDsa(Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap())
    }

    fn alg(&self) -> &'static str {
        match self {
            Signer::Es256(_) => "ES256",
            Signer::EdDsa(_) => "EdDSA",
        }
    }

    fn jwk(&self, kid: &str) -> serde_json::Value {
        match self {
            Signer::Es256(k) => {
                let point = k.public_key().as_ref();
                json!({"kty": "EC", "crv": "P-256", "kid": kid, "use": "sig", "alg": "ES256",
                       "x": B64.encode(&point[1..33]), "y": B64.encode(&point[33..65])})
            }
            Signer::EdDsa(k) => {
                json!({"kty": "OKP", "crv": "Ed25519", "kid": kid, "x": B64.encode(k.public_key().as_ref())})
            }
        }
    }

    fn token(&self, kid: Option<&str>, claims: serde_json::Value) -> String {
        let mut header = json!({"alg": self.alg(), "typ": "JWT"});
        if let Some(kid) = kid {
            header["kid"] = json!(kid);
        }
        let signed = format!("{}.{}", B64.encode(header.to_string()), B64.encode(claims.to_string()));
        let signature = match self {
            Signer::Es256(k) => k.sign(&SystemRandom::new(), signed.as_bytes()).unwrap().as_ref().to_vec(),
            Signer::EdDsa(k) => k.sign(signed.as_bytes()).as_ref().to_vec(),
        };
        format!("{signed}.{}", B64.encode(signature))
    }
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

fn claims(extra: serde_json::Value) -> serde_json::Value {
    let mut c = json!({"iss": "https://idp.test", "aud": "bridge", "sub": "client", "exp": now() + 600});
    c.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    c
}

/// A checker of a JWK set file holding `keys`, with `allow` (TOML lines of `[allow]`).
fn checker(dir: &std::path::Path, keys: Vec<serde_json::Value>, allow: &str) -> Jwt {
    let file = dir.join("jwks.json");
    std::fs::write(&file, json!({"keys": keys}).to_string()).unwrap();
    let text = format!(
        "jwks_file = {:?}\nissuer = \"https://idp.test\"\naudience = \"bridge\"\nleeway_ms = 0\n[allow]\n{allow}",
        file.display().to_string()
    );
    Jwt::new(&toml::from_str::<JwtConfig>(&text).unwrap(), "a2a.jwt").unwrap()
}

fn dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("sab-jwt-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

async fn check(jwt: &Jwt, token: &str, agent: &str) -> Result<(), Refusal> {
    jwt.check(token, agent, |u| panic!("no URL to read: {}", u.why)).await
}

fn invalid(result: Result<(), Refusal>) -> String {
    match result {
        Err(Refusal::Invalid(why)) => why,
        other => panic!("expected a 401, got {other:?}"),
    }
}

#[tokio::test]
async fn a_token_signed_by_a_key_of_the_set_with_the_right_claims_passes_es256_and_eddsa() {
    let (es, ed) = (Signer::es256(), Signer::eddsa());
    let jwt = checker(&dir("pass"), vec![es.jwk("es"), ed.jwk("ed")], "");
    assert_eq!(jwt.keys(), 2);
    assert_eq!(check(&jwt, &es.token(Some("es"), claims(json!({}))), "Echo").await, Ok(()));
    assert_eq!(check(&jwt, &ed.token(Some("ed"), claims(json!({}))), "Echo").await, Ok(()));
    let aud_list = claims(json!({"aud": ["other", "bridge"]}));
    assert_eq!(check(&jwt, &es.token(Some("es"), aud_list), "Echo").await, Ok(()));
}

#[tokio::test]
async fn each_wrong_claim_is_refused_with_its_reason() {
    let es = Signer::es256();
    let jwt = checker(&dir("claims"), vec![es.jwk("es")], "");
    for (extra, reason) in [
        (json!({"iss": "https://other"}), "issuer"),
        (json!({"aud": "someone-else"}), "audience"),
        (json!({"exp": now() - 5}), "expired"),
        (json!({"nbf": now() + 600}), "not valid yet"),
    ] {
        let why = invalid(check(&jwt, &es.token(Some("es"), claims(extra.clone())), "Echo").await);
        assert!(why.contains(reason), "{extra}: {why}");
    }
    let mut no_exp = claims(json!({}));
    no_exp.as_object_mut().unwrap().remove("exp");
    assert!(invalid(check(&jwt, &es.token(Some("es"), no_exp), "Echo").await).contains("\"exp\""));
}

#[tokio::test]
async fn a_forged_or_unsigned_token_or_one_of_an_unknown_key_is_refused() {
    let (es, stranger) = (Signer::es256(), Signer::es256());
    let jwt = checker(&dir("forged"), vec![es.jwk("es")], "");
    let forged = stranger.token(Some("es"), claims(json!({})));
    assert!(invalid(check(&jwt, &forged, "Echo").await).contains("signature"));
    let unknown = stranger.token(Some("other"), claims(json!({})));
    assert!(invalid(check(&jwt, &unknown, "Echo").await).contains("no key \"other\""));
    let body = B64.encode(claims(json!({})).to_string());
    let none = format!("{}.{body}.", B64.encode(r#"{"alg":"none"}"#));
    assert!(invalid(check(&jwt, &none, "Echo").await).contains("not a JWT"));
    let hs = format!("{}.{body}.AAAA", B64.encode(r#"{"alg":"HS256","kid":"es"}"#));
    assert!(invalid(check(&jwt, &hs, "Echo").await).contains("HS256 is not accepted"));
    assert!(invalid(check(&jwt, "not-a-token", "Echo").await).contains("not a JWT"));
}

#[tokio::test]
async fn without_a_kid_the_one_key_for_its_algorithm_is_used_and_two_are_ambiguous() {
    let (a, b) = (Signer::es256(), Signer::es256());
    let one = checker(&dir("onekey"), vec![a.jwk("a")], "");
    assert_eq!(check(&one, &a.token(None, claims(json!({}))), "Echo").await, Ok(()));
    let two = checker(&dir("twokeys"), vec![a.jwk("a"), b.jwk("b")], "");
    assert!(invalid(check(&two, &a.token(None, claims(json!({}))), "Echo").await).contains("names no key"));
}

#[tokio::test]
async fn the_allow_list_reads_the_claim_as_a_scope_string_or_an_array() {
    let es = Signer::es256();
    let jwt =
        checker(&dir("allow"), vec![es.jwk("es")], "Weather = [\"weather:ask\"]\n\"Trip*\" = [\"trips\"]");
    let token = |scope: serde_json::Value| es.token(Some("es"), claims(json!({"scope": scope})));
    assert_eq!(check(&jwt, &token(json!("openid weather:ask")), "Weather").await, Ok(()));
    assert_eq!(check(&jwt, &token(json!(["trips"])), "TripPlanner").await, Ok(()));
    assert_eq!(check(&jwt, &token(json!("openid")), "Echo").await, Ok(()), "Echo has no entry");
    match check(&jwt, &token(json!("openid trips")), "Weather").await {
        Err(Refusal::NotAllowed(why)) => {
            assert!(why.contains("\"scope\"") && why.contains("Weather"), "{why}")
        }
        other => panic!("expected a 403, got {other:?}"),
    }
    let no_claim = es.token(Some("es"), claims(json!({})));
    assert!(matches!(check(&jwt, &no_claim, "TripPlanner").await, Err(Refusal::NotAllowed(_))));
}

#[test]
fn a_set_keeps_its_signing_keys_and_skips_the_others() {
    let es = Signer::es256();
    let set = json!({"keys": [
        es.jwk("sig"),
        {"kty": "oct", "k": "c2VjcmV0", "kid": "hmac"},
        {"kty": "RSA", "use": "enc", "alg": "RSA-OAEP-256", "n": "AQAB", "e": "AQAB", "kid": "enc"},
        {"kty": "EC", "crv": "P-521", "alg": "ES512", "x": "AA", "y": "AA", "kid": "p521"},
        {"kty": "weird"}
    ]});
    let (keys, others) = keys::parse(&set.to_string()).unwrap();
    assert_eq!(keys.iter().map(|k| k.kid.as_deref()).collect::<Vec<_>>(), [Some("sig")]);
    assert_eq!(others, 4);
    assert!(keys::parse("{\"nokeys\": 1}").unwrap_err().contains("not a JWK set"));
}

#[test]
fn a_missing_key_file_is_said_at_start() {
    let text = "jwks_file = \"/nonexistent/jwks.json\"\nissuer = \"i\"\naudience = \"a\"";
    let err = Jwt::new(&toml::from_str::<JwtConfig>(text).unwrap(), "a2a.jwt").err().unwrap();
    assert!(err.contains("a2a.jwt.jwks_file: cannot read /nonexistent/jwks.json"), "{err}");
}
