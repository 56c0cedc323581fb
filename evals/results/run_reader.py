"""The one reader of a run folder: finds runs, reads ``metadata.json`` and every task's
``execution.json`` (checked: no symlink, a known schema, a known status) into typed records.

The writers are :class:`evals.results.records.RunFolder`'s; nothing else opens these files
(a test scans the code for their names). A run's own summary is made from the records the run
holds (:mod:`evals.run.runner`), never read back from here.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
from collections.abc import Iterable
from pathlib import Path
from types import UnionType
from typing import Any, cast, get_args, get_origin, get_type_hints

from evals.errors import InvalidRunInputError
from evals.results.records import (
    EXECUTION_FILE,
    METADATA_FILE,
    RunMetadata,
    TaskExecution,
    TaskStatus,
    results_root,
    task_id_of_folder,
)
from evals.results.trials import trial_key
from oa_vm.errors import listing
from oa_vm.kit import safe_fs
from oa_vm.kit.results_dir import results_read_problem
from oa_vm.kit.validate import Schema, record_problem

STATUSES = tuple(s.value for s in TaskStatus)
"""A final record's statuses (``success``, ``failure``, ``error``, ``not_run``)."""


_NAME_MAX = 255  # bytes in one file name on the file systems runs live on (ext4, APFS, NTFS)


def find_run(run_name: str, results_dir: Path | str | None = None) -> Path:
    """The folder of the run named ``run_name``.

    Raises:
        InvalidRunInputError: the name is not a plain folder name, the results folder named
            does not exist or is a file (:func:`~oa_vm.kit.results_dir.results_read_problem`),
            no such run exists (the message lists the runs that do), or its folder exists
            but holds no ``metadata.json`` (the message says so and how to list the runs).
    """
    if not run_name or run_name in (".", "..") or "/" in run_name or "\\" in run_name:
        raise InvalidRunInputError(
            f"invalid run name {run_name!r}: give the run folder's name, without slashes"
        )
    if len(os.fsencode(run_name)) > _NAME_MAX:
        raise InvalidRunInputError(
            f"invalid run name {run_name[:40]!r}... ({len(run_name)} characters): a run folder's "
            f"name is at most {_NAME_MAX} bytes; give the run folder's name"
        )
    problem = results_read_problem(results_dir)
    if problem is not None:
        raise InvalidRunInputError(problem)
    root = results_root(results_dir)
    path = root / run_name
    if os.path.lexists(path):
        check_readable_folder(root, path)
    if path.is_dir() and not (path / METADATA_FILE).is_file():
        # the folder is there: "no run named" would send the user looking for a typo
        raise InvalidRunInputError(
            f"{path} exists but holds no run (no {METADATA_FILE}); list the runs with "
            f"'openadapt-evals runs --results-dir {shlex.quote(str(root))}'"
        )
    if not (path / METADATA_FILE).is_file():
        known = list_runs(root)
        hint = (f"known runs: {listing(known)}" if known else "it holds no runs"
                if root.is_dir() else "it does not exist yet: no run was made there")
        raise InvalidRunInputError(
            f"no run named {run_name!r} in {root} ({hint}); "
            "pass --results-dir if it lives elsewhere"
        )
    return path


def check_readable_folder(root: Path, path: Path) -> None:
    """The rule of every reader of a results folder, the writers' own (:mod:`oa_vm.kit.safe_fs`):
    the results folder may be a symlink of ours (to another disk), but a run folder in it, and
    every record read from it, must be a real folder or file owned by us or root, never a
    symlink: one planted there would make ``view`` or ``compare`` read (and publish on a page)
    whatever it points at.

    Raises:
        InvalidRunInputError: a symlink, or a folder of another user, on the way.
    """
    try:
        safe_fs.check_dir(root, own_link=True)
        if path != root:
            safe_fs.check_dir(path)
    except safe_fs.UnsafePathError as exc:
        raise InvalidRunInputError(f"refusing to read {exc.path}: {exc.reason}") from None


def _check_record(path: Path) -> None:
    try:
        info = os.lstat(path)
    except OSError:
        return  # missing: the reader says so
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode):
        raise InvalidRunInputError(
            f"refusing to read {path}: it is a symlink or not a regular file; a run folder's "
            "records are plain files (remove it and run the command again)")


def list_runs(root: Path) -> list[str]:
    """Names of the run folders under ``root`` (those with a ``metadata.json``), sorted."""
    if not root.is_dir():
        return []
    return sorted(p.parent.name for p in root.glob("*/metadata.json"))


_S, _OS, _ON = (str,), (str, type(None)), (int, float, type(None))


def _schema(typed: Any) -> Schema:
    """What each key of a ``TypedDict`` may hold, as :func:`record_problem` checks it: the JSON
    types its annotation names (a ``float`` takes a whole number too)."""
    schema: Schema = {}
    for key, hint in get_type_hints(typed).items():
        kinds = get_args(hint) if isinstance(hint, UnionType) else (hint,)
        allowed = tuple(get_origin(kind) or kind for kind in kinds)
        schema[key] = (int, *allowed) if float in allowed else allowed
    return schema


METADATA_SCHEMA: Schema = {**_schema(RunMetadata), "quarantined_hosts": [
    {"host": _S, "workers": (list,), "reason": _S}]}
"""What ``metadata.json``'s fields must be (:func:`oa_vm.kit.validate.record_problem`): as
:class:`evals.results.records.RunMetadata` types them (pool and cloud are null in a run of the
reference's API, which may also leave the task time limit unset)."""

