"""The task record is one type; TaskOutcome and BenchmarkResult are derived from it in one place
each, and run folders written by earlier versions still load."""

from __future__ import annotations

import json
import shutil
from dataclasses import MISSING, fields
from enum import Enum
from pathlib import Path
from typing import Any

import pytest

from evals.compat.benchmark_api import RESULT_FROM_RECORD, RESULT_LEAVES_OUT, BenchmarkResult
from evals.errors import InvalidRunInputError
from evals.results.records import (
    AttemptRecord,
    CostRecord,
    ErrorType,
    StepRecord,
    TaskExecution,
    TaskStatus,
)
from evals.results.run_reader import read_records
from evals.results.trials import trial_key
from evals.run.metrics import (
    OUTCOME_FROM_RECORD,
    OUTCOME_LEAVES_OUT,
    TaskOutcome,
    compute_metrics,
    compute_summary,
)

FIXTURE = Path(__file__).parents[2] / "fixtures" / "run_folders" / "two-pools"
RECORD_FIELDS = [f.name for f in fields(TaskExecution)]


def _full_record() -> TaskExecution:
    """A record with every field away from its default (so a field that is not carried shows)."""
    return TaskExecution(
        task_id="notepad-7",
        domain="notepad",
        instruction="Type hello",
        infeasible=True,
        status=TaskStatus.ERROR,
        score=0.25,
        error_type=ErrorType.EVALUATION,
        error_message="the checker answered 500",
        reason="partial match",
        worker="pool-a/w3",
        attempts=3,
        started_at="2026-01-05T09:30:00+00:00",
        ended_at="2026-01-05T09:31:00+00:00",
        duration_s=61.5,
        last_action="DONE",
        steps=[
            StepRecord(index=0, action={"type": "execute", "command": "echo hi"},
                       started_at="2026-01-05T09:30:01+00:00", window_title="Notepad",
                       error="refused", rejected=True),
            StepRecord(index=1, action={"type": "done"}, started_at="2026-01-05T09:30:02+00:00"),
        ],
        cost=CostRecord(worker_seconds=61.5, vm_usd=0.01, tokens_in=12, tokens_out=3,
                        model_usd=0.002, total_usd=0.012,
                        by_pool={"pool-a": {"worker_seconds": 61.5, "vm_usd": 0.01}}),
        previous_attempts=[AttemptRecord(1, "pool-b/w0", "infrastructure", "lost", None, None)],
        reset="clean",
        reset_s=4.5,
        fingerprint={"token": "t", "expected": "t", "marker_gone": True, "ok": True},
        trial=2,
        egress="allowlist",
        agent_traceback="Traceback (most recent call last):\nRuntimeError: boom",
        reward_components=[1.0, 0.5],
        state_diff=[{"path": "/todo/todos/0/done", "before": False, "after": True}],
        task_traceback="Traceback (most recent call last):\nValueError: setup",
    )


def test_the_full_record_sets_every_field() -> None:
    """A field added to the record must be set here too, or the tests below cannot see it."""
    record = _full_record()
    for f in fields(TaskExecution):
        default = (f.default if f.default is not MISSING
                   else f.default_factory() if f.default_factory is not MISSING else MISSING)
        assert getattr(record, f.name) != default, (
            f"_full_record() leaves {f.name!r} at its default; give it a value")


@pytest.mark.parametrize(("derived", "carried", "left_out"), [
    (TaskOutcome, OUTCOME_FROM_RECORD, OUTCOME_LEAVES_OUT),
    (BenchmarkResult, RESULT_FROM_RECORD, RESULT_LEAVES_OUT),
], ids=["TaskOutcome", "BenchmarkResult"])
def test_every_record_field_is_carried_or_left_out_on_purpose(
    derived: type, carried: dict[str, str], left_out: frozenset[str]
) -> None:
    unclassified = set(RECORD_FIELDS) - set(carried) - left_out
    assert not unclassified, (
        f"TaskExecution field(s) {sorted(unclassified)} neither reach {derived.__name__} nor "
        "are listed as left out: carry them in its from_execution or list them")
    assert not set(carried) & left_out
    assert set(carried) | left_out <= set(RECORD_FIELDS)  # no stale names
    targets = {f.name for f in fields(derived)}
    assert set(carried.values()) <= targets
    # A field of the same name on both sides means the same thing, so it must be carried
    # (BenchmarkResult.steps is the reference's trajectory, which the record's steps fill too).
    same_name = (set(RECORD_FIELDS) & targets) - {"steps"}
    assert same_name <= set(carried), sorted(same_name - set(carried))


