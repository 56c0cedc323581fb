"""The reference tool's ``openadapt_evals.agents.scripted_agent`` path, for code importing its
simple agents from there (see docs/compat.md for what differs)."""

from __future__ import annotations

from evals.agents.builtin import RandomAgent, ScriptedAgent, SmartMockAgent

__all__ = ["RandomAgent", "ScriptedAgent", "SmartMockAgent"]
