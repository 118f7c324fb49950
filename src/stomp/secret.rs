//! A secret (the broker passcode): its text is reachable only through [`Secret::expose`],
//! never through `Debug` or `Display`, so no log line, error or dump can carry it.

use serde::Deserialize;
use std::fmt;

/// Text that must not be shown.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(text: impl Into<String>) -> Self {
        Secret(text.into())
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
