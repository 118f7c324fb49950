//! One way of emitting: every event counts itself in its metrics (and records its spans),
//! then says its log line, within its budget when it can come in floods
//! ([`super::limit`]). Logs, metrics and traces come from the same event, so they never
//! disagree.

use super::limit::LogLimit;

/// Something that happened that an operator can observe.
pub trait Event {
    /// The metrics it counts in (`()` for an event counted nowhere).
    type Metrics: ?Sized;
    /// What counting learned that the line says (a state it changed, a count reached): `()`
    /// for most events.
    type Counted;

    /// Counts it, first, so that its line can say what changed.
    fn count(&self, metrics: &Self::Metrics) -> Self::Counted;

    /// The budget of its lines, for an event that can come in floods (one per message or per
    /// call); `None`: every line is said (rare events, or said once per change of state).
    fn limit<'m>(&self, _metrics: &'m Self::Metrics) -> Option<&'m LogLimit> {
        None
    }

    /// Says its line; `left_out`: lines of it its budget left out before this one.
    fn log(&self, counted: &Self::Counted, left_out: u64);

    /// Counts it, then says its line if its budget admits one.
    fn emit(&self, metrics: &Self::Metrics) -> Self::Counted {
        emit_within(self, metrics, self.limit(metrics))
    }
}

/// [`Event::emit`] within the budget `limit` (a test's own).
pub fn emit_within<E: Event + ?Sized>(
    event: &E,
    metrics: &E::Metrics,
    limit: Option<&LogLimit>,
) -> E::Counted {
    let counted = event.count(metrics);
    if let Some(left_out) = limit.map_or(Some(0), LogLimit::admit) {
        event.log(&counted, left_out);
    }
    counted
}
