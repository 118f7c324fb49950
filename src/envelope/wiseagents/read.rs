//! Reads a `!wiseagents.WiseAgentMessage` YAML body, as PyYAML writes it, with a pull parser
//! that stops at the first thing a Wise Agents body never holds (aliases, nesting, other tags):
//! hostile input is refused after a handful of events, in bounded memory.

use super::{WiseMessage, fast};
use crate::envelope::{EnvelopeError, Intent};
use saphyr_parser::{Event, Parser, ScalarStyle, Tag};
use std::borrow::Cow;

const MESSAGE_TAG: &str = "wiseagents.WiseAgentMessage";
/// The handle `!!` stands for.
const CORE: &str = "tag:yaml.org,2002:";
/// `!!python/object/apply:` prefix of the legacy enum form, after the core-schema handle.
const ENUM_TAG_PREFIX: &str = "python/object/apply:wiseagents.";
const ENUM_TAG_SUFFIX: &str = "WiseAgentMessageType";
/// Events a body may produce: six keys and values and a few legacy extras fit in far fewer.
const MAX_EVENTS: usize = 512;
/// Nesting allowed in values of unknown keys (the known ones are scalars).
const MAX_DEPTH: usize = 4;
/// Messages nested in `_message` read at most (`PassThroughClientAgent` nests one).
const MAX_NESTED: usize = 4;

/// Parses a Wise Agents message body.
pub fn parse(body: &[u8]) -> Result<WiseMessage, EnvelopeError> {
    let text = std::str::from_utf8(body).map_err(|e| EnvelopeError::NotUtf8(e.valid_up_to()))?;
    let source = match fast::events(text, MAX_EVENTS) {
        Some(events) => Source::Fast(events.into_iter()),
        None => Source::Full(Box::new(Parser::new_from_str(text))),
    };
    let mut events = Events { source, count: 0 };
    events.expect_start()?;
    let message = read_mapping(&mut events, 0)?;
    events.expect_end()?;
    Ok(message)
}

/// Events from the fast path for PyYAML's usual shape, or from the general parser.
enum Source<'a> {
    Fast(std::vec::IntoIter<Event<'a>>),
    Full(Box<Parser<'a, saphyr_parser::StrInput<'a>>>),
}

struct Events<'a> {
    source: Source<'a>,
    count: usize,
}

impl<'a> Events<'a> {
    fn next(&mut self) -> Result<Event<'a>, EnvelopeError> {
        self.count += 1;
        if self.count > MAX_EVENTS {
            return Err(EnvelopeError::Hostile("more YAML nodes than a Wise Agents message has"));
        }
        let next = match &mut self.source {
            Source::Fast(events) => events.next().map(Ok),
            Source::Full(parser) => parser.next_event().map(|r| r.map(|(event, _)| event)),
        };
        match next {
            Some(Ok(Event::Alias(_))) => {
                Err(EnvelopeError::Hostile("YAML aliases (Wise Agents never writes them)"))
            }
            // Wherever it stands: a PyYAML full Loader would run it, so the body is an attack,
            // not a message with one bad field. The legacy message type enum is the exception.
            Some(Ok(event)) if python_tag(&event).is_some_and(|t| !is_enum_tag(t)) => {
                Err(EnvelopeError::Hostile("a Python object tag (code execution in PyYAML's full Loader)"))
            }
            Some(Ok(event)) => Ok(event),
            Some(Err(e)) => Err(EnvelopeError::Yaml(e.to_string())),
            None => Err(EnvelopeError::Yaml("unexpected end of input".into())),
        }
    }

    fn expect_start(&mut self) -> Result<(), EnvelopeError> {
        while !matches!(self.next()?, Event::DocumentStart(_)) {}
        Ok(())
    }

    fn expect_end(&mut self) -> Result<(), EnvelopeError> {
        loop {
            match self.next()? {
                Event::DocumentEnd => continue,
                Event::StreamEnd => return Ok(()),
                _ => return Err(EnvelopeError::NotWiseAgentMessage("more than one YAML document".into())),
            }
        }
    }
}

fn read_mapping(events: &mut Events<'_>, nested: usize) -> Result<WiseMessage, EnvelopeError> {
    match events.next()? {
        Event::MappingStart(_, Some(tag)) if is_message_tag(&tag) => {}
        Event::MappingStart(_, Some(tag)) | Event::SequenceStart(_, Some(tag)) if is_python_tag(&tag) => {
            return Err(EnvelopeError::Hostile(
                "a Python object tag (code execution in PyYAML's full Loader)",
            ));
        }
        Event::MappingStart(_, Some(tag)) => return Err(wrong(format!("its tag is {}", show_tag(&tag)))),
        Event::MappingStart(_, None) => return Err(wrong("it has no tag".into())),
        Event::SequenceStart(..) => return Err(wrong("it is a sequence, not a mapping".into())),
        Event::Scalar(..) => return Err(wrong("it is a scalar, not a mapping".into())),
        _ => return Err(wrong("the document is empty".into())),
    }
    read_body(events, nested)
}

