"""A time-scaled workload shaped like Windows Agent Arena, written as a WAA-layout task folder.

WAA's suite has 154 tasks in 12 domains with very uneven counts (24 LibreOffice Calc tasks, 2
Notepad ones). The generator keeps those counts (read from WAA's ``test_all.json`` when it is at
hand, else the built-in table of the same numbers), draws each task's duration from a per-domain
lognormal with a fixed seed, and scales all durations by one factor so that a run fits a chosen
time. Each task's ``reference_solution`` sleeps for its duration, so the ``oracle`` agent plays
it on a simulated worker in that time plus the harness's own per-task overhead.

A user never knows the exact durations in advance, only rough ones; :attr:`Workload.estimates`
are what a user would give the runner: the mean of the task's domain, not its own draw.
"""

from __future__ import annotations

import json
import math
import random
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: WAA's ``test_all.json``: tasks per domain, in the index's own order.
WAA_DOMAIN_COUNTS: dict[str, int] = {
    "file_explorer": 19,
    "libreoffice_calc": 24,
    "notepad": 2,
    "chrome": 17,
    "microsoft_paint": 3,
    "libreoffice_writer": 19,
    "settings": 5,
    "vs_code": 24,
    "msedge": 13,
    "vlc": 21,
    "windows_calc": 3,
    "clock": 4,
}

#: Per-domain lognormal ``(median, sigma)`` in relative units: office and editor tasks take
#: longer than a settings toggle, and every domain has a long tail. Only the shape matters;
#: :func:`make_workload` rescales.
DOMAIN_PROFILES: dict[str, tuple[float, float]] = {
    "file_explorer": (0.8, 0.5),
    "libreoffice_calc": (1.6, 0.6),
    "notepad": (0.6, 0.4),
    "chrome": (1.0, 0.5),
    "microsoft_paint": (1.2, 0.5),
    "libreoffice_writer": (1.4, 0.6),
    "settings": (0.6, 0.4),
    "vs_code": (1.2, 0.5),
    "msedge": (1.0, 0.5),
    "vlc": (1.0, 0.5),
    "windows_calc": (0.5, 0.4),
    "clock": (0.5, 0.4),
}
_DEFAULT_PROFILE = (1.0, 0.5)
#: The simulated worker's ``sleep`` takes 0 to 30 seconds; longer waits are split.
MAX_SLEEP_S = 30.0
INDEX_NAME = "local_all.json"


@dataclass(frozen=True)
class WorkloadTask:
    """One generated task.

    Attributes:
        task_id: A WAA-style ID (``<uuid>-WOS``).
        domain: Its WAA domain.
        seconds: The drawn (scaled) duration its reference solution sleeps.
    """

    task_id: str
    domain: str
    seconds: float


@dataclass(frozen=True)
class Workload:
    """Tasks in index order, with the per-domain estimates a user would have.

    Attributes:
        tasks: Every task, grouped by domain in the index's order.
        domain_means: The expected (scaled) duration of a task of each domain.
        scale: The factor applied to the relative draws.
        seed: The seed the draws came from.
    """

    tasks: tuple[WorkloadTask, ...]
    domain_means: dict[str, float]
    scale: float
    seed: int

    @property
    def task_ids(self) -> list[str]:
        """Task IDs in index (flattened ``test_all.json``) order."""
        return [t.task_id for t in self.tasks]

    @property
    def total_seconds(self) -> float:
        """The sum of the drawn durations."""
        return sum(t.seconds for t in self.tasks)

    def estimates(self) -> dict[str, float]:
        """Expected seconds per task ID: its domain's mean (what a user could know)."""
        return {t.task_id: self.domain_means[t.domain] for t in self.tasks}

    def index(self) -> dict[str, list[str]]:
        """The ``{domain: [task_id]}`` index."""
        out: dict[str, list[str]] = {}
        for task in self.tasks:
            out.setdefault(task.domain, []).append(task.task_id)
        return out


