//! An A2A message as the text of the Wise Agents request that asks it; pure.

use super::error::A2aFailure;
use a2a::{Message, PartContent};

/// The text a Wise Agents agent reads (`_message`): the message's text parts, and its data
/// parts as JSON text, in order, one per line. A file (raw bytes or a URL) has no place in a
/// Wise Agents message: refused with why.
pub fn question(message: &Message) -> Result<String, A2aFailure> {
    let mut lines = Vec::with_capacity(message.parts.len());
    for part in &message.parts {
        match &part.content {
            PartContent::Text(text) => lines.push(text.clone()),
            PartContent::Data(value) => lines.push(value.to_string()),
            PartContent::Raw(_) => return Err(A2aFailure::Uncarried { what: "a file part (raw bytes)" }),
            PartContent::Url(_) => return Err(A2aFailure::Uncarried { what: "a file part (a URL)" }),
        }
    }
    if lines.is_empty() {
        return Err(A2aFailure::NoText);
    }
    Ok(lines.join("\n"))
}
