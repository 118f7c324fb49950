//! The brokers of `scripts/brokers.sh` as the tools reach them: URL, credentials, Wise Agents'
//! prefixes, a connection, the `[broker]` section of a bridge configuration, and unique names.

use std::time::{SystemTime, UNIX_EPOCH};
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

    /// The `[broker]` section of a bridge configuration for this broker (then `extra` lines).
    pub fn config_section(self, extra: &str) -> String {
        let (login, passcode) = self.credentials();
        format!(
            "[broker]\nurl = \"{}\"\nlogin = \"{login}\"\npasscode = \"{passcode}\"\n{extra}\n",
            self.url()
        )
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

pub fn now_nanos() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos()
}

/// A name no other run uses: `sab.<what>.<pid>.<nanos>`.
pub fn unique(what: &str) -> String {
    format!("sab.{what}.{}.{}", std::process::id(), now_nanos() % 1_000_000_000)
}
