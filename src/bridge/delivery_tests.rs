use super::*;
use crate::stomp::Command;

fn delivery(id: &str, dropped: &mpsc::UnboundedSender<AckRef>) -> Delivery {
    let ack = AckRef { epoch: 1, subscription: "s".into(), message_id: id.into(), ack_id: None };
    let message = Message { ack, destination: "/queue/q".into(), frame: Frame::new(Command::Message) };
    Delivery::new(message, dropped.clone())
}

#[test]
fn a_handle_dropped_unsettled_is_reported_and_a_settled_one_is_not() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut tally = Tally::default();
    delivery("settled", &tx).settle(Settled::Acked, &mut tally);
    delivery("released", &tx).settle(Settled::Released, &mut tally);
    drop(delivery("forgotten", &tx));
    assert_eq!(rx.try_recv().map(|a| a.message_id), Ok("forgotten".to_owned()));
    assert!(rx.try_recv().is_err(), "only the forgotten one");
}

#[test]
fn settling_records_how_each_handle_ended() {
    let (tx, _rx) = mpsc::unbounded_channel();
    let mut tally = Tally::default();
    for id in ["a", "b"] {
        delivery(id, &tx).settle(Settled::Acked, &mut tally);
    }
    delivery("c", &tx).settle(Settled::Released, &mut tally);
    assert_eq!(tally, Tally { acked: 2, released: 1, unsettled: 0 });
}
