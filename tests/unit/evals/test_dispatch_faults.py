"""The dispatcher's handling of a worker that fails resets or setups, in process, against
scripted HTTP workers on loopback: a setup failure is retried once elsewhere before it is final,
and a worker whose resets keep failing is quarantined and charged with its errors."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest

from evals.agents.noop import NoopAgent
from evals.results.ledger import Ledger
from evals.results.records import RunFolder, TaskInfo
from evals.run.queue import TaskQueue
from evals.run.runner import Dispatcher, RunConfig
from oa_vm.reach.connect import WorkerConnection
from tests.support.http_servers import PNG_1PX, Reply, ScriptedServer
from waa_client import ScoringClient, WaaClient
from waa_client.http import no_retry_waits

VERDICT = Reply.json({"score": 0.0, "success": False, "reason": "noop"})
TASKS = {f"t{i}": {"id": f"t{i}", "instruction": "x", "config": [],
                   "evaluator": {"func": "exact_match"}} for i in range(4)}


def _waa_routes(reset_ok: bool) -> dict[str, Reply | list[Reply]]:
    reset = Reply(200, b"ok", "text/plain") if reset_ok else Reply.json(
        {"status": "error", "message": "profile folder missing"}, 400)
    return {
        "/setup/close_all": reset,
        "/setup/clear_task_files": reset,
        "/obs_winagent": Reply.json({"image": base64.b64encode(PNG_1PX).decode()}),
        "/accessibility": Reply.json({"AT": "<root/>"}),
    }


@pytest.fixture
def workers() -> Iterator[list[WorkerConnection]]:
    with ScriptedServer(_waa_routes(False)) as bad_waa, ScriptedServer(
        _waa_routes(True)
    ) as good_waa, ScriptedServer(
        {"/setup": Reply.json({"status": "success", "results": []}), "/evaluate": VERDICT}
    ) as scoring, no_retry_waits():
        made = []
        for name, waa in (("broken", bad_waa), ("healthy", good_waa)):
            made.append(WorkerConnection(
                name=name, waa=WaaClient(waa.url, read_timeout=5, connect_timeout=2),
                scoring=ScoringClient(scoring.url, read_timeout=5, connect_timeout=2),
                waa_url=waa.url, scoring_url=scoring.url,
            ))
        yield made


def test_reset_failures_are_retried_elsewhere_and_quarantine_the_worker(
    tmp_path: Path, workers: list[WorkerConnection]
) -> None:
    folder = RunFolder(tmp_path / "run")
    folder.path.mkdir()
    queue = TaskQueue(folder.queue_path, owner="t", max_attempts=3)
    queue.add([(tid, 1.0) for tid in TASKS])
    infos = {tid: TaskInfo(tid, "d", "x", False) for tid in TASKS}
    dispatcher = Dispatcher(
        folder, queue, Ledger(None), workers, TASKS, infos, NoopAgent,
        RunConfig(pool=None, selection="all", agent="noop", max_steps=2, task_timeout_s=60,
                  quarantine_after=2),
    )
    try:
        outcome = dispatcher.run()
        records = queue.records()
    finally:
        queue.close()
    assert outcome.quarantined == ["broken"]
    assert len(records) == 4
    # every task ended where the desktop works: scored, never a setup error
    assert {r["status"] for r in records.values()} == {"failure"}
    assert {r["worker"] for r in records.values()} == {"healthy"}
    failed_here = [a for r in records.values() for a in r["previous_attempts"]
                   if a["worker"] == "broken"]
    assert failed_here and {a["error_type"] for a in failed_here} == {"setup"}
