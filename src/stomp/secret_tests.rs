use super::*;
use crate::stomp::session::{ConnectOptions, connect_frame};
use std::time::Duration;

#[test]
fn neither_a_secret_nor_a_connect_frame_shows_the_passcode_when_debugged() {
    let secret = Secret::from("hunter2-xyz");
    assert_eq!(secret.expose(), "hunter2-xyz");
    assert!(!format!("{secret:?}").contains("hunter2"));
    let opts = ConnectOptions {
        login: Some("admin".into()),
        passcode: Some(secret),
        vhost: "/".into(),
        heartbeat: (Duration::ZERO, Duration::ZERO),
    };
    assert!(!format!("{opts:?}").contains("hunter2"));
    let frame = connect_frame(&opts);
    assert_eq!(frame.header("passcode"), Some("hunter2-xyz"), "sent as it is");
    let shown = format!("{frame:?}");
    assert!(!shown.contains("hunter2") && shown.contains("admin"), "{shown}");
}
