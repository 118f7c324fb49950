//! An in-tree STOMP 1.2 client (see docs/STOMP.md for why not an existing crate).
//!
//! [`frame`] and [`codec`] turn bytes into frames; [`session`] decides what frames mean;
//! [`client`] does the I/O; [`transport`] opens TCP or TLS.

pub mod client;
pub mod codec;
pub mod frame;
/// The in-process transport of the tests that run under a paused clock: built for tests and
/// with the `test-util` feature only, so the shipped daemon does not accept `stomp+memory://`.
#[cfg(any(test, feature = "test-util"))]
pub mod memory;
pub mod secret;
pub mod session;
pub mod transport;

pub use client::{AwaitedReceipt, Backoff, Client, ClientConfig, Event, Events, Item, Submitted};
pub use codec::{FrameError, Limits, StompCodec};
pub use frame::{Command, Frame};
pub use secret::Secret;
pub use session::{AckMode, AckRef, BrokerError, ConnectOptions, Message, SessionError, Subscription};
pub use transport::{BrokerUrl, TlsOptions, tls_client_config};
