//! Writes pickles of the plain shapes Wise Agents itself writes (lists, dicts, strings, and
//! instances as `pickle.dumps` writes them: class, `NEWOBJ`, state, `BUILD`), loadable by
//! Python's `pickle.loads`; and appends to a pickled list without rewriting what it holds.

use super::pickle::{PickleError, Value, read};

/// Protocol 4, which every Python 3.8+ reads (Wise Agents needs 3.10+).
const PROTOCOL: u8 = 4;

/// The pickle of `value`.
pub fn dumps(value: &Value) -> Vec<u8> {
    let mut out = vec![0x80, PROTOCOL];
    write(&mut out, value);
    out.push(b'.');
    out
}

/// `existing` (a pickled list) with `item` appended, as `stored.append(item);
/// pickle.dumps(stored)` would give: the list's pickle is kept as it is (whatever instances it
/// holds), `item` pushed and appended before its STOP. No list yet: `[item]`.
pub fn append(existing: Option<&[u8]>, item: &Value) -> Result<Vec<u8>, PickleError> {
    let Some(existing) = existing else { return Ok(dumps(&Value::List(vec![item.clone()]))) };
    let (value, last_frame) = read(existing)?;
    if !matches!(value, Value::List(_)) {
        return Err(PickleError::Malformed { at: 0, why: "the stored value is not a list" });
    }
    let mut out = existing[..existing.len() - 1].to_vec();
    let start = out.len();
    write(&mut out, item);
    out.push(b'a');
    out.push(b'.');
    // A frame that ran to the STOP now runs to the new one (Python's unpickler reads a
    // frame's bytes as announced).
    if let Some((at, end)) = last_frame.filter(|(_, end)| *end == existing.len()) {
        let len = (end - (at + 8) - 1 + (out.len() - start)) as u64;
        out[at..at + 8].copy_from_slice(&len.to_le_bytes());
    }
    Ok(out)
}

fn write(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::None => out.push(b'N'),
        Value::Bool(true) => out.push(0x88),
        Value::Bool(false) => out.push(0x89),
        Value::Int(i) => int(out, *i),
        Value::Float(f) => {
            out.push(b'G');
            out.extend_from_slice(&f.to_be_bytes());
        }
        Value::Str(s) => sized(out, s.as_bytes(), 0x8c, b'X'),
        Value::Bytes(b) => sized(out, b, b'C', b'B'),
        Value::List(items) => items_of(out, b']', items, b'e'),
        Value::Set(items) => items_of(out, 0x8f, items, 0x90),
        Value::FrozenSet(items) => {
            out.push(b'(');
            items.iter().for_each(|v| write(out, v));
            out.push(0x91);
        }
        Value::Tuple(items) if items.is_empty() => out.push(b')'),
        Value::Tuple(items) => {
            out.push(b'(');
            items.iter().for_each(|v| write(out, v));
            out.push(b't');
        }
        Value::Dict(pairs) => {
            out.push(b'}');
            if !pairs.is_empty() {
                out.push(b'(');
                for (k, v) in pairs {
                    write(out, k);
                    write(out, v);
                }
                out.push(b'u');
            }
        }
        // STACK_GLOBAL, as protocol 4 writes a class: any characters survive (GLOBAL's
        // newline-ended names would not; found by the fuzzer).
        Value::Global { module, name } => {
            sized(out, module.as_bytes(), 0x8c, b'X');
            sized(out, name.as_bytes(), 0x8c, b'X');
            out.push(0x93);
        }
        Value::Object { class, args, state } => {
            write(out, class);
            write(out, args);
            out.push(0x81);
            if let Some(state) = state {
                write(out, state);
                out.push(b'b');
            }
        }
    }
}

fn int(out: &mut Vec<u8>, i: i64) {
    match i {
        0..=0xff => out.extend([b'K', i as u8]),
        0x100..=0xffff => {
            out.push(b'M');
            out.extend_from_slice(&(i as u16).to_le_bytes());
        }
        _ if i32::try_from(i).is_ok() => {
            out.push(b'J');
            out.extend_from_slice(&(i as i32).to_le_bytes());
        }
        _ => {
            out.extend([0x8a, 8]);
            out.extend_from_slice(&i.to_le_bytes());
        }
    }
}

fn sized(out: &mut Vec<u8>, bytes: &[u8], short: u8, long: u8) {
    match u8::try_from(bytes.len()) {
        Ok(n) => out.extend([short, n]),
        Err(_) => {
            out.push(long);
            out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        }
    }
    out.extend_from_slice(bytes);
}

fn items_of(out: &mut Vec<u8>, empty: u8, items: &[Value], add: u8) {
    out.push(empty);
    if !items.is_empty() {
        out.push(b'(');
        items.iter().for_each(|v| write(out, v));
        out.push(add);
    }
}
