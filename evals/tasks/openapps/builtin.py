"""The built-in task classes by name: what a ``_target_`` without a module names."""

from __future__ import annotations

from evals.tasks.openapps.classes import (
    AbstentionTask,
    AddToDoTask,
    AppStateComparison,
    CompositeTask,
    DeleteToDoTask,
    EditFileTask,
    MarkToDoDoneTask,
    SendMessageTask,
    Task,
)
from evals.tasks.openapps.planner_classes import (
    AddEventTask,
    NavigateToAppTask,
    RemoveEventTask,
    RemoveLandmarkTask,
    SavePlaceTask,
)

BUILTIN: dict[str, type[Task]] = {cls.__name__: cls for cls in (
    AppStateComparison, MarkToDoDoneTask, AddToDoTask, DeleteToDoTask, SendMessageTask,
    EditFileTask, AbstentionTask, CompositeTask, AddEventTask, RemoveEventTask, SavePlaceTask,
    RemoveLandmarkTask, NavigateToAppTask)}
"""The built-in classes by name (``_target_: MarkToDoDoneTask``, or OpenApps' spelling
``open_apps.tasks.tasks.MarkToDoDoneTask``)."""

NOT_SIMULATED: dict[str, str] = {
    "BuyWithCardTask": "the online shop and the bank (OpenBanking)",
    "DeclinedCardPurchaseTask": "the online shop and the bank (OpenBanking)",
}
"""OpenApps' classes whose apps the simulated desktop does not have, and those apps: an entry
naming one is refused saying so, rather than as an unknown class."""
