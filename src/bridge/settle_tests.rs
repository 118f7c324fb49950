use super::*;

#[test]
fn auto_mode_confirms_and_a_transaction_is_asked_for() {
    assert_eq!(Mode::choose(DeliveryMode::Auto), Mode::Confirm);
    assert_eq!(Mode::choose(DeliveryMode::Confirm), Mode::Confirm);
    assert_eq!(Mode::choose(DeliveryMode::Transaction), Mode::Transaction);
}

#[test]
fn on_artemis_a_transaction_is_asked_for_and_confirm_is_used() {
    let artemis = Some("ActiveMQ-Artemis/2.37.0 ActiveMQ Artemis Messaging Engine");
    assert_eq!(Mode::choose_on(DeliveryMode::Transaction, artemis), Mode::Confirm);
    assert_eq!(Mode::choose_on(DeliveryMode::Auto, artemis), Mode::Confirm);
    assert_eq!(Mode::choose_on(DeliveryMode::Transaction, Some("ActiveMQ/5.17.2")), Mode::Transaction);
    assert_eq!(Mode::choose_on(DeliveryMode::Transaction, None), Mode::Transaction);
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
