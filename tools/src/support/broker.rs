//! The brokers of `scripts/brokers.sh` as the tools reach them: URL, credentials, Wise Agents'
//! prefixes, a connection, the bridge's configuration for the broker, and unique names.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};
use stomp_agent_bridge::config::{BrokerConfig, Config, LogConfig};
use stomp_agent_bridge::stomp::{Client, ClientConfig, Events};

#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub enum Broker {
    #[value(name = "activemq")]
    ActiveMq,
    #[value(name = "rabbitmq")]
    RabbitMq,
    #[value(name = "artemis")]
    Artemis,
}

impl Broker {
    /// The STOMP port of `scripts/brokers.sh`'s broker, or another instance's from
    /// `SAB_ACTIVEMQ_PORT` / `SAB_RABBITMQ_PORT` / `SAB_ARTEMIS_PORT` (as the tests read them).
    pub fn port(self) -> u16 {
        let (var, port) = match self {
            Broker::ActiveMq => ("SAB_ACTIVEMQ_PORT", 61613),
            Broker::RabbitMq => ("SAB_RABBITMQ_PORT", 61623),
            Broker::Artemis => ("SAB_ARTEMIS_PORT", 61633),
        };
        std::env::var(var).ok().and_then(|p| p.parse::<u16>().ok()).unwrap_or(port)
    }

    pub fn url(self) -> String {
        format!("stomp://127.0.0.1:{}", self.port())
    }

    pub fn credentials(self) -> (&'static str, &'static str) {
        match self {
            Broker::ActiveMq | Broker::Artemis => ("admin", "admin"),
            Broker::RabbitMq => ("guest", "guest"),
        }
    }

    /// Wise Agents' queue prefixes as this broker allows them.
    pub fn prefixes(self) -> (&'static str, &'static str) {
        match self {
            Broker::ActiveMq | Broker::Artemis => ("/queue/request/", "/queue/response/"),
            Broker::RabbitMq => ("/queue/request.", "/queue/response."),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Broker::ActiveMq => "ActiveMQ Classic",
            Broker::RabbitMq => "RabbitMQ",
            Broker::Artemis => "ActiveMQ Artemis",
        }
    }

    /// A bridge configuration for this broker, with its credentials and Wise Agents' prefixes
    /// as it allows them, no HTTP endpoint and JSON logs at `info`; no framework, no agent yet.
    pub fn bridge_config(self) -> Config {
        let (login, passcode) = self.credentials();
        let broker = BrokerConfig {
            login: Some(login.into()),
            passcode: Some(passcode.into()),
            ..BrokerConfig::new(self.url())
        };
        let mut config = Config::new(broker);
        let (request_prefix, response_prefix) = self.prefixes();
        config.wiseagents.request_prefix = request_prefix.into();
        config.wiseagents.response_prefix = response_prefix.into();
        config.http.listen = String::new();
        config.log = LogConfig { format: "json".into(), level: "info".into() };
        config
    }

    /// A connection, with `tune` applied to its configuration first; panics when the broker
    /// cannot be reached (the tools have nothing to measure then).
    pub async fn connect(self, tune: impl FnOnce(&mut ClientConfig)) -> (Client, Events) {
        let (login, passcode) = self.credentials();
        let url = self.url().parse().expect("url");
        let mut c = ClientConfig::new(url, Some(login.into()), Some(passcode.into()));
        tune(&mut c);
        Client::connect(c)
            .await
            .unwrap_or_else(|e| panic!("cannot reach {} on {}: {e}", self.name(), self.port()))
    }
}

/// Writes `config` to `path` as the bridge reads it.
pub fn write_config(path: &Path, config: &Config) {
    let text = toml::to_string(config).expect("a configuration serialises");
    std::fs::write(path, text).expect("write the bridge's configuration");
}

pub fn now_nanos() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos()
}

/// A name no other run uses: `sab.<what>.<pid>.<nanos>`.
pub fn unique(what: &str) -> String {
    format!("sab.{what}.{}.{}", std::process::id(), now_nanos() % 1_000_000_000)
}
