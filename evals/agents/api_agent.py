"""The reference tool's ``openadapt_evals.agents.api_agent`` path, for code importing
:class:`ApiAgent` from there (see docs/compat.md for what differs)."""

from __future__ import annotations

from evals.agents.builtin import ApiAgent

__all__ = ["ApiAgent"]
