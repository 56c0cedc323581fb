"""Run folder records: the documented execution.json shape, round trips, safe folder names."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from evals.results.records import (
    AttemptRecord,
    CostRecord,
    ErrorType,
    RunFolder,
    StepRecord,
    TaskExecution,
    TaskInfo,
    TaskStatus,
    error_execution,
    results_root,
    save_screenshot,
    task_id_of_folder,
)
from evals.results.run_reader import read_metadata, read_records, read_started

DOCUMENTED_KEYS = {
    "task_id", "domain", "instruction", "infeasible", "status", "score", "error_type",
    "error_message", "reason", "worker", "attempts", "started_at", "ended_at", "duration_s",
    "last_action", "steps", "cost",
}
STEP_KEYS = {"index", "action", "started_at", "duration_s", "screenshot", "window_title",
             "result", "error"}
COST_KEYS = {"worker_seconds", "vm_usd", "tokens_in", "tokens_out", "model_usd", "total_usd"}


def _execution() -> TaskExecution:
    return TaskExecution(
        task_id="abc-WOS", domain="notepad", instruction="Type hi", infeasible=False,
        status=TaskStatus.SUCCESS, score=1.0, reason="file matches", worker="w0", attempts=1,
        started_at="2026-01-01T00:00:00+00:00", ended_at="2026-01-01T00:00:02+00:00",
        duration_s=2.0, last_action="DONE",
        steps=[StepRecord(index=0, action={"type": "done"}, started_at="t",
                          screenshot="step_000.png")],
        cost=CostRecord(worker_seconds=2.0, vm_usd=0.002, total_usd=0.002),
    )


def test_execution_json_has_every_documented_key(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path / "run")
    folder.write_execution(_execution())
    data = json.loads((tmp_path / "run/tasks/abc-WOS/execution.json").read_text())
    assert set(data) >= DOCUMENTED_KEYS
    assert set(data["steps"][0]) >= STEP_KEYS
    assert set(data["cost"]) == COST_KEYS
    assert data["status"] == "success" and data["error_type"] is None


def test_execution_round_trips(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path / "run")
    original = _execution()
    assert read_records(folder.path) == []
    folder.write_execution(original)
    assert read_records(folder.path) == [original]


def test_to_json_is_what_asdict_makes_and_shares_nothing_with_the_record() -> None:
    execution = _execution()
    execution.status, execution.error_type = TaskStatus.ERROR, ErrorType.SETUP
    execution.steps.append(StepRecord(
        index=1, action={"type": "click", "at": [1, 2], "meta": {"keys": ("a", "b")}},
        started_at="t", result={"output": "x", "nested": [{"n": None}]},
        usage={"model": "m", "tokens_in": 3},
    ))
    execution.previous_attempts = [AttemptRecord(1, "w1", "timeout", "slow", "t0", "t1")]
    expected = dataclasses.asdict(execution)
    expected.update(status="error", error_type="setup")
    del expected["cost"]["by_pool"]  # empty outside multi-pool runs, so left out
    del expected["trial"]  # 1 outside --trials runs, so left out
    del expected["agent_traceback"]  # None unless the agent raised, so left out
    del expected["egress"]  # None for pools from before egress modes, so left out
    del expected["reward_components"], expected["task_traceback"]  # Cua-Bench variants only
    del expected["state_diff"]  # OpenApps-style tasks only
    for step in expected["steps"]:  # no tree recorded: the steps keep their shape
        del step["tree"], step["tree_truncated"]
    document = execution.to_json()
    assert document == expected
    assert json.dumps(document) == json.dumps(expected)
    document["steps"][1]["action"]["at"].append(3)
    document["steps"][1]["result"]["nested"][0]["n"] = 1
    assert execution.steps[1].action["at"] == [1, 2]
    assert execution.steps[1].result == {"output": "x", "nested": [{"n": None}]}


def test_a_cua_bench_variant_has_one_folder_named_back_to_its_id(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path / "run")
    assert folder.task_dir("drag_card/1") == tmp_path / "run" / "tasks" / "drag_card~1"
    assert folder.task_dir("drag_card/1#3").parent.name == "drag_card~1"
    assert task_id_of_folder("drag_card~1") == "drag_card/1"


def test_not_run_record_has_no_times_and_the_budget_type() -> None:
    info = TaskInfo("t1", "clock", "Set an alarm", False)
    record = error_execution(info, ErrorType.BUDGET, "cap", status=TaskStatus.NOT_RUN)
    data = record.to_json()
    assert data["status"] == "not_run" and data["error_type"] == "budget"
    assert data["started_at"] is None and data["score"] is None


@pytest.mark.parametrize("bad", ["../escape", "a/b/c", "a/..", "", ".hidden", "x y", "a~b"])
def test_task_ids_that_could_escape_the_folder_are_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError):
        RunFolder(tmp_path).task_dir(bad)


def test_clear_steps_removes_only_screenshots(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path / "run")
    folder.write_task("t1", {"id": "t1"})
    for index in (0, 1):  # as the agent loop saves them
        save_screenshot(folder.task_dir("t1"), index, b"png", root=folder.path)
    folder.clear_steps("t1")
    assert sorted(p.name for p in folder.task_dir("t1").iterdir()) == ["task.json"]


def test_metadata_update_merges_into_what_the_folder_wrote(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path / "run")
    assert read_started(folder.path) is None
    folder.write_metadata({"run": "run", "status": "running"})
    folder.metadata_path.write_text('{"run": "edited"}')  # never read back by the writer
    assert folder.update_metadata(status="finished") == {"run": "run", "status": "finished"}
    assert read_metadata(folder.path) == {"run": "run", "status": "finished"}
    assert folder.exists()


def test_results_root_prefers_the_flag_then_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OA_EVALS_RESULTS", str(tmp_path / "env"))
    assert results_root(tmp_path / "flag") == tmp_path / "flag"
    assert results_root(None) == tmp_path / "env"
    monkeypatch.delenv("OA_EVALS_RESULTS")
    assert results_root(None) == Path("benchmark_results")


def test_sync_executions_rewrites_missing_stale_and_cut_copies_from_the_queue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = RunFolder(tmp_path / "run")
    folder.create()
    keys = ["same-WOS", "stale-WOS", "cut-WOS", "gone-WOS"]
    records = {}
    for key in keys:
        execution = dataclasses.replace(_execution(), task_id=key)
        records[key] = execution.to_json()
        folder.write_execution(execution, durable=False)
    stale = folder.task_dir("stale-WOS") / "execution.json"
    stale.write_text(json.dumps({**records["stale-WOS"], "status": "error"}))
    cut = folder.task_dir("cut-WOS") / "execution.json"
    cut.write_text(cut.read_text()[:40])
    (folder.task_dir("gone-WOS") / "execution.json").unlink()
    fsyncs: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (fsyncs.append(fd), real_fsync(fd))[1])
    assert folder.sync_executions(records) == ["stale-WOS", "cut-WOS", "gone-WOS"]
    assert len(fsyncs) == 2 * 3  # each rewrite is durable: the file and its folder
    for key in keys:
        path = folder.task_dir(key) / "execution.json"
        assert json.loads(path.read_text()) == records[key]
    assert folder.sync_executions(records) == []


def test_a_non_durable_execution_write_is_atomic_without_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = RunFolder(tmp_path / "run")
    folder.create()
    fsyncs: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (fsyncs.append(fd), real_fsync(fd))[1])
    folder.write_execution(_execution(), durable=False)
    assert fsyncs == []
    folder.write_execution(_execution())
    assert len(fsyncs) == 2
    task_dir = folder.task_dir("abc-WOS")
    assert sorted(p.name for p in task_dir.iterdir()) == ["execution.json"]  # no temp file left


def test_a_step_tree_is_capped_compressed_and_moves_with_the_screenshots(tmp_path: Path) -> None:
    from evals.results.records import TREE_LIMIT_BYTES, read_tree, save_tree, step_files

    small, cut = save_tree(tmp_path, 0, "<Desktop>é</Desktop>")
    assert (small, cut) == ("step_000.tree.xml.gz", False)
    assert read_tree(tmp_path, small) == "<Desktop>é</Desktop>"
    huge = "<Desktop>" + "é" * TREE_LIMIT_BYTES + "</Desktop>"
    name, cut = save_tree(tmp_path, 1, huge)
    text = read_tree(tmp_path, name)
    assert cut and len(text.encode()) <= TREE_LIMIT_BYTES and huge.startswith(text)
    assert (tmp_path / name).stat().st_size < TREE_LIMIT_BYTES // 50  # compressed
    (tmp_path / "step_000.png").write_bytes(b"png")
    (tmp_path / "task.json").write_text("{}")
    assert [p.name for p in step_files(tmp_path)] == [
        "step_000.png", "step_000.tree.xml.gz", "step_001.tree.xml.gz"]
    address = "https://w.example/act?token=s3cr3tvalue1234"
    secret, _ = save_tree(tmp_path, 2, f'<Edit value="{address}" />')
    assert "s3cr3tvalue1234" not in read_tree(tmp_path, secret)  # masked as a record's text is
    record = _execution()
    record.steps.append(StepRecord(index=0, action={}, started_at="t", tree=small))
    steps = record.to_json()["steps"]
    assert "tree" not in steps[0] and steps[1]["tree"] == small  # only where one was recorded
    assert TaskExecution.from_json(record.to_json()).steps[1].tree == small
