use super::*;

#[test]
fn auto_mode_confirms_and_a_transaction_is_asked_for() {
    assert_eq!(Settlement::choose(DeliveryMode::Auto), Settlement::Confirm);
    assert_eq!(Settlement::choose(DeliveryMode::Confirm), Settlement::Confirm);
    assert_eq!(Settlement::choose(DeliveryMode::Transaction), Settlement::Transaction);
}

#[test]
fn on_artemis_a_transaction_is_asked_for_and_confirm_is_used() {
    let artemis = Some("ActiveMQ-Artemis/2.37.0 ActiveMQ Artemis Messaging Engine");
    assert_eq!(Settlement::choose_on(DeliveryMode::Transaction, artemis), Settlement::Confirm);
    assert_eq!(Settlement::choose_on(DeliveryMode::Auto, artemis), Settlement::Confirm);
    assert_eq!(
        Settlement::choose_on(DeliveryMode::Transaction, Some("ActiveMQ/5.17.2")),
        Settlement::Transaction
    );
    assert_eq!(Settlement::choose_on(DeliveryMode::Transaction, None), Settlement::Transaction);
}

#[test]
fn attempts_count_per_message_and_forget_the_oldest() {
    let mut a = Attempts::default();
    let k = Attempts::key("/queue/a", b"x");
    assert_ne!(k, Attempts::key("/queue/b", b"x"));
    assert!(!a.is_suspect(k));
    a.refused(k, "no".into());
    a.refused(k, "still no".into());
    assert_eq!(a.get(k), Some(&(2, "still no".to_owned())));
    a.settled(k);
    assert!(!a.is_suspect(k));
    for i in 0..(ATTEMPTS_REMEMBERED as u64 + 10) {
        a.refused(i, String::new());
    }
    assert!(a.seen.len() <= ATTEMPTS_REMEMBERED);
    assert!(!a.is_suspect(0) && a.is_suspect(ATTEMPTS_REMEMBERED as u64 + 9));
}

#[test]
fn only_activemq_classic_in_confirm_mode_caps_the_sends_awaiting_receipts() {
    let classic = Some("ActiveMQ/5.17.2");
    assert_eq!(Settlement::Confirm.unconfirmed_cap(classic), Some(ACTIVEMQ_UNCONFIRMED));
    assert_eq!(
        Settlement::Transaction.unconfirmed_cap(classic),
        None,
        "a rolled-back batch republishes nothing"
    );
    assert_eq!(
        Settlement::Confirm
            .unconfirmed_cap(Some("ActiveMQ-Artemis/2.37.0 ActiveMQ Artemis Messaging Engine")),
        None
    );
    assert_eq!(Settlement::Confirm.unconfirmed_cap(Some("RabbitMQ/3.10.8")), None);
    assert_eq!(Settlement::Confirm.unconfirmed_cap(None), None);
}
