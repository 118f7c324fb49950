//! stomp-agent-bridge: a STOMP 1.2 client and the translation of agent messages between
//! Wise Agents and other agent frameworks.
//!
//! Layers, bottom up: [`stomp::frame`] and [`stomp::codec`] (bytes ↔ frames, pure) →
//! [`stomp::session`] (connection state, decided without I/O) → [`stomp::client`] (the event
//! loop that does the I/O, with reconnect, heart-beats and receipts).

pub mod bridge;
pub mod broker;
pub mod config;
pub mod deadletter;
pub mod envelope;
pub mod http;
pub mod mirror;
pub mod names;
pub mod routing;
pub mod stomp;
pub mod telemetry;
pub mod wise_registry;
