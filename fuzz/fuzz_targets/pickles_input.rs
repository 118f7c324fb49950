//! The body of the `pickles` target: arbitrary bytes read as a registry pickle (as data, within
//! its bounds), then, when they read, written back and appended to: an error is fine, a panic
//! is not, and what was written must read back the same.

use stomp_agent_bridge::wise_registry::dumps::{append, dumps};
use stomp_agent_bridge::wise_registry::pickle::{PickleError, Value, loads};

pub fn run(data: &[u8]) {
    let Ok(value) = loads(data) else { return };
    let written = dumps(&value);
    // NaN is not equal to itself: compare what is comparable. The writer does not memoise,
    // so shared references written out may exceed the reader's bounds (bytes, nodes): the
    // second and third crash inputs. Any other error, or another value, is a bug.
    match loads(&written) {
        Ok(back) => assert!(has_nan(&value) || back == value, "a written pickle reads back the same"),
        Err(PickleError::TooLarge(_) | PickleError::TooManyNodes) => {}
        Err(other) => panic!("a written pickle does not read: {other}"),
    }
    if let Value::List(items) = &value {
        let item = Value::Dict(vec![(Value::Str("role".into()), Value::Str("assistant".into()))]);
        let appended = append(Some(data), &item).expect("a list read can be appended to");
        match loads(&appended) {
            Ok(Value::List(after)) => assert_eq!(after.len(), items.len() + 1, "one item more"),
            Err(PickleError::TooLarge(_) | PickleError::TooManyNodes) => {}
            other => panic!("an appended list no longer reads as a list: {other:?}"),
        }
    }
}

fn has_nan(value: &Value) -> bool {
    match value {
        Value::Float(f) => f.is_nan(),
        Value::List(v) | Value::Tuple(v) | Value::Set(v) | Value::FrozenSet(v) => v.iter().any(has_nan),
        Value::Dict(pairs) => pairs.iter().any(|(k, v)| has_nan(k) || has_nan(v)),
        Value::Object { class, args, state } => {
            has_nan(class) || has_nan(args) || state.as_deref().is_some_and(has_nan)
        }
        _ => false,
    }
}
