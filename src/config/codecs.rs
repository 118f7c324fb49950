//! What the configuration decides for the codecs: defaults, Civitas's encoding, the VOX
//! registry, PenguiFlow's tenant.

use super::Config;
use crate::envelope::codecs::Codecs;
use crate::envelope::penguiflow::PenguiOptions;
use crate::envelope::vox::{Registry, VoxOptions};

/// The codecs' settings from the configuration; the VOX registry holds every configured
/// agent, native and proxied.
pub fn codecs(config: &Config) -> Codecs {
    let mut registry =
        Registry::new(config.protocols.vox.as_ref().map_or(uuid::Uuid::nil(), |v| v.namespace));
    for name in &config.wiseagents.agents {
        registry.add(name, None);
    }
    for agent in &config.agents {
        registry.add(&agent.name, agent.uuid);
    }
    let vox = config.protocols.vox.as_ref();
    Codecs {
        default_context: config.wiseagents.default_context.clone(),
        civitas_encoding: config.protocols.civitas.as_ref().map(|c| c.encoding).unwrap_or_default(),
        vox: VoxOptions {
            registry,
            message_source: vox.map_or("wiseagents".into(), |v| v.message_source.clone()),
        },
        penguiflow: config.protocols.penguiflow.as_ref().map_or_else(PenguiOptions::default, |p| {
            PenguiOptions { tenant: p.tenant.clone(), response_as_final_answer: p.response_as_final_answer }
        }),
    }
}
