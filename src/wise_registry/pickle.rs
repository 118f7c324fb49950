//! Python pickles, as data only: the values Wise Agents keeps in its Redis registry
//! (`pickle.dumps` of lists, dicts, strings, and of `WiseAgentMetaData`, `WiseAgentTool`,
//! `WiseAgentContext` instances). Nothing is ever executed: `GLOBAL` names a class, `REDUCE`
//! and `NEWOBJ` record a call, `BUILD` records the state, all as [`Value`]s. Bounded in input
//! size, nodes and depth; anything else is an error, never a panic.

use std::collections::HashMap;

/// The largest pickle read (a context's chat completion grows with the conversation).
pub const MAX_BYTES: usize = 8 << 20;
/// Values produced at most, shared references counted each time they are expanded.
pub const MAX_NODES: usize = 200_000;
/// Nesting read at most.
pub const MAX_DEPTH: usize = 64;

/// A pickled value. An instance is [`Value::Object`]: the class, what it was called with, and
/// the state `BUILD` gave it.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Bytes(Vec<u8>),
    List(Vec<Value>),
    Tuple(Vec<Value>),
    Dict(Vec<(Value, Value)>),
    Set(Vec<Value>),
    FrozenSet(Vec<Value>),
    Global { module: String, name: String },
    Object { class: Box<Value>, args: Box<Value>, state: Option<Box<Value>> },
}

/// Why a pickle cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PickleError {
    #[error("the pickle is {0} bytes, over the {MAX_BYTES} read")]
    TooLarge(usize),
    #[error("the pickle ends before its STOP")]
    Truncated,
    #[error("opcode {opcode:#04x} at byte {at} is not read (it is not in what Wise Agents writes)")]
    Unsupported { opcode: u8, at: usize },
    #[error("malformed pickle at byte {at}: {why}")]
    Malformed { at: usize, why: &'static str },
    #[error("the pickle holds more than {MAX_NODES} values")]
    TooManyNodes,
    #[error("the pickle is nested deeper than {MAX_DEPTH} levels, or refers to itself")]
    TooDeep,
    #[error("bytes after the pickle's STOP")]
    Trailing,
}

/// A node of the arena: containers hold the ids of their items, so that a memoised container
/// filled after it was memoised is seen filled wherever it is referred to (as in Python).
#[derive(Debug, Clone)]
enum Node {
    Leaf(Value),
    List(Vec<usize>),
    Tuple(Vec<usize>),
    Dict(Vec<(usize, usize)>),
    Set(Vec<usize>),
    FrozenSet(Vec<usize>),
    Object { class: usize, args: usize, state: Option<usize> },
}

/// A stack entry: a node, or a MARK.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Slot {
    Mark,
    Node(usize),
}

struct Machine<'a> {
    input: &'a [u8],
    pos: usize,
    nodes: Vec<Node>,
    stack: Vec<Slot>,
    memo: HashMap<u32, usize>,
    /// The last FRAME: where its length is written, and where the frame ends.
    last_frame: Option<(usize, usize)>,
}

/// Reads one pickle, all of `input`.
pub fn loads(input: &[u8]) -> Result<Value, PickleError> {
    read(input).map(|(value, _)| value)
}

/// The value, and the last FRAME's length field and end.
pub(crate) fn read(input: &[u8]) -> Result<(Value, Option<(usize, usize)>), PickleError> {
    if input.len() > MAX_BYTES {
        return Err(PickleError::TooLarge(input.len()));
    }
    let mut m = Machine {
        input,
        pos: 0,
        nodes: Vec::new(),
        stack: Vec::new(),
        memo: HashMap::new(),
        last_frame: None,
    };
    let root = m.run()?;
    if m.pos != input.len() {
        return Err(PickleError::Trailing);
    }
    let mut budget = MAX_NODES;
    Ok((m.tree(root, 0, &mut budget)?, m.last_frame))
}

