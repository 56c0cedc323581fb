"""Tasks users bring: Cua-Bench task modules, OpenApps-style task configs, and the UI-change study
(restyled and renamed versions of ExtraDup's records app).

Which kind a ``--tasks`` selection names is told here, before either kind's package is imported:
every run, sweep and task listing asks, and the packages (their loaders, ``yaml``, ``asyncio``
and the WAA client) are needed only when it names one of them."""

CUA_PREFIX = "cua-bench:"
OPENAPPS_PREFIX = "openapps:"


def is_cua_selection(selection: str) -> bool:
    """Whether a ``--tasks`` selection names Cua-Bench modules."""
    return selection.strip().startswith(CUA_PREFIX)


def is_openapps_selection(selection: str) -> bool:
    """Whether a ``--tasks`` selection names an OpenApps-style config."""
    return selection.strip().startswith(OPENAPPS_PREFIX)
