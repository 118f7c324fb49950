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
    assert!(a.get(k).is_none());
    a.refused(k, "no".into());
    a.refused(k, "still no".into());
    assert_eq!(a.get(k), Some(&(2, "still no".to_owned())));
    a.settled(k);
    assert!(a.get(k).is_none());
    for i in 0..(ATTEMPTS_REMEMBERED as u64 + 10) {
        a.refused(i, String::new());
    }
    assert!(a.seen.len() <= ATTEMPTS_REMEMBERED);
    assert!(a.get(0).is_none() && a.get(ATTEMPTS_REMEMBERED as u64 + 9).is_some());
}

#[test]
fn activemq_classic_and_rabbitmq_in_confirm_mode_cap_the_sends_awaiting_receipts() {
    let classic = Some("ActiveMQ/5.17.2");
    let artemis = Some("ActiveMQ-Artemis/2.37.0 ActiveMQ Artemis Messaging Engine");
    let confirm = Settlement::Confirm;
    assert_eq!(confirm.unconfirmed_cap(None, classic), Some(ACTIVEMQ_UNCONFIRMED));
    assert_eq!(confirm.unconfirmed_cap(None, Some("RabbitMQ/3.10.8")), Some(RABBITMQ_UNCONFIRMED));
    assert_eq!(confirm.unconfirmed_cap(None, artemis), None, "Artemis drops the repeats");
    assert_eq!(confirm.unconfirmed_cap(None, None), None);
    let transaction = Settlement::Transaction;
    assert_eq!(transaction.unconfirmed_cap(None, classic), None, "a rolled-back batch republishes nothing");
    // `delivery.unconfirmed_max` wins in confirm mode, on any broker; never in a transaction.
    assert_eq!(confirm.unconfirmed_cap(Some(3), classic), Some(3));
    assert_eq!(confirm.unconfirmed_cap(Some(100), artemis), Some(100));
    assert_eq!(transaction.unconfirmed_cap(Some(3), classic), None);
}
