from wiseagents.agents.coordinator_wise_agents import (
    PhasedCoordinatorWiseAgent,
    SequentialCoordinatorWiseAgent,
    SequentialMemoryCoordinatorWiseAgent,
)
from wiseagents.agents.utility_wise_agents import LLMOnlyWiseAgent, PassThroughClientAgent

__all__ = [
    "PhasedCoordinatorWiseAgent",
    "SequentialCoordinatorWiseAgent",
    "SequentialMemoryCoordinatorWiseAgent",
    "PassThroughClientAgent",
    "LLMOnlyWiseAgent",
]
