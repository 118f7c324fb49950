//! A secret (the broker passcode): its text is reachable only through [`Secret::expose`],
//! never through `Debug` or `Display`, so no log line, error or dump can carry it.
//!
//! It serialises as its plain text, so that a serialised `Config` is a configuration file that
//! logs in (the tests and the load tools write theirs so): serialising a `Config` writes a
//! configuration file, secret included, and nothing logs or serves a serialised `Config`
//! (docs/OPERATING.md, "Configuration files written by code").

use serde::{Deserialize, Serialize};
use std::fmt;

/// Text that must not be shown.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(text: impl Into<String>) -> Self {
        Secret(text.into())
    }

    /// Whether `given` is this secret, compared without stopping at the first difference (the
    /// time taken does not tell how much of a guess was right): a bearer token's check.
    pub fn matches(&self, given: &str) -> bool {
        let (a, b) = (self.0.as_bytes(), given.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
    }

    /// The text itself, for the one place that sends it (the CONNECT frame).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Secret {
    fn from(text: &str) -> Self {
        Secret::new(text)
    }
}

impl From<String> for Secret {
    fn from(text: String) -> Self {
        Secret(text)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

#[cfg(test)]
#[path = "secret_tests.rs"]
mod tests;
