//! The Wise Agents registry's side of the tests: its Redis (the shared one of
//! scripts/redis.sh, or a private one a test can pause and restart), the contexts and
//! collaborations core.py writes, and the native and Civitas agents around a proxied agent.

use super::bridge::{BridgeProcess, Names, config_with, free_port, proxied};
use super::{Broker, next_message, wa_body};
use serde_json::{Value, json};
use std::process::{Child, Command};
use std::time::{Duration, Instant};
use stomp_agent_bridge::config::Config;
use stomp_agent_bridge::config::registry::{RegisteredAgent, RegistryConfig};
use stomp_agent_bridge::envelope::wiseagents::WiseMessage;
use stomp_agent_bridge::stomp::{AckMode, Client, Command as Stomp, Events, Frame, Subscription};
use stomp_agent_bridge::wise_registry::dumps::dumps;
use stomp_agent_bridge::wise_registry::pickle::Value as Py;
use stomp_agent_bridge::wise_registry::resp::{Connection, Reply};
use stomp_agent_bridge::wise_registry::store::context;

pub fn redis_port() -> u16 {
    std::env::var("SAB_REDIS_PORT").ok().and_then(|p| p.parse().ok()).unwrap_or(6379)
}

pub async fn redis() -> Connection {
    Connection::open("127.0.0.1", redis_port(), None, 0)
        .await
        .expect("Redis on SAB_REDIS_PORT (scripts/test.sh starts it)")
}

pub async fn cmd(r: &mut Connection, args: &[&[u8]]) -> Reply {
    r.call(args).await.unwrap().ok().unwrap()
}

pub async fn hget(r: &mut Connection, key: &str, field: &str) -> Option<Vec<u8>> {
    cmd(r, &[b"HGET", key.as_bytes(), field.as_bytes()]).await.into_bytes().unwrap()
}

/// A context as core.py registers it, with its collaboration's fields.
pub async fn collaboration(r: &mut Connection, ctx: &str, fields: &[(&str, Vec<u8>)]) {
    cmd(r, &[b"HSET", b"contexts", ctx.as_bytes(), &context(ctx, "127.0.0.1", redis_port())]).await;
    for (field, value) in fields {
        cmd(r, &[b"HSET", ctx.as_bytes(), field.as_bytes(), value]).await;
    }
}

pub fn strs(items: &[&str]) -> Vec<u8> {
    dumps(&Py::List(items.iter().map(|s| Py::Str((*s).into())).collect()))
}

/// `[wiseagents.registry]` of this test: the Redis on `port`, this test's instance.
pub fn registry(names: &Names, port: u16) -> RegistryConfig {
    RegistryConfig { port, instance: format!("test-{}", names.uid), ..Default::default() }
}

/// The configuration for the proxied Civitas agent `civ` with the registry `registry`, then `edit`.
pub fn config(
    names: &Names,
    civ: &str,
    http_port: u16,
    registry: RegistryConfig,
    edit: impl FnOnce(&mut Config),
) -> Config {
    config_with(Broker::ActiveMq, names, vec![proxied(civ, "civitas")], http_port, |c| {
        c.wiseagents.registry = Some(registry);
        edit(c);
    })
}

/// The bridge with `CivStep` (a Civitas agent), `agents` saying how it is registered.
pub fn start(names: &Names, civ: &str, agents: Vec<RegisteredAgent>) -> BridgeProcess {
    let port = free_port();
    let registry = RegistryConfig { agents, ..registry(names, redis_port()) };
    BridgeProcess::start(&config(names, civ, port, registry, |_| ()), port, &names.uid)
}

pub async fn listen(dest: &str) -> (Client, Events) {
    let (client, events) = Broker::ActiveMq.connect().await;
    client.subscribe(Subscription::new(dest, AckMode::Auto)).await.unwrap();
    (client, events)
}

pub async fn send(client: &Client, dest: &str, body: Vec<u8>) {
    let frame = Frame::new(Stomp::Send).with("destination", dest).with("persistent", "true").with_body(body);
    client.send_confirmed(frame).await.unwrap();
}

/// The Civitas agent: takes the next request from its inbox and answers it as `reply()` does.
pub async fn civitas_answers(
    client: &Client,
    inbox: &mut Events,
    names: &Names,
    civ: &str,
    text: &str,
) -> Value {
    let asked: Value = serde_json::from_slice(next_message(inbox, 30).await.body()).unwrap();
    let reply = json!({"type": "reply", "sender": civ, "recipient": asked["reply_to"],
        "correlation_id": asked["correlation_id"], "payload": {"message": text}});
    send(client, &names.dest("civitas.ingress"), reply.to_string().into_bytes()).await;
    asked
}

pub async fn next_wise(events: &mut Events) -> (String, WiseMessage) {
    let m = next_message(events, 30).await;
    (m.destination.clone(), WiseMessage::parse(m.body()).unwrap())
}

pub fn ask(text: &str, sender: &str, ctx: &str) -> Vec<u8> {
    wa_body(json!({"_message": text, "_sender": sender, "_context_name": ctx}))
}

/// Polls Redis (there is no event to wait for) until `agent` is in `agents` or not.
pub async fn until_registered(r: &mut Connection, agent: &str, want: bool, secs: u64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while hget(r, "agents", agent).await.is_some() != want {
        assert!(std::time::Instant::now() < deadline, "{agent} registered: {} after {secs} s", !want);
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// A Redis of the test's own (Debian's `redis-server`, which scripts/redis.sh installs), on a
/// free port and without persistence, that the test can pause (`SIGSTOP`, as a stalled host
/// would) and restart empty; killed when dropped.
pub struct PrivateRedis {
    pub port: u16,
    child: Child,
}

impl PrivateRedis {
    pub async fn start() -> PrivateRedis {
        Self::start_on(free_port()).await
    }

    async fn start_on(port: u16) -> PrivateRedis {
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server (scripts/redis.sh installs it)");
        let redis = PrivateRedis { port, child };
        let deadline = Instant::now() + Duration::from_secs(30);
        while Connection::open("127.0.0.1", port, None, 0).await.is_err() {
            assert!(Instant::now() < deadline, "the private Redis did not answer on {port} within 30 s");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        redis
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill").args([signal, &self.child.id().to_string()]).status().unwrap();
        assert!(status.success(), "kill {signal} the private Redis");
    }

    /// Stops answering (its connections stay open), until [`PrivateRedis::resume`].
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    pub fn resume(&self) {
        self.signal("-CONT");
    }

    /// Killed and started again on the same port, with no data.
    pub async fn restart_empty(mut self) -> PrivateRedis {
        let port = self.port;
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        Self::start_on(port).await
    }

    pub async fn connect(&self) -> Connection {
        Connection::open("127.0.0.1", self.port, None, 0).await.expect("the private Redis")
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
