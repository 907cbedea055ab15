"""himga.agent: an agent that answers from its memory with a language model (BaseAgent)."""

from himga.agent.base import ANSWER_TOKENS, Answer, BaseAgent, Prompt

__all__ = ["ANSWER_TOKENS", "Answer", "BaseAgent", "Prompt"]
