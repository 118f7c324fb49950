use super::proto::tests::Message;
use super::*;
use crate::envelope::SystemClock;
use crate::envelope::trace::{Invocation, SpanId};
use crate::telemetry::trace::{HopKind, Note, Party};
use spans::VALUE;

#[test]
fn the_sampling_ratio_is_the_share_of_new_traces_exported() {
    for ratio in [0.01, 0.25, 0.5, 0.9] {
        let n = 20_000;
        let kept = (0..n).filter(|_| sampled(bound(ratio), TraceId::new(&mut SystemClock))).count();
        let share = kept as f64 / n as f64;
        assert!((share - ratio).abs() < 0.02 + ratio * 0.2, "{ratio}: {share}");
    }
    assert!(sampled(bound(1.0), TraceId(u128::MAX)), "1.0 keeps every trace");
    assert!(!sampled(bound(0.0), TraceId(1)), "0.0 none");
}

fn invocation(parent: u64) -> Invocation {
    Invocation {
        trace: TraceId(7),
        span: SpanId(20),
        parent: SpanId(parent),
        started: 1.0,
        agent: "Weather".into(),
        framework: "civitas",
        conversation: Some("Weather".into()),
    }
}

fn hop(kind: HopKind, source: &str, process: u64, send: u64, parent: Option<u64>) -> Hop {
    Hop {
        trace: TraceId(7),
        kind,
        parent: parent.map(SpanId),
        link: None,
        process: SpanId(process),
        send: SpanId(send),
        from: Party { name: "Caller".into(), framework: "wiseagents" },
        to: Some(Party { name: "Weather".into(), framework: "civitas" }),
        conversation: Some("Weather".into()),
        source: source.into(),
        destination: "/queue/civitas.Weather".into(),
        message_id: "m1".into(),
        body_size: 3,
        processed: 2.0,
        invocation: None,
        error: None,
        notes: Vec::new(),
    }
}

/// A hop's spans, read back.
fn spans(hop: &Hop, times: Times, system: &'static str) -> Vec<Message> {
    let mut buf = Vec::new();
    let n = spans::write(hop, times, system, &mut buf);
    let read = Message::read(&buf).messages(2);
    assert_eq!(read.len(), n, "the count said is the count written");
    read
}

/// (name, span id, parent span id) of each span, in order.
fn tree(spans: &[Message]) -> Vec<(String, u64, u64)> {
    let id = |b: Vec<u8>| if b.is_empty() { 0 } else { u64::from_be_bytes(b.try_into().unwrap()) };
    spans
        .iter()
        .map(|s| {
            assert_eq!(s.bytes(1), 7u128.to_be_bytes(), "the trace id");
            let parent = if s.all(4).next().is_some() { s.bytes(4) } else { Vec::new() };
            (s.string(5), id(s.bytes(2)), id(parent))
        })
        .collect()
}

/// The value of the span's attribute `key`.
fn attribute(span: &Message, key: &str) -> String {
    let found = span.attributes(9).into_iter().find(|(k, _)| k == key);
    found.unwrap_or_else(|| panic!("no attribute {key}")).1
}