def domain_counts(waa_dir: Path | None = None) -> dict[str, int]:
    """Tasks per domain: from ``waa_dir/test_all.json`` when readable, else the built-in table."""
    if waa_dir is not None:
        try:
            index = json.loads((waa_dir / "test_all.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            index = None
        if isinstance(index, dict) and all(isinstance(v, list) for v in index.values()):
            return {str(domain): len(ids) for domain, ids in index.items() if ids}
    return dict(WAA_DOMAIN_COUNTS)


def proportional_counts(counts: Mapping[str, int], total: int) -> dict[str, int]:
    """``counts`` scaled to sum to ``total`` (largest remainder; domains left at 0 dropped).

    Raises:
        ValueError: ``total`` is less than 1.
    """
    if total < 1:
        raise ValueError("a workload needs at least one task")
    whole = sum(counts.values())
    if total == whole:
        return dict(counts)
    shares = {d: n * total / whole for d, n in counts.items()}
    out = {d: math.floor(s) for d, s in shares.items()}
    by_remainder = sorted(counts, key=lambda d: (-(shares[d] - out[d]), list(counts).index(d)))
    for domain in by_remainder[: total - sum(out.values())]:
        out[domain] += 1
    return {d: n for d, n in out.items() if n > 0}


def task_id_from(rng: random.Random, infeasible: bool = False) -> str:
    """A WAA-style task ID drawn from ``rng`` (repeatable for a seed)."""
    text = f"{uuid.UUID(int=rng.getrandbits(128), version=4)}-WOS"
    return f"INF-{text}" if infeasible else text


def make_workload(
    counts: Mapping[str, int],
    *,
    total_seconds: float,
    seed: int = 7,
) -> Workload:
    """Draw one duration per task and scale them so they sum to ``total_seconds``.

    Args:
        counts: Tasks per domain, in index order.
        total_seconds: The total work the tasks' sleeps add up to.
        seed: Seed of the draws and of the task IDs.

    Raises:
        ValueError: no task, or a total that is not positive.
    """
    if total_seconds <= 0:
        raise ValueError("total_seconds must be more than 0")
    if sum(counts.values()) < 1:
        raise ValueError("a workload needs at least one task")
    rng = random.Random(seed)
    raw: list[tuple[str, str, float]] = []
    for domain, count in counts.items():
        median, sigma = DOMAIN_PROFILES.get(domain, _DEFAULT_PROFILE)
        for _ in range(count):
            raw.append((task_id_from(rng), domain, rng.lognormvariate(math.log(median), sigma)))
    scale = total_seconds / sum(r[2] for r in raw)
    tasks = tuple(WorkloadTask(tid, domain, round(d * scale, 3)) for tid, domain, d in raw)
    means = {}
    for domain in counts:
        median, sigma = DOMAIN_PROFILES.get(domain, _DEFAULT_PROFILE)
        # The lognormal's mean, not the sample mean: a user's prior, not a peek at the draws.
        means[domain] = round(median * math.exp(sigma * sigma / 2.0) * scale, 3)
    return Workload(tasks=tasks, domain_means=means, scale=scale, seed=seed)


def sleep_solution(seconds: float) -> list[str]:
    """``["sleep S", ..., "DONE"]`` waiting ``seconds`` in steps the worker accepts."""
    steps: list[str] = []
    left = max(0.0, seconds)
    while left > MAX_SLEEP_S:
        steps.append(f"sleep {MAX_SLEEP_S:g}")
        left -= MAX_SLEEP_S
    steps.append(f"sleep {left:.3f}")
    return [*steps, "DONE"]


def task_json(task: WorkloadTask, solution: list[str]) -> dict[str, Any]:
    """The task in WAA's format, with the simulated worker's ``reference_solution``.

    The checker is a real one (``exact_match`` of a ``rule``), so every task is scored by the
    worker's checker like any other; the benchmark measures dispatch, not agents.
    """
    return {
        "id": task.task_id,
        "snapshot": task.domain,
        "instruction": f"Benchmark task of the {task.domain} domain ({task.seconds:.3f} s).",
        "source": "bench",
        "config": [],
        "related_apps": [task.domain],
        "evaluator": {
            "func": "exact_match",
            "result": {"type": "rule", "rules": "done"},
            "expected": {"type": "rule", "rules": {"expected": "done"}},
        },
        "reference_solution": solution,
    }


def write_task_folder(
    tasks: list[WorkloadTask] | tuple[WorkloadTask, ...],
    folder: Path,
    *,
    solution: list[str] | None = None,
) -> Path:
    """Write ``tasks`` as a WAA-layout folder (``examples/<domain>/<id>.json`` + an index).

    Args:
        tasks: The tasks, in index order.
        folder: Where to write (created if needed).
        solution: A fixed reference solution for every task; by default each task sleeps
            its own duration.

    Returns:
        ``folder``.
    """
    index: dict[str, list[str]] = {}
    for task in tasks:
        steps = solution if solution is not None else sleep_solution(task.seconds)
        target = folder / "examples" / task.domain / f"{task.task_id}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(task_json(task, steps), indent=1), encoding="utf-8")
        index.setdefault(task.domain, []).append(task.task_id)
    (folder / INDEX_NAME).write_text(json.dumps(index, indent=1), encoding="utf-8")
    return folder


def short_tasks(count: int, *, seed: int = 11) -> list[WorkloadTask]:
    """``count`` tasks of no duration spread over WAA's domains (for throughput benchmarks)."""
    rng = random.Random(seed)
    per_domain = proportional_counts(WAA_DOMAIN_COUNTS, count)
    return [
        WorkloadTask(task_id_from(rng), domain, 0.0)
        for domain, n in per_domain.items()
        for _ in range(n)
    ]
