//! Duplicate ids on what the bridge publishes, so that a broker with duplicate detection
//! (ActiveMQ Artemis) drops a SEND republished after a crash instead of delivering it twice.

use crate::stomp::Message;

/// Artemis's duplicate-detection header: a SEND whose id its address has already seen (cache of
/// 20,000 ids per address by default) is confirmed and dropped. Other brokers pass it on as an
/// ordinary header.
pub const DUPLICATE_ID: &str = "_AMQ_DUPL_ID";

/// The duplicate id of the `index`th SEND caused by `source`: the same whenever the broker
/// redelivers `source`. Built from its queue and the broker's id of the message: Artemis's
/// `message-id` is `<consumer>,<message>`, whose consumer part changes on every redelivery
/// (tests/artemis.rs), so only the part after the last comma is kept; ActiveMQ Classic's id
/// has no comma and is kept whole.
pub fn duplicate_id(source: &Message, index: usize) -> String {
    let id = source.ack.message_id.as_str();
    let message = id.rsplit_once(',').map_or(id, |(_, message)| message);
    format!("{}|{message}|{index}", source.destination)
}

#[cfg(test)]
#[path = "dedup_tests.rs"]
mod tests;
