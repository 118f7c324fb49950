use super::*;
use crate::wise_registry::dumps::{append, dumps};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn s(text: &str) -> Value {
    Value::Str(text.into())
}

/// Written by CPython 3.11's `pickle.dumps` (protocol 4) of instances of classes with
/// upstream's module path and attribute names (`wiseagents.core.WiseAgentMetaData`).
const METADATA: &str = "8004959c000000000000008c0f776973656167656e74732e636f7265948c11576973654167656e744d657461446174619493942981947d94288c0c5f6465736372697074696f6e948c19416e73776572732077656174686572207175657374696f6e73948c0f5f73797374656d5f6d657373616765944e8c125f7072655f757365725f6d65737361676573944e8c135f706f73745f757365725f6d65737361676573944e75622e";
const CONTEXT: &str = "80049584000000000000008c0f776973656167656e74732e636f7265948c10576973654167656e74436f6e746578749493942981947d94288c055f6e616d65948c05434c492e31948c075f636f6e666967947d94288c097573655f726564697394888c0a72656469735f686f7374948c096c6f63616c686f7374948c0a72656469735f706f7274944deb187575622e";
/// `[d, d]` with `d = {"a": [1, 2]}`: the second is a memo reference to the first.
const SHARED: &str = "80049516000000000000005d94287d948c0161945d94284b014b0265736801652e";
const SEQUENCE: &str =
    "80049523000000000000005d94288c0757415374657031948c0743697653746570948c075741537465703294652e";
/// `[Thing(), 70000, -5, 2**40, 1.5, None, b"x", (1,), frozenset([1])]`, `Thing` holding a set.
const MIXED: &str = "80049573000000000000005d94288c0f776973656167656e74732e636f7265948c055468696e679493942981947d948c0a6669656c64735f736574948f94288c04726f6c65948c07636f6e74656e74949073624a701101004afbffffff8a06000000000001473ff80000000000004e430178944b018594284b019194652e";

#[test]
fn an_agents_metadata_reads_as_its_class_and_state_without_running_anything() {
    let v = loads(&hex(METADATA)).unwrap();
    let (class, state) = v.instance().unwrap();
    assert_eq!(class, "wiseagents.core.WiseAgentMetaData");
    let state = state.unwrap();
    assert_eq!(state.get("_description"), Some(&s("Answers weather questions")));
    assert_eq!(state.get("_system_message"), Some(&Value::None));
}

#[test]
fn a_context_reads_with_its_name_and_config() {
    let v = loads(&hex(CONTEXT)).unwrap();
    let (class, state) = v.instance().unwrap();
    assert_eq!(class, "wiseagents.core.WiseAgentContext");
    let config = state.unwrap().get("_config").unwrap();
    assert_eq!(config.get("redis_port"), Some(&Value::Int(6379)));
    assert_eq!(config.get("use_redis"), Some(&Value::Bool(true)));
}

#[test]
fn a_memoised_container_filled_later_is_seen_filled_where_it_is_referred_to() {
    let d = Value::Dict(vec![(s("a"), Value::List(vec![Value::Int(1), Value::Int(2)]))]);
    assert_eq!(loads(&hex(SHARED)).unwrap(), Value::List(vec![d.clone(), d]));
}

#[test]
fn integers_floats_bytes_tuples_and_sets_read_as_python_wrote_them() {
    let Value::List(items) = loads(&hex(MIXED)).unwrap() else { panic!("a list") };
    assert_eq!(items[0].instance().unwrap().0, "wiseagents.core.Thing");
    assert_eq!(
        items[1..].to_vec(),
        vec![
            Value::Int(70000),
            Value::Int(-5),
            Value::Int(1 << 40),
            Value::Float(1.5),
            Value::None,
            Value::Bytes(b"x".to_vec()),
            Value::Tuple(vec![Value::Int(1)]),
            Value::FrozenSet(vec![Value::Int(1)]),
        ]
    );
}

#[test]
fn what_is_written_reads_back_the_same() {
    let v = Value::List(vec![
        Value::Dict(vec![(s("role"), s("assistant")), (s("content"), s(&"é".repeat(300)))]),
        Value::Int(-1),
        Value::Int(1 << 33),
        Value::Int(300),
        Value::Bool(false),
        Value::Tuple(vec![]),
        Value::Object {
            class: Box::new(Value::Global {
                module: "wiseagents.core".into(),
                name: "WiseAgentMetaData".into(),
            }),
            args: Box::new(Value::Tuple(vec![])),
            state: Some(Box::new(Value::Dict(vec![(s("_description"), s("d"))]))),
        },
    ]);
    assert_eq!(loads(&dumps(&v)).unwrap(), v);
}

#[test]
fn appending_to_a_framed_list_keeps_what_it_held_and_its_frame_covers_the_new_end() {
    let item = Value::Dict(vec![(s("role"), s("assistant")), (s("content"), s("Sunny"))]);
    let out = append(Some(&hex(SEQUENCE)), &item).unwrap();
    let Value::List(items) = loads(&out).unwrap() else { panic!("a list") };
    assert_eq!(items.len(), 4);
    assert_eq!(items[3], item);
    let frame = u64::from_le_bytes(out[3..11].try_into().unwrap()) as usize;
    assert_eq!(11 + frame, out.len(), "the frame runs to the STOP");
    assert_eq!(append(None, &item).map(|b| loads(&b).unwrap()), Ok(Value::List(vec![item])));
}

#[test]
fn appending_to_something_that_is_not_a_list_is_refused() {
    assert!(append(Some(&hex(METADATA)), &Value::None).is_err());
}

#[test]
fn code_and_hostile_shapes_are_errors_not_panics() {
    let cases: &[(&[u8], &str)] = &[
        (b"\x80\x04", "truncated"),
        (b"cos\nsystem\n(S'echo hi'\ntR.", "protocol-0 STRING opcode"),
        (b"\x80\x04N.N", "trailing"),
        (b"\x80\x04a.", "append on nothing"),
        (b"\x80\x04h\x05.", "memo miss"),
        (b"\x80\x04(.", "mark as result"),
        (b"\x80\x04K\x01K\x02R.", "call with non-tuple"),
        (b"\x80\x04\x8a\x09\x01\x01\x01\x01\x01\x01\x01\x01\x01.", "int over 64 bits"),
        (b"\x80\x04X\xff\xff\xff\xff.", "length past the end"),
        (b"\x80\x04\x8c\x02\xff\xfe.", "not utf-8"),
    ];
    for (input, what) in cases {
        assert!(loads(input).is_err(), "{what}");
    }
}

#[test]
fn a_list_that_contains_itself_is_too_deep_not_a_hang() {
    // l = []; l.append(l)
    assert_eq!(loads(b"\x80\x04]\x94h\x00a."), Err(PickleError::TooDeep));
}

#[test]
fn references_that_multiply_are_bounded_by_the_node_budget() {
    // Each level is a list of the previous level twice: 2^40 nodes if expanded.
    let mut p = b"\x80\x04]\x94".to_vec();
    for i in 0..40u8 {
        p.extend([b'(', b'h', i, b'h', i, b'l', 0x94]);
    }
    p.push(b'.');
    assert!(matches!(loads(&p), Err(PickleError::TooManyNodes | PickleError::TooDeep)));
}

#[test]
fn oversized_input_is_refused_before_it_is_read() {
    assert_eq!(loads(&vec![b'N'; MAX_BYTES + 1]), Err(PickleError::TooLarge(MAX_BYTES + 1)));
}