/// The keys and values of a message mapping whose start was read.
fn read_body(events: &mut Events<'_>, nested: usize) -> Result<WiseMessage, EnvelopeError> {
    let mut fields = Fields::default();
    loop {
        match events.next()? {
            Event::MappingEnd => break,
            Event::Scalar(key, ..) => read_field(events, &key, &mut fields, nested)?,
            _ => return Err(wrong("its keys must be plain strings".into())),
        }
    }
    fields.finish()
}

fn wrong(why: String) -> EnvelopeError {
    EnvelopeError::NotWiseAgentMessage(why)
}

/// The tag of a node event, when it is a Python one.
fn python_tag<'e>(event: &'e Event<'_>) -> Option<&'e Tag> {
    let tag = match event {
        Event::Scalar(_, _, _, tag) | Event::MappingStart(_, tag) | Event::SequenceStart(_, tag) => {
            tag.as_deref()
        }
        _ => None,
    };
    tag.filter(|t| is_python_tag(t))
}

fn is_python_tag(tag: &Tag) -> bool {
    tag.handle == CORE && tag.suffix.starts_with("python/")
}

fn is_message_tag(tag: &Tag) -> bool {
    tag.handle == "!" && tag.suffix == MESSAGE_TAG
}

fn show_tag(tag: &Tag) -> String {
    match tag.handle.as_str() {
        CORE => format!("!!{}", tag.suffix),
        handle => format!("{handle}{}", tag.suffix),
    }
}

/// The fields as read; `None` = key absent, `Some(None)` = null.
#[derive(Default)]
struct Fields {
    message: Option<Option<String>>,
    message_type: Option<Option<Intent>>,
    sender: Option<String>,
    tool_id: Option<String>,
    route_response_to: Option<String>,
    context_name: Option<String>,
    extra: Vec<(String, Option<String>)>,
    /// The type of a message nested in `_message`.
    nested_type: Option<Intent>,
}

impl Fields {
    fn finish(self) -> Result<WiseMessage, EnvelopeError> {
        let message = match self.message {
            None => return Err(EnvelopeError::MissingField("_message")),
            Some(None) => return Err(EnvelopeError::invalid("_message", "is null")),
            Some(Some(m)) => m,
        };
        Ok(WiseMessage {
            message,
            message_type: self.message_type.flatten().or(self.nested_type),
            sender: self.sender,
            tool_id: self.tool_id,
            route_response_to: self.route_response_to,
            context_name: self.context_name,
            extra: self.extra,
        })
    }
}

/// Reads the value of `key`. Later keys replace earlier ones, as PyYAML does.
fn read_field(
    events: &mut Events<'_>,
    key: &str,
    fields: &mut Fields,
    nested: usize,
) -> Result<(), EnvelopeError> {
    match key {
        "_message" => read_message(events, fields, nested)?,
        "_message_type" => fields.message_type = Some(read_type(events)?),
        "_sender" => fields.sender = read_string(events, key)?,
        "_tool_id" => fields.tool_id = read_string(events, key)?,
        "_route_response_to" => fields.route_response_to = read_string(events, key)?,
        "_context_name" => fields.context_name = read_string(events, key)?,
        other => {
            let value = skip_value(events)?;
            fields.extra.push((other.to_owned(), value));
        }
    }
    Ok(())
}

/// `_message`: text, or a whole `WiseAgentMessage` nested in it, as `PassThroughClientAgent`
/// forwards a request (utility_wise_agents.py, `WiseAgentMessage(message=request, ...)`):
/// its text is the message, and its type stands where the outer message has none.
fn read_message(events: &mut Events<'_>, fields: &mut Fields, nested: usize) -> Result<(), EnvelopeError> {
    match events.next()? {
        Event::Scalar(value, style, _, tag) => {
            fields.message = Some(scalar_text(value, style, tag.as_deref(), "_message")?);
        }
        Event::MappingStart(_, Some(tag)) if is_message_tag(&tag) && nested < MAX_NESTED => {
            let inner = read_body(events, nested + 1)?;
            fields.message = Some(Some(inner.message));
            fields.nested_type = inner.message_type;
        }
        Event::MappingStart(_, Some(tag)) if is_message_tag(&tag) => {
            return Err(EnvelopeError::Hostile("messages nested deeper than a Wise Agents message"));
        }
        Event::MappingStart(..) => {
            return Err(EnvelopeError::invalid("_message", "must be a string or a message, found a mapping"));
        }
        Event::SequenceStart(..) => {
            return Err(EnvelopeError::invalid("_message", "must be a string, found a sequence"));
        }
        _ => return Err(EnvelopeError::invalid("_message", "has no value")),
    }
    Ok(())
}

