//! `[traces]`: conversations as traces (docs/OBSERVABILITY.md): exported over OTLP when an
//! endpoint is given, and drawn on the HTTP listener's `/conversations` page, which is on by
//! default (the last `conversations` conversations, in a bounded memory).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TracesConfig {
    /// The OTLP/HTTP collector, `http(s)://host:4318`; spans go to `<endpoint>/v1/traces`.
    /// Empty (the default): no export.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub endpoint: String,
    /// `http/protobuf`, the only one (OTLP's default transport; gRPC would bring tonic).
    #[serde(default = "default_protocol")]
    pub protocol: String,
    /// A file of `Name: value` lines sent as HTTP headers with every export (an API key):
    /// read at start, never logged or shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers_file: Option<PathBuf>,
    /// The share of traces exported, 0.0 to 1.0, decided on the trace id (the same decision
    /// in every hop of a conversation; a context's sampled flag is not read).
    #[serde(default = "default_ratio")]
    pub sampling_ratio: f64,
    /// `service.name` of the spans.
    #[serde(default = "default_service")]
    pub service_name: String,
    /// More resource attributes (`deployment.environment.name = "prod"`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resource: BTreeMap<String, String>,
    /// Spans waiting for export at most (1 to 1,000,000); more are dropped and counted
    /// (`bridge_trace_spans_total{outcome="dropped"}`), never waited for.
    #[serde(default = "default_queue")]
    pub max_queue: usize,
    /// Conversations the `/conversations` page keeps, at most 10,000 (the least recently
    /// active forgotten first); 0 turns the page off.
    #[serde(default = "default_conversations")]
    pub conversations: usize,
}

impl Default for TracesConfig {
    fn default() -> Self {
        TracesConfig {
            endpoint: String::new(),
            protocol: default_protocol(),
            headers_file: None,
            sampling_ratio: default_ratio(),
            service_name: default_service(),
            resource: BTreeMap::new(),
            max_queue: default_queue(),
            conversations: default_conversations(),
        }
    }
}

impl TracesConfig {
    /// Whether messages' traces are kept at all (an export or the page).
    pub fn enabled(&self) -> bool {
        !self.endpoint.is_empty() || self.conversations > 0
    }

    /// What is wrong with the section, each as its key and why.
    pub fn problems(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        if self.protocol != "http/protobuf" {
            out.push((
                "traces.protocol".into(),
                format!("{:?}: only \"http/protobuf\" is supported", self.protocol),
            ));
        }
        let http = ["http://", "https://"].iter().any(|s| self.endpoint.starts_with(s));
        if !self.endpoint.is_empty() && !http {
            out.push((
                "traces.endpoint".into(),
                format!("{:?} is not an http:// or https:// URL", self.endpoint),
            ));
        }
        if !(0.0..=1.0).contains(&self.sampling_ratio) {
            out.push((
                "traces.sampling_ratio".into(),
                format!("{} is not between 0.0 and 1.0", self.sampling_ratio),
            ));
        }
        if !(1..=MAX_QUEUE).contains(&self.max_queue) {
            out.push((
                "traces.max_queue".into(),
                format!("{} is not between 1 and {MAX_QUEUE}", self.max_queue),
            ));
        }
        if self.conversations > MAX_CONVERSATIONS {
            let why = format!("{} is more than {MAX_CONVERSATIONS}", self.conversations);
            out.push(("traces.conversations".into(), why));
        }
        out
    }
}

/// The most spans that may wait for export (each holds its attributes, cut to 256 characters).
const MAX_QUEUE: usize = 1_000_000;
/// The most conversations the page keeps (each at most 64 events of a few hundred bytes).
const MAX_CONVERSATIONS: usize = 10_000;

fn default_protocol() -> String {
    "http/protobuf".into()
}
fn default_ratio() -> f64 {
    1.0
}
fn default_service() -> String {
    "stomp-agent-bridge".into()
}
fn default_queue() -> usize {
    4096
}
fn default_conversations() -> usize {
    200
}
