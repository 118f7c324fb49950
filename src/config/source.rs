//! The configuration as read, before it is typed: the TOML file's values with where each one
//! is in the file, and the `BRIDGE__…` environment variables laid over them.

use super::report::{At, Problem};
use std::collections::BTreeMap;
use std::ops::Range;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// One value, where it came from, and whether the decoder has set it aside.
#[derive(Debug)]
pub(super) struct Node {
    pub kind: Kind,
    pub origin: Origin,
    /// Set aside after a problem was reported on it (the rest is still read).
    pub removed: bool,
}

#[derive(Debug)]
pub(super) enum Kind {
    /// A string, number, boolean or date (never a table or an array).
    Leaf(toml::Value),
    Table(Vec<Entry>),
    Array(Vec<Node>),
}

/// A key of a table, with its place in the file.
#[derive(Debug)]
pub(super) struct Entry {
    pub key: String,
    pub key_span: Option<Range<usize>>,
    pub node: Node,
}

/// Where a value came from.
#[derive(Debug, Clone)]
pub(super) enum Origin {
    /// The file, at this byte range.
    File(Range<usize>),
    /// This environment variable.
    Env(String),
}

/// One step of a key's path: `agents`, `[0]`, `protocol`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Step {
    Key(String),
    Index(usize),
}

impl Node {
    /// Parses a TOML document; every syntax error is reported, each at its place.
    pub fn parse(text: &str) -> Result<Node, Vec<Problem>> {
        let (doc, errors) = DeTable::parse_recoverable(text);
        if !errors.is_empty() {
            return Err(errors
                .iter()
                .map(|e| Problem::new("", e.message().trim_end(), e.span().map_or(At::File, At::Span)))
                .collect());
        }
        let values: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            vec![Problem::new("", e.message().trim_end(), e.span().map_or(At::File, At::Span))]
        })?;
        Ok(Node::table(doc.get_ref(), &values, doc.span()))
    }

    fn table(doc: &DeTable<'_>, values: &toml::Table, span: Range<usize>) -> Node {
        let entries = doc
            .iter()
            .filter_map(|(key, value)| {
                let node = Node::of(value, values.get(key.get_ref().as_ref())?);
                Some(Entry { key: key.get_ref().to_string(), key_span: Some(key.span()), node })
            })
            .collect();
        Node { kind: Kind::Table(entries), origin: Origin::File(span), removed: false }
    }

    fn of(doc: &Spanned<DeValue<'_>>, value: &toml::Value) -> Node {
        let kind = match (doc.get_ref(), value) {
            (DeValue::Table(t), toml::Value::Table(v)) => return Node::table(t, v, doc.span()),
            (DeValue::Array(a), toml::Value::Array(v)) => {
                Kind::Array(a.iter().zip(v).map(|(d, v)| Node::of(d, v)).collect())
            }
            (_, value) => Kind::Leaf(value.clone()),
        };
        Node { kind, origin: Origin::File(doc.span()), removed: false }
    }

    /// Lays `BRIDGE__SECTION__KEY` variables over the file: each value is kept as its text
    /// (`007` stays `007`); the decoder makes a number or boolean of it only where a key has
    /// that type.
    pub fn apply_env(&mut self, env: &BTreeMap<String, String>) -> Vec<Problem> {
        let mut problems = Vec::new();
        let mut seen: BTreeMap<Vec<String>, &str> = BTreeMap::new();
        for (var, value) in env {
            let Some(path) = env_path(var) else { continue };
            let steps: Vec<String> = path.split("__").map(str::to_lowercase).collect();
            if steps.iter().any(String::is_empty) {
                problems.push(Problem::new("", "is not BRIDGE__<SECTION>__<KEY>", At::Env(var.clone())));
                continue;
            }
            if let Some(first) = seen.insert(steps.clone(), var) {
                let why = format!("also set by {first}: set it by one variable only");
                problems.push(Problem::new(&steps.join("."), &why, At::Env(var.clone())));
                continue;
            }
            if let Err(table) = self.set(&steps, value, var) {
                let why = format!("cannot set {}: `{table}` is not a table", steps.join("."));
                problems.push(Problem::new(&table, &why, At::Env(var.clone())));
            }
        }
        problems
    }

    /// Sets the leaf at `steps` to the text `value`, making tables on the way; on failure,
    /// the key that is not a table.
    fn set(&mut self, steps: &[String], value: &str, var: &str) -> Result<(), String> {
        let mut node = self;
        for (i, step) in steps.iter().enumerate() {
            let Kind::Table(entries) = &mut node.kind else { return Err(steps[..i].join(".")) };
            let at = match entries.iter().position(|e| !e.node.removed && e.key == *step) {
                Some(at) => at,
                None => {
                    let kind = Kind::Table(Vec::new());
                    let node = Node { kind, origin: Origin::Env(var.to_owned()), removed: false };
                    entries.push(Entry { key: step.clone(), key_span: None, node });
                    entries.len() - 1
                }
            };
            node = &mut entries[at].node;
        }
        *node = Node {
            kind: Kind::Leaf(toml::Value::String(value.to_owned())),
            origin: Origin::Env(var.to_owned()),
            removed: false,
        };
        Ok(())
    }

    /// The value to type, without what was set aside.
    pub fn to_value(&self) -> toml::Value {
        match &self.kind {
            Kind::Leaf(v) => v.clone(),
            Kind::Array(items) => {
                toml::Value::Array(items.iter().filter(|n| !n.removed).map(Node::to_value).collect())
            }
            Kind::Table(entries) => toml::Value::Table(
                entries
                    .iter()
                    .filter(|e| !e.node.removed)
                    .map(|e| (e.key.clone(), e.node.to_value()))
                    .collect(),
            ),
        }
    }

    /// The entry or element at `steps` (indices count what is not set aside), or the
    /// nearest one above it that exists, with its key's place and how many steps were found.
    pub fn find(&self, steps: &[Step]) -> (&Node, Option<Range<usize>>, usize) {
        let (mut node, mut key_span) = (self, None);
        for (depth, step) in steps.iter().enumerate() {
            match node.child(step) {
                Some((n, span)) => (node, key_span) = (n, span),
                None => return (node, key_span, depth),
            }
        }
        (node, key_span, steps.len())
    }

    fn child(&self, step: &Step) -> Option<(&Node, Option<Range<usize>>)> {
        match (&self.kind, step) {
            (Kind::Table(entries), Step::Key(k)) => {
                entries.iter().find(|e| !e.removed_key(k)).map(|e| (&e.node, e.key_span.clone()))
            }
            (Kind::Array(items), Step::Index(i)) => {
                items.iter().filter(|n| !n.removed).nth(*i).map(|n| (n, None))
            }
            _ => None,
        }
    }

    /// `steps` as the file numbers them: an index of the typed value (which skips elements
    /// set aside) becomes the element's index in the file, so a problem of `agents[2]` is
    /// reported as `agents[2]` even after `agents[0]` was set aside.
    pub fn file_steps(&self, steps: &[Step]) -> Vec<Step> {
        let mut node = Some(self);
        let mut out = Vec::with_capacity(steps.len());
        for step in steps {
            let here = node.take();
            match (here.map(|n| &n.kind), step) {
                (Some(Kind::Array(items)), Step::Index(i)) => {
                    let at = items.iter().enumerate().filter(|(_, n)| !n.removed).nth(*i);
                    out.push(Step::Index(at.map_or(*i, |(at, _)| at)));
                    node = at.map(|(_, n)| n);
                }
                _ => {
                    out.push(step.clone());
                    node = here.and_then(|n| n.child(step)).map(|(n, _)| n);
                }
            }
        }
        out
    }

    /// Calls `f` on the entry or element at `steps`, if there is one.
    pub fn change(&mut self, steps: &[Step], f: impl FnOnce(&mut Node)) {
        let Some((step, rest)) = steps.split_first() else { return f(self) };
        let child = match (&mut self.kind, step) {
            (Kind::Table(entries), Step::Key(k)) => {
                entries.iter_mut().find(|e| !e.removed_key(k)).map(|e| &mut e.node)
            }
            (Kind::Array(items), Step::Index(i)) => items.iter_mut().filter(|n| !n.removed).nth(*i),
            _ => None,
        };
        if let Some(child) = child {
            child.change(rest, f);
        }
    }
}

