"""A MODEL of VOX, which is not published: only the surface the vox-stomp adapter touches,
written from shared/REFERENCE.md and the VOX documentation seed (vox/messaging/models.py,
the message-type constants, orchestrator.dispatch_inbound_message wrapped for SecurityError,
agent.emit / role handlers registered with agent.on). Where VOX's documentation is silent
(how an agent sends a VOXMessage, how the orchestrator finds the target agent, what the
guardrail refuses) the choices are this model's, and docs/VOX.md says so."""
