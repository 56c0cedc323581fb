"""``openadapt-evals tasks``: list the tasks a selection names, from a folder or a pool."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from evals.cli.commands.run import TASKS_HELP
from evals.errors import InvalidRunInputError
from oa_vm.kit.clikit import target_option
from waa_client.catalog import Catalog, TaskRef
from waa_client.errors import CatalogError

INSTRUCTION_WIDTH = 70


def tasks(
    selection: Annotated[
        str | None,
        typer.Argument(metavar="SELECTION", help="Which tasks, as --tasks (default: all).",
                       show_default=False),
    ] = None,
    source: Annotated[
        Path | None,
        typer.Option("--source", help="Folder in WAA's layout (index files + examples/)."),
    ] = None,
    pool: Annotated[
        str | None,
        target_option("--pool", "-n", what="pool",
                      help="Read the catalog from this pool's scoring server instead."),
    ] = None,
    tasks_sel: Annotated[str | None, typer.Option("--tasks", help=TASKS_HELP)] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print JSON instead of a table.")
    ] = False,
    split: Annotated[
        str, typer.Option("--split", help="cua-bench:PATH selections: the split whose "
                          "variants are listed.")
    ] = "train",
) -> None:
    """List the selected tasks (ID, domain, infeasible, instruction) and the count per domain.

    ``cua-bench:PATH`` lists the variants of a Cua-Bench task directory or dataset directory
    (``--split``, default train), ``cua-bench:PATH#N`` one of them; a module's count names the
    browser operations it calls (it runs on a local pool only). ``openapps:FILE.yaml``
    lists an OpenApps-style task config's entries, ``openapps:FILE.yaml#NAME`` one of them.
    Without ``--source`` or ``--pool`` it lists the bundled local suite (what a local pool
    serves unless created with ``--tasks-dir``).
    """
    if source is not None and pool is not None:
        raise InvalidRunInputError("give one of --source DIR or --pool NAME, not both")
    if source is not None:
        from oa_vm.kit.validate import read_problem

        problem = read_problem("--source", source, kind="folder",
                               fix="pass the folder holding test_all.json and examples/")
        if problem is not None:
            raise InvalidRunInputError(problem)
    if selection is not None and tasks_sel is not None and selection != tasks_sel:
        raise InvalidRunInputError(f"two selections: {selection!r} and --tasks {tasks_sel!r}; "
                                   "give one")
    tasks_sel = selection or tasks_sel or "all"
    from evals.tasks import is_cua_selection, is_openapps_selection

    browser: dict[str, list[str]] = {}  # a module's browser operations, by its domain
    apps: dict[str, list[str]] = {}  # a module's native-app operations, by its domain
    if is_cua_selection(tasks_sel):
        from evals.tasks.cua_bench import load_selection

        # module files on this machine: no folder or pool to read them from
        variants = load_selection(tasks_sel, split)
        refs = [TaskRef(v.task_id, v.domain, False, v.description) for v in variants]
        browser = {v.domain: list(v.browser_operations) for v in variants
                   if v.browser_operations}
        apps = {v.domain: list(v.app_operations) for v in variants if v.app_operations}
    elif is_openapps_selection(tasks_sel):  # a config file on this machine, every entry checked
        from evals.tasks.openapps import select_openapps

        refs = [ref for ref in select_openapps(tasks_sel)[0] if isinstance(ref, TaskRef)]
    elif source is None and pool is None:
        from oa_vm import local_tasks_dir

        source = local_tasks_dir()
        refs = Catalog.from_folder(source).select(tasks_sel, live=False)
        # after the selection is checked: a bad one is one line
        typer.echo(f"(the bundled local suite, {source}; --source DIR or --pool NAME for others)",
                   err=True)
    elif source is not None:
        refs = Catalog.from_folder(source).select(tasks_sel, live=False)
    else:
        refs = _select_from_pool(str(pool), tasks_sel)
    counts = dict(Counter(ref.domain for ref in refs))
    if json_out:
        from oa_vm.kit.clikit import print_json

        print_json({
            "tasks": [
                {"task_id": r.task_id, "domain": r.domain, "infeasible": r.infeasible,
                 "instruction": r.instruction}
                for r in refs
            ],
            "counts": counts,
            **({"browser_operations": browser} if browser else {}),
            **({"app_operations": apps} if apps else {}),
        })
        return
    notes = {d: f"uses the worker's browser: {', '.join(ops)}; local pools only"
             for d, ops in browser.items()}
    notes.update({d: f"uses Cua-Bench's native apps: session.{', session.'.join(ops)}; no "
                  "pool runs it" for d, ops in apps.items()})
    typer.echo(format_table(refs, counts, notes))


def _select_from_pool(pool: str, selection: str) -> list[TaskRef]:
    # Imported here: oa_vm's API pulls in pools and tunnels, which a --source listing never needs.
    from oa_vm import connect

    with connect(pool) as workers:
        if not workers:
            raise CatalogError(f"pool {pool!r} has no reachable worker to read tasks from")
        return Catalog.from_scoring(workers[0].scoring, source=f"pool {pool!r}").select(
            selection, live=False)


def shorten(text: str, width: int = INSTRUCTION_WIDTH) -> str:
    """One line of at most ``width`` characters (whitespace collapsed, ``...`` when cut)."""
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 3].rstrip() + "..."


def format_table(refs: list[TaskRef], counts: dict[str, int],
                 notes: dict[str, str] | None = None) -> str:
    """The human listing: one row per task, then the count per domain (with its note, if
    any: a Cua-Bench module that needs a local pool) and the total."""
    id_width = max([len("TASK ID"), *(len(r.task_id) for r in refs)])
    domain_width = max([len("DOMAIN"), *(len(r.domain) for r in refs)])
    rows = [f"{'TASK ID':<{id_width}}  {'DOMAIN':<{domain_width}}  INF  INSTRUCTION"]
    for r in refs:
        rows.append(
            f"{r.task_id:<{id_width}}  {r.domain:<{domain_width}}  "
            f"{'yes' if r.infeasible else 'no ':<3}  {shorten(r.instruction)}"
        )
    rows.append("")
    notes = notes or {}
    rows.extend(f"{domain}: {n}" + (f" ({notes[domain]})" if domain in notes else "")
                for domain, n in sorted(counts.items()))
    rows.append(f"total: {len(refs)} task(s) in {len(counts)} domain(s)")
    return "\n".join(rows)
