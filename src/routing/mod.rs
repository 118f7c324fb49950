//! Where messages come from and where they go: the destinations the bridge consumes, what
//! each one is, and the destination of a translated message. Pure: no I/O.

pub mod reply_base;
pub mod table;

use crate::config::Config;
use crate::envelope::civitas::Encoding;
use crate::envelope::codecs::Framework;
use crate::envelope::{Direction, Envelope};
use crate::names::{glob_matches, is_agent_name, is_glob};
use std::collections::HashMap;

/// Why a message cannot be routed (it is dead-lettered).
#[derive(Debug, thiserror::Error)]
pub enum RouteError {
    #[error("the message names no recipient")]
    NoRecipient,
    #[error("{0:?} is not an agent name a destination can be made of")]
    BadRecipient(String),
}

/// What a consumed destination is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A Wise Agents queue of a proxied agent: its request or response queue.
    WiseAgents { agent: String, direction: Direction },
    /// A framework's ingress, where its agents send to agents of other frameworks.
    Ingress(Framework),
}

/// A proxied agent: the framework it lives in and where it receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proxied {
    pub framework: Framework,
    pub inbox: String,
    pub encoding: Option<Encoding>,
}

/// Where a translated message goes, in which format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub framework: Framework,
    pub destination: String,
    /// Civitas's encoding for this agent, when it has its own.
    pub encoding: Option<Encoding>,
}

/// The routing table built from the configuration.
#[derive(Debug, Clone)]
pub struct Router {
    request_prefix: String,
    response_prefix: String,
    proxied: HashMap<String, Proxied>,
    /// Agents named by a glob: the glob, and the agent with its inbox still a template.
    patterns: Vec<(String, Proxied)>,
    ingress: Vec<(String, Framework)>,
    /// Civitas's inbox template, where a `_reply.*` address gets its answer.
    civitas_inbox: Option<String>,
    /// The bridge's own name towards Wise Agents (`wiseagents.reply_agent`, [`REPLY_AGENT`](crate::config::REPLY_AGENT) by
    /// default).
    reply_agent: String,
    /// Whether answers come to the reply agent: asks from another framework's ingress, or
    /// from A2A clients (`[a2a]`) or MCP clients (`[mcp]`).
    asks_as_reply_agent: bool,
    /// Whether some proxied agents are A2A agents (their answers come from [`A2A_ANSWERS`]).
    calls_a2a: bool,
}

/// The destination of a request to an A2A agent (`a2a-call:<agent>`): not on the broker; the
/// engine hands such a frame to the A2A call stage (the `a2a` layer), which calls the agent
/// over HTTP.
pub const A2A_CALL_PREFIX: &str = "a2a-call:";

/// Where, to the pipeline, an A2A agent's answer comes from (the call stage hands it over).
pub const A2A_ANSWERS: &str = "a2a-answers:";

/// On an A2A agent's answer: the agent's name (an A2A task does not name its agent).
pub const A2A_AGENT_HEADER: &str = "bridge-a2a-agent";

/// The prefix of Civitas's ephemeral reply addresses (`request()` sets `reply_to` to
/// `_reply.<uuid7>` and waits there).
pub const CIVITAS_REPLY_PREFIX: &str = "_reply.";

impl Router {
    pub fn new(config: &Config) -> Self {
        let p = &config.protocols;
        let inboxes = [
            (Framework::Civitas, p.civitas.as_ref().map(|c| (c.inbox.clone(), c.ingress.clone()))),
            (Framework::Vox, p.vox.as_ref().map(|c| (c.inbox.clone(), c.ingress.clone()))),
            (Framework::PenguiFlow, p.penguiflow.as_ref().map(|c| (c.inbox.clone(), c.ingress.clone()))),
        ];
        let template = |fw: Framework| inboxes.iter().find(|(f, _)| *f == fw).and_then(|(_, d)| d.clone());
        let (mut proxied, mut patterns) = (HashMap::new(), Vec::new());
        for a in &config.agents {
            let fw = a.protocol;
            let a2a = (fw == Framework::A2a).then(|| (format!("{A2A_CALL_PREFIX}{{agent}}"), String::new()));
            let Some((inbox, _)) = a2a.or_else(|| template(fw)) else { continue };
            let agent = Proxied { framework: fw, inbox, encoding: a.encoding };
            if is_glob(&a.name) {
                patterns.push((a.name.clone(), agent));
            } else {
                let inbox = agent.inbox.replace("{agent}", &a.name);
                proxied.insert(a.name.clone(), Proxied { inbox, ..agent });
            }
        }
        let ingress: Vec<(String, Framework)> =
            inboxes.iter().filter_map(|(fw, d)| d.as_ref().map(|(_, ing)| (ing.clone(), *fw))).collect();
        Router {
            request_prefix: config.wiseagents.request_prefix.clone(),
            response_prefix: config.wiseagents.response_prefix.clone(),
            proxied,
            patterns,
            civitas_inbox: template(Framework::Civitas).map(|(inbox, _)| inbox),
            reply_agent: config.wiseagents.reply_agent.clone(),
            asks_as_reply_agent: !ingress.is_empty() || config.a2a.is_some() || config.mcp.is_some(),
            calls_a2a: config.agents.iter().any(|a| a.protocol == Framework::A2a),
            ingress,
        }
    }

    /// The name the bridge asks as for askers without a response queue it consumes.
    pub fn reply_agent(&self) -> &str {
        &self.reply_agent
    }