impl Entry {
    fn removed_key(&self, key: &str) -> bool {
        self.node.removed || self.key != key
    }
}

/// The `SECTION__KEY` of an override variable: its name starts with `BRIDGE__` in any case
/// (`bridge__delivery__in_flight` too, as the `config` crate read them).
pub(super) fn env_path(var: &str) -> Option<&str> {
    let prefix = var.get(..8)?;
    prefix.eq_ignore_ascii_case("BRIDGE__").then(|| &var[8..])
}

/// `agents[0].protocol` as steps; a quoted key is one step whatever it holds
/// (`broker.address_tls."stomp+ssl://b.example:61617".ca_file`).
pub(super) fn steps(key: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    // The key being read (`Some("")` after an empty quoted key).
    let mut name: Option<String> = None;
    let mut chars = key.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => name.get_or_insert_default().push_str(&quoted(&mut chars)),
            '.' => steps.extend(name.take().map(Step::Key)),
            '[' => {
                steps.extend(name.take().map(Step::Key));
                let index: String = chars.by_ref().take_while(|c| *c != ']').collect();
                steps.push(match index.parse() {
                    Ok(i) => Step::Index(i),
                    Err(_) => Step::Key(index),
                });
            }
            c => name.get_or_insert_default().push(c),
        }
    }
    steps.extend(name.map(Step::Key));
    steps
}

/// The rest of a quoted key up to its closing quote, unescaped.
fn quoted(chars: &mut std::str::Chars<'_>) -> String {
    let mut text = String::new();
    while let Some(c) = chars.next() {
        match c {
            '\\' => text.extend(chars.next()),
            '"' => break,
            c => text.push(c),
        }
    }
    text
}

/// A key as a step of a dotted path: bare when TOML allows it (`in_flight`), else quoted as
/// TOML quotes it (`"stomp+ssl://b.example:61617"`).
pub(super) fn toml_key(key: &str) -> String {
    let bare = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    match !key.is_empty() && key.chars().all(bare) {
        true => key.to_owned(),
        false => format!("\"{}\"", key.replace('\\', "\\\\").replace('"', "\\\"")),
    }
}

/// Steps as `agents[0].protocol`.
pub(super) fn dotted(steps: &[Step]) -> String {
    let mut key = String::new();
    for step in steps {
        match step {
            Step::Key(k) if key.is_empty() => key.push_str(&toml_key(k)),
            Step::Key(k) => {
                key.push('.');
                key.push_str(&toml_key(k));
            }
            Step::Index(i) => key.push_str(&format!("[{i}]")),
        }
    }
    key
}
