"""Seeded draws that belong to a task's trial, not to the worker that happens to run it.

A run gives each worker its own agent instance and workers take tasks in whatever order they
free up, so a stream per instance makes which task gets which draw depend on that order: a
seeded run would repeat only on one worker. :func:`task_draws` instead starts a fresh stream for
each (seed, task ID, trial): the same seed gives the same draws for the same task and trial
whatever the number of workers, their order, or a retry on another worker (a retry is the same
trial, so it repeats its draws). The streams of different tasks and trials come from unrelated
SHA-256 digests, so their draws are independent of each other (what the run statistics assume).
"""

from __future__ import annotations

import hashlib
import json
import random

from evals.agents.base import BenchmarkTask


def task_draws(seed: int | None, task: BenchmarkTask) -> random.Random:
    """A random stream for one trial of one task.

    Args:
        seed: The agent's seed; ``None`` draws from the operating system's entropy (a new,
            unrepeatable stream on every call).
        task: The task (its :attr:`~evals.agents.base.BenchmarkTask.task_id` and
            :attr:`~evals.agents.base.BenchmarkTask.trial` name the stream).

    Returns:
        A :class:`random.Random` that depends on nothing but ``(seed, task_id, trial)`` when
        seeded: a stable hash (never Python's per-process salted ``hash()``), so it repeats
        across processes and machines.
    """
    if seed is None:
        return random.Random()  # seeded from os.urandom
    key = json.dumps(["oa-vm task draws", seed, task.task_id, task.trial])
    return random.Random(int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest(), "big"))
