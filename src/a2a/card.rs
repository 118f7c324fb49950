//! Each served agent's AgentCard (A2A 1.0): its JSON-RPC and HTTP+JSON interfaces at `/a2a/<Agent>`
//! (and A2A 0.3's JSON-RPC, last), streaming, text in and out, and the bearer scheme when a
//! token is required (a JWT with `[a2a.jwt]`).

use super::{A2aService, v03};
use a2a::{AgentCapabilities, AgentCard, AgentInterface, AgentSkill, HttpAuthSecurityScheme, SecurityScheme};
use std::collections::HashMap;

/// The modes of a Wise Agents message: text, and JSON data carried as its text.
pub const INPUT_MODES: [&str; 2] = ["text/plain", "application/json"];
pub const OUTPUT_MODES: [&str; 1] = ["text/plain"];

const SCHEME: &str = "bearer";

/// The interfaces served (binding and protocol version), at one URL, in the order of the
/// bridge's preference (A2A 1.0 §5.6: the first is preferred): JSON-RPC at the URL itself,
/// HTTP+JSON below it, and A2A 0.3's JSON-RPC at the URL itself, for the clients that speak
/// only 0.3 (they read the card's 0.3 fields, which name it).
const INTERFACES: [(&str, &str); 3] = [("JSONRPC", "1.0"), ("HTTP+JSON", "1.0"), ("JSONRPC", v03::VERSION)];

/// `agent`'s card, its interface under `base` (the listener's public URL).
pub fn card(hub: &A2aService, agent: &str, base: &str, about: String) -> AgentCard {
    let c = &hub.config;
    let description = match (&c.token, &c.jwt) {
        (Some(_), None) => Some("the token of the bridge's a2a.token_file".to_owned()),
        (token, Some(jwt)) => Some(format!(
            "a JWT of issuer {} for audience {}{}",
            jwt.issuer,
            jwt.audience,
            if token.is_some() { ", or the token of the bridge's a2a.token_file" } else { "" }
        )),
        (None, None) => None,
    };
    let (security_schemes, security_requirements) = match description {
        Some(description) => {
            let scheme = SecurityScheme::HttpAuth(HttpAuthSecurityScheme {
                scheme: "Bearer".into(),
                description: Some(description),
                bearer_format: c.jwt.as_ref().map(|_| "JWT".to_owned()),
            });
            (
                Some(HashMap::from([(SCHEME.to_owned(), scheme)])),
                Some(vec![HashMap::from([(SCHEME.to_owned(), vec![])])]),
            )
        }
        None => (None, None),
    };
    AgentCard {
        name: agent.to_owned(),
        description: about.clone(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        supported_interfaces: INTERFACES
            .iter()
            .map(|(binding, version)| AgentInterface {
                url: format!("{}/a2a/{agent}", base.trim_end_matches('/')),
                protocol_binding: (*binding).into(),
                protocol_version: (*version).into(),
                tenant: None,
            })
            .collect(),
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(hub.pusher.is_some()),
            extensions: None,
            extended_agent_card: Some(false),
        },
        default_input_modes: INPUT_MODES.map(String::from).to_vec(),
        default_output_modes: OUTPUT_MODES.map(String::from).to_vec(),
        skills: vec![AgentSkill {
            id: agent.to_owned(),
            name: agent.to_owned(),
            description: about,
            tags: vec!["wiseagents".into()],
            examples: None,
            input_modes: None,
            output_modes: None,
            security_requirements: None,
        }],
        provider: None,
        documentation_url: None,
        icon_url: None,
        security_schemes,
        security_requirements,
        signatures: None,
    }
}