EXECUTION_SCHEMA: Schema = {
    "task_id": _S, "domain": _OS, "instruction": _OS, "infeasible": (bool,), "status": _S,
    "score": _ON, "error_type": _OS, "error_message": _OS, "reason": _OS, "worker": _OS,
    "attempts": (int,), "started_at": _OS, "ended_at": _OS, "duration_s": _ON,
    "last_action": _OS, "steps": (list,), "cost": (dict, type(None)),
    "previous_attempts": (list,), "reset": _OS, "reset_s": _ON, "fingerprint": (dict, type(None)),
    "trial": (int,),
}
"""What an ``execution.json``'s fields must be."""

_SCHEMAS = {METADATA_FILE: METADATA_SCHEMA, EXECUTION_FILE: EXECUTION_SCHEMA}


def _read_json(path: Path) -> dict[str, Any]:
    _check_record(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidRunInputError(f"{path} is missing; is this a run folder?") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidRunInputError(f"cannot read {path}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise InvalidRunInputError(
            f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}); "
            "fix or move the file, then try again"
        ) from exc
    if not isinstance(data, dict):
        raise InvalidRunInputError(f"{path} does not hold a JSON object")
    problem = record_problem(data, _SCHEMAS.get(path.name, {}))
    if problem:
        raise InvalidRunInputError(f"{path}: {problem}; fix or move the file, then try again")
    return data


def read_metadata(run_dir: Path) -> RunMetadata:
    """The run's ``metadata.json``: the one reader of it (checked against
    :data:`METADATA_SCHEMA`).

    Raises:
        InvalidRunInputError: the folder is not a run folder or the file is unreadable.
    """
    if not run_dir.is_dir():
        raise InvalidRunInputError(f"run folder {run_dir} does not exist")
    return cast(RunMetadata, _read_json(run_dir / METADATA_FILE))


def read_started(run_dir: Path) -> RunMetadata | None:
    """:func:`read_metadata` of a run that started; ``None`` when the folder has no metadata
    (no such run, or one killed before it started: the run itself says which)."""
    return read_metadata(run_dir) if (run_dir / METADATA_FILE).is_file() else None


def read_records(run_dir: Path) -> list[TaskExecution]:
    """Every final task record (:meth:`evals.results.records.TaskExecution.from_json`), in the
    run's task order. Tasks still running (no ``execution.json`` yet) are skipped; tasks the
    metadata does not list follow in name order, so nothing recorded is hidden.

    Raises:
        InvalidRunInputError: a record is unreadable, has an unknown status or does not parse
            (the message names the file).
    """
    return [record for _, record in read_record_folders(run_dir)]


def read_record_folders(run_dir: Path) -> list[tuple[Path, TaskExecution]]:
    """:func:`read_records`, with each record's task folder (where its steps' files are).

    Raises:
        InvalidRunInputError: as :func:`read_records`.
    """
    tasks_dir = run_dir / "tasks"
    if not tasks_dir.is_dir():
        return []
    metadata = read_started(run_dir) or RunMetadata()
    order = {tid: i for i, tid in enumerate(metadata.get("task_ids") or [])}

    def where(path: Path) -> tuple[str, int]:
        """The task and trial a record's path is of (trials >= 2 in ``trial-<n>/``)."""
        folder = path.parent
        if folder.parent != tasks_dir and folder.name.startswith("trial-"):
            number = folder.name.removeprefix("trial-")
            return task_id_of_folder(folder.parent.name), int(number) if number.isdigit() else 0
        return task_id_of_folder(folder.name), 1

    found = [*tasks_dir.glob(f"*/{EXECUTION_FILE}"), *tasks_dir.glob(f"*/trial-*/{EXECUTION_FILE}")]
    records = []
    for path in sorted(found, key=lambda p: (order.get(where(p)[0], len(order)), *where(p))):
        for folder in path.relative_to(run_dir).parents:  # tasks/, tasks/<id>/, trial-<n>/
            if folder != Path("."):
                check_readable_folder(run_dir, run_dir / folder)
        document = _read_json(path)
        if document.get("status") not in STATUSES:
            raise InvalidRunInputError(f"{path}: unknown status {document.get('status')!r} "
                                       f"(expected one of {', '.join(STATUSES)})")
        task_id, trial = where(path)
        try:  # records of earlier versions may lack their task and trial: the path says them
            record = TaskExecution.from_json({"task_id": task_id, "trial": trial, **document})
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidRunInputError(f"{path}: not a task record ({type(exc).__name__}: "
                                       f"{exc}); fix or move the file, then try again") from exc
        records.append((path.parent, record))
    return records


def record_file(task_folder: Path) -> Path:
    """The final record's file in a task's (or trial's) folder, for messages that name it."""
    return task_folder / EXECUTION_FILE


def missing_of(metadata: RunMetadata, records: Iterable[TaskExecution]) -> list[str]:
    """The trials of a finished run that ``metadata.json`` lists (its tasks times its trials)
    and that have no ``execution.json``: a lost or deleted record, left out of every figure.
    Empty while the run is running (its pending trials have no record yet).

    The readers of a run (``view``, ``compare``) say these, so a missing record is never
    omitted silently.
    """
    if metadata.get("status") in (None, "running"):
        return []
    trials = metadata.get("trials", 1)
    found = {(r.task_id, r.trial) for r in records}
    return [trial_key(str(tid), n) for tid in metadata.get("task_ids") or []
            for n in range(1, max(trials, 1) + 1) if (str(tid), n) not in found]


def missing_line(run: str, missing: list[str]) -> str:
    """The one sentence saying a run's missing records (:func:`missing_of`)."""
    shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
    return (f"{run}: {len(missing)} trial(s) listed in metadata.json have no execution.json "
            f"({shown}); they are left out of every figure: resume the run to record them")
