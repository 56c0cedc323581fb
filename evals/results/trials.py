"""Trials: a task run K times (``--trials K``), each trial a unit of work of its own.

A trial is named by its *key*: the task's ID for trial 1, ``<task_id>#<n>`` for trial ``n``
(``#`` never occurs in a task ID, which must be a safe folder name). The queue's rows, the
ledger's reservations and the dispatcher's events are keyed by it; a record keeps the task's ID
in ``task_id`` and the trial in ``trial``. Trial 1 keeps the key, the folder and the record shape
a run without trials has, so run folders from before trials read and resume as they were:

    tasks/<task_id>/execution.json             trial 1 (every run)
    tasks/<task_id>/trial-<n>/execution.json   trial n, n >= 2
"""

from __future__ import annotations

SEPARATOR = "#"
MAX_TRIALS = 100


def trial_key(task_id: str, trial: int) -> str:
    """The key of trial ``trial`` (from 1) of ``task_id``."""
    if trial < 1:
        raise ValueError(f"trials are numbered from 1, got {trial}")
    return task_id if trial == 1 else f"{task_id}{SEPARATOR}{trial}"


def split_key(key: str) -> tuple[str, int]:
    """``(task_id, trial)`` of a trial's key (a plain task ID is trial 1)."""
    task_id, sep, number = key.rpartition(SEPARATOR)
    if not sep or not number.isdigit() or int(number) < 2:
        return key, 1
    return task_id, int(number)


def trial_folder(trial: int) -> str | None:
    """The sub-folder of a task's folder holding trial ``trial`` (``None``: the task's own)."""
    return None if trial == 1 else f"trial-{trial}"
