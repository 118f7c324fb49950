//! The broker connection every mode shares (bridge, mirror, dead-letter tools): the STOMP
//! client's settings from the configuration, and connecting with retries.

use crate::config::Config;
use crate::stomp::{
    Backoff, BrokerUrl, Client, ClientConfig, ConnectOptions, Events, SessionError, TlsOptions,
};
use crate::telemetry::Event;
use crate::telemetry::Metrics;
use crate::telemetry::broker::BrokerConnected;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::warn;

/// The STOMP client settings for the configured broker.
pub fn client_config(config: &Config) -> Result<ClientConfig, SessionError> {
    let b = &config.broker;
    let urls = b.addresses().into_iter().map(str::parse).collect::<Result<Vec<BrokerUrl>, _>>()?;
    let first = urls.first().cloned().ok_or(SessionError::Url {
        url: String::new(),
        reason: "no broker address is configured (broker.url or broker.urls)",
    })?;
    let mut c = ClientConfig::new(first, b.login.clone(), b.passcode.clone());
    c.urls = urls;
    c.connect = ConnectOptions {
        login: b.login.clone(),
        passcode: b.passcode.clone(),
        vhost: b.vhost.clone(),
        heartbeat: (Duration::from_millis(b.heartbeat_ms[0]), Duration::from_millis(b.heartbeat_ms[1])),
    };
    c.tls = TlsOptions {
        ca_file: b.ca_file.clone(),
        cert_file: b.cert_file.clone(),
        key_file: b.key_file.clone(),
    };
    c.address_tls =
        c.urls.iter().map(|url| (url.clone(), b.tls_for(url))).filter(|(_, tls)| *tls != c.tls).collect();
    c.receipt_timeout = Duration::from_millis(config.delivery.receipt_timeout_ms);
    c.backoff =
        Backoff { initial: Duration::from_millis(200), max: Duration::from_millis(b.reconnect_max_ms) };
    // Never stop reading the socket while the broker may still send what the prefetch lets
    // it: receipts would wait behind unread messages (issue #8's start-up livelock). The
    // margin covers queues discovered later and the advisory topic.
    c.event_capacity = 1024;
    c.max_buffered = config.delivery.in_flight.saturating_mul(2).saturating_add(4096);
    Ok(c)
}

/// Connects, retrying with backoff until it works or shutdown is asked for; the connection's
/// address is recorded under its role `link` (`consuming`, `publishing`, `tap`, `out`).
pub async fn connect(
    client_config: &ClientConfig,
    link: &'static str,
    metrics: &Metrics,
    shutdown: &CancellationToken,
) -> Option<(Client, Events)> {
    for attempt in 0u32.. {
        match Client::connect(client_config.clone()).await {
            Ok(connected) => {
                metrics.set_connected(true);
                let (address, server) = (connected.0.address().to_string(), connected.0.server());
                BrokerConnected { link, address: &address, server }.emit(&metrics.broker);
                // The spans' `messaging.system`: which broker this is.
                if let (Some(server), Some(exporter)) = (server, metrics.traces.exporter()) {
                    exporter.broker_is(server);
                }
                return Some(connected);
            }
            Err(e) => {
                let brokers = addresses(client_config);
                warn!(brokers, attempt, error = %e, "cannot connect to the broker; retrying")
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => return None,
            _ = tokio::time::sleep(client_config.backoff.delay(attempt)) => {}
        }
    }
    None
}

/// The addresses as one log field: `stomp://a:61613, stomp://b:61613`.
fn addresses(client_config: &ClientConfig) -> String {
    client_config.urls.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
#[path = "broker_tests.rs"]
mod tests;