/// A scalar as a string: null forms read as `None`; other plain scalars (`yes`, `123`)
/// keep their text, since a bridge has no use for PyYAML's bool or int.
fn read_string(events: &mut Events<'_>, key: &str) -> Result<Option<String>, EnvelopeError> {
    match events.next()? {
        Event::Scalar(value, style, _, tag) => scalar_text(value, style, tag.as_deref(), key),
        Event::MappingStart(..) => Err(EnvelopeError::invalid(key, "must be a string, found a mapping")),
        Event::SequenceStart(..) => Err(EnvelopeError::invalid(key, "must be a string, found a sequence")),
        _ => Err(EnvelopeError::invalid(key, "has no value")),
    }
}

fn scalar_text(
    value: Cow<'_, str>,
    style: ScalarStyle,
    tag: Option<&Tag>,
    key: &str,
) -> Result<Option<String>, EnvelopeError> {
    let core = |t: &Tag, name: &str| t.handle == CORE && t.suffix == name;
    match tag {
        None if style == ScalarStyle::Plain && is_yaml11_null(&value) => Ok(None),
        None => Ok(Some(value.into_owned())),
        Some(t) if core(t, "str") => Ok(Some(value.into_owned())),
        Some(t) if core(t, "null") => Ok(None),
        Some(t) => Err(EnvelopeError::invalid(key, format!("has an unsupported tag {}", show_tag(t)))),
    }
}

fn is_yaml11_null(plain: &str) -> bool {
    matches!(plain, "" | "~" | "null" | "Null" | "NULL")
}

/// `_message_type`: a name, null or `''`, or the legacy `!!python/object/apply` enum form
/// holding a name or (before 2024-09) a number.
fn read_type(events: &mut Events<'_>) -> Result<Option<Intent>, EnvelopeError> {
    match events.next()? {
        Event::Scalar(value, style, _, tag) => {
            match scalar_text(value, style, tag.as_deref(), "_message_type")? {
                None => Ok(None),
                Some(name) if name.is_empty() => Ok(None),
                Some(name) => Intent::from_name(&name).map(Some).ok_or(EnvelopeError::UnknownType(name)),
            }
        }
        Event::SequenceStart(_, Some(tag)) if is_enum_tag(&tag) => read_legacy_enum(events).map(Some),
        Event::SequenceStart(_, Some(tag)) if is_python_tag(&tag) => {
            Err(EnvelopeError::Hostile("a Python object tag other than the message type enum"))
        }
        _ => Err(EnvelopeError::invalid("_message_type", "must be a type name")),
    }
}

fn is_enum_tag(tag: &Tag) -> bool {
    tag.handle == CORE && tag.suffix.starts_with(ENUM_TAG_PREFIX) && tag.suffix.ends_with(ENUM_TAG_SUFFIX)
}

fn read_legacy_enum(events: &mut Events<'_>) -> Result<Intent, EnvelopeError> {
    let Event::Scalar(value, ..) = events.next()? else {
        return Err(EnvelopeError::invalid("_message_type", "the enum form must hold one name or number"));
    };
    let intent = match value.parse::<i64>() {
        Ok(n) => Intent::from_legacy_number(n),
        Err(_) => Intent::from_name(&value),
    }
    .ok_or_else(|| EnvelopeError::UnknownType(value.clone().into_owned()))?;
    match events.next()? {
        Event::SequenceEnd => Ok(intent),
        _ => Err(EnvelopeError::invalid("_message_type", "the enum form must hold exactly one item")),
    }
}

/// Skips the value of an unknown key, keeping it if it is an untagged scalar.
fn skip_value(events: &mut Events<'_>) -> Result<Option<String>, EnvelopeError> {
    match events.next()? {
        Event::Scalar(value, style, _, None) => {
            Ok((!(style == ScalarStyle::Plain && is_yaml11_null(&value))).then(|| value.into_owned()))
        }
        Event::Scalar(..) => Ok(None),
        Event::MappingStart(..) | Event::SequenceStart(..) => skip_collection(events, 1).map(|_| None),
        _ => Err(EnvelopeError::Yaml("unexpected structure".into())),
    }
}

/// Skips the rest of a collection that was opened at `depth`.
fn skip_collection(events: &mut Events<'_>, depth: usize) -> Result<(), EnvelopeError> {
    if depth > MAX_DEPTH {
        return Err(EnvelopeError::Hostile("YAML nested deeper than a Wise Agents message"));
    }
    loop {
        match events.next()? {
            Event::MappingEnd | Event::SequenceEnd => return Ok(()),
            Event::MappingStart(..) | Event::SequenceStart(..) => skip_collection(events, depth + 1)?,
            _ => {}
        }
    }
}
