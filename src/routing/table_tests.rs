use super::*;
use crate::envelope::Envelope;

fn ask(id: &str, asker: &str, answerer: &str) -> PendingAsk {
    PendingAsk {
        id: id.into(),
        asker: asker.into(),
        answerer: answerer.into(),
        reply: ReplyBase::of(&Envelope { id: Some(id.into()), ..Default::default() }, asker),
        reply_deadline: None,
        timed_out: false,
        invocation: None,
    }
}

fn id_of(m: Option<Matched>) -> Option<String> {
    match m? {
        Matched::Answer(a) => Some(a.id),
        other => panic!("not an answer: {other:?}"),
    }
}

#[test]
fn concurrent_asks_of_one_pair_are_answered_in_order_and_by_id() {
    let mut t = CorrelationTable::new(10, Duration::from_secs(60));
    let now = Instant::now();
    for id in ["a1", "a2", "a3"] {
        t.insert(ask(id, "Civ", "Lib"), now);
    }
    t.insert(ask("b1", "Civ", "Other"), now);
    assert_eq!(id_of(t.answer_by_id("a2", false, now)).as_deref(), Some("a2"));
    assert_eq!(id_of(t.answer_in_order("Civ", "Lib", now)).as_deref(), Some("a1"));
    assert_eq!(id_of(t.answer_in_order("Civ", "Lib", now)).as_deref(), Some("a3"));
    assert_eq!(t.answer_in_order("Civ", "Lib", now), None, "nothing left of the pair");
    assert_eq!(id_of(t.answer_in_order("Civ", "Other", now)).as_deref(), Some("b1"));
    assert!(t.is_empty());
}

#[test]
fn an_acknowledgement_leaves_the_ask_pending() {
    let mut t = CorrelationTable::new(10, Duration::from_secs(60));
    let now = Instant::now();
    t.insert(ask("v1", "WA", "Vox"), now);
    assert!(matches!(t.answer_by_id("v1", true, now), Some(Matched::Acknowledged(_))));
    assert_eq!(id_of(t.answer_by_id("v1", false, now)).as_deref(), Some("v1"));
}

#[test]
fn a_timed_out_ask_gives_one_error_then_its_answer_is_late() {
    let mut t = CorrelationTable::new(10, Duration::from_secs(60));
    let now = Instant::now();
    let mut a = ask("x", "WA", "Civ");
    a.reply_deadline = Some(now + Duration::from_secs(5));
    t.insert(a, now);
    t.insert(ask("y", "WA", "Civ"), now);
    assert!(t.time_out(now + Duration::from_secs(4)).is_empty());
    assert_eq!(t.pending(), 2);
    let out = t.time_out(now + Duration::from_secs(5));
    assert_eq!(out.iter().map(|a| a.id.as_str()).collect::<Vec<_>>(), ["x"]);
    assert!(t.time_out(now + Duration::from_secs(6)).is_empty(), "once");
    assert_eq!(t.pending(), 1);
    assert!(matches!(t.answer_by_id("x", true, now), Some(Matched::Acknowledged(_))), "a receipt leaves it");
    let late = t.answer_in_order("WA", "Civ", now + Duration::from_secs(7));
    assert!(matches!(late, Some(Matched::Late(a)) if a.id == "x"), "the oldest of the pair is late");
    assert_eq!(id_of(t.answer_in_order("WA", "Civ", now)).as_deref(), Some("y"));
}

#[test]
fn full_drops_the_oldest_and_old_ones_expire() {
    let mut t = CorrelationTable::new(2, Duration::from_secs(60));
    let now = Instant::now();
    for id in ["a", "b", "c"] {
        t.insert(ask(id, "A", "B"), now);
    }
    assert_eq!((t.len(), t.evicted()), (2, 1));
    assert_eq!(t.answer_by_id("a", false, now), None);
    assert!(t.answer_by_id("b", false, now).is_some());
    assert!(t.answer_by_id("c", false, now + Duration::from_secs(61)).is_none(), "expired");
    assert!(t.is_empty());
}

#[test]
fn an_ask_inserted_again_replaces_itself_and_is_not_evicted_as_its_old_slot() {
    let mut t = CorrelationTable::new(2, Duration::from_secs(60));
    let now = Instant::now();
    t.insert(ask("k", "A", "B"), now);
    t.insert(ask("m", "A", "B"), now);
    t.insert(ask("k", "A", "B"), now + Duration::from_secs(50));
    assert_eq!(t.len(), 2);
    t.insert(ask("n", "A", "B"), now + Duration::from_secs(51));
    assert_eq!(t.answer_by_id("m", false, now), None, "m was the oldest");
    let later = now + Duration::from_secs(70);
    assert!(t.answer_by_id("k", false, later).is_some(), "k's first slot expiring does not drop it");
}

#[test]
fn one_unanswered_ask_pins_nothing_behind_it() {
    let mut t = CorrelationTable::new(10, Duration::from_secs(3600));
    let now = Instant::now();
    t.insert(ask("stuck", "A", "B"), now);
    for i in 0..10_000 {
        t.insert(ask(&format!("q{i}"), "A", "C"), now);
        assert!(t.answer_by_id(&format!("q{i}"), false, now).is_some());
    }
    assert_eq!((t.len(), t.evicted()), (1, 0), "answered asks leave no slot behind");
    assert_eq!(id_of(t.answer_in_order("A", "B", now)).as_deref(), Some("stuck"));
}

