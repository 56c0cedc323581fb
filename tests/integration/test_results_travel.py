"""Results that travel: ten real runs of three agents on a local pool, made once for the module,
exported as Inspect AI's log and as a trajectory dataset, and listed by ``openadapt-evals runs``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from evals.metrics import read_records
from tests.support.cli import run_cli
from tests.support.local_runs import LOOK, RUNS, LocalRuns, make_runs

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRuns]:
    root = tmp_path_factory.mktemp("runs")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OA_VM_HOME", str(root / "home"))
        yield make_runs(root)


def evals(runs: LocalRuns, *args: str) -> tuple[int, str, str]:
    done = run_cli("openadapt-evals", *args, "--results-dir", str(runs.results), home=runs.home,
                   timeout=300)
    return done.returncode, done.stdout, done.stderr


def test_every_step_keeps_the_tree_the_agent_was_given(runs: LocalRuns) -> None:
    from evals.records import read_tree

    records = read_records(runs.results / "oracle-trials")
    steps = [s for r in records for s in r.steps]
    assert steps and all(s.tree and s.tree.endswith(".tree.xml.gz") for s in steps)
    folder = runs.results / "oracle-trials" / "tasks" / records[0].task_id
    tree = read_tree(folder, records[0].steps[0].tree or "")
    assert tree.startswith("<Desktop") and "<Window" in tree


def test_inspect_log_reads_back_one_sample_per_attempt(runs: LocalRuns, tmp_path: Path) -> None:
    from inspect_ai._view.common import get_log_file, get_logs
    from inspect_ai.log import read_eval_log

    from evals.export.inspect_log import write_inspect_log

    out = tmp_path / "logs" / "oracle-trials.eval"
    out.parent.mkdir()
    # in this process: the CLI's path is the same call (checked for jsonl below), and a second
    # import of Inspect AI in a subprocess costs seconds
    write_inspect_log(runs.results / "oracle-trials", out)
    log = read_eval_log(str(out))
    records = read_records(runs.results / "oracle-trials")
    assert len(records) == 4  # two tasks, two trials each
    assert log.samples is not None and len(log.samples) == len(records)
    by_attempt = {(s.id, s.epoch): s for s in log.samples}
    for record in records:
        sample = by_attempt[(record.task_id, record.trial)]
        assert sample.scores is not None
        assert sample.scores["waa_checker"].value == record.score
        assert sample.input == record.instruction
        assert sample.metadata["worker"] == record.worker
        assert sample.metadata["trial"] == record.trial
        # the instruction, then per step the observation and the action
        images = [c for m in sample.messages if isinstance(m.content, list)
                  for c in m.content if c.type == "image"]
        assert len(images) == len(record.steps)
    assert log.eval.metadata is not None and log.eval.metadata["sees_answers"] is True
    # the loader `inspect view` serves the log with
    listing = asyncio.run(get_logs(str(out.parent), recursive=True, fs_options={}))
    assert listing is not None and [Path(f.name).name for f in listing.files] == [out.name]
    payload = asyncio.run(get_log_file(str(out), None))
    served = json.loads(payload.contents)
    assert len(served["samples"]) == len(records)


def test_hf_dataset_reads_back_one_row_per_step(runs: LocalRuns, tmp_path: Path) -> None:
    import datasets
    from PIL import Image

    from evals.export.dataset import write_hf_dataset

    out = tmp_path / "hf"
    assert write_hf_dataset(runs.results / "oracle-trials", out) > 0
    data = datasets.load_from_disk(str(out))
    records = read_records(runs.results / "oracle-trials")
    assert data.num_rows == sum(len(r.steps) for r in records)
    scores = {r.key: r.score for r in records}
    for row in data:
        assert isinstance(row["screenshot"], Image.Image) and row["screenshot"].size[0] > 0
        assert row["accessibility_tree"].startswith("<Desktop")
        assert row["score"] == scores[row["attempt"]]
        assert json.loads(row["action"])["type"]
    assert any(r["action_text"] == "DONE" for r in data)


def test_jsonl_stores_each_screenshot_once(runs: LocalRuns, tmp_path: Path) -> None:
    out = tmp_path / "jsonl"
    code, stdout, stderr = evals(runs, "export", "oracle-trials", "--format", "jsonl",
                                 "--out", str(out))
    assert code == 0, stderr
    assert f"{out}  (" in stdout
    code, _, stderr = evals(runs, "export", "noop-a", "--format", "jsonl", "--out", str(out))
    assert code == 2 and "exists" in stderr and "--force" in stderr  # nothing replaced
    assert len((out / "steps.jsonl").read_text().splitlines()) > 2
    rows = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    names = {r["screenshot"] for r in rows}
    assert len(list((out / "images").iterdir())) == len(names)
    assert all((out / n).is_file() for n in names)


def test_export_refuses_an_unknown_format_in_one_line(runs: LocalRuns) -> None:
    code, stdout, stderr = evals(runs, "export", "noop-a", "--format", "parquet")
    assert code == 2 and "inspect, hf, jsonl" in stderr and "Traceback" not in stderr


def test_runs_table_marks_the_oracle(runs: LocalRuns) -> None:
    code, stdout, stderr = evals(runs, "runs")
    assert code == 0, stderr
    lines = stdout.splitlines()
    for name, agent, args, _trials in RUNS:
        (line,) = [x for x in lines if x.startswith(name + " ")]
        assert f" {agent} " in line
        assert ("SAW ANSWERS" in line) == (agent == "oracle"), line
        assert " ".join(sorted(args)) in line
    assert "the agent was given the tasks' answers in oracle-b, oracle-trials" in stdout
    code, stdout, stderr = evals(runs, "runs", "--json", "--agent", LOOK)
    assert code == 0, stderr
    listed = json.loads(stdout)["runs"]
    assert {r["name"] for r in listed} == {n for n, a, _, _ in RUNS if a == LOOK}
    slow = next(r for r in listed if r["name"] == "look-3")
    assert slow["arguments"] == {"looks": 3, "label": "slow"}
    assert slow["rate_low"] <= slow["success_rate"] <= slow["rate_high"]
    assert slow["pool_kind"] == "local" and slow["tasks"] == 2
    from evals.run_list import list_run_rows  # the other filters, without a process each

    assert not [r for r in list_run_rows(runs.results, hide_answers=True) if r.saw_answers]
    oracles = list_run_rows(runs.results, agent="oracle")
    assert {r.name: r.trials for r in oracles} == {"oracle-trials": 2, "oracle-b": 1}
    assert list_run_rows(runs.results, since="2999-01-01") == []