def _expected(name: str, value: Any) -> Any:
    """The record's value as the derived types hold it."""
    if isinstance(value, Enum):
        return value.value
    if name == "steps":
        return len(value)
    if isinstance(value, CostRecord):
        return {k: float(v) for k, v in vars(value).items() if k != "by_pool"}
    return value


def test_task_outcome_gets_each_carried_field_from_the_record() -> None:
    record = _full_record()
    outcome = TaskOutcome.from_execution(record)
    for source, target in OUTCOME_FROM_RECORD.items():
        assert getattr(outcome, target) == _expected(source, getattr(record, source)), source


def test_benchmark_result_gets_each_carried_field_from_the_record() -> None:
    record = _full_record()
    result = BenchmarkResult.from_execution(record)
    for source, target in RESULT_FROM_RECORD.items():
        assert getattr(result, target) == _expected(source, getattr(record, source)), source
    assert result.execution is record
    assert len(result.steps) == 2 and result.success is False


def test_compute_metrics_of_api_results_is_the_records_derivation() -> None:
    records = [_full_record(), TaskExecution("calc-1", "windows_calc", "", False,
                                             TaskStatus.SUCCESS, score=1.0, duration_s=3.0)]
    from_results = compute_metrics([BenchmarkResult.from_execution(r) for r in records])
    assert from_results["by_error_type"] == {"evaluation": 1}
    assert from_results["success_count"] == 1 and from_results["error_count"] == 1
    assert from_results["avg_time_seconds"] == pytest.approx((61.5 + 3.0) / 2)
    assert from_results["avg_steps"] == pytest.approx(1.0)


def test_json_round_trip_keeps_the_document() -> None:
    record = _full_record()
    document = record.to_json()
    assert TaskExecution.from_json(json.loads(json.dumps(document))) == record
    assert TaskExecution.from_json(document).to_json() == document


def test_an_older_or_newer_record_loads() -> None:
    """Keys a version does not know are ignored; keys it lacks take the defaults."""
    document = _full_record().to_json()
    document["agent_traceback"] = "Traceback ..."  # a field of a later version
    document["steps"][0]["thumbnail"] = "x.png"
    document["cost"]["currency"] = "usd"
    document["previous_attempts"][0].pop("started_at")
    loaded = TaskExecution.from_json(document)
    assert loaded.steps[0].rejected and loaded.previous_attempts[0].started_at is None
    bare = TaskExecution.from_json({"task_id": "a", "status": "failure", "steps": [{}]})
    assert (bare.domain, bare.trial, len(bare.steps), bare.cost) == ("", 1, 1, CostRecord())


def test_run_folder_of_an_earlier_version_loads_and_summarizes_the_same(tmp_path: Path) -> None:
    run = tmp_path / "two-pools"
    shutil.copytree(FIXTURE, run)
    written = {
        p: json.loads(p.read_text(encoding="utf-8")) for p in run.glob("tasks/**/execution.json")
    }
    assert len(written) == 6
    for path, document in written.items():
        assert TaskExecution.from_json(document).to_json() == document, path
    records = {r.key: r for r in read_records(run)}
    second = records[trial_key("calc-b", 2)]
    assert second.error_type is ErrorType.TIMEOUT and second.trial == 2
    assert len(records) == 6
    expected = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    summary = json.loads(json.dumps(compute_summary(run)))
    # The figures docs/results.md redefined since that release (an agent's own errors count
    # against it; intervals that never collapse; pass@k over one task set) are computed anew;
    # every other figure is the earlier release's, and none of its keys is gone.
    redefined = {"agent_errors", "avg_score", "by_domain", "flaky_tasks", "mean_score_ci",
                 "pass_all_k", "pass_at_k", "success_rate", "success_rate_ci"}
    assert set(expected) <= set(summary)
    assert {k: v for k, v in summary.items() if k in expected and k not in redefined} == {
        k: v for k, v in expected.items() if k not in redefined}


def test_a_record_that_does_not_parse_is_named(tmp_path: Path) -> None:
    run = tmp_path / "two-pools"
    shutil.copytree(FIXTURE, run)
    bad = run / "tasks" / "paint-c" / "execution.json"
    document = json.loads(bad.read_text(encoding="utf-8"))
    document["error_type"] = "gremlins"
    bad.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(InvalidRunInputError, match="paint-c/execution.json: not a task record"):
        compute_summary(run)
