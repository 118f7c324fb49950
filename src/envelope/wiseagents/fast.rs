//! A fast path for the one shape PyYAML gives a Wise Agents message: the tag line, then
//! `_key: value` lines whose values are plain (one line), single-quoted or double-quoted
//! scalars, folded over several lines as PyYAML folds them. It yields the same events as
//! saphyr-parser would, or `None` at the first thing outside that shape, and the general
//! parser then reads the body. `tests/yaml_fast_path.rs` checks both agree.

use saphyr_parser::{Event, ScalarStyle, Tag};
use std::borrow::Cow;

const HEAD: &str = "!wiseagents.WiseAgentMessage\n";

/// The body's events, when it is in PyYAML's usual shape and has at most `max_events`.
pub fn events(text: &str, max_events: usize) -> Option<Vec<Event<'_>>> {
    if text.contains('\r') {
        return None;
    }
    let mut rest = text.strip_prefix(HEAD)?;
    let tag = Tag { handle: "!".into(), suffix: "wiseagents.WiseAgentMessage".into() };
    let mut out =
        vec![Event::StreamStart, Event::DocumentStart(false), Event::MappingStart(0, Some(Cow::Owned(tag)))];
    while !rest.is_empty() {
        let (key, after_key) = key(rest)?;
        let (value, style, after) = match after_key.as_bytes().first()? {
            b'\'' => single_quoted(&after_key[1..])?,
            b'"' => double_quoted(&after_key[1..])?,
            _ => plain(after_key)?,
        };
        out.push(Event::Scalar(Cow::Borrowed(key), ScalarStyle::Plain, 0, None));
        out.push(Event::Scalar(value, style, 0, None));
        rest = after;
        if out.len() > max_events {
            return None;
        }
    }
    out.extend([Event::MappingEnd, Event::DocumentEnd, Event::StreamEnd]);
    Some(out)
}