#[test]
fn an_ask_is_process_receive_ack_and_send_under_its_invocation_and_its_answer_ends_it() {
    let times = Times::since(std::time::Duration::from_millis(5));
    let mut ask = hop(HopKind::Ask, "/queue/request/Weather", 10, 11, None);
    ask.invocation = Some(invocation(10));
    let exported = tree(&spans(&ask, times, "activemq"));
    let receive = 10 ^ 0x5eed_0001;
    let ack = 10 ^ 0x5eed_0002;
    assert_eq!(
        exported,
        [
            ("process /queue/request/Weather".into(), 10, 0),
            ("receive /queue/request/Weather".into(), receive, 10),
            ("ack /queue/request/Weather".into(), ack, 10),
            ("send /queue/civitas.Weather".into(), 11, 20),
        ],
        "the invoke_agent span is exported when it ends"
    );

    let mut answer = hop(HopKind::Answer, "/queue/bridge.civitas", 30, 31, Some(20));
    answer.invocation = Some(invocation(10));
    answer.notes.push(Note { at: times.received, kind: "hold", detail: "waiting: 3 ms".into() });
    let exported = spans(&answer, times, "rabbitmq");
    let names = tree(&exported);
    assert_eq!(
        names[0],
        ("process /queue/bridge.civitas".into(), 30, 20),
        "the answer is the ask's invocation's child"
    );
    assert_eq!(names[3], ("send /queue/civitas.Weather".into(), 31, 30));
    assert_eq!(names[4], ("invoke_agent Weather".into(), 20, 10), "ended by its answer");
    let event = exported[0].message(11);
    assert_eq!(event.string(2), "hold");
    assert_eq!(event.attributes(3), [("bridge.detail".to_owned(), "waiting: 3 ms".to_owned())]);
    assert_eq!(attribute(&exported[0], "messaging.system"), "rabbitmq");
    assert_eq!(attribute(&exported[0], "messaging.message.body.size"), "3");
    assert_eq!(exported[0].number(6), 5, "process is CONSUMER");
    assert!(exported[0].number(7) <= exported[0].number(8), "it starts before it ends");
}

#[test]
fn a_dead_lettered_answer_ends_its_ask_with_the_error_and_values_from_messages_are_cut() {
    let times = Times::since(std::time::Duration::ZERO);
    let mut dead = hop(HopKind::Answer, "/queue/bridge.civitas", 30, 31, Some(20));
    dead.invocation = Some(invocation(10));
    dead.from.name = "x".repeat(10_000).into();
    dead.dead_lettered("/queue/dead", "too_large", "the body is too large");
    let exported = spans(&dead, times, "activemq");
    let process = &exported[0];
    assert_eq!(attribute(process, "error.type"), "too_large");
    assert_eq!(attribute(process, "bridge.from.agent").chars().count(), VALUE + 1);
    let status = process.message(15);
    assert_eq!((status.string(2).as_str(), status.number(3)), ("the body is too large", 2));
    let invoke = exported.iter().find(|s| s.string(5) == "invoke_agent Weather").expect("ended");
    assert_eq!(invoke.message(15).number(3), 2, "an error status");
    assert_eq!(attribute(invoke, "error.type"), "too_large");
}

#[test]
fn an_a2a_task_has_no_receive_or_ack_span() {
    let times = Times::since(std::time::Duration::ZERO);
    let task = hop(HopKind::Ask, "/a2a/Weather", 10, 11, None);
    let names: Vec<_> = spans(&task, times, "activemq").iter().map(|s| s.string(5)).collect();
    assert_eq!(names, ["process /a2a/Weather", "send /queue/civitas.Weather"]);
}

/// A collector of the test's own: answers each POST with `status` and hands the test the
/// request's head and body.
fn collector(status: u16) -> (String, std::sync::mpsc::Receiver<(String, Vec<u8>)>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let mut reader = BufReader::new(stream.unwrap());
            let (mut head, mut line) = (String::new(), String::new());
            while reader.read_line(&mut line).unwrap() > 2 {
                head.push_str(&line.to_ascii_lowercase());
                line.clear();
            }
            let length = head.lines().find_map(|l| l.strip_prefix("content-length: ")).unwrap();
            let mut body = vec![0; length.trim().parse().unwrap()];
            reader.read_exact(&mut body).unwrap();
            let answer = format!("HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
            reader.get_mut().write_all(answer.as_bytes()).unwrap();
            let _ = tx.send((head, body));
        }
    });
    (endpoint, rx)
}

