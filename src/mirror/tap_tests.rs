use super::*;
use crate::stomp::{AckRef, Command, Frame};

fn tap(kind: &str, request: &str, response: &str) -> Tap {
    let config: MirrorConfig = serde_json::from_value(serde_json::json!({"tap": kind})).unwrap();
    Tap::new(&config, request, response)
}

fn message(destination: &str, headers: &[(&str, &str)]) -> Message {
    let mut frame = Frame::new(Command::Message).with("destination", destination);
    for (k, v) in headers {
        frame = frame.with(*k, *v);
    }
    let ack = AckRef { epoch: 0, subscription: "1".into(), message_id: "m1".into(), ack_id: None };
    Message { ack, destination: destination.into(), frame }
}

#[test]
fn activemq_copies_name_their_queue_in_original_destination() {
    let t = tap("activemq", "/queue/request/", "/queue/response/");
    let m = message("/topic/mirror.wiseagents", &[("original-destination", "/queue/response/Asker")]);
    let tapped = t.tapped(&m).unwrap();
    assert_eq!((tapped.direction, tapped.agent.as_str()), (Direction::Response, "Asker"));
    let dotted = message("/topic/mirror.wiseagents", &[("original-destination", "/queue/request.Tool")]);
    assert_eq!(t.tapped(&dotted).unwrap().agent, "Tool");
    let other = message("/topic/mirror.wiseagents", &[("original-destination", "/queue/civitas.X")]);
    assert_eq!(t.tapped(&other), None);
    assert_eq!(t.tapped(&message("/topic/mirror.wiseagents", &[])), None);
}

#[test]
fn rabbitmq_copies_name_their_queue_in_the_deliver_routing_key() {
    let t = tap("rabbitmq-firehose", "/queue/request.", "/queue/response.");
    let subs: Vec<String> = t.subscriptions().iter().map(|s| s.destination.clone()).collect();
    assert_eq!(
        subs,
        ["/exchange/amq.rabbitmq.trace/deliver.request.#", "/exchange/amq.rabbitmq.trace/deliver.response.#"]
    );
    let m = message("/exchange/amq.rabbitmq.trace/deliver.request.Tool", &[]);
    let tapped = t.tapped(&m).unwrap();
    assert_eq!((tapped.queue.as_str(), tapped.direction), ("/queue/request.Tool", Direction::Request));
    assert_eq!(t.tapped(&message("/exchange/amq.rabbitmq.trace/publish.", &[])), None);
}
