//! `[a2a.jwt]` and `[mcp.jwt]`: JWT bearer tokens checked against the keys of a JWKS (docs/A2A.md,
//! "Tokens"; docs/MCP.md, "Security").

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Where the keys are, what a token must say, and who may call which agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JwtConfig {
    /// A JWK set (RFC 7517, `{"keys": [...]}`) in a file, relative to the configuration file;
    /// read at start and again every `jwks_refresh_ms`.
    #[serde(default)]
    pub jwks_file: Option<PathBuf>,
    /// A JWK set at an http(s) URL (an identity provider's `jwks_uri`), read at start, every
    /// `jwks_refresh_ms`, and when a token names a key (`kid`) not in the set (at most once in
    /// `jwks_min_refresh_ms`).
    #[serde(default)]
    pub jwks_url: Option<String>,
    /// How often the keys are read again.
    #[serde(default = "default_jwks_refresh_ms")]
    pub jwks_refresh_ms: u64,
    /// The shortest time between two reads of `jwks_url` for an unknown `kid`.
    #[serde(default = "default_jwks_min_refresh_ms")]
    pub jwks_min_refresh_ms: u64,
    /// The `iss` every token must carry.
    pub issuer: String,
    /// A value the token's `aud` must hold.
    pub audience: String,
    /// How far a clock may be off when `exp` and `nbf` are checked.
    #[serde(default = "default_leeway_ms")]
    pub leeway_ms: u64,
    /// The claim `allow` reads: a string of values separated by spaces (as OAuth's `scope`),
    /// or an array of strings (as `roles`).
    #[serde(default = "default_claim")]
    pub claim: String,
    /// Who may call an agent: served agent (a name or a glob) → the values of `claim` of which
    /// a token must hold at least one. An agent no key matches takes any valid token.
    #[serde(default)]
    pub allow: BTreeMap<String, Vec<String>>,
}

const fn default_jwks_refresh_ms() -> u64 {
    300_000
}

const fn default_jwks_min_refresh_ms() -> u64 {
    30_000
}

const fn default_leeway_ms() -> u64 {
    60_000
}

fn default_claim() -> String {
    "scope".into()
}

impl JwtConfig {
    /// The rules that relate its keys, each broken one as its key (under `section`, e.g.
    /// `a2a.jwt`) and why.
    pub(super) fn problems(&self, section: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut bad = |key: &str, why: String| out.push((format!("{section}.{key}"), why));
        if self.jwks_file.is_none() && self.jwks_url.is_none() {
            bad("jwks_file", "set jwks_file, jwks_url or both: the keys tokens are checked with".into());
        }
        if let Some(url) = &self.jwks_url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            bad("jwks_url", format!("{url:?} is not an http:// or https:// URL"));
        }
        for (key, value) in [("issuer", &self.issuer), ("audience", &self.audience), ("claim", &self.claim)] {
            if value.trim().is_empty() {
                bad(key, "must not be empty".into());
            }
        }
        for (key, value) in
            [("jwks_refresh_ms", self.jwks_refresh_ms), ("jwks_min_refresh_ms", self.jwks_min_refresh_ms)]
        {
            if value < 1_000 {
                bad(key, "must be at least 1000 (a second)".into());
            }
        }
        for (agent, values) in &self.allow {
            if !crate::names::is_agent_name(&agent.replace(['*', '?'], "x")) {
                bad("allow", format!("{agent:?} is not an agent name or a glob of one"));
            } else if values.is_empty() {
                bad("allow", format!("{agent:?} names no value: no token could call it"));
            }
        }
        out
    }

    /// The values of `claim` that may call `agent`: its own entry, else those of every glob that
    /// matches it; `None` when no entry matches (any valid token may).
    pub fn allowed(&self, agent: &str) -> Option<Vec<&str>> {
        if let Some(values) = self.allow.get(agent) {
            return Some(values.iter().map(String::as_str).collect());
        }
        let globs = self.allow.iter().filter(|(g, _)| crate::names::glob_matches(g, agent));
        let values: Vec<&str> = globs.flat_map(|(_, v)| v.iter().map(String::as_str)).collect();
        (!values.is_empty()).then_some(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> JwtConfig {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn a_sample_table_parses_with_its_defaults() {
        let c = parse("jwks_file = \"keys.json\"\nissuer = \"https://idp\"\naudience = \"bridge\"");
        assert_eq!((c.jwks_refresh_ms, c.jwks_min_refresh_ms, c.leeway_ms), (300_000, 30_000, 60_000));
        assert_eq!(c.claim, "scope");
        assert_eq!(c.problems("a2a.jwt"), []);
        assert_eq!(c.allowed("Any"), None);
    }

    #[test]
    fn it_needs_keys_an_issuer_an_audience_and_values_for_each_agent_it_names() {
        let c = parse(
            "jwks_url = \"ftp://idp\"\nissuer = \"\"\naudience = \" \"\njwks_refresh_ms = 10\n\
             [allow]\n\"a b\" = [\"x\"]\nWeather = []",
        );
        let text: String = c.problems("a2a.jwt").iter().map(|(k, why)| format!("{k}: {why}\n")).collect();
        for expected in [
            "a2a.jwt.jwks_url: \"ftp://idp\"",
            "a2a.jwt.issuer: must not be empty",
            "a2a.jwt.audience: must not be empty",
            "a2a.jwt.jwks_refresh_ms: must be at least 1000",
            "\"a b\" is not an agent name",
            "\"Weather\" names no value",
        ] {
            assert!(text.contains(expected), "{expected}: {text}");
        }
        let none = parse("issuer = \"i\"\naudience = \"a\"");
        assert!(none.problems("a2a.jwt")[0].1.contains("set jwks_file, jwks_url or both"));
    }

    #[test]
    fn an_agent_takes_its_own_values_else_those_of_every_glob_that_matches_it() {
        let c = parse(
            "jwks_file = \"k\"\nissuer = \"i\"\naudience = \"a\"\n[allow]\n\
             Weather = [\"weather\"]\n\"W*\" = [\"w\"]\n\"*\" = [\"admin\"]",
        );
        assert_eq!(c.allowed("Weather"), Some(vec!["weather"]));
        let mut wind = c.allowed("Wind").unwrap();
        wind.sort_unstable();
        assert_eq!(wind, ["admin", "w"]);
        assert_eq!(c.allowed("Echo"), Some(vec!["admin"]));
    }
}
