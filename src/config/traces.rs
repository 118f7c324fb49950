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
    /// The share of new traces sampled, 0.0 to 1.0; a trace that arrives keeps its own
    /// decision (parent-based).
    #[serde(default = "default_ratio")]
    pub sampling_ratio: f64,
    /// `service.name` of the spans.
    #[serde(default = "default_service")]
    pub service_name: String,
    /// More resource attributes (`deployment.environment.name = "prod"`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resource: BTreeMap<String, String>,
    /// Spans waiting for export at most; more are dropped and counted
    /// (`bridge_trace_spans_dropped_total`), never waited for.
    #[serde(default = "default_queue")]
    pub max_queue: usize,
    /// Conversations the `/conversations` page keeps (the oldest forgotten first); 0 turns
    /// the page off.
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
        if self.max_queue == 0 {
            out.push(("traces.max_queue".into(), "must be at least 1".into()));
        }
        out
    }
}

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
