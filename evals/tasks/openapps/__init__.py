"""OpenApps-style task configs as tasks of a run (``--tasks openapps:FILE.yaml[#NAME]``).

:mod:`~evals.tasks.openapps.classes` holds the task classes (state comparison, to-do, messages,
file edits, abstention, composite) and their rewards, :mod:`~evals.tasks.openapps.planner_classes`
the calendar, map and navigation ones, :mod:`~evals.tasks.openapps.compare` the one state
comparison they all score by (OpenApps' rule); :mod:`~evals.tasks.openapps.loader` reads a
config and refuses bad entries; :mod:`~evals.run.attempt_openapps` runs one attempt on a
worker, reading the apps' state before and after. ``docs/tasks.md`` is the guide.
"""

from __future__ import annotations

from evals.tasks import is_openapps_selection
from evals.tasks.openapps.builtin import BUILTIN
from evals.tasks.openapps.classes import (
    AbstentionTask,
    AddToDoTask,
    AppStateComparison,
    CompositeTask,
    DeleteToDoTask,
    EditFileTask,
    Episode,
    MarkToDoDoneTask,
    SendMessageTask,
    StateTask,
    Task,
)
from evals.tasks.openapps.loader import (
    DOMAIN,
    Entry,
    load_selection,
)
from evals.tasks.openapps.planner_classes import (
    AddEventTask,
    NavigateToAppTask,
    RemoveEventTask,
    RemoveLandmarkTask,
    SavePlaceTask,
)

__all__ = [
    "BUILTIN", "DOMAIN", "AbstentionTask", "AddEventTask", "AddToDoTask", "AppStateComparison",
    "CompositeTask", "DeleteToDoTask", "EditFileTask", "Entry", "Episode", "MarkToDoDoneTask",
    "NavigateToAppTask", "RemoveEventTask", "RemoveLandmarkTask", "SavePlaceTask",
    "SendMessageTask", "StateTask", "Task", "is_openapps_selection",
    "load_selection", "select_openapps",
]


def select_openapps(selection: str) -> tuple[list[object], dict[str, object]]:
    """The run's tasks for an ``openapps:`` selection: the catalog's references
    (:class:`waa_client.catalog.TaskRef`) and each task's JSON, by ID.

    Raises:
        evals.errors.InvalidRunInputError: see :func:`load_selection`.
    """
    from waa_client.catalog import TaskRef

    entries = load_selection(selection)
    refs: list[object] = [TaskRef(e.name, DOMAIN, False, e.task.goal) for e in entries]
    tasks: dict[str, object] = {e.name: e.task_json() for e in entries}
    return refs, tasks
