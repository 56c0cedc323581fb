"""Audit any benchmark's verifier: which wrong end states does it accept?

A correct run is edited once (a write dropped, a value changed, a write repeated), replayed from
a fresh start, its end state read back, and only then graded by the benchmark's own verifier. An
edited run that passes although its end state differs from the correct run's is a confirmed
false accept.

The names and the adapter protocol are the reference tool's (``openadapt_evals.verifier_audit``
with only the import changed)::

    from evals.verifier_audit import audit
    from evals.verifier_audit.adapters.toy import ToyAdapter

    result = audit(ToyAdapter(), ["invite-guests"])
    print([run.operator for run in result.false_accepts])   # ['extra', 'extra-ni']

On the command line: ``openadapt-evals audit-verifier --benchmark toy`` (or
``--benchmark package.module:Adapter``); ``--benchmark local`` audits the local WAA suite's
checkers by replaying its reference solutions on a simulated worker
(:mod:`evals.verifier_audit.local`).
"""

from __future__ import annotations

from evals.verifier_audit.adapters.base import (
    BenchmarkAdapter,
    Delivery,
    Reference,
    Run,
    SetupError,
)
from evals.verifier_audit.effects import EffectDiff, compare, normalize
from evals.verifier_audit.operators import (
    FRAME_OPERATORS,
    OPERATORS,
    POSTCONDITION_OPERATORS,
    CallPolicy,
    Edit,
    apply_operator,
    repeat_at,
    repeat_candidates,
)
from evals.verifier_audit.runner import (
    RUN_CLASSES,
    AuditResult,
    RunResult,
    TaskResult,
    audit,
    audit_task,
)

__all__ = [
    "FRAME_OPERATORS",
    "OPERATORS",
    "POSTCONDITION_OPERATORS",
    "RUN_CLASSES",
    "AuditResult",
    "BenchmarkAdapter",
    "CallPolicy",
    "Delivery",
    "Edit",
    "EffectDiff",
    "Reference",
    "Run",
    "RunResult",
    "SetupError",
    "TaskResult",
    "apply_operator",
    "audit",
    "audit_task",
    "compare",
    "normalize",
    "repeat_at",
    "repeat_candidates",
]
