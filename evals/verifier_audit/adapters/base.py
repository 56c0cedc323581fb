"""The protocol a benchmark implements to have its verifier audited.

An adapter calls no model. It:

1. gives a correct run of a task (``reference``: the benchmark's own solution as API calls)
   and what that run changed;
2. delivers runs (``deliver``), each from a fresh start state: plays the calls, reads the end
   state back, and only then asks the benchmark's own verifier, unmodified, for a verdict;
3. names the fields that carry no task meaning (``ignore_fields``: IDs, timestamps), as
   ``field`` or ``table.field``, so that effects can be compared;
4. says how its calls are read (``policy``: which sign in, which claim success, which fields an
   edit must leave alone).

The read-back must not use the verifier's own assertions (it may read the same store).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from evals.verifier_audit.effects import Effect
from evals.verifier_audit.operators import Call, CallPolicy


class SetupError(RuntimeError):
    """The benchmark is not installed or cannot be reached; the message says how to set it up."""


@dataclass
class Reference:
    """A correct run of one task and what it changed (``error`` when there is none)."""

    task_id: str
    calls: list[Call]
    effect: Effect
    error: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class Run:
    """One run to deliver; ``grade=False`` reads the end state back without the verifier (the
    ``extra-ni`` scan)."""

    run_id: str
    calls: list[Call]
    grade: bool = True


@dataclass
class Delivery:
    """What one run did, delivered from a fresh start state.

    Attributes:
        run_id: the delivered :class:`Run`'s ``run_id``.
        effect: the end state read back before grading.
        verdict: ``"PASS"`` or ``"FAIL"`` from the benchmark's verifier; None when the run was
            not graded or grading failed.
        statuses: one per call: an HTTP-style code, or -1 when the call raised.
        error: why the delivery failed, if it did.
    """

    run_id: str
    effect: Effect = field(default_factory=dict)
    verdict: str | None = None
    statuses: list[int] = field(default_factory=list)
    error: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def crashed_calls(self) -> int:
        """How many calls raised instead of answering."""
        return sum(1 for status in self.statuses if status == -1)


@runtime_checkable
class BenchmarkAdapter(Protocol):
    """A benchmark the audit can edit, replay and grade (see the module notes)."""

    name: str
    ignore_fields: frozenset[str]
    policy: CallPolicy

    def describe(self) -> dict[str, Any]:
        """Versions and settings to record in the report."""
        ...

    def task_ids(self, split: str | None, limit: int | None) -> list[str]:
        """The tasks to audit when the user names none (at most ``limit``)."""
        ...

    def reference(self, task_id: str) -> Reference:
        """Run the task's own solution from a fresh start state."""
        ...

    def deliver(self, task_id: str, runs: Sequence[Run]) -> list[Delivery]:
        """Deliver each run from a fresh start state: one :class:`Delivery` per run, in order."""
        ...
