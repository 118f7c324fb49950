use super::*;
use crate::stomp::{AckRef, Command, Frame};

fn message(destination: &str, message_id: &str) -> Message {
    Message {
        ack: AckRef {
            epoch: 1,
            subscription: "0".into(),
            message_id: message_id.into(),
            ack_id: Some(message_id.into()),
        },
        destination: destination.into(),
        frame: Frame::new(Command::Message),
    }
}

#[test]
fn an_artemis_redelivery_by_another_consumer_keeps_the_duplicate_id() {
    let first = message("/queue/request/Weather", "45,41");
    let again = message("/queue/request/Weather", "55,41");
    assert_eq!(duplicate_id(&first, 0), "/queue/request/Weather|41|0");
    assert_eq!(duplicate_id(&first, 0), duplicate_id(&again, 0));
}

#[test]
fn each_send_of_one_source_and_each_source_has_its_own_duplicate_id() {
    let m = message("/queue/request/Weather", "45,41");
    assert_ne!(duplicate_id(&m, 0), duplicate_id(&m, 1));
    assert_ne!(duplicate_id(&m, 0), duplicate_id(&message("/queue/request/Weather", "45,42"), 0));
    assert_ne!(duplicate_id(&m, 0), duplicate_id(&message("/queue/request/Other", "45,41"), 0));
}

#[test]
fn an_activemq_classic_message_id_is_kept_whole() {
    let m = message("/queue/request/Weather", "ID:host-1234-1:1:1:1:7");
    assert_eq!(duplicate_id(&m, 2), "/queue/request/Weather|ID:host-1234-1:1:1:1:7|2");
}
