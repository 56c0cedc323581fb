"""A run's attempts as the exporters read them: each final record with its folder's files.

One attempt is one final record (``tasks/<id>/execution.json``, or ``trial-<n>/`` for a trial),
in the run's task order; its steps' screenshots and trees are files in the same folder.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.errors import InvalidRunInputError
from evals.results.records import RunMetadata, StepRecord, TaskExecution, read_tree
from evals.results.run_reader import read_metadata, read_record_folders, read_started


@dataclass(frozen=True)
class Attempt:
    """One final record and the folder holding its evidence."""

    record: TaskExecution
    folder: Path

    def screenshot(self, step: StepRecord) -> bytes | None:
        """The PNG the agent saw before ``step``, when it was recorded and is still there."""
        if not step.screenshot:
            return None
        try:
            return (self.folder / step.screenshot).read_bytes()
        except OSError:
            return None

    def tree(self, step: StepRecord) -> str | None:
        """The accessibility tree the agent was given at ``step``, when it was recorded."""
        if not step.tree:
            return None
        try:
            return read_tree(self.folder, step.tree)
        except (OSError, ValueError, EOFError):
            return None


def read_attempts(run_dir: Path) -> Iterator[Attempt]:
    """Every attempt of the run, in its task order (trials of a task together).

    Raises:
        InvalidRunInputError: a record that is unreadable or does not parse (the file named).
    """
    from evals.run.pools import record_namer

    named = record_namer(read_started(run_dir) or RunMetadata())  # workers as the summary's
    for folder, record in read_record_folders(run_dir):
        yield Attempt(named(record), folder)


def run_facts(run_dir: Path) -> tuple[RunMetadata, dict[str, Any]]:
    """The run's ``metadata.json`` and ``manifest.json`` (``{}`` when it has none)."""
    from evals.run.manifest import read_manifest

    return read_metadata(run_dir), read_manifest(run_dir) or {}


def action_text(step: StepRecord) -> str:
    """The step's action in WAA's string form (``DONE``, pyautogui source...), the second of the
    two forms a step is recorded in (the first is its JSON object); ``""`` when none."""
    from evals.agents.base import parse_action

    if not step.action:
        return ""
    try:
        return parse_action(step.action).to_string()
    except ValueError:
        return ""


def require_extra(module: str, extra: str) -> Any:
    """Import an optional extra's module, or fail in one line with the command that installs it.

    Raises:
        InvalidRunInputError: the module is not installed.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise InvalidRunInputError(
            f"exporting this format needs the {extra!r} extra ({exc}); install it with: "
            f"pip install 'oa-vm[{extra}]'"
        ) from exc
