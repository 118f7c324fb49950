//! The bridge's load and soak tools (`loadgen`, `soak`), a workspace member of their own so that
//! the daemon's crate holds only the daemon: what they share is [`support`].

pub mod support;
