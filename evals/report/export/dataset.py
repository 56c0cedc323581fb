"""A run as a trajectory dataset: one row per step, for fine-tuning, RL and debugging.

Every row carries: the run, the task, its trial (``attempt``: the trial's key), the step's index,
the instruction, the screenshot the agent saw, the accessibility tree it was given (``""`` when
none was recorded), the action in both recorded forms (its JSON object and WAA's string form),
the window title, the worker's answer, and the attempt's final status and score (the checker's
score repeats on each row, so a row can be filtered or weighted on its own).

Two shapes:

- ``hf``: a Hugging Face ``datasets`` dataset saved with ``save_to_disk`` (Arrow files, read
  back with ``datasets.load_from_disk``); the screenshot is an ``Image`` column, so each step's
  picture is stored once, in its own row.
- ``jsonl``: ``steps.jsonl`` plus ``images/<sha256>.png``: a screenshot is stored once however
  many steps show it (a stuck agent sees the same screen for many steps), and rows name it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evals.report.export.attempts import action_text, read_attempts, require_extra
from oa_vm.kit import safe_fs

COLUMNS = ("run", "task_id", "attempt", "trial", "step", "domain", "instruction",
           "window_title", "accessibility_tree", "tree_truncated", "action", "action_text",
           "result", "step_error", "status", "score")
EXPORT_MARK = ".openadapt-evals-export"
"""A file in each exported folder: the next export may replace a folder that holds it."""


def exported_folder(path: Path) -> bool:
    """Whether ``path`` is a folder this command wrote (:data:`EXPORT_MARK` in it)."""
    return safe_fs.exists_as_file(path / EXPORT_MARK) if path.is_dir() else False


def step_rows(run_dir: Path) -> Iterator[tuple[dict[str, Any], bytes | None]]:
    """Each step of each attempt as a row (without the screenshot) and its PNG bytes."""
    for attempt in read_attempts(run_dir):
        record = attempt.record
        for step in record.steps:
            row = {
                "run": run_dir.name, "task_id": record.task_id, "attempt": record.key,
                "trial": record.trial,
                "step": step.index, "domain": record.domain, "instruction": record.instruction,
                "window_title": step.window_title or "",
                "accessibility_tree": attempt.tree(step) or "",
                "tree_truncated": step.tree_truncated,
                "action": json.dumps(step.action, sort_keys=True),
                "action_text": action_text(step),
                "result": "" if step.result is None else json.dumps(step.result, sort_keys=True),
                "step_error": step.error or "", "status": record.status.value,
                "score": record.score,
            }
            yield row, attempt.screenshot(step)


def write_hf_dataset(run_dir: Path, out: Path) -> int:
    """Save the run's steps as a ``datasets`` dataset in ``out``; returns the number of rows.

    Raises:
        InvalidRunInputError: the ``datasets`` extra is missing, or the run is unreadable.
    """
    datasets = require_extra("datasets", "datasets")
    datasets.disable_progress_bars()  # the command prints one line, not a bar per phase
    features = datasets.Features({
        **{name: datasets.Value("string") for name in COLUMNS},
        "trial": datasets.Value("int32"), "step": datasets.Value("int32"),
        "tree_truncated": datasets.Value("bool"), "score": datasets.Value("float64"),
        "screenshot": datasets.Image(),
    })

    def generate() -> Iterator[dict[str, Any]]:
        for row, png in step_rows(run_dir):
            yield {**row, "screenshot": None if png is None else {"bytes": png, "path": None}}

    # Every record is read once before datasets runs the generator: datasets wraps whatever
    # the generator raises (an unreadable record) in an error of its own, and refuses a
    # generator with no rows (a run whose attempts all ended before a step: a dataset of no
    # rows, as jsonl writes it).
    cache = str(out) + ".cache"  # the generator's Arrow files, which the saved copy is read from
    try:
        if not sum(len(attempt.record.steps) for attempt in read_attempts(run_dir)):
            dataset = datasets.Dataset.from_dict({name: [] for name in features},
                                                 features=features)
        else:
            # a generator, so a run of thousands of screenshots is never held in memory at once
            dataset = datasets.Dataset.from_generator(generate, features=features,
                                                      cache_dir=cache)
        # one shard named even for no rows: datasets saves an empty dataset as no shard at
        # all, which its own load_from_disk cannot read
        dataset.save_to_disk(str(out), num_shards=1 if not dataset.num_rows else None)
    finally:
        shutil.rmtree(cache, ignore_errors=True)  # also when the export failed
    safe_fs.write_file(out / EXPORT_MARK, b"hf\n")
    return int(dataset.num_rows)


def write_jsonl(run_dir: Path, out: Path) -> int:
    """Write ``out/steps.jsonl`` and ``out/images/``; returns the number of rows."""
    safe_fs.ensure_dir(out)
    images = safe_fs.ensure_dir(out / "images", root=out)
    lines = []
    for row, png in step_rows(run_dir):
        name = None
        if png is not None:
            name = f"images/{hashlib.sha256(png).hexdigest()}.png"
            if not (out / name).exists():  # stored once, however many steps show it
                safe_fs.write_file(images / Path(name).name, png)
        lines.append(json.dumps({**row, "screenshot": name}, sort_keys=True))
    safe_fs.write_atomic(out / "steps.jsonl", "".join(line + "\n" for line in lines), root=out)
    safe_fs.write_file(out / EXPORT_MARK, b"jsonl\n")
    return len(lines)
