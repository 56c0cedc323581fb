"""Agents: the interface, the built-ins by name, and third-party agents as ``module:Class``.

Built-ins: ``noop`` (done at once), ``oracle`` (a local task's reference solution), ``random``
(the reference solution with probability ``p``, else done: ``--agent-arg p=0.3``), ``replay``
(``--bundles DIR``: a workflow bundle per task), ``http`` (``--agent-url URL``: any agent behind
a URL), ``api-claude`` and ``api-openai`` (the model APIs' computer-use tools). Any other agent
is named ``package.module:ClassName`` (modules in the current folder are found too); the class
must subclass :class:`BenchmarkAgent`. Options given as ``--agent-arg key=value`` become keyword
arguments of its constructor.
"""

from __future__ import annotations

import inspect
import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.agents.base import (
    BenchmarkAction,
    BenchmarkAgent,
    BenchmarkObservation,
    BenchmarkTask,
    parse_action,
)
from evals.agents.builtin import (
    ApiAgent,
    RandomAgent,
    ScriptedAgent,
    SmartMockAgent,
    action_to_string,
    format_accessibility_tree,
    parse_accessibility_tree,
    parse_action_response,
)
from evals.agents.module_spec import import_module_here
from evals.errors import EvalsError, InvalidRunInputError, UnknownAgentError
from oa_vm.kit.validate import module_spec_problem

__all__ = [
    "BUILTIN_AGENTS",
    "ApiAgent",
    "RandomAgent",
    "ScriptedAgent",
    "SmartMockAgent",
    "action_to_string",
    "format_accessibility_tree",
    "parse_accessibility_tree",
    "parse_action_response",
    "AgentFactory",
    "AgentOptions",
    "BenchmarkAction",
    "BenchmarkAgent",
    "BenchmarkObservation",
    "BenchmarkTask",
    "agent_factory",
    "create_agent",
    "load_agent_class",
    "parse_action",
]

BUILTIN_AGENTS: dict[str, str] = {
    "noop": "evals.agents.noop:NoopAgent",
    "oracle": "evals.agents.oracle:OracleAgent",
    "random": "evals.agents.chance:ChanceAgent",
    "replay": "evals.agents.replay:ReplayAgent",
    "http": "evals.agents.http:HttpAgent",
    "api-claude": "evals.agents.api_claude:ClaudeComputerUseAgent",
    "api-openai": "evals.agents.api_openai:OpenAIComputerUseAgent",
}
MODEL_AGENTS = ("api-claude", "api-openai")


@dataclass(frozen=True)
class AgentOptions:
    """Options some built-in agents need.

    Attributes:
        bundles: The replay agent's bundle folder (``--bundles``).
        agent_url: The http agent's endpoint (``--agent-url``).
        http_timeout_s: Seconds the http agent waits for each answer.
        args: ``key=value`` options for the agent's constructor (``--agent-arg``).
    """

    bundles: Path | None = None
    agent_url: str | None = None
    http_timeout_s: float = 120.0
    args: tuple[str, ...] = ()


def load_agent_class(spec: str) -> type[BenchmarkAgent]:
    """The agent class a name or ``module:Class`` stands for.

    Raises:
        UnknownAgentError: not a built-in name, or the import fails, or the attribute is not a
            :class:`BenchmarkAgent` subclass (the message says which).
    """
    target = BUILTIN_AGENTS.get(spec, spec)
    known = sorted(BUILTIN_AGENTS)
    if ":" not in target:
        raise UnknownAgentError(spec, known)
    module_name, _, class_name = target.partition(":")
    if module_spec_problem("--agent", target):
        raise UnknownAgentError(spec, known, "write it as module:Class, dotted Python names")
    try:
        module = import_module_here(module_name)  # the current folder first
    except ModuleNotFoundError as exc:
        raise UnknownAgentError(
            spec, known,
            f"cannot import {module_name} ({exc}); run from the folder that holds it or add "
            "its folder to PYTHONPATH",
        ) from exc
    except Exception as exc:  # any import-time failure of third-party code is the user's to fix
        raise UnknownAgentError(
            spec, known, f"cannot import {module_name}: {type(exc).__name__}: {exc}"
        ) from exc
    cls = getattr(module, class_name, None)
    if cls is None:
        raise UnknownAgentError(spec, known, f"{module_name} has no attribute {class_name}")
    if not (isinstance(cls, type) and issubclass(cls, BenchmarkAgent)):
        raise UnknownAgentError(spec, known, f"{target} is not a BenchmarkAgent subclass")
    return cls