impl Machine<'_> {
    fn malformed(&self, why: &'static str) -> PickleError {
        PickleError::Malformed { at: self.pos, why }
    }

    fn take(&mut self, n: usize) -> Result<&[u8], PickleError> {
        let end = self.pos.checked_add(n).filter(|e| *e <= self.input.len()).ok_or(PickleError::Truncated)?;
        let bytes = &self.input[self.pos..end];
        self.pos = end;
        Ok(bytes)
    }

    fn byte(&mut self) -> Result<u8, PickleError> {
        Ok(self.take(1)?[0])
    }

    fn uint(&mut self, n: usize) -> Result<u64, PickleError> {
        let bytes = self.take(n)?;
        Ok(bytes.iter().rev().fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
    }

    fn len(&mut self, n: usize) -> Result<usize, PickleError> {
        let len = self.uint(n)?;
        usize::try_from(len).ok().filter(|l| *l <= self.input.len()).ok_or(PickleError::Truncated)
    }

    fn line(&mut self) -> Result<String, PickleError> {
        let rest = &self.input[self.pos..];
        let end = rest.iter().position(|b| *b == b'\n').ok_or(PickleError::Truncated)?;
        let text =
            std::str::from_utf8(&rest[..end]).map_err(|_| self.malformed("a GLOBAL name is not UTF-8"))?;
        let text = text.to_owned();
        self.pos += end + 1;
        Ok(text)
    }

    fn text(&mut self, n: usize) -> Result<String, PickleError> {
        let len = self.len(n)?;
        let bytes = self.take(len)?;
        String::from_utf8(bytes.to_vec())
            .map_err(|_| PickleError::Malformed { at: self.pos, why: "a string is not UTF-8" })
    }

    fn push(&mut self, node: Node) -> Result<(), PickleError> {
        if self.nodes.len() >= MAX_NODES {
            return Err(PickleError::TooManyNodes);
        }
        self.nodes.push(node);
        self.stack.push(Slot::Node(self.nodes.len() - 1));
        Ok(())
    }

    fn leaf(&mut self, value: Value) -> Result<(), PickleError> {
        self.push(Node::Leaf(value))
    }

    fn pop(&mut self) -> Result<usize, PickleError> {
        match self.stack.pop() {
            Some(Slot::Node(id)) => Ok(id),
            Some(Slot::Mark) => Err(self.malformed("a MARK where a value belongs")),
            None => Err(self.malformed("the stack is empty")),
        }
    }

    fn top(&self) -> Result<usize, PickleError> {
        match self.stack.last() {
            Some(Slot::Node(id)) => Ok(*id),
            _ => Err(self.malformed("no value on the stack")),
        }
    }

    /// The values above the last MARK, which is removed.
    fn pop_mark(&mut self) -> Result<Vec<usize>, PickleError> {
        let mark = self.stack.iter().rposition(|s| *s == Slot::Mark).ok_or(self.malformed("no MARK"))?;
        let items = self.stack.split_off(mark + 1);
        self.stack.pop();
        Ok(items.into_iter().filter_map(|s| if let Slot::Node(id) = s { Some(id) } else { None }).collect())
    }

    fn memoize(&mut self, key: u32) -> Result<(), PickleError> {
        let top = self.top()?;
        if self.memo.len() >= MAX_NODES {
            return Err(PickleError::TooManyNodes);
        }
        self.memo.insert(key, top);
        Ok(())
    }

    fn get(&mut self, key: u32) -> Result<(), PickleError> {
        let id = *self.memo.get(&key).ok_or(self.malformed("a memo reference to nothing"))?;
        self.stack.push(Slot::Node(id));
        Ok(())
    }

    fn int(&mut self, n: usize) -> Result<(), PickleError> {
        let bytes = self.take(n)?.to_vec();
        if bytes.len() > 8 {
            return Err(self.malformed("an integer wider than 64 bits"));
        }
        let negative = bytes.last().is_some_and(|b| b & 0x80 != 0);
        let fill = if negative { 0xff } else { 0 };
        let mut wide = [fill; 8];
        wide[..bytes.len()].copy_from_slice(&bytes);
        self.leaf(Value::Int(i64::from_le_bytes(wide)))
    }

    fn append(&mut self, items: Vec<usize>) -> Result<(), PickleError> {
        let target = self.top()?;
        match &mut self.nodes[target] {
            Node::List(list) => list.extend(items),
            _ => return Err(self.malformed("APPEND to something that is not a list")),
        }
        Ok(())
    }

    fn set_items(&mut self, items: Vec<usize>) -> Result<(), PickleError> {
        if !items.len().is_multiple_of(2) {
            return Err(self.malformed("SETITEMS with an odd number of values"));
        }
        let target = self.top()?;
        let pairs = items.chunks(2).map(|p| (p[0], p[1]));
        match &mut self.nodes[target] {
            Node::Dict(dict) => dict.extend(pairs),
            _ => return Err(self.malformed("SETITEM on something that is not a dict")),
        }
        Ok(())
    }

    fn add_items(&mut self, items: Vec<usize>) -> Result<(), PickleError> {
        let target = self.top()?;
        match &mut self.nodes[target] {
            Node::Set(set) => set.extend(items),
            _ => return Err(self.malformed("ADDITEMS to something that is not a set")),
        }
        Ok(())
    }

    fn build(&mut self) -> Result<(), PickleError> {
        let state = self.pop()?;
        let target = self.top()?;
        match &mut self.nodes[target] {
            Node::Object { state: slot @ None, .. } => *slot = Some(state),
            _ => return Err(self.malformed("BUILD on something that is not a new instance")),
        }
        Ok(())
    }

    fn object(&mut self, class: usize, args: usize) -> Result<(), PickleError> {
        if !matches!(self.nodes[args], Node::Tuple(_)) {
            return Err(self.malformed("a call whose arguments are not a tuple"));
        }
        self.push(Node::Object { class, args, state: None })
    }

    fn tuple(&mut self, n: usize) -> Result<(), PickleError> {
        let at = self.stack.len().checked_sub(n).ok_or(self.malformed("a TUPLE of too few values"))?;
        let items = self.stack.split_off(at);
        let items = items.into_iter().map(|s| match s {
            Slot::Node(id) => Ok(id),
            Slot::Mark => Err(PickleError::Malformed { at: self.pos, why: "a MARK inside a TUPLE" }),
        });
        let items = items.collect::<Result<Vec<_>, _>>()?;
        self.push(Node::Tuple(items))
    }

    /// Runs the opcodes up to STOP; returns the node on top.
    fn run(&mut self) -> Result<usize, PickleError> {
        loop {
            let at = self.pos;
            let op = self.byte()?;
            match op {
                b'.' => return self.pop(),
                0x80 => {
                    if self.byte()? > 5 {
                        return Err(self.malformed("a protocol above 5"));
                    }
                }
                0x95 => {
                    let len = self.uint(8)?;
                    let end = usize::try_from(len).ok().and_then(|l| l.checked_add(self.pos));
                    self.last_frame = Some((at + 1, end.ok_or(PickleError::Truncated)?));
                }
                _ => self.step(op, at)?,
            }
        }
    }

    fn step(&mut self, op: u8, at: usize) -> Result<(), PickleError> {
        match op {
            b'N' => self.leaf(Value::None)?,
            0x88 => self.leaf(Value::Bool(true))?,
            0x89 => self.leaf(Value::Bool(false))?,
            b'J' => {
                let v = self.uint(4)? as u32 as i32;
                self.leaf(Value::Int(i64::from(v)))?
            }
            b'K' => {
                let v = self.uint(1)?;
                self.leaf(Value::Int(v as i64))?
            }
            b'M' => {
                let v = self.uint(2)?;
                self.leaf(Value::Int(v as i64))?
            }
            0x8a => {
                let n = self.len(1)?;
                self.int(n)?
            }
            0x8b => {
                let n = self.len(4)?;
                self.int(n)?
            }
            b'G' => {
                let bytes: [u8; 8] = self.take(8)?.try_into().map_err(|_| PickleError::Truncated)?;
                self.leaf(Value::Float(f64::from_be_bytes(bytes)))?
            }
            0x8c => {
                let s = self.text(1)?;
                self.leaf(Value::Str(s))?
            }
            b'X' => {
                let s = self.text(4)?;
                self.leaf(Value::Str(s))?
            }
            0x8d => {
                let s = self.text(8)?;
                self.leaf(Value::Str(s))?
            }
            b'C' | b'B' | 0x8e => {
                let width = match op {
                    b'C' => 1,
                    b'B' => 4,
                    _ => 8,
                };
                let len = self.len(width)?;
                let bytes = self.take(len)?.to_vec();
                self.leaf(Value::Bytes(bytes))?
            }
            _ => self.structure(op, at)?,
        }
        Ok(())
    }

    fn structure(&mut self, op: u8, at: usize) -> Result<(), PickleError> {
        match op {
            b']' => self.push(Node::List(Vec::new()))?,
            b'}' => self.push(Node::Dict(Vec::new()))?,
            b')' => self.push(Node::Tuple(Vec::new()))?,
            0x8f => self.push(Node::Set(Vec::new()))?,
            0x85 => self.tuple(1)?,
            0x86 => self.tuple(2)?,
            0x87 => self.tuple(3)?,
            b'(' => self.stack.push(Slot::Mark),
            b't' => {
                let items = self.pop_mark()?;
                self.push(Node::Tuple(items))?
            }
            b'l' => {
                let items = self.pop_mark()?;
                self.push(Node::List(items))?
            }
            b'd' => {
                let items = self.pop_mark()?;
                self.push(Node::Dict(Vec::new()))?;
                self.set_items(items)?
            }
            0x91 => {
                let items = self.pop_mark()?;
                self.push(Node::FrozenSet(items))?
            }
            b'a' => {
                let item = self.pop()?;
                self.append(vec![item])?
            }
            b'e' => {
                let items = self.pop_mark()?;
                self.append(items)?
            }
            b's' => {
                let value = self.pop()?;
                let key = self.pop()?;
                self.set_items(vec![key, value])?
            }
            b'u' => {
                let items = self.pop_mark()?;
                self.set_items(items)?
            }
            0x90 => {
                let items = self.pop_mark()?;
                self.add_items(items)?
            }
            _ => self.reference(op, at)?,
        }
        Ok(())
    }

    fn reference(&mut self, op: u8, at: usize) -> Result<(), PickleError> {
        match op {
            0x94 => {
                let key = u32::try_from(self.memo.len()).map_err(|_| PickleError::TooManyNodes)?;
                self.memoize(key)?
            }
            b'q' => {
                let key = self.uint(1)? as u32;
                self.memoize(key)?
            }
            b'r' => {
                let key = self.uint(4)? as u32;
                self.memoize(key)?
            }
            b'h' => {
                let key = self.uint(1)? as u32;
                self.get(key)?
            }
            b'j' => {
                let key = self.uint(4)? as u32;
                self.get(key)?
            }
            b'0' => {
                self.stack.pop().ok_or(self.malformed("POP on an empty stack"))?;
            }
            b'1' => {
                self.pop_mark()?;
            }
            b'2' => {
                let top = self.top()?;
                self.stack.push(Slot::Node(top))
            }
            _ => self.class(op, at)?,
        }
        Ok(())
    }

    fn class(&mut self, op: u8, at: usize) -> Result<(), PickleError> {
        match op {
            b'c' => {
                let (module, name) = (self.line()?, self.line()?);
                self.leaf(Value::Global { module, name })?
            }
            0x93 => {
                let name = self.pop()?;
                let module = self.pop()?;
                let (Node::Leaf(Value::Str(module)), Node::Leaf(Value::Str(name))) =
                    (&self.nodes[module], &self.nodes[name])
                else {
                    return Err(self.malformed("STACK_GLOBAL of something other than two strings"));
                };
                let global = Value::Global { module: module.clone(), name: name.clone() };
                self.leaf(global)?
            }
            0x81 | b'R' => {
                let args = self.pop()?;
                let class = self.pop()?;
                self.object(class, args)?
            }
            0x92 => {
                let kwargs = self.pop()?;
                let args = self.pop()?;
                let class = self.pop()?;
                if !matches!(&self.nodes[kwargs], Node::Dict(d) if d.is_empty()) {
                    return Err(self.malformed("NEWOBJ_EX with keyword arguments"));
                }
                self.object(class, args)?
            }
            b'b' => self.build()?,
            _ => return Err(PickleError::Unsupported { opcode: op, at }),
        }
        Ok(())
    }

    /// The node as a tree of values, within the node budget and depth.
    fn tree(&self, id: usize, depth: usize, budget: &mut usize) -> Result<Value, PickleError> {
        if depth > MAX_DEPTH {
            return Err(PickleError::TooDeep);
        }
        *budget = budget.checked_sub(1).ok_or(PickleError::TooManyNodes)?;
        let all = |ids: &[usize], budget: &mut usize| {
            ids.iter().map(|i| self.tree(*i, depth + 1, budget)).collect::<Result<Vec<_>, _>>()
        };
        Ok(match &self.nodes[id] {
            Node::Leaf(v) => v.clone(),
            Node::List(ids) => Value::List(all(ids, budget)?),
            Node::Tuple(ids) => Value::Tuple(all(ids, budget)?),
            Node::Set(ids) => Value::Set(all(ids, budget)?),
            Node::FrozenSet(ids) => Value::FrozenSet(all(ids, budget)?),
            Node::Dict(pairs) => {
                let mut out = Vec::with_capacity(pairs.len());
                for (k, v) in pairs {
                    out.push((self.tree(*k, depth + 1, budget)?, self.tree(*v, depth + 1, budget)?));
                }
                Value::Dict(out)
            }
            Node::Object { class, args, state } => Value::Object {
                class: Box::new(self.tree(*class, depth + 1, budget)?),
                args: Box::new(self.tree(*args, depth + 1, budget)?),
                state: state.map(|s| self.tree(s, depth + 1, budget).map(Box::new)).transpose()?,
            },
        })
    }
}

impl Value {
    /// The text of a `str`.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The value under a `str` key of a dict.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Dict(pairs) => pairs.iter().find(|(k, _)| k.as_str() == Some(key)).map(|(_, v)| v),
            _ => None,
        }
    }

    /// An instance's class as `module.Name`, and its state.
    pub fn instance(&self) -> Option<(String, Option<&Value>)> {
        match self {
            Value::Object { class, state, .. } => match class.as_ref() {
                Value::Global { module, name } => Some((format!("{module}.{name}"), state.as_deref())),
                _ => None,
            },
            _ => None,
        }
    }

    /// A list of strings (an agents sequence).
    pub fn as_str_list(&self) -> Option<Vec<String>> {
        match self {
            Value::List(items) => items.iter().map(|v| v.as_str().map(str::to_owned)).collect(),
            _ => None,
        }
    }
}

#[cfg(test)]
#[path = "pickle_tests.rs"]
mod tests;