    /// Whether some agents are named by a glob (their queues are discovered).
    pub fn has_patterns(&self) -> bool {
        !self.patterns.is_empty()
    }

    /// For a queue the broker announced (ActiveMQ's physical name, like `request/Foo`): the
    /// destination to consume, when it is the request or response queue of an agent that
    /// only a glob names.
    pub fn discover(&self, physical_name: &str) -> Option<String> {
        let destination = format!("/queue/{physical_name}");
        match self.classify(&destination)? {
            Source::WiseAgents { agent, .. }
                if !self.proxied.contains_key(&agent) && agent != self.reply_agent =>
            {
                Some(destination)
            }
            _ => None,
        }
    }

    /// Every destination the bridge consumes: the Wise Agents request and response queues of
    /// each proxied agent (an A2A agent's request queue only), each framework's ingress, and the response queue of
    /// [`Router::reply_agent`] when it asks. Sorted, so runs are repeatable.
    pub fn subscriptions(&self) -> Vec<String> {
        // An A2A agent asks no one: nothing answers it on its response queue, and what came
        // there would be sent to it as a new task.
        let mut out: Vec<String> = self
            .proxied
            .iter()
            .flat_map(|(name, p)| {
                let response =
                    (p.framework != Framework::A2a).then(|| format!("{}{name}", self.response_prefix));
                std::iter::once(format!("{}{name}", self.request_prefix)).chain(response)
            })
            .chain(self.ingress.iter().map(|(d, _)| d.clone()))
            .chain(self.asks_as_reply_agent.then(|| format!("{}{}", self.response_prefix, self.reply_agent)))
            .collect();
        out.sort();
        out
    }

    /// What a MESSAGE's destination is. ActiveMQ's path-separator plugin names
    /// `/queue/request/Foo` as `/queue/request.Foo`; both are recognised.
    pub fn classify(&self, destination: &str) -> Option<Source> {
        if let Some((_, fw)) = self.ingress.iter().find(|(d, _)| d == destination) {
            return Some(Source::Ingress(*fw));
        }
        if self.calls_a2a && destination == A2A_ANSWERS {
            return Some(Source::Ingress(Framework::A2a));
        }
        for (prefix, direction) in
            [(&self.request_prefix, Direction::Request), (&self.response_prefix, Direction::Response)]
        {
            let agent = strip_prefix_either(destination, prefix);
            let reply_agent = |a: &str| {
                direction == Direction::Response && a == self.reply_agent && self.asks_as_reply_agent
            };
            if let Some(agent) = agent.filter(|a| self.proxied(a).is_some() || reply_agent(a)) {
                return Some(Source::WiseAgents { agent: agent.to_owned(), direction });
            }
        }
        None
    }

    /// The proxied agent of this name, named exactly or by a glob.
    pub fn proxied(&self, name: &str) -> Option<Proxied> {
        if let Some(p) = self.proxied.get(name) {
            return Some(p.clone());
        }
        let (_, p) =
            self.patterns.iter().find(|(glob, _)| is_agent_name(name) && glob_matches(glob, name))?;
        Some(Proxied { inbox: p.inbox.replace("{agent}", name), ..p.clone() })
    }

    /// Where `env` goes: a proxied recipient's inbox in its framework, or a native agent's
    /// Wise Agents request or response queue (by the envelope's direction). An answer to a
    /// Civitas `_reply.*` address goes to the inbox of the agent that asked
    /// ([`Envelope::reply_via`]) when that is a proxied Civitas agent, else to the inbox
    /// template with `{agent}` = the address.
    pub fn target(&self, env: &Envelope) -> Result<Target, RouteError> {
        let name = env.recipient.as_deref().filter(|n| !n.is_empty()).ok_or(RouteError::NoRecipient)?;
        if let Some(p) = self.proxied(name) {
            return Ok(Target { framework: p.framework, destination: p.inbox, encoding: p.encoding });
        }
        if let (Some(inbox), true) = (&self.civitas_inbox, name.starts_with(CIVITAS_REPLY_PREFIX)) {
            if !is_agent_name(name) {
                return Err(RouteError::BadRecipient(name.to_owned()));
            }
            let asker = env.reply_via.as_deref().and_then(|a| self.proxied(a));
            if let Some(p) = asker.filter(|p| p.framework == Framework::Civitas) {
                return Ok(Target { framework: p.framework, destination: p.inbox, encoding: p.encoding });
            }
            let destination = inbox.replace("{agent}", name);
            return Ok(Target { framework: Framework::Civitas, destination, encoding: None });
        }
        if !is_agent_name(name) {
            return Err(RouteError::BadRecipient(name.to_owned()));
        }
        let prefix = match env.direction {
            Direction::Request => &self.request_prefix,
            Direction::Response => &self.response_prefix,
        };
        Ok(Target {
            framework: Framework::WiseAgents,
            destination: format!("{prefix}{name}"),
            encoding: None,
        })
    }
}

/// `destination` without `prefix`, or without the prefix with its last `/` written `.`.
fn strip_prefix_either<'a>(destination: &'a str, prefix: &str) -> Option<&'a str> {
    destination.strip_prefix(prefix).or_else(|| {
        let dotted = prefix.strip_suffix('/').map(|p| format!("{p}."))?;
        destination.strip_prefix(dotted.as_str())
    })
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
