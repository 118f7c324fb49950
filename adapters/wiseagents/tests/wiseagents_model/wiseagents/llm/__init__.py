from wiseagents.llm.wise_agent_LLM import WiseAgentLLM

__all__ = ["WiseAgentLLM"]
