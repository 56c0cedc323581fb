"""The audit on the built-in toy benchmark and on adapters that misbehave."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evals.verifier_audit import (
    OPERATORS,
    BenchmarkAdapter,
    Delivery,
    Reference,
    Run,
    audit,
    audit_task,
)
from evals.verifier_audit.adapters.toy import TASKS, ToyAdapter
from evals.verifier_audit.operators import DEFAULT_POLICY
from evals.verifier_audit.report import render
from evals.verifier_audit.runner import (
    CONTROL_FAILED,
    EQUIVALENT,
    FALSE_ACCEPT,
    INVALID,
    KILLED,
    NO_REFERENCE,
    NO_WRITE,
    NOT_DELIVERED,
    REFUSED,
    UNCONFIRMED,
)


def _classes(task_id: str) -> dict[str, str]:
    return {r.operator: r.run_class for r in audit_task(ToyAdapter(), task_id).runs}


def test_the_toy_is_an_adapter() -> None:
    assert isinstance(ToyAdapter(), BenchmarkAdapter)
    assert ToyAdapter().task_ids(None, 2) == list(TASKS)[:2]


def test_counting_blind_verifiers_pass_repeats() -> None:
    for task in ("invite-guests", "tag-photo"):
        got = _classes(task)
        assert got["extra"] == got["extra-ni"] == FALSE_ACCEPT, (task, got)
        assert got["omit"] == got["claim-only"] == got["wrong-value"] == KILLED, (task, got)


def test_the_counted_twin_kills_the_repeat() -> None:
    got = _classes("invite-guests-counted")
    assert got["extra"] == got["extra-ni"] == KILLED


def test_repeats_that_change_nothing_are_equivalent_or_refused() -> None:
    for task in ("star-repos", "set-status"):
        got = _classes(task)
        assert got["extra"] == EQUIVALENT and got["extra-ni"] == REFUSED, (task, got)
    result = audit_task(ToyAdapter(), "star-repos")
    scan = next(r for r in result.runs if r.operator == "extra-ni")
    assert scan.reason == "ALL_REPEATS_IDEMPOTENT"


def test_whole_audit_counts_and_report() -> None:
    result = audit(ToyAdapter(), list(TASKS), jobs=3)
    assert [t.task_id for t in result.tasks] == list(TASKS)  # order kept with jobs > 1
    assert len(result.false_accepts) == 4
    table = result.by_operator()
    assert table["extra"][FALSE_ACCEPT] == 2 and table["extra-ni"][FALSE_ACCEPT] == 2
    assert sum(table[op][FALSE_ACCEPT] for op in OPERATORS) == 4
    data = result.to_dict()
    assert data["summary"]["tasks_with_false_accept"] == 2
    text = render(result)
    assert "invite-guests  extra     toy.Invite +1, toy.Message +1" in text
    assert "Per operator" in text


class _Broken:
    """An adapter whose control misbehaves in the way each test sets."""

    name = "broken"
    ignore_fields = frozenset({"id"})
    policy = DEFAULT_POLICY

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.toy = ToyAdapter()

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}

    def task_ids(self, split: str | None, limit: int | None) -> list[str]:
        return ["invite-guests"]

    def reference(self, task_id: str) -> Reference:
        if self.mode == "no-reference":
            raise RuntimeError("solution missing")
        if self.mode == "read-only":
            return Reference(task_id, [{"method": "get", "url": "/x"}], {})
        return self.toy.reference(task_id)

    def deliver(self, task_id: str, runs: Sequence[Run]) -> list[Delivery]:
        out = self.toy.deliver(task_id, runs)
        for d in out:
            if self.mode == "control-fails" and d.run_id == "control":
                d.verdict = "FAIL"
            if self.mode == "crash" and d.run_id != "control":
                d.statuses = [-1, *d.statuses[1:]]
            if self.mode == "raise" and d.run_id in OPERATORS:
                d.error = "the app went away"
        return out


def test_tasks_that_cannot_be_audited_say_why() -> None:
    assert audit_task(_Broken("no-reference"), "invite-guests").status == NO_REFERENCE
    assert audit_task(_Broken("read-only"), "invite-guests").status == NO_WRITE


def test_a_failed_control_makes_every_run_invalid() -> None:
    task = audit_task(_Broken("control-fails"), "invite-guests")
    assert task.status == CONTROL_FAILED and "FAIL" in (task.reason or "")
    assert {r.run_class for r in task.runs} == {INVALID}


def test_raised_calls_make_a_pass_unconfirmed_and_errors_not_delivered() -> None:
    crashed = {r.operator: r.run_class for r in audit_task(_Broken("crash"), "invite-guests").runs}
    assert crashed["extra"] == UNCONFIRMED
    failed = {r.operator: r.run_class for r in audit_task(_Broken("raise"), "invite-guests").runs}
    assert set(failed.values()) == {NOT_DELIVERED}