def create_agent(
    spec: str, options: AgentOptions | None = None, *, shared: dict[str, Any] | None = None
) -> BenchmarkAgent:
    """A new agent instance.

    Args:
        spec: A built-in name or ``module:Class``.
        options: Built-ins' options and ``--agent-arg`` keyword arguments.
        shared: Objects every agent of a run shares (the model agents' token budget).

    Raises:
        UnknownAgentError: see :func:`load_agent_class`.
        InvalidRunInputError: a built-in lacks its option (``--bundles``, ``--agent-url``), an
            ``--agent-arg`` is malformed or not accepted, or the constructor raised.
    """
    from evals.agents.model_api import parse_agent_args

    options = options or AgentOptions()
    cls = load_agent_class(spec)
    kwargs = parse_agent_args(options.args)
    if spec == "replay":
        if options.bundles is None:
            raise InvalidRunInputError("--agent replay needs --bundles DIR (a workflow per task)")
        from evals.agents.replay import ReplayAgent

        return ReplayAgent(options.bundles)
    if spec == "http":
        if not options.agent_url:
            raise InvalidRunInputError("--agent http needs --agent-url URL (the agent server)")
        from evals.agents.http import HttpAgent

        return HttpAgent(options.agent_url, timeout_s=options.http_timeout_s)
    if spec in MODEL_AGENTS and shared is not None:
        from evals.agents.model_api import TokenBudget

        cap = kwargs.pop("token_cap", None)
        budget = shared.setdefault("budget", TokenBudget(int(cap) if cap is not None else None))
        kwargs["budget"] = budget
    try:
        return cls(**kwargs)
    except TypeError as exc:
        given = ", ".join(sorted(kwargs)) or "no options"
        accepted = accepted_agent_args(cls)
        hint = ("check --agent-arg names" if accepted is None
                else f"it accepts {', '.join(accepted)}" if accepted
                else "it takes no --agent-arg")
        raise InvalidRunInputError(
            f"agent {spec!r} cannot be created with {given} ({exc}); {hint}, "
            "or give the class a constructor with defaults"
        ) from exc
    except EvalsError:
        raise  # the agent's own refusal of its options is already one line
    except Exception as exc:  # third-party code: its failure is the user's to fix, in one line
        raise InvalidRunInputError(
            f"agent {spec!r} could not be created: {type(exc).__name__}: {exc} (--debug shows "
            "where); fix the agent or its --agent-arg options"
        ) from exc


def accepted_agent_args(cls: type) -> list[str] | None:
    """The ``--agent-arg`` names an agent class's constructor takes, in its order; ``None`` when
    it cannot tell (it takes ``**kwargs``, or has no signature Python can read)."""
    try:
        parameters = inspect.signature(cls).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return [p.name for p in parameters
            if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)]


class AgentFactory:
    """Fresh agents of ``spec`` (one per worker) sharing what a run shares (the model agents'
    token cap). The first (:attr:`first`) is built when the factory is made, which checks the
    spec; the checks use it, and it is the first handed out: a run builds one agent per worker.

    Raises:
        UnknownAgentError, InvalidRunInputError: as :func:`create_agent`, when it is made.
    """

    def __init__(self, spec: str, options: AgentOptions | None = None) -> None:
        self.spec, self.options = spec, options or AgentOptions()
        self._shared: dict[str, Any] = {}
        self.first = create_agent(spec, self.options, shared=self._shared)
        self._handed = itertools.count()  # next() on it is atomic: worker loops ask at once

    def makes(self, spec: str, options: AgentOptions) -> bool:
        """Whether these are the agents of ``spec`` with ``options`` (a config changed since the
        factory was made needs its own)."""
        return (self.spec, self.options) == (spec, options)

    def __call__(self) -> BenchmarkAgent:
        """An agent no one else holds: :attr:`first` the first time, a new one after."""
        if next(self._handed) == 0:
            return self.first
        return create_agent(self.spec, self.options, shared=self._shared)


agent_factory = AgentFactory  # its name before it was a class
