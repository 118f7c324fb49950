//! stomp-agent-bridge: a STOMP 1.2 client and the translation of agent messages between
//! Wise Agents and other agent frameworks.
//!
//! Layers, bottom up; a module imports only the layers listed before it (`layers_tests.rs`
//! reads every `crate::` path under `src/` and fails on an edge that goes up):
//!
//! 1. [`names`]: agent names, the `*`/`?` globs that match them; pure, imports nothing.
//! 2. [`stomp`]: the STOMP 1.2 client: [`stomp::frame`] and [`stomp::codec`] (bytes ↔
//!    frames, pure) → [`stomp::session`] (connection state, decided without I/O) →
//!    [`stomp::client`] (the event loop that does the I/O, with reconnect, heart-beats and
//!    receipts).
//! 3. [`envelope`]: the canonical envelope and one codec per framework's message format;
//!    pure: the time and the new ids a codec needs come from the [`envelope::Clock`] it is
//!    handed (the pipeline's `Now` in the daemon).
//! 4. [`config`]: the typed configuration, every section of it (the mirror's and the
//!    registry's too), built from the plain types of the layers below.
//! 5. [`routing`]: where messages come from and where they go; pure.
//! 6. [`telemetry`]: the events an operator observes, each one log line and one metric
//!    (the mirror's own in [`telemetry::mirror`]).
//! 7. [`broker`]: the connection every mode shares: client settings, connect with retries.
//! 8. [`wise_registry`]: the Wise Agents registry in Redis, read and written as Wise Agents
//!    does.
//! 9. [`relay`]: the requests asked on the broker for callers over HTTP (an A2A task, an MCP
//!    tool call), each waiting for its answers.
//! 10. [`a2a`]: A2A 1.0 (and 0.3) both ways: native Wise Agents agents served as A2A agents
//!     (the official SDK's JSON-RPC server, an executor that asks through the relay, a task
//!     store), the stage that calls the A2A agents proxied (`protocol = "a2a"`), and the JWT
//!     checker.
//! 11. [`mcp`]: the society's agents as MCP tools (the official SDK's Streamable HTTP server,
//!     a handler that asks through the relay; its JWTs checked by [`a2a`]'s checker).
//! 12. [`mirror`]: mirror mode: a broker-made copy of the Wise Agents traffic, published
//!     again in every format.
//! 13. [`deadletter`]: the dead-letter queue for operators: list, pick and replay.
//! 14. [`bridge`]: the daemon: consume → decode → route → encode → publish → settle; runs
//!     the mirror and the registry beside it. Its [`bridge::pipeline`] is a pure function of
//!     (message, state, now); its engine owns every consumed message and the clock.
//! 15. [`http`]: the operator's endpoint (`/metrics`, `/healthz`, `/readyz`, `/config`), the
//!     A2A routes and the MCP route.

pub mod a2a;
pub mod bridge;
pub mod broker;
pub mod config;
pub mod deadletter;
pub mod envelope;
pub mod http;
pub mod mcp;
pub mod mirror;
pub mod names;
pub mod relay;
pub mod routing;
pub mod stomp;
pub mod telemetry;
pub mod wise_registry;

#[cfg(test)]
#[path = "layers_tests.rs"]
mod layers_tests;
