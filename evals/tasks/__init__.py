"""Tasks users bring: Cua-Bench task modules, OpenApps-style task configs, and the UI-change study
(restyled and renamed versions of ExtraDup's records app)."""

from evals.errors import InvalidRunInputError


def refuse_task_files(selection: str | None, command: str) -> None:
    """The one refusal of a command that takes WAA's kind of tasks only (IDs, counts, indexes,
    domains) when ``--tasks`` names task modules or configs (``cua-bench:``, ``openapps:``),
    which only ``run``, ``sweep`` and ``tasks`` load: without it such a selection was taken
    for a task ID and refused as a malformed or unknown one.

    Raises:
        InvalidRunInputError: the selection names task modules or configs (one line, naming
            the command that runs them).
    """
    from evals.tasks.cua_bench import is_cua_selection
    from evals.tasks.openapps import is_openapps_selection

    text = (selection or "").strip()
    kind = ("Cua-Bench task modules" if is_cua_selection(text) else
            "OpenApps-style task configs" if is_openapps_selection(text) else None)
    if kind is not None:
        raise InvalidRunInputError(
            f"--tasks {text.split(':', 1)[0]}:...: {command} takes WAA task IDs, counts, "
            f"indexes and domains, not {kind}; 'openadapt-evals sweep' and 'run' take them "
            f"(openadapt-evals sweep --tasks {text})")
