use super::*;

/// A field as the wire has it.
#[derive(Debug, Clone, PartialEq)]
pub enum Field {
    Varint(u64),
    Fixed64(u64),
    Fixed32(u32),
    Len(Vec<u8>),
}

/// A message read back: its fields in order (a reader of the wire format, for tests).
#[derive(Debug, Clone, PartialEq)]
pub struct Message(pub Vec<(u32, Field)>);

impl Message {
    pub fn read(mut b: &[u8]) -> Message {
        let mut fields = Vec::new();
        while !b.is_empty() {
            let key = read_varint(&mut b);
            let (field, wire) = ((key >> 3) as u32, (key & 7) as u32);
            let value = match wire {
                VARINT => Field::Varint(read_varint(&mut b)),
                FIXED64 => {
                    let (v, rest) = b.split_at(8);
                    b = rest;
                    Field::Fixed64(u64::from_le_bytes(v.try_into().unwrap()))
                }
                FIXED32 => {
                    let (v, rest) = b.split_at(4);
                    b = rest;
                    Field::Fixed32(u32::from_le_bytes(v.try_into().unwrap()))
                }
                LEN => {
                    let len = read_varint(&mut b) as usize;
                    let (v, rest) = b.split_at(len);
                    b = rest;
                    Field::Len(v.to_vec())
                }
                other => panic!("wire type {other}"),
            };
            fields.push((field, value));
        }
        Message(fields)
    }

    pub fn all(&self, field: u32) -> impl Iterator<Item = &Field> {
        self.0.iter().filter(move |(f, _)| *f == field).map(|(_, v)| v)
    }

    pub fn messages(&self, field: u32) -> Vec<Message> {
        self.all(field)
            .map(|v| match v {
                Field::Len(b) => Message::read(b),
                other => panic!("field {field}: {other:?}"),
            })
            .collect()
    }

    pub fn message(&self, field: u32) -> Message {
        self.messages(field).into_iter().next().unwrap_or_else(|| panic!("no field {field}"))
    }

    pub fn bytes(&self, field: u32) -> Vec<u8> {
        match self.all(field).next() {
            Some(Field::Len(b)) => b.clone(),
            other => panic!("field {field}: {other:?}"),
        }
    }

    pub fn string(&self, field: u32) -> String {
        String::from_utf8(self.bytes(field)).unwrap()
    }

    pub fn number(&self, field: u32) -> u64 {
        match self.all(field).next() {
            Some(Field::Varint(v) | Field::Fixed64(v)) => *v,
            Some(Field::Fixed32(v)) => u64::from(*v),
            other => panic!("field {field}: {other:?}"),
        }
    }

    /// The `KeyValue` attributes in `field`, as (key, string or integer as text).
    pub fn attributes(&self, field: u32) -> Vec<(String, String)> {
        self.messages(field)
            .iter()
            .map(|kv| {
                let any = kv.message(2);
                let value =
                    if any.all(1).next().is_some() { any.string(1) } else { any.number(3).to_string() };
                (kv.string(1), value)
            })
            .collect()
    }
}

fn read_varint(b: &mut &[u8]) -> u64 {
    let mut v = 0;
    for shift in (0..64).step_by(7) {
        let byte = b[0];
        *b = &b[1..];
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            break;
        }
    }
    v
}

#[test]
fn an_attribute_is_the_bytes_protoc_writes() {
    let mut buf = Vec::new();
    Writer { buf: &mut buf }.attribute(9, "a", Value::Str("b"));
    // KeyValue{key: "a", value: AnyValue{string_value: "b"}} as field 9.
    assert_eq!(buf, [0x4a, 0x08, 0x0a, 0x01, b'a', 0x12, 0x03, 0x0a, 0x01, b'b']);
    buf.clear();
    Writer { buf: &mut buf }.attribute(9, "n", Value::Int(-1));
    // int_value -1: ten bytes of two's complement varint.
    let mut expected = vec![0x4a, 0x10, 0x0a, 0x01, b'n', 0x12, 0x0b, 0x18];
    expected.extend([0xff; 9]);
    expected.push(0x01);
    assert_eq!(buf, expected);
}

#[test]
fn nested_messages_of_every_length_read_back() {
    for len in [0, 1, 127, 128, 300, 16_383, 16_384, 70_000] {
        let mut buf = vec![7];
        let body = "x".repeat(len);
        let mut w = Writer { buf: &mut buf };
        w.message(2, |m| {
            m.string(1, &[&body]);
            m.fixed64(2, 42);
        });
        w.fixed32(3, 9);
        let read = Message::read(&buf[1..]);
        let inner = read.message(2);
        assert_eq!(inner.string(1).len(), len);
        assert_eq!(inner.number(2), 42);
        assert_eq!(read.number(3), 9, "what follows a nested message of {len} bytes");
    }
}

#[test]
fn a_cut_keeps_whole_characters_and_marks_the_cut() {
    let mut buf = Vec::new();
    let mut w = Writer { buf: &mut buf };
    w.cut(1, "ééé", 2);
    w.cut(2, "short", 10);
    w.bytes(3, &[1, 2]);
    w.varint(4, 300);
    let read = Message::read(&buf);
    assert_eq!(read.string(1), "éé…");
    assert_eq!(read.string(2), "short");
    assert_eq!(read.bytes(3), [1, 2]);
    assert_eq!(read.number(4), 300);
}
