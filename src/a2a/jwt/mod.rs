//! JWT bearer tokens (`[a2a.jwt]`, docs/A2A.md "Tokens"; `[mcp.jwt]`, docs/MCP.md): a token's
//! signature checked with a key of the configured JWK set, its issuer, audience, expiry and
//! not-before ([`Jwt::verify`]), then the allow-list of the agent it calls by one of its claims
//! ([`Jwt::allows`]).

mod crypto;
mod keys;

use crate::config::jwt::JwtConfig;
use jsonwebtoken::{Algorithm, Validation, decode, decode_header};
use keys::Keys;
pub use keys::Unread;
use serde_json::{Map, Value};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// Why a token does not let its request through.
#[derive(Debug, PartialEq)]
pub enum Refusal {
    /// No bearer token (401).
    Missing,
    /// Not a valid token (401).
    Invalid(String),
    /// A valid token that may not call this agent (403).
    NotAllowed(String),
}

/// The checker of `[a2a.jwt]`'s (or `[mcp.jwt]`'s) tokens.
pub struct Jwt {
    config: JwtConfig,
    keys: Keys,
    /// The table it is configured by (`a2a.jwt`, `mcp.jwt`), in what it says.
    section: &'static str,
}

/// The claims of a token [`Jwt::verify`] accepted.
#[derive(Debug, Clone)]
pub struct Claims(Map<String, Value>);

impl Claims {
    /// Who holds the token: its issuer and subject (`iss sub`; `-` for a claim it lacks).
    pub fn holder(&self) -> String {
        let claim = |key: &str| self.0.get(key).and_then(Value::as_str).unwrap_or("-").to_owned();
        format!("{} {}", claim("iss"), claim("sub"))
    }
}

impl Jwt {
    /// The checker of `config` (the table `section`), with the keys of its file; those of its
    /// URL are read by [`Jwt::refresh`] (at start and on a period: [`spawn_refresh`]).
    pub fn new(config: &JwtConfig, section: &'static str) -> Result<Jwt, String> {
        crypto::install();
        let min = Duration::from_millis(config.jwks_min_refresh_ms);
        let keys = Keys::new(config.jwks_file.clone(), config.jwks_url.clone(), min)
            .map_err(|why| format!("{section}: {why}"))?;
        keys.read_file().map_err(|u| format!("{section}.jwks_file: cannot read {}: {}", u.from, u.why))?;
        Ok(Jwt { config: config.clone(), keys, section })
    }

    /// Reads the keys again; what could not be read keeps its keys and is said.
    pub async fn refresh(&self) -> Vec<Unread> {
        self.keys.read().await
    }

    /// Reads the URL's keys now, then every key again every `jwks_refresh_ms`, while the
    /// checker lives; each failed read is handed to `failed`.
    async fn keep_fresh(this: Weak<Jwt>, failed: impl Fn(Unread)) {
        let mut first = true;
        loop {
            let Some(jwt) = this.upgrade() else { return };
            let failures = match first {
                true => jwt.keys.fetch().await.err().into_iter().collect(),
                false => jwt.refresh().await,
            };
            failures.into_iter().for_each(&failed);
            first = false;
            let period = Duration::from_millis(jwt.config.jwks_refresh_ms);
            drop(jwt);
            tokio::time::sleep(period).await;
        }
    }

    /// How many keys it holds.
    pub fn keys(&self) -> usize {
        self.keys.len()
    }

    /// Whether `token` may call `agent`: [`Jwt::verify`], then [`Jwt::allows`].
    pub async fn check(&self, token: &str, agent: &str, failed: impl Fn(Unread)) -> Result<(), Refusal> {
        self.allows(&self.verify(token, failed).await?, agent)
    }

    /// The claims of `token` if it is valid: signed by a key of the set, of the issuer and for
    /// the audience configured, in time. A read of the key set's URL that a token's unknown
    /// `kid` asked for and that failed is handed to `failed`.
    pub async fn verify(&self, token: &str, failed: impl Fn(Unread)) -> Result<Claims, Refusal> {
        let invalid = |why: String| Refusal::Invalid(why);
        let header = decode_header(token).map_err(|e| invalid(format!("not a JWT ({e})")))?;
        if !crypto::supports(header.alg) {
            return Err(invalid(format!(
                "its algorithm {:?} is not accepted (only public-key ones)",
                header.alg
            )));
        }
        let kid = header.kid.as_deref();
        let mut key = self.keys.find(kid, header.alg);
        if key.is_none() && kid.is_some() && self.keys.has_url() {
            if let Err(unread) = self.keys.refetch().await {
                failed(unread);
            }
            key = self.keys.find(kid, header.alg);
        }
        let Some(key) = key else {
            return Err(invalid(match kid {
                Some(kid) => format!("no key {kid:?} for {:?} in the key set", header.alg),
                None => {
                    format!("it names no key (kid) and the key set has not exactly one for {:?}", header.alg)
                }
            }));
        };
        let claims = decode::<Map<String, Value>>(token, &key, &self.validation(header.alg))
            .map_err(|e| invalid(reason(e.kind(), self.section)))?
            .claims;
        Ok(Claims(claims))
    }

    fn validation(&self, algorithm: Algorithm) -> Validation {
        let mut v = Validation::new(algorithm);
        v.set_issuer(&[&self.config.issuer]);
        v.set_audience(&[&self.config.audience]);
        v.set_required_spec_claims(&["exp", "iss", "aud"]);
        v.leeway = self.config.leeway_ms.div_ceil(1000);
        v.validate_nbf = true;
        v
    }

    /// Whether `claims` hold one of the values the table's `allow` gives `agent`.
    pub fn allows(&self, Claims(claims): &Claims, agent: &str) -> Result<(), Refusal> {
        let Some(allowed) = self.config.allowed(agent) else { return Ok(()) };
        let claim = &self.config.claim;
        let held: Vec<&str> = match claims.get(claim) {
            Some(Value::String(s)) => s.split_whitespace().collect(),
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if held.iter().any(|v| allowed.contains(v)) {
            return Ok(());
        }
        Err(Refusal::NotAllowed(format!(
            "its {claim:?} claim holds none of the values {}.allow gives {agent}",
            self.section
        )))
    }
}

/// What a refused token is told, in words (`section`: the table it is checked by).
fn reason(kind: &jsonwebtoken::errors::ErrorKind, section: &str) -> String {
    use jsonwebtoken::errors::ErrorKind::*;
    match kind {
        InvalidSignature => "its signature does not match the key".into(),
        ExpiredSignature => "it has expired (exp)".into(),
        ImmatureSignature => "it is not valid yet (nbf)".into(),
        InvalidIssuer => format!("its issuer (iss) is not {section}.issuer"),
        InvalidAudience => format!("its audience (aud) does not hold {section}.audience"),
        MissingRequiredClaim(claim) => format!("it has no {claim:?} claim"),
        other => format!("it is not valid ({other:?})"),
    }
}

/// The bearer token of `Authorization`, if it has one (RFC 6750: the scheme in any case).
pub fn bearer(headers: &axum::http::HeaderMap) -> Option<&str> {
    let value = headers.get(axum::http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim()).filter(|t| !t.is_empty())
}

/// Reads `jwt`'s URL now and starts its periodic reads, beside the service.
pub fn spawn_refresh(jwt: &Arc<Jwt>, failed: impl Fn(Unread) + Send + 'static) {
    tokio::spawn(Jwt::keep_fresh(Arc::downgrade(jwt), failed));
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
