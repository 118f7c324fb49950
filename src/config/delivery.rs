//! `[delivery]`: the guarantees the bridge keeps and their bounds (validated in `rules.rs`).

use serde::{Deserialize, Serialize};

/// How the bridge makes what it publishes durable before acknowledging its source
/// (docs/PERFORMANCE.md has the measurements behind each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeliveryMode {
    /// `confirm`, on every broker (the measurements in docs/PERFORMANCE.md decided it).
    Auto,
    /// SENDs and ACKs of a batch in one broker transaction, committed with a receipt.
    Transaction,
    /// Every SEND with a receipt, then the ACKs.
    Confirm,
}

/// Delivery guarantees and their bounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeliveryConfig {
    /// Where messages that cannot be parsed, translated or routed go, with the reason.
    #[serde(default = "default_dead_letter")]
    pub dead_letter: String,
    /// Messages the bridge holds at most (received, not yet acknowledged), across all
    /// subscriptions: in `confirm` mode one busy subscription may hold all of them; in
    /// `transaction` mode each subscription's prefetch is an equal share of it.
    #[serde(default = "default_in_flight")]
    pub in_flight: usize,
    /// Most messages settled by one transaction (a batch is what is ready, up to this).
    #[serde(default = "default_batch_max")]
    pub batch_max: usize,
    /// Batches awaiting the broker at once.
    #[serde(default = "default_batches_in_flight")]
    pub batches_in_flight: usize,
    #[serde(default = "default_delivery_mode")]
    pub mode: DeliveryMode,
    /// A message whose output the broker refused this many times is dead-lettered.
    #[serde(default = "default_max_attempts")]
    pub max_attempts: u32,
    #[serde(default = "default_shutdown_timeout_ms")]
    pub shutdown_timeout_ms: u64,
    #[serde(default = "default_receipt_timeout_ms")]
    pub receipt_timeout_ms: u64,
    /// A message seen by the bridge this many times is taken to loop and is dead-lettered.
    #[serde(default = "default_max_hops")]
    pub max_hops: u32,
    /// Ask ActiveMQ Classic for exclusive consumers (`activemq.exclusive:true`), so that of
    /// several bridge instances one is active and the others stand by.
    #[serde(default)]
    pub exclusive: bool,
    /// Requests remembered for replies that echo nothing but an id (VOX), at most...
    #[serde(default = "default_correlation_capacity")]
    pub correlation_capacity: usize,
    /// ...and for at most this long.
    #[serde(default = "default_correlation_ttl_ms")]
    pub correlation_ttl_ms: u64,
    /// An ask not answered within this many milliseconds gets an error answer in the asker's
    /// format, and a late answer is dropped; 0: never (the default).
    #[serde(default)]
    pub reply_timeout_ms: u64,
    /// The largest body the bridge publishes: a translation that comes out larger (JSON
    /// escaping can make a body six times its YAML) is dead-lettered with kind `too_large`
    /// instead of being refused by the broker. The default is what the bridge reads itself.
    #[serde(default = "default_max_body_bytes")]
    pub max_body_bytes: usize,
    /// SENDs awaiting their receipts at once, all batches together (`confirm` mode): what a
    /// `kill -9` publishes twice, the broker's confirmations permitting (docs/OPERATING.md,
    /// "Batches"). Unset: the broker's (`Settlement::unconfirmed_cap`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unconfirmed_max: Option<usize>,
    /// A busy bridge (woken within this many microseconds of going to sleep, its wake-ups
    /// finding more than 1.5 broker frames each on average) waits this long before it sleeps
    /// again, so that what arrives meanwhile is handled in one wake-up; otherwise it sleeps at
    /// once (docs/PERFORMANCE.md, "Wake-ups"). 0: never waits.
    #[serde(default = "default_coalesce_us")]
    pub coalesce_us: u64,
}

impl Default for DeliveryConfig {
    fn default() -> Self {
        DeliveryConfig {
            dead_letter: default_dead_letter(),
            in_flight: default_in_flight(),
            batch_max: default_batch_max(),
            batches_in_flight: default_batches_in_flight(),
            mode: default_delivery_mode(),
            max_attempts: default_max_attempts(),
            shutdown_timeout_ms: default_shutdown_timeout_ms(),
            receipt_timeout_ms: default_receipt_timeout_ms(),
            max_hops: default_max_hops(),
            exclusive: false,
            correlation_capacity: default_correlation_capacity(),
            correlation_ttl_ms: default_correlation_ttl_ms(),
            reply_timeout_ms: 0,
            max_body_bytes: default_max_body_bytes(),
            unconfirmed_max: None,
            coalesce_us: default_coalesce_us(),
        }
    }
}

fn default_dead_letter() -> String {
    "/queue/bridge.dead".into()
}
const fn default_in_flight() -> usize {
    1024
}
const fn default_batch_max() -> usize {
    256
}
const fn default_batches_in_flight() -> usize {
    2
}
const fn default_delivery_mode() -> DeliveryMode {
    DeliveryMode::Auto
}
const fn default_max_attempts() -> u32 {
    3
}
const fn default_shutdown_timeout_ms() -> u64 {
    10_000
}
const fn default_receipt_timeout_ms() -> u64 {
    5_000
}
const fn default_max_hops() -> u32 {
    8
}
const fn default_max_body_bytes() -> usize {
    crate::stomp::Limits::DEFAULT_MAX_FRAME_BYTES
}
const fn default_coalesce_us() -> u64 {
    500
}
const fn default_correlation_capacity() -> usize {
    10_000
}
const fn default_correlation_ttl_ms() -> u64 {
    3_600_000
}
