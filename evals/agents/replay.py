"""The ``replay`` agent: plays a compiled workflow bundle per task.

A bundle folder holds ``<task_id>/workflow.json`` for each task, a JSON object
``{"actions": ["<action>", ...]}`` with actions in WAA's string form (``DONE``, ``FAIL``,
``WAIT``, pyautogui source for ``/execute_windows``, or a command for the local worker's
``/execute``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evals.agents.base import BenchmarkTask
from evals.agents.scripted import ScriptedAgent, as_action_list
from evals.errors import AgentError, InvalidRunInputError, MissingBundlesError
from waa_client import inputs

BUNDLE_FILE = "workflow.json"


def bundle_path(bundles_dir: Path, task_id: str) -> Path:
    """Where the bundle of ``task_id`` lives."""
    return bundles_dir / task_id / BUNDLE_FILE


def read_workflow(path: Path) -> list[str]:
    """The actions of one ``workflow.json``.

    Raises:
        ValueError: the file is not JSON, or has no non-empty ``actions`` list of strings.
    """
    try:  # the one bounded reader (size, regular file, duplicate keys)
        data = inputs.read_json(path, what="the bundle")
    except inputs.InputError as exc:
        raise ValueError(str(exc)) from exc
    actions = as_action_list(data.get("actions")) if isinstance(data, dict) else None
    if actions is None:
        found = data.get("actions") if isinstance(data, dict) else None
        what = "an empty 'actions' list" if found == [] else "no 'actions' list of action strings"
        raise ValueError(f"{path} has {what}; give it the actions to replay, or remove it")
    return actions


class ReplayAgent(ScriptedAgent):
    """Replays ``<bundles>/<task_id>/workflow.json``.

    Args:
        bundles: The bundle folder.

    Raises:
        InvalidRunInputError: ``bundles`` is not a folder.
    """

    def __init__(self, bundles: Path) -> None:
        from oa_vm.kit.validate import read_problem

        problem = read_problem("--bundles", bundles, kind="folder",
                               fix=f"pass the folder holding <task_id>/{BUNDLE_FILE}")
        if problem is not None:
            raise InvalidRunInputError(problem)
        self.bundles = bundles
        self._cache: dict[str, list[str]] = {}

    def script(self, task: BenchmarkTask) -> list[str]:
        """The task's workflow actions (read once, then cached)."""
        if task.task_id not in self._cache:
            try:
                self._cache[task.task_id] = read_workflow(bundle_path(self.bundles, task.task_id))
            except (OSError, ValueError) as exc:
                raise AgentError(f"replay bundle of {task.task_id}: {exc}") from exc
        return self._cache[task.task_id]

    def check_tasks(self, tasks: Mapping[str, Mapping[str, Any]]) -> None:
        """Refuse to start while a selected task lacks a bundle (all of them listed) or one is
        unreadable."""
        missing = [t for t in tasks if not bundle_path(self.bundles, t).is_file()]
        if missing:
            raise MissingBundlesError(str(self.bundles), missing)
        for task_id in tasks:
            try:
                self._cache[task_id] = read_workflow(bundle_path(self.bundles, task_id))
            except (OSError, ValueError) as exc:
                # each reason ends with what to do (the reader's own: "fix the file")
                raise InvalidRunInputError(f"bad replay bundle: {exc}") from exc