/// `name: ` at the start of a line, the name of letters, digits and `_`.
fn key(line: &str) -> Option<(&str, &str)> {
    let end = line.find(": ")?;
    let name = &line[..end];
    let first_ok = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
    (first_ok && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
        .then(|| (name, &line[end + 2..]))
}

/// A plain scalar on one line (PyYAML folds long ones; those go to the general parser).
fn plain(s: &str) -> Option<(Cow<'_, str>, ScalarStyle, &str)> {
    let (line, rest) = s.split_once('\n')?;
    let starts_badly = line.starts_with(|c: char| "-?:,[]{}#&*!|>'\"%@` \t".contains(c));
    let inner_trouble =
        line.contains(": ") || line.contains(" #") || line.ends_with([':', ' ']) || line.contains('\t');
    if line.is_empty() || starts_badly || inner_trouble || rest.starts_with([' ', '\t']) {
        return None;
    }
    Some((Cow::Borrowed(line), ScalarStyle::Plain, rest))
}

/// A single-quoted scalar from just after its opening quote: `''` is a quote, line breaks
/// fold. Ends with its line.
fn single_quoted(s: &str) -> Option<(Cow<'_, str>, ScalarStyle, &str)> {
    if let Some(end) = s.find(['\'', '\n'])
        && s[end..].starts_with("'\n")
    {
        return Some((Cow::Borrowed(&s[..end]), ScalarStyle::SingleQuoted, &s[end + 2..]));
    }
    let mut out = Folded::default();
    let mut i = 0;
    let bytes = s.as_bytes();
    loop {
        match bytes.get(i)? {
            b'\'' if bytes.get(i + 1) == Some(&b'\'') => {
                out.push_hard('\'');
                i += 2;
            }
            b'\'' => return after_closing(out.text, ScalarStyle::SingleQuoted, &s[i + 1..]),
            b'\n' => i = out.fold(s, i)?,
            _ => {
                let c = s[i..].chars().next()?;
                out.push_soft(c);
                i += c.len_utf8();
            }
        }
    }
}

/// A double-quoted scalar from just after its opening quote, with YAML's escapes and
/// folding (`\` at a line end joins the lines). Ends with its line.
fn double_quoted(s: &str) -> Option<(Cow<'_, str>, ScalarStyle, &str)> {
    let mut out = Folded::default();
    let mut i = 0;
    let bytes = s.as_bytes();
    loop {
        match bytes.get(i)? {
            b'"' => return after_closing(out.text, ScalarStyle::DoubleQuoted, &s[i + 1..]),
            b'\\' if bytes.get(i + 1) == Some(&b'\n') => i = out.join(s, i + 1)?,
            b'\\' => {
                let (c, used) = escape(&s[i + 1..])?;
                out.push_hard(c);
                i += 1 + used;
            }
            b'\n' => i = out.fold(s, i)?,
            _ => {
                let c = s[i..].chars().next()?;
                out.push_soft(c);
                i += c.len_utf8();
            }
        }
    }
}

/// After a closing quote: the line must end there.
fn after_closing(text: String, style: ScalarStyle, rest: &str) -> Option<(Cow<'_, str>, ScalarStyle, &str)> {
    rest.strip_prefix('\n').map(|rest| (Cow::Owned(text), style, rest))
}

/// One escape after `\`: the character and how many bytes it used.
fn escape(s: &str) -> Option<(char, usize)> {
    let simple = match s.as_bytes().first()? {
        b'0' => '\0',
        b'a' => '\x07',
        b'b' => '\x08',
        b't' | b'\t' => '\t',
        b'n' => '\n',
        b'v' => '\x0b',
        b'f' => '\x0c',
        b'r' => '\r',
        b'e' => '\x1b',
        b' ' => ' ',
        b'"' => '"',
        b'\\' => '\\',
        b'N' => '\u{85}',
        b'_' => '\u{a0}',
        b'L' => '\u{2028}',
        b'P' => '\u{2029}',
        b'x' => return hex(s, 2),
        b'u' => return hex(s, 4),
        b'U' => return hex(s, 8),
        _ => return None,
    };
    Some((simple, 1))
}

fn hex(s: &str, digits: usize) -> Option<(char, usize)> {
    let code = s.get(1..1 + digits)?;
    if !code.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some((char::from_u32(u32::from_str_radix(code, 16).ok()?)?, 1 + digits))
}

/// Scalar text being built, with the length that escapes made (white space there is
/// content, never trimmed at a fold).
#[derive(Default)]
struct Folded {
    text: String,
    hard: usize,
}

impl Folded {
    fn push_soft(&mut self, c: char) {
        self.text.push(c);
    }

    fn push_hard(&mut self, c: char) {
        self.text.push(c);
        self.hard = self.text.len();
    }

    fn trim_trailing_space(&mut self) {
        let keep = self.text[self.hard..].trim_end_matches([' ', '\t']).len();
        self.text.truncate(self.hard + keep);
    }

    /// A line break at `s[i]` inside quotes: trailing spaces go, one break becomes a space,
    /// each empty line after it a `\n`. Returns where the next line's text starts.
    fn fold(&mut self, s: &str, i: usize) -> Option<usize> {
        self.trim_trailing_space();
        let (next, empty_lines) = continuation(s, i + 1)?;
        match empty_lines {
            0 => self.text.push(' '),
            n => self.text.extend(std::iter::repeat_n('\n', n)),
        }
        self.hard = self.text.len();
        Some(next)
    }

    /// An escaped line break (`\` then the break at `s[i]`): the lines join with nothing.
    fn join(&mut self, s: &str, i: usize) -> Option<usize> {
        let (next, empty_lines) = continuation(s, i + 1)?;
        (empty_lines == 0).then_some(())?;
        self.hard = self.text.len();
        Some(next)
    }
}

/// From the start of the line after a break: skips empty lines and the indentation of the
/// next text line, which must be indented by spaces. Returns where its text starts and how
/// many empty lines came first.
fn continuation(s: &str, mut at: usize) -> Option<(usize, usize)> {
    let mut empty = 0;
    loop {
        let line = &s[at..];
        let indent = line.len() - line.trim_start_matches(' ').len();
        match line.as_bytes().get(indent)? {
            b'\n' => {
                empty += 1;
                at += indent + 1;
            }
            b'\t' => return None,
            _ if indent == 0 => return None,
            _ => return Some((at + indent, empty)),
        }
    }
}

#[cfg(test)]
#[path = "fast_tests.rs"]
mod tests;
