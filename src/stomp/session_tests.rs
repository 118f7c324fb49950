use super::*;

const SEC: Duration = Duration::from_secs(1);

fn connected(headers: &[(&str, &str)]) -> Frame {
    headers.iter().fold(Frame::new(Command::Connected), |f, (k, v)| f.with(*k, *v))
}

#[test]
fn connect_frame_offers_both_versions_vhost_and_heartbeats() {
    let opts = ConnectOptions {
        login: Some("u".into()),
        passcode: Some("p".into()),
        vhost: "/".into(),
        heartbeat: (10 * SEC, 20 * SEC),
    };
    let f = connect_frame(&opts);
    assert_eq!(f.command, Command::Connect);
    assert_eq!(f.header("accept-version"), Some("1.1,1.2"));
    assert_eq!(f.header("host"), Some("/"));
    assert_eq!(f.header("heart-beat"), Some("10000,20000"));
    assert_eq!((f.header("login"), f.header("passcode")), (Some("u"), Some("p")));
}

#[test]
fn heartbeats_are_negotiated_as_the_larger_period_and_zero_disables() {
    let n = negotiate(&connected(&[("version", "1.2"), ("heart-beat", "5000,30000")]), (10 * SEC, 4 * SEC))
        .unwrap();
    assert_eq!(n.version, Version::V1_2);
    assert_eq!(n.send_every, Some(30 * SEC));
    assert_eq!(n.expect_every, Some(5 * SEC));
    assert_eq!(n.read_timeout(), Some(Duration::from_secs(11)));
    let off = negotiate(&connected(&[("heart-beat", "0,0")]), (SEC, SEC)).unwrap();
    assert_eq!((off.version, off.send_every, off.expect_every), (Version::V1_1, None, None));
}

#[test]
fn absurd_heartbeats_from_the_broker_are_capped_not_overflowed() {
    let max = "18446744073709551615,18446744073709551615";
    let n = negotiate(&connected(&[("version", "1.2"), ("heart-beat", max)]), (10 * SEC, 10 * SEC)).unwrap();
    assert_eq!(n.send_every, Some(MAX_HEARTBEAT));
    assert_eq!(n.expect_every, Some(MAX_HEARTBEAT));
    assert_eq!(n.read_timeout(), Some(MAX_HEARTBEAT * 2 + SEC));
    let garbage = negotiate(&connected(&[("heart-beat", "-1,1e9")]), (SEC, SEC)).unwrap();
    assert_eq!((garbage.send_every, garbage.expect_every), (None, None), "unreadable is 0: off");
}

#[test]
fn an_error_answer_to_connect_is_a_refusal_with_the_brokers_words() {
    let err = Frame::new(Command::Error).with("message", "bad login").with_body("User name [x] invalid");
    match negotiate(&err, (SEC, SEC)) {
        Err(SessionError::Refused(e)) => {
            assert_eq!(e.message, "bad login");
            assert_eq!(e.to_string(), "bad login: User name [x] invalid");
            let same = BrokerError { message: "m".into(), body: "m\n".into() };
            assert_eq!(same.to_string(), "m", "a body that repeats the message is not repeated");
        }
        other => panic!("expected Refused, got {other:?}"),
    }
}

#[test]
fn ack_uses_the_ack_header_on_1_2_and_message_id_on_1_1() {
    let msg = AckRef { epoch: 1, subscription: "s".into(), message_id: "m".into(), ack_id: Some("a".into()) };
    let f = ack_frame(Version::V1_2, &msg, false, None);
    assert_eq!((f.command, f.header("id"), f.header("message-id")), (Command::Ack, Some("a"), None));
    let f = ack_frame(Version::V1_1, &msg, true, None);
    assert_eq!(
        (f.command, f.header("message-id"), f.header("subscription")),
        (Command::Nack, Some("m"), Some("s"))
    );
}

#[test]
fn acks_from_an_earlier_connection_are_refused() {
    let mut s = Session::default();
    let n = negotiate(&connected(&[("version", "1.2")]), (SEC, SEC)).unwrap();
    let first = s.connected(&n);
    let msg = AckRef { epoch: first, subscription: "s".into(), message_id: "m".into(), ack_id: None };
    assert!(s.ack(&msg, false, None).is_ok());
    s.disconnected(&SessionError::NotConnected);
    assert!(matches!(s.ack(&msg, false, None), Err(SessionError::NotConnected)));
    s.connected(&n);
    assert!(matches!(s.ack(&msg, false, None), Err(SessionError::StaleAck)));
}

#[test]
fn subscriptions_are_restored_with_their_ids_and_headers() {
    let mut s = Session::default();
    s.subscribe(
        "a".into(),
        Subscription::new("/queue/a", AckMode::ClientIndividual).with("selector", "x = 1"),
    );
    s.subscribe("b".into(), Subscription::new("/queue/b", AckMode::Auto));
    assert!(s.unsubscribe("b").is_some());
    let frames = s.resubscribe_frames();
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].header("id"), Some("a"));
    assert_eq!(frames[0].header("ack"), Some("client-individual"));
    assert_eq!(frames[0].header("selector"), Some("x = 1"));
}

#[tokio::test]
async fn receipts_resolve_on_receipt_and_fail_when_the_connection_drops() {
    let mut s = Session::default();
    let (tx, rx) = oneshot::channel();
    let mut f = Frame::new(Command::Send);
    s.expect_receipt(&mut f, tx);
    let id = f.header("receipt").unwrap().to_owned();
    s.on_frame(Frame::new(Command::Receipt).with("receipt-id", id));
    assert!(rx.await.unwrap().is_ok());

    let (tx, rx) = oneshot::channel();
    s.expect_receipt(&mut Frame::new(Command::Send), tx);
    s.disconnected(&SessionError::NotConnected);
    assert!(matches!(rx.await.unwrap(), Err(SessionError::ConnectionLost(_))));
}

#[tokio::test]
async fn an_error_frame_fails_the_receipt_it_names() {
    let mut s = Session::default();
    let (tx, rx) = oneshot::channel();
    let mut f = Frame::new(Command::Send);
    s.expect_receipt(&mut f, tx);
    let id = f.header("receipt").unwrap().to_owned();
    let out = s.on_frame(Frame::new(Command::Error).with("receipt-id", id).with("message", "no"));
    assert!(matches!(out, Inbound::Error(ref e) if e.message == "no"));
    assert!(matches!(rx.await.unwrap(), Err(SessionError::Rejected(_))));
}
