//! Where an A2A task's trace starts (docs/OBSERVABILITY.md): the client's `traceparent` HTTP
//! header or, without one, a `traceparent` key in the message's metadata.

use crate::envelope::trace::SpanContext;
use a2a_server::ExecutorContext;

/// The key of a message's metadata read for a `traceparent` when the request has no header.
pub const METADATA_KEY: &str = "traceparent";

/// The span the client's request continues, if it named one.
pub fn arrived(ctx: &ExecutorContext) -> Option<SpanContext> {
    let header = ctx.service_params.get("traceparent").and_then(|v| v.first()).map(String::as_str);
    let metadata = ctx.message.as_ref().and_then(|m| m.metadata.as_ref()).and_then(|m| m.get(METADATA_KEY));
    header.or(metadata.and_then(|v| v.as_str())).and_then(SpanContext::parse)
}
