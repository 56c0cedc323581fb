"""Cua-Bench task modules as tasks of a run (``--tasks cua-bench:PATH[#N]``).

:mod:`~evals.tasks.cua_bench.namespace` is the ``cua_bench`` a module imports when the real
package is absent; :mod:`~evals.tasks.cua_bench.loader` finds the modules and their variants and
refuses bad ones; :mod:`~evals.tasks.cua_bench.session` is the session their functions receive,
over the worker's own channels; :mod:`~evals.run.attempt_cua` runs one attempt. ``docs/tasks.md``
is the guide.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evals.errors import InvalidRunInputError
from evals.tasks import is_cua_selection
from evals.tasks.cua_bench.loader import (
    DOMAIN,
    Variant,
    apps_problem,
    load_selection,
    module_hashes,
    shell_problem,
)
from waa_client.catalog import TaskRef

WORKER_SHELL = "windows"
"""The shell every pool's workers have: WAA's guests run Windows, and the simulated worker's
command language stands for it (``docs/local-worker.md``)."""

__all__ = [
    "DOMAIN", "Variant", "check_selection", "is_cua_selection", "load_selection",
    "module_hashes", "select_cua",
]


def check_selection(selection: str, *, agent: str, pools: Sequence[str] = ()) -> list[Variant]:
    """Load a ``cua-bench:`` selection and refuse, in one line, what no run of it can do: a
    bad module, ``--agent oracle`` on a module without ``solve_task``, Cua-Bench's native apps,
    shell operations the pools' workers have no shell for.

    Raises:
        InvalidRunInputError: the first problem found.
    """
    variants = load_selection(selection)
    if agent == "oracle":
        lacking = [v for v in variants if not v.has_solve]
        if lacking:
            raise InvalidRunInputError(
                f"cua-bench module {lacking[0].module_file}: no @cb.solve_task, so the oracle "
                f"agent has nothing to play ({len(lacking)} variant(s)); use another agent")
    problem = apps_problem(variants)
    if problem:
        raise InvalidRunInputError(problem)
    names: Sequence[str | None] = pools or [None]  # None: no pool yet (a plan...)
    for pool in names:
        problem = shell_problem(variants, WORKER_SHELL, pool)
        if problem:
            raise InvalidRunInputError(problem)
    return variants


def select_cua(variants: Sequence[Variant]) -> tuple[list[Any], dict[str, Any]]:
    """The run's tasks for a ``cua-bench:`` selection's variants (:func:`check_selection`),
    each variant one task: the catalog's references (:class:`waa_client.catalog.TaskRef`) and
    each task's JSON, by ID."""
    refs = [TaskRef(v.task_id, v.domain, False, v.description) for v in variants]
    tasks: dict[str, dict[str, Any]] = {v.task_id: v.task_json() for v in variants}
    return refs, tasks
