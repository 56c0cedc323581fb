"""Where each kind of task is taken. Tasks that need the simulated desktop run on a local pool
only (:func:`check_runs_on`); task modules and configs are for the commands that load them
(:func:`refuse_task_files`).

OpenApps-style tasks score the simulated desktop's app state; a Cua-Bench module that calls a
browser operation (:data:`evals.tasks.cua_bench.loader.BROWSER_OPERATIONS`) needs the local
worker's browser. A WAA worker has neither, so on a pool of them every such task would end in
``error/task`` after the pool was made or leased: both are refused before, in one line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import oa_vm
from evals.errors import InvalidRunInputError
from evals.tasks import is_cua_selection, is_openapps_selection

if TYPE_CHECKING:
    from evals.tasks.cua_bench.loader import Variant


def check_runs_on(cloud: str, where: str, selection: str,
                  variants: Sequence[Variant] | None = None) -> None:
    """Refuse ``selection`` on a pool of ``cloud`` workers (named ``where``: ``a pool of aws
    workers``, ``pool 'p' (aws)``) when they are not simulated ones (:func:`oa_vm.cloud_facts`)
    and it needs the simulated desktop; ``variants``: a ``cua-bench:`` selection's, if loaded.

    Raises:
        InvalidRunInputError: what needs the simulated desktop, and why, naming ``where``.
    """
    if oa_vm.cloud_facts(cloud).simulated:
        return
    need = _need(selection, variants)
    if need is not None:
        what, why = need
        raise InvalidRunInputError(f"{what} run on a local pool only, not on {where}: {why}; "
                                   "run them on a local pool (--cloud local)")


def _need(selection: str, variants: Sequence[Variant] | None) -> tuple[str, str] | None:
    """What of the selection needs the simulated desktop and why, or None."""
    if is_openapps_selection(selection):
        return ("OpenApps-style tasks", "their rewards read the simulated desktop's app state, "
                "which a WAA worker does not have")
    if not is_cua_selection(selection):
        return None
    from evals.tasks.cua_bench.loader import load_selection

    using = [v for v in (load_selection(selection) if variants is None else variants)
             if v.browser_operations]
    if not using:
        return None
    modules = list(dict.fromkeys(v.module_file for v in using))
    more = f" (and {len(modules) - 1} more module(s))" if len(modules) > 1 else ""
    return ("Cua-Bench modules that use the worker's browser",
            f"{modules[0]}{more} calls session.{using[0].browser_operations[0]}, and only a "
            "local pool's workers have a browser")


def refuse_task_files(selection: str | None, command: str) -> None:
    """The one refusal of a command that takes WAA's kind of tasks only (IDs, counts, indexes,
    domains) when ``--tasks`` names task modules or configs (``cua-bench:``, ``openapps:``),
    which only ``run``, ``sweep`` and ``tasks`` load: without it such a selection was taken
    for a task ID and refused as a malformed or unknown one.

    Raises:
        InvalidRunInputError: the selection names task modules or configs (one line, naming
            the command that runs them).
    """
    text = (selection or "").strip()
    kind = ("Cua-Bench task modules" if is_cua_selection(text) else
            "OpenApps-style task configs" if is_openapps_selection(text) else None)
    if kind is not None:
        raise InvalidRunInputError(
            f"--tasks {text.split(':', 1)[0]}:...: {command} takes WAA task IDs, counts, "
            f"indexes and domains, not {kind}; 'openadapt-evals sweep' and 'run' take them "
            f"(openadapt-evals sweep --tasks {text})")
