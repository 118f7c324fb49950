//! Generators of message fields for property and interop tests.

use proptest::prelude::*;
use stomp_agent_bridge::envelope::Intent;
use stomp_agent_bridge::envelope::wiseagents::WiseMessage;

/// Strings that stress every format: any Unicode, YAML 1.1 look-alikes, indicators,
/// controls, quotes, line breaks of every kind.
pub fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "\\PC{0,60}",
        "[ -~\\t\\n\\r]{0,90}",
        "[\\x00-\\x7f]{0,30}",
        "[a-z\\n' \"\\\\:#-]{0,40}",
        prop::sample::select(vec![
            "yes",
            "No",
            "on",
            "OFF",
            "y",
            "n",
            "true",
            "null",
            "~",
            "123",
            "1_000",
            "0x1F",
            "1:20",
            "2024-01-01",
            "",
            " ",
            " lead",
            "trail ",
            "a: b",
            "- item",
            "? q",
            "!tag",
            "&a",
            "*a",
            "%x",
            "@x",
            "`x",
            "|",
            ">",
            "{a}",
            "[b]",
            "#",
            "'",
            "\"",
            "\\",
            "\u{85}",
            "\u{a0}",
            "\u{2028}",
            "\u{feff}",
            "\u{fffe}",
            "\u{7f}\u{80}\u{9f}",
            "😀 \u{10ffff}",
            ".inf",
            "-.5",
            "0o17",
            "1e3",
            "<<",
            "=",
        ])
        .prop_map(String::from),
    ]
}

/// A message with any text, any type, and a sender from `sender`.
pub fn wise_message(sender: impl Strategy<Value = Option<String>>) -> impl Strategy<Value = WiseMessage> {
    let opt = || prop::option::of(text());
    let intent = prop::option::of(prop::sample::select(Intent::ALL.to_vec()));
    (text(), intent, sender, opt(), opt(), opt()).prop_map(
        |(message, message_type, sender, tool_id, rrt, context)| WiseMessage {
            message,
            message_type,
            sender,
            tool_id,
            route_response_to: rrt,
            context_name: context,
            extra: Vec::new(),
        },
    )
}
