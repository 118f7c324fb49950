//! Bytes ↔ envelope for every framework, behind one interface: what the bridge pipeline,
//! the `translate` command and the benchmarks call.

use super::a2a;
use super::civitas::{self, CivitasMessage, Encoding};
use super::penguiflow::{self, PenguiMessage, PenguiOptions};
use super::vox::{self, Registry, VoxMessage, VoxOptions};
use super::wiseagents::{self, WiseMessage};
use super::{Clock, Direction, Envelope, EnvelopeError};
use std::fmt;
use std::str::FromStr;

/// The agent frameworks the bridge speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Framework {
    WiseAgents,
    Civitas,
    Vox,
    PenguiFlow,
    /// An A2A 1.0 agent, reached over HTTP (the A2A call stage), not on the broker.
    A2a,
}

impl Framework {
    pub const fn as_str(self) -> &'static str {
        match self {
            Framework::WiseAgents => "wiseagents",
            Framework::Civitas => "civitas",
            Framework::Vox => "vox",
            Framework::PenguiFlow => "penguiflow",
            Framework::A2a => "a2a",
        }
    }
}

impl fmt::Display for Framework {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Framework {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "wiseagents" | "wise-agents" | "wise_agents" => Ok(Framework::WiseAgents),
            "civitas" => Ok(Framework::Civitas),
            "vox" => Ok(Framework::Vox),
            "penguiflow" => Ok(Framework::PenguiFlow),
            "a2a" => Ok(Framework::A2a),
            other => {
                Err(format!("unknown framework {other:?} (wiseagents, civitas, vox, penguiflow or a2a)"))
            }
        }
    }
}

/// Where an incoming body came from, as far as its format cannot say itself.
#[derive(Debug, Clone, Copy)]
pub struct Origin<'a> {
    /// Request or response (Wise Agents tells by its queue).
    pub direction: Direction,
    /// The agent whose queue it was on (Wise Agents has no recipient field).
    pub recipient: &'a str,
    /// The STOMP `content-type` header, if any.
    pub content_type: Option<&'a str>,
}

/// An encoded body and the `content-type` to send it with (none for Wise Agents, whose
/// own SENDs carry none).
#[derive(Debug, Clone, PartialEq)]
pub struct Encoded {
    pub body: Vec<u8>,
    pub content_type: Option<&'static str>,
}

/// Everything the codecs need from configuration.
#[derive(Debug, Clone)]
pub struct Codecs {
    /// The context a Wise Agents message gets when the source had none.
    pub default_context: String,
    pub civitas_encoding: Encoding,
    pub vox: VoxOptions,
    pub penguiflow: PenguiOptions,
}

impl Default for Codecs {
    fn default() -> Self {
        Codecs {
            default_context: "default".into(),
            civitas_encoding: Encoding::Json,
            vox: VoxOptions {
                registry: Registry::new(uuid::Uuid::nil()),
                message_source: "wiseagents".into(),
            },
            penguiflow: PenguiOptions::default(),
        }
    }
}

impl Codecs {
    /// Reads a body of `framework` into an envelope; what it lacks and its framework would
    /// default (a time, an id) comes from `clock`.
    pub fn decode(
        &self,
        framework: Framework,
        body: &[u8],
        origin: Origin<'_>,
        clock: &mut impl Clock,
    ) -> Result<Envelope, EnvelopeError> {
        match framework {
            Framework::WiseAgents => {
                Ok(wiseagents::to_envelope(WiseMessage::parse(body)?, origin.direction, origin.recipient))
            }
            Framework::Civitas => {
                let encoding = Encoding::of(origin.content_type, body)?;
                civitas::to_envelope(CivitasMessage::decode(body, encoding)?, clock)
            }
            Framework::Vox => vox::to_envelope(VoxMessage::decode(body)?, &self.vox),
            Framework::PenguiFlow => penguiflow::to_envelope(PenguiMessage::decode(body)?, clock),
            Framework::A2a => a2a::to_envelope(body, origin.recipient),
        }
    }

    /// Writes an envelope as a body of `framework`; Civitas in `civitas` encoding, or the
    /// configured one; new ids and a missing time come from `clock`.
    pub fn encode(
        &mut self,
        framework: Framework,
        env: &Envelope,
        civitas: Option<Encoding>,
        clock: &mut impl Clock,
    ) -> Result<Encoded, EnvelopeError> {
        const JSON: Option<&str> = Some("application/json");
        Ok(match framework {
            Framework::WiseAgents => Encoded {
                body: wiseagents::from_envelope(env, &self.default_context).to_yaml().into_bytes(),
                content_type: None,
            },
            Framework::Civitas => {
                let encoding = civitas.unwrap_or(self.civitas_encoding);
                Encoded {
                    body: civitas::from_envelope(env, clock)?.encode(encoding)?,
                    content_type: Some(encoding.content_type()),
                }
            }
            Framework::Vox => {
                Encoded { body: vox::from_envelope(env, &mut self.vox, clock)?.encode()?, content_type: JSON }
            }
            Framework::PenguiFlow => Encoded {
                body: penguiflow::from_envelope(env, &self.penguiflow, clock).encode()?,
                content_type: JSON,
            },
            Framework::A2a => Encoded { body: a2a::encode(env)?, content_type: JSON },
        })
    }

    /// Decode then encode: one translation.
    pub fn translate(
        &mut self,
        from: Framework,
        to: Framework,
        body: &[u8],
        origin: Origin<'_>,
        clock: &mut impl Clock,
    ) -> Result<Encoded, EnvelopeError> {
        let env = self.decode(from, body, origin, clock)?;
        self.encode(to, &env, None, clock)
    }
}