#[test]
fn an_export_is_one_request_of_the_bridges_resource_and_scope_with_the_headers_of_its_file() {
    let (endpoint, requests) = collector(200);
    let headers = std::env::temp_dir().join(format!("sab-otlp-headers-{}", std::process::id()));
    std::fs::write(&headers, "# the collector's key\nX-Api-Key: secret\n").unwrap();
    let config = TracesConfig {
        endpoint,
        headers_file: Some(headers),
        service_name: "bridge-a".into(),
        resource: [("deployment.environment.name".to_owned(), "test".to_owned())].into(),
        ..TracesConfig::default()
    };
    let exporter = Exporter::start(&config).unwrap().expect("an endpoint: an exporter");
    let _ = std::fs::remove_file(config.headers_file.as_ref().unwrap());
    let times = Times::since(std::time::Duration::from_millis(1));
    let mut ask = hop(HopKind::Ask, "/queue/request/Weather", 10, 11, None);
    ask.invocation = Some(invocation(10));
    exporter.offer(&ask, times);
    exporter.offer(&hop(HopKind::Message, "/a2a/Weather", 30, 31, None), times);
    exporter.flush(std::time::Duration::from_secs(30));

    let (head, body) = requests.recv_timeout(std::time::Duration::from_secs(30)).expect("one export");
    assert!(head.starts_with("post /v1/traces "), "{head}");
    assert!(head.contains("content-type: application/x-protobuf"), "{head}");
    assert!(head.contains("x-api-key: secret"), "{head}");
    let resource_spans = Message::read(&body).messages(1);
    assert_eq!(resource_spans.len(), 1);
    let resource = resource_spans[0].message(1).attributes(1);
    assert_eq!(
        resource,
        [
            ("service.name".to_owned(), "bridge-a".to_owned()),
            ("deployment.environment.name".to_owned(), "test".to_owned())
        ]
    );
    let scope_spans = resource_spans[0].message(2);
    assert_eq!(scope_spans.message(1).string(1), "stomp-agent-bridge");
    assert_eq!(scope_spans.messages(2).len(), 4 + 2, "the ask's four spans, the task's two");
    assert_eq!(exporter.counts.exported.load(Ordering::Relaxed), 6);
}

#[test]
fn a_full_queue_drops_spans_and_a_refused_export_counts_them_failed() {
    let (endpoint, requests) = collector(503);
    let config = TracesConfig { endpoint, max_queue: 3, ..TracesConfig::default() };
    let exporter = Exporter::start(&config).unwrap().unwrap();
    let times = Times::since(std::time::Duration::ZERO);
    exporter.offer(&hop(HopKind::Ask, "/queue/request/Weather", 10, 11, None), times);
    assert_eq!(exporter.counts.dropped.load(Ordering::Relaxed), 4, "four spans, and room for three");
    exporter.offer(&hop(HopKind::Message, "/a2a/Weather", 30, 31, None), times);
    exporter.flush(std::time::Duration::from_secs(30));
    requests.recv_timeout(std::time::Duration::from_secs(30)).expect("the export was tried");
    assert_eq!(exporter.counts.failed.load(Ordering::Relaxed), 2, "a 503 loses the batch");
    assert_eq!(exporter.counts.exported.load(Ordering::Relaxed), 0);
}

#[test]
fn spans_go_in_batches_of_at_most_512_and_a_flush_sends_them_all() {
    let (endpoint, requests) = collector(200);
    let exporter = Exporter::start(&TracesConfig { endpoint, ..TracesConfig::default() }).unwrap().unwrap();
    let times = Times::since(std::time::Duration::ZERO);
    for n in 0..150 {
        exporter.offer(&hop(HopKind::Ask, "/queue/request/Weather", 10 + n, 1000 + n, None), times);
    }
    exporter.flush(std::time::Duration::from_secs(30));
    let mut sizes = Vec::new();
    while sizes.iter().sum::<usize>() < 600 {
        let (_, body) = requests.recv_timeout(std::time::Duration::from_secs(30)).expect("an export");
        sizes.push(Message::read(&body).messages(1)[0].message(2).messages(2).len());
    }
    assert!(sizes.len() >= 2 && sizes.iter().all(|&n| n <= 512 && n % 4 == 0), "{sizes:?}");
    assert_eq!(exporter.counts.exported.load(Ordering::Relaxed), 600, "150 asks of four spans each");
}
