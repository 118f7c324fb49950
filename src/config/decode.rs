//! Typing the configuration with every problem found in one reading: serde stops at the
//! first, so each one is reported with its key and place, its value set aside, and the rest
//! typed again, until nothing is left to report.

use super::report::{At, Problem, did_you_mean};
use super::source::{Kind, Node, Origin, Step, dotted};
use serde::de::DeserializeOwned;
use serde_path_to_error::Segment;

/// What typing found: the value if it could be made, and whether a whole table had to be
/// set aside (then the rules that relate keys are not checked: they would see a table that
/// is not the file's).
pub(super) struct Decoded<T> {
    pub value: Option<T>,
    pub dropped_table: bool,
}

/// Types `tree` as `T`, adding each problem to `problems`.
pub(super) fn decode<T: DeserializeOwned>(tree: &mut Node, problems: &mut Vec<Problem>) -> Decoded<T> {
    let mut dropped_table = false;
    loop {
        let err = match serde_path_to_error::deserialize::<_, T>(tree.to_value()) {
            Ok(value) => return Decoded { value: Some(value), dropped_table },
            Err(err) => err,
        };
        let steps: Vec<Step> = err
            .path()
            .iter()
            .filter_map(|s| match s {
                Segment::Seq { index } => Some(Step::Index(*index)),
                Segment::Map { key } => Some(Step::Key(key.clone())),
                Segment::Enum { .. } | Segment::Unknown => None,
            })
            .collect();
        let message = err.into_inner().message().to_owned();
        let shown = tree.file_steps(&steps);
        if let Some(field) = between(&message, "missing field `", "`") {
            dropped_table = true;
            let key = dotted(&[shown.clone(), vec![Step::Key(field.to_owned())]].concat());
            let (node, _, found) = tree.find(&steps);
            let inside = |p: &Problem| p.key == key || p.key.starts_with(&format!("{key}."));
            if !problems.iter().any(inside) {
                problems.push(Problem::new(&key, "missing: this key is required", near(node, &steps)));
            }
            if steps.is_empty() || found < steps.len() {
                return Decoded { value: None, dropped_table };
            }
            tree.change(&steps, |node| node.removed = true);
            continue;
        }
        let (node, key_span, found) = tree.find(&steps);
        if steps.is_empty() || found < steps.len() {
            problems.push(Problem::new(&dotted(&shown), &message, At::File));
            return Decoded { value: None, dropped_table };
        }
        if let Some(value) = env_text_as(node, &message) {
            tree.change(&steps, |node| node.kind = Kind::Leaf(value));
            continue;
        }
        problems.push(problem(&shown, node, key_span, &message));
        tree.change(&steps, |node| node.removed = true);
    }
}

/// The problem serde's `message` describes at `node`, in the project's words.
fn problem(steps: &[Step], node: &Node, key_span: Option<std::ops::Range<usize>>, message: &str) -> Problem {
    let key = dotted(steps);
    let secret = key.ends_with("passcode");
    let mut at = match &node.origin {
        Origin::File(span) => At::Span(span.clone()),
        Origin::Env(var) => At::Env(var.clone()),
    };
    if let Some(rest) = message.strip_prefix("unknown field `") {
        let name = rest.split('`').next().unwrap_or(rest);
        let allowed = expected(message).unwrap_or_default();
        if let (Origin::File(_), Some(span)) = (&node.origin, key_span) {
            at = At::Span(span);
        }
        let words: Vec<&str> = allowed.trim_start_matches("one of ").split(", ").collect();
        let mut p = match allowed.is_empty() {
            true => Problem::new(&key, "unknown key: this table has no keys", at),
            false => Problem::new(&key, &format!("unknown key, expected {allowed}"), at),
        };
        p.help = did_you_mean(name, &words).map(|w| format!("did you mean `{w}`?"));
        return p;
    }
    let found = if secret { "a value (not shown)".to_owned() } else { found(node) };
    let text = match expected(message) {
        Some(allowed) => format!("found {found}, expected {allowed}"),
        None => format!("found {found}: {message}"),
    };
    let mut p = Problem::new(&key, &text, at);
    p.show_line = !secret;
    p
}

/// The value as the operator wrote it, for "found …".
fn found(node: &Node) -> String {
    match &node.kind {
        Kind::Leaf(toml::Value::String(s)) => format!("{s:?}"),
        Kind::Leaf(toml::Value::Integer(n)) => format!("the integer {n}"),
        Kind::Leaf(toml::Value::Float(x)) => format!("the float {x}"),
        Kind::Leaf(toml::Value::Boolean(b)) => format!("the boolean {b}"),
        Kind::Leaf(toml::Value::Datetime(d)) => format!("the datetime {d}"),
        Kind::Leaf(v) => v.type_str().to_owned(),
        Kind::Table(_) => "a table".into(),
        Kind::Array(_) => "an array".into(),
    }
}

/// What serde says is allowed, in the operator's words.
fn expected(message: &str) -> Option<String> {
    let raw = message.split_once(", expected ")?.1;
    let plain = match raw {
        "usize" | "u64" | "u32" | "u16" | "u8" => "a whole number, 0 or more",
        "isize" | "i64" | "i32" | "i16" | "i8" => "a whole number",
        "f64" | "f32" => "a number",
        "a boolean" => "true or false",
        "a sequence" => "an array",
        "path string" => "a path (a string)",
        s if s.starts_with("struct ") || s == "a map" => "a table",
        s => return Some(s.replace('`', "")),
    };
    Some(plain.to_owned())
}

/// An environment variable's text where a number or boolean is wanted, as one if it reads as
/// one (the variable is then used, not reported).
fn env_text_as(node: &Node, message: &str) -> Option<toml::Value> {
    let (Origin::Env(_), Kind::Leaf(toml::Value::String(text))) = (&node.origin, &node.kind) else {
        return None;
    };
    if !message.starts_with("invalid type: string") {
        return None;
    }
    let text = text.trim();
    let value = match message.split_once(", expected ").map(|(_, e)| e) {
        Some("a boolean") => toml::Value::Boolean(env_bool(text)?),
        Some("f64" | "f32") => toml::Value::Float(text.parse().ok()?),
        Some(e) if e.starts_with(['u', 'i']) && e[1..].chars().all(|c| c.is_ascii_alphanumeric()) => {
            toml::Value::Integer(text.parse().ok()?)
        }
        _ => return None,
    };
    Some(value)
}

/// A boolean as the `config` crate read one from the environment before it was replaced:
/// `true`/`1`/`yes`/`on` and `false`/`0`/`no`/`off`, in any case.
fn env_bool(text: &str) -> Option<bool> {
    match text.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// Where a key missing from `table` would be.
pub(super) fn near(table: &Node, steps: &[Step]) -> At {
    match &table.origin {
        Origin::File(_) if steps.is_empty() => At::File,
        Origin::File(span) => At::Near(span.clone()),
        Origin::Env(var) => At::Env(var.clone()),
    }
}

/// The text between `start` and the next `end`.
fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let rest = text.strip_prefix(start)?;
    rest.split(end).next()
}