#[test]
fn a_million_asks_stay_within_the_bound() {
    // 50,000 asks a second for an hour's TTL would be 180 million: the bound is the capacity.
    let mut t = CorrelationTable::new(1000, Duration::from_secs(3600));
    let start = Instant::now();
    let mut saw_timed_out = false;
    for i in 0..1_000_000u64 {
        let now = start + Duration::from_micros(i * 20);
        let mut a = ask(&i.to_string(), "A", &format!("B{}", i % 7));
        a.reply_deadline =
            (i % 2 == 0).then(|| now + Duration::from_millis(if i % 8 == 2 { 5 } else { 1_800_000 }));
        t.insert(a, now);
        match i % 4 {
            0 => assert!(t.answer_by_id(&i.to_string(), false, now).is_some()),
            1 => t.insert(ask(&(i - 1).to_string(), "A", "B0"), now),
            2 => drop(t.time_out(now)),
            _ => {}
        }
        assert!(t.slots.len() <= 1000);
        if i % 10_000 == 0 {
            let counted = t.slots.values().filter(|s| !s.timed_out).count();
            assert_eq!(t.pending(), counted, "the count of timed-out asks follows every removal");
            saw_timed_out |= counted < t.len();
        }
    }
    assert!(saw_timed_out, "some asks timed out while still kept");
    assert_eq!(t.len(), 1000);
    assert!(t.evicted() > 100_000, "{}", t.evicted());
    assert_eq!(t.by_id.len(), t.slots.len());
    assert_eq!(t.by_pair.iter().map(|p| p.seqs.len()).sum::<usize>(), t.slots.len());
    let deadlines = t.slots.values().filter(|s| s.reply_deadline.is_some()).count();
    assert!(t.deadlines.len() <= deadlines, "{} > {deadlines}", t.deadlines.len());
}

#[test]
fn an_id_and_a_pair_are_held_once_whatever_the_number_of_asks() {
    let mut t = CorrelationTable::new(100, Duration::from_secs(60));
    let now = Instant::now();
    for i in 0..50 {
        t.insert(ask(&format!("id{i}"), "Asker", "Answerer"), now);
    }
    t.insert(ask("other", "Asker", "Someone"), now);
    assert_eq!((t.by_id.len(), t.by_pair.len()), (51, 2));
    let pair = &t.slots.values().next().expect("an ask").pair;
    assert_eq!(Arc::strong_count(pair), 51, "the pair's 50 asks and its index entry share it");
    assert_eq!(id_of(t.answer_by_id("id7", false, now)).as_deref(), Some("id7"));
    assert_eq!(t.answer_by_id("id7", false, now), None, "taken out of the id index too");
    for _ in 0..49 {
        assert!(t.answer_in_order("Asker", "Answerer", now).is_some());
    }
    assert_eq!(t.by_pair.len(), 1, "a pair with no ask left is dropped");
}

#[test]
fn an_answer_that_comes_again_is_repeated_for_the_last_answered_asks_only() {
    let mut t = CorrelationTable::new(10, Duration::from_secs(60));
    let now = Instant::now();
    let mut late = ask("late", "WA", "Civ");
    late.reply_deadline = Some(now);
    for a in [ask("once", "WA", "Pf"), late, ask("forgotten", "WA", "Pf")] {
        t.insert(a, now);
    }
    assert_eq!(id_of(t.answer_by_id("once", false, now)).as_deref(), Some("once"));
    assert_eq!(t.answer_by_id("once", false, now), None, "not marked: as if its answer was dead-lettered");
    t.mark_answered("once");
    assert_eq!(t.answer_by_id("once", false, now), Some(Matched::Repeated), "the same answer again");
    t.unmark_answered("once");
    assert_eq!(t.answer_by_id("once", false, now), None, "given back before it was published");
    t.mark_answered("once");
    assert_eq!(t.time_out(now).len(), 1);
    assert!(matches!(t.answer_by_id("late", false, now), Some(Matched::Late(_))));
    t.mark_answered("late");
    assert_eq!(t.answer_by_id("late", false, now), Some(Matched::Repeated), "a late answer again");
    t.forget("forgotten");
    let forgotten = t.answer_by_id("forgotten", false, now);
    assert_eq!(forgotten, None, "taken back, never answered: its token routes it");
    assert_eq!(t.answer_by_id("never", false, now), None);

    for i in 0..ANSWERED_KEPT {
        t.mark_answered(&format!("n{i}"));
    }
    assert_eq!(t.answer_by_id("once", false, now), None, "out of the last {ANSWERED_KEPT}");
    assert_eq!(t.answer_by_id(&format!("n{}", ANSWERED_KEPT - 1), false, now), Some(Matched::Repeated));
    assert_eq!((t.answered.order.len(), t.answered.set.len()), (ANSWERED_KEPT, ANSWERED_KEPT));
    assert!(t.answered.order.capacity() < 2 * ANSWERED_KEPT, "never past its first allocation");
}
