//! Writes a `!wiseagents.WiseAgentMessage` body that PyYAML's `yaml.Loader` (YAML 1.1) reads
//! back to exactly the same six fields, for any string: all six keys, sorted, as PyYAML
//! writes them; a string plain only when YAML 1.1 cannot read it as anything else.

use super::WiseMessage;
use std::fmt::Write;

/// The YAML body for `msg` (pure ASCII: everything else is escaped, as PyYAML does).
pub fn to_yaml(msg: &WiseMessage) -> String {
    let mut out = String::with_capacity(160 + msg.message.len());
    out.push_str("!wiseagents.WiseAgentMessage\n");
    field(&mut out, "_context_name", msg.context_name.as_deref());
    field(&mut out, "_message", Some(&msg.message));
    field(&mut out, "_message_type", msg.message_type.map(|t| t.as_str()));
    field(&mut out, "_route_response_to", msg.route_response_to.as_deref());
    field(&mut out, "_sender", msg.sender.as_deref());
    field(&mut out, "_tool_id", msg.tool_id.as_deref());
    out
}

fn field(out: &mut String, key: &str, value: Option<&str>) {
    out.push_str(key);
    out.push_str(": ");
    match value {
        None => out.push_str("null"),
        Some(s) if is_plain_safe(s) => out.push_str(s),
        Some(s) if is_printable_ascii(s) => single_quoted(out, s),
        Some(s) => double_quoted(out, s),
    }
    out.push('\n');
}

/// Plain only when nothing in YAML 1.1 reads it otherwise: a letter or `_` first (no number,
/// date, sexagesimal or indicator), a small set of characters after it (no `:`, `#`, quote
/// or flow indicator), no space at the end, and not one of the bool or null words.
fn is_plain_safe(s: &str) -> bool {
    let mut chars = s.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    first_ok
        && chars.all(|c| c.is_ascii_alphanumeric() || " _.-/?(),;+=$".contains(c))
        && !s.ends_with(' ')
        && !is_yaml11_word(s)
}

fn is_yaml11_word(s: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    matches!(lower.as_str(), "yes" | "no" | "y" | "n" | "true" | "false" | "on" | "off" | "null")
}

fn is_printable_ascii(s: &str) -> bool {
    s.bytes().all(|b| (0x20..0x7f).contains(&b))
}

fn single_quoted(out: &mut String, s: &str) {
    out.push('\'');
    out.push_str(&s.replace('\'', "''"));
    out.push('\'');
}

/// Double quotes, on one line, with YAML's escapes; non-ASCII as `\xE9`, `\u2014` and
/// `\U0001F600` (PyYAML does not join a `\ud83d\ude00` surrogate pair).
fn double_quoted(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\0' => out.push_str("\\0"),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\x0b' => out.push_str("\\v"),
            '\x0c' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            '\x1b' => out.push_str("\\e"),
            ' '..='~' => out.push(c),
            c if (c as u32) <= 0xff => write!(out, "\\x{:02X}", c as u32).unwrap_or(()),
            c if (c as u32) <= 0xffff => write!(out, "\\u{:04X}", c as u32).unwrap_or(()),
            c => write!(out, "\\U{:08X}", c as u32).unwrap_or(()),
        }
    }
    out.push('"');
}
