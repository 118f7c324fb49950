use super::*;

fn env(
    direction: Direction,
    sender: &str,
    recipient: &str,
    rrt: Option<&str>,
    tool: Option<&str>,
) -> Envelope {
    Envelope {
        direction,
        sender: Some(sender.into()),
        recipient: Some(recipient.into()),
        route_response_to: rrt.map(Into::into),
        tool_id: tool.map(Into::into),
        context: Some("default".into()),
        ..Envelope::default()
    }
}

#[test]
fn a_request_its_tool_calls_and_the_final_answer_share_one_key() {
    let mut c = Conversations::new(10);
    let ask = c.key(&env(Direction::Request, "User", "Assistant", None, None));
    let call = c.key(&env(Direction::Request, "Assistant", "Weather", Some("User"), Some("call_1")));
    let tool_answer = c.key(&env(Direction::Response, "Weather", "Assistant", Some("User"), Some("call_1")));
    let final_answer = c.key(&env(Direction::Response, "Assistant", "User", None, None));
    assert_eq!(ask.len(), 32);
    assert!([&call, &tool_answer, &final_answer].iter().all(|k| **k == ask));
    let next = c.key(&env(Direction::Request, "User", "Assistant", Some("User"), None));
    assert_ne!(next, ask, "a new question opens a new conversation");
    let other = c.key(&env(Direction::Request, "Other", "Assistant", None, None));
    assert_ne!(other, next, "another originator is another conversation");
}

#[test]
fn the_oldest_conversations_are_forgotten_first() {
    let mut c = Conversations::new(1);
    let first = c.key(&env(Direction::Request, "A", "B", None, None));
    c.key(&env(Direction::Request, "C", "B", None, None));
    let answer = c.key(&env(Direction::Response, "B", "A", None, None));
    assert_ne!(answer, first);
    assert_eq!(c.open.len(), 1);
}

#[test]
fn two_questions_to_one_agent_in_one_context_keep_their_own_keys_first_in_first_out() {
    let mut c = Conversations::new(10);
    let first = c.key(&env(Direction::Request, "A", "B", None, None));
    let second = c.key(&env(Direction::Request, "A", "B", None, None));
    assert_ne!(first, second);
    assert_eq!(c.key(&env(Direction::Response, "B", "A", None, None)), first);
    assert_eq!(c.key(&env(Direction::Response, "B", "A", None, None)), second);
}

#[test]
fn a_plain_answer_to_a_tool_call_routed_upstream_stays_in_the_conversation() {
    let mut c = Conversations::new(10);
    let ask = c.key(&env(Direction::Request, "User", "Assistant", None, None));
    let call = c.key(&env(Direction::Request, "Assistant", "Weather", Some("User"), Some("call_1")));
    let plain = c.key(&env(Direction::Response, "Weather", "Assistant", None, None));
    let last = c.key(&env(Direction::Response, "Assistant", "User", None, None));
    assert!([&call, &plain, &last].iter().all(|k| **k == ask), "{ask} {call} {plain} {last}");
}

#[test]
fn an_answer_to_no_known_question_joins_its_originators_conversation() {
    let mut c = Conversations::new(10);
    let ask = c.key(&env(Direction::Request, "User", "Assistant", None, None));
    c.key(&env(Direction::Response, "Assistant", "User", None, None));
    let extra = c.key(&env(Direction::Response, "Assistant", "User", None, None));
    assert_eq!(extra, ask, "a second answer has no question left, so it joins by originator");
}

#[test]
fn an_answer_echoing_a_tool_id_takes_that_calls_key_whatever_the_order() {
    let mut c = Conversations::new(10);
    let first = c.key(&env(Direction::Request, "User", "Assistant", None, None));
    let call_1 = c.key(&env(Direction::Request, "Assistant", "Weather", Some("User"), Some("call_1")));
    let second = c.key(&env(Direction::Request, "Other", "Assistant", None, None));
    let call_2 = c.key(&env(Direction::Request, "Assistant", "Weather", Some("Other"), Some("call_2")));
    assert_eq!((call_1.clone(), call_2.clone()), (first, second));
    // Answered in the other order: each keeps its own call's key (FIFO alone would swap them).
    assert_eq!(c.key(&env(Direction::Response, "Weather", "Assistant", None, Some("call_2"))), call_2);
    assert_eq!(c.key(&env(Direction::Response, "Weather", "Assistant", None, Some("call_1"))), call_1);
}

#[test]
fn a_question_unanswered_past_the_ttl_is_forgotten_and_takes_no_later_answer() {
    let mut c = Conversations::with_ttl(10, Duration::from_secs(60));
    let start = Instant::now();
    let lost = c.key_at(&env(Direction::Request, "A", "B", None, None), start);
    let later = start + Duration::from_secs(120);
    let asked = c.key_at(&env(Direction::Request, "A", "B", None, None), later);
    assert_ne!(lost, asked);
    let answer = c.key_at(&env(Direction::Response, "B", "A", None, None), later + Duration::from_secs(1));
    assert_eq!(answer, asked, "the answer belongs to the question still waiting");
    assert!(c.asked.values().all(VecDeque::is_empty), "the expired question is gone");
}
