//! The keys tokens are checked with: a JWK set from a file, from a URL, or both, read again on
//! a period and, from the URL, when a token names a key the set does not hold.

use jsonwebtoken::jwk::{Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use std::path::PathBuf;
use std::sync::RwLock;
use std::time::Duration;
use tokio::sync::Mutex;
use tokio::time::Instant;

/// The largest JWK set read from a URL.
const MAX_SET_BYTES: usize = 1 << 20;
/// How long a read of the URL may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// One public key of a set.
#[derive(Debug)]
pub struct Key {
    pub kid: Option<String>,
    /// The one algorithm it is for, when the set says (`alg`).
    pub algorithm: Option<Algorithm>,
    pub key: DecodingKey,
}

impl Key {
    fn fits(&self, kid: Option<&str>, algorithm: Algorithm) -> bool {
        self.key.family() == algorithm.family()
            && self.algorithm.is_none_or(|a| a == algorithm)
            && kid.is_none_or(|k| self.kid.as_deref() == Some(k))
    }
}

/// The signing keys of a JWK set's text, and how many of its keys are not (for encryption,
/// symmetric, of a kind or an algorithm the bridge does not check).
pub fn parse(text: &str) -> Result<(Vec<Key>, usize), String> {
    #[derive(serde::Deserialize)]
    struct Set {
        keys: Vec<serde_json::Value>,
    }
    let set: Set =
        serde_json::from_str(text).map_err(|e| format!("not a JWK set ({{\"keys\": [...]}}): {e}"))?;
    let total = set.keys.len();
    let keys: Vec<Key> = set.keys.into_iter().filter_map(signing_key).collect();
    let others = total - keys.len();
    Ok((keys, others))
}

fn signing_key(value: serde_json::Value) -> Option<Key> {
    let jwk: Jwk = serde_json::from_value(value).ok()?;
    if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption | PublicKeyUse::Other(_))) {
        return None;
    }
    let algorithm = match jwk.common.key_algorithm {
        Some(a) => Some(Algorithm::try_from(a).ok().filter(|a| super::crypto::supports(*a))?),
        None => None,
    };
    let key = DecodingKey::from_jwk(&jwk).ok()?;
    if key.family() == jsonwebtoken::AlgorithmFamily::Hmac {
        return None;
    }
    Some(Key { kid: jwk.common.key_id, algorithm, key })
}

/// The key set, from where `[a2a.jwt]` (or `[mcp.jwt]`) says.
pub struct Keys {
    file: Option<PathBuf>,
    url: Option<String>,
    http: reqwest::Client,
    held: RwLock<Held>,
    /// Held while the URL is read: one read at a time.
    reading: Mutex<()>,
    /// When a token's unknown `kid` last had the URL read.
    refetched: std::sync::Mutex<Option<Instant>>,
    min_refetch: Duration,
}

/// The keys of the file and of the URL, each as last read.
#[derive(Default)]
struct Held {
    file: Vec<Key>,
    url: Vec<Key>,
}

/// A read of the keys that failed: where from, and why.
pub struct Unread {
    pub from: String,
    pub why: String,
}

impl Keys {
    pub fn new(file: Option<PathBuf>, url: Option<String>, min_refetch: Duration) -> Result<Keys, String> {
        let tls = crate::stomp::transport::tls_client_config(&Default::default())
            .map_err(|e| format!("cannot make the TLS configuration: {e}"))?;
        let http = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .timeout(FETCH_TIMEOUT)
            .build()
            .map_err(|e| format!("cannot make the HTTP client: {e}"))?;
        let held = RwLock::default();
        let refetched = std::sync::Mutex::new(None);
        Ok(Keys { file, url, http, held, reading: Mutex::new(()), refetched, min_refetch })
    }

    /// The key of `kid` for `algorithm`; without a `kid`, the one key for `algorithm`.
    pub fn find(&self, kid: Option<&str>, algorithm: Algorithm) -> Option<DecodingKey> {
        let held = self.held.read().unwrap_or_else(|e| e.into_inner());
        let mut fitting = held.file.iter().chain(&held.url).filter(|k| k.fits(kid, algorithm));
        let first = fitting.next()?;
        (kid.is_some() || fitting.next().is_none()).then(|| first.key.clone())
    }

    /// Whether the keys come from a URL too (then an unknown `kid` is worth a read).
    pub fn has_url(&self) -> bool {
        self.url.is_some()
    }

    /// Reads the file and the URL again; a source that cannot be read keeps its keys.
    pub async fn read(&self) -> Vec<Unread> {
        let file = self.read_file().err();
        let url = self.fetch().await.err();
        file.into_iter().chain(url).collect()
    }

    /// Reads the file again, if there is one.
    pub fn read_file(&self) -> Result<(), Unread> {
        let Some(file) = &self.file else { return Ok(()) };
        let unread = |why: String| Unread { from: file.display().to_string(), why };
        let text = std::fs::read_to_string(file).map_err(|e| unread(e.to_string()))?;
        let (keys, _) = parse(&text).map_err(unread)?;
        self.held.write().unwrap_or_else(|e| e.into_inner()).file = keys;
        Ok(())
    }

    /// Reads the URL again for a token's unknown `kid`, unless one did within
    /// `jwks_min_refresh_ms`: a flood of made-up `kid`s reads it once per that time. Reads
    /// never overlap: this one waits for one under way.
    pub async fn refetch(&self) -> Result<(), Unread> {
        let reading = self.reading.lock().await;
        {
            let mut last = self.refetched.lock().unwrap_or_else(|e| e.into_inner());
            if last.is_some_and(|at| at.elapsed() < self.min_refetch) {
                return Ok(());
            }
            *last = Some(Instant::now());
        }
        self.fetch_reading(reading).await
    }

    /// Reads the URL again, if there is one.
    pub async fn fetch(&self) -> Result<(), Unread> {
        self.fetch_reading(self.reading.lock().await).await
    }

    /// Reads the URL, holding `reading` until done.
    async fn fetch_reading(&self, _reading: tokio::sync::MutexGuard<'_, ()>) -> Result<(), Unread> {
        let Some(url) = &self.url else { return Ok(()) };
        let unread = |why: String| Unread { from: url.clone(), why };
        let answer = self.http.get(url).send().await.map_err(|e| unread(e.to_string()))?;
        if !answer.status().is_success() {
            return Err(unread(format!("answered {}", answer.status())));
        }
        if answer.content_length().is_some_and(|n| n > MAX_SET_BYTES as u64) {
            return Err(unread(format!("larger than {MAX_SET_BYTES} bytes")));
        }
        let body = answer.bytes().await.map_err(|e| unread(e.to_string()))?;
        if body.len() > MAX_SET_BYTES {
            return Err(unread(format!("larger than {MAX_SET_BYTES} bytes")));
        }
        let text = std::str::from_utf8(&body).map_err(|e| unread(e.to_string()))?;
        let (keys, _) = parse(text).map_err(unread)?;
        self.held.write().unwrap_or_else(|e| e.into_inner()).url = keys;
        Ok(())
    }

    /// How many keys are held.
    pub fn len(&self) -> usize {
        let held = self.held.read().unwrap_or_else(|e| e.into_inner());
        held.file.len() + held.url.len()
    }
}
