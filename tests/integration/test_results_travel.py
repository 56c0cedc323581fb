"""Results that travel: ten real runs of three agents on a local pool, made once for the module,
exported as Inspect AI's log and as a trajectory dataset, and listed by ``openadapt-evals runs``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from evals.results.run_reader import read_records
from infra.local.browser import BrowserScreen, find_chromium
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
    from evals.results.records import read_tree

    records = read_records(runs.results / "oracle-trials")
    steps = [s for r in records for s in r.steps]
    assert steps and all(s.tree and s.tree.endswith(".tree.xml.gz") for s in steps)
    folder = runs.results / "oracle-trials" / "tasks" / records[0].task_id
    tree = read_tree(folder, records[0].steps[0].tree or "")
    assert tree.startswith("<Desktop") and "<Window" in tree


def test_a_run_interrupted_after_its_last_task_has_its_summary(runs: LocalRuns) -> None:
    cut = runs.results.parent / "interrupted" / "cut"
    assert json.loads((cut / "metadata.json").read_text())["status"] == "interrupted"
    summary = json.loads((cut / "summary.json").read_text())
    assert summary["status"] == "interrupted" and summary["attempts"] == 2
    assert summary["task_ids_pending"] == []


def test_inspect_log_reads_back_one_sample_per_attempt(runs: LocalRuns, tmp_path: Path) -> None:
    from inspect_ai._view.common import get_log_file, get_logs
    from inspect_ai.log import read_eval_log

    from evals.report.export.inspect_log import write_inspect_log

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

    from evals.report.export.dataset import write_hf_dataset

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
    assert len((out / "steps.jsonl").read_text().splitlines()) > 2
    rows = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    names = {r["screenshot"] for r in rows}
    assert len(list((out / "images").iterdir())) == len(names)
    assert all((out / n).is_file() for n in names)
    # its own earlier export is replaced whole, without --force (the --out rule)
    code, _, stderr = evals(runs, "export", "noop-a", "--format", "jsonl", "--out", str(out))
    assert code == 0, stderr
    rows = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    assert {r["run"] for r in rows} == {"noop-a"}
    assert len(list((out / "images").iterdir())) == len({r["screenshot"] for r in rows})


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
    from evals.report.run_list import list_run_rows  # the other filters, without a process each

    assert not [r for r in list_run_rows(runs.results, hide_answers=True) if r.saw_answers]
    oracles = list_run_rows(runs.results, agent="oracle")
    assert {r.name: r.trials for r in oracles} == {"oracle-trials": 2, "oracle-b": 1}
    assert list_run_rows(runs.results, since="2999-01-01") == []




# --- the pages, in a real browser ----------------------------------------------------------------


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrowserScreen]:
    if find_chromium() is None:
        pytest.skip("no Chromium (apt-get install chromium)")
    screen = BrowserScreen(tmp_path_factory.mktemp("browser"), (1400, 1800))
    yield screen
    screen.stop()


def _open(browser: BrowserScreen, page: Path, png: Path) -> str:
    """Open ``page`` in headless Chromium, save its picture to ``png``; returns the window id."""
    window = browser.launch(url=page.as_uri(), x=0, y=0, width=1400, height=1800)
    png.write_bytes(browser.capture(window))
    return str(window.wid)


def test_run_page_in_chromium(runs: LocalRuns, browser: BrowserScreen, tmp_path: Path) -> None:
    from evals.report.viewer import write_view

    oracle = write_view(runs.results / "oracle-trials")
    wid = _open(browser, oracle, tmp_path / "oracle.png")
    ev = browser.evaluate
    assert tmp_path.joinpath("oracle.png").stat().st_size > 10_000
    banner = ev(wid, "(() => { const b = document.querySelector('.answers-banner');"
                     " return b ? [b.textContent, b.getBoundingClientRect().height] : null })()")
    assert banner is not None and "saw the answers" in banner[0] and banner[1] > 10
    # every task row's columns line up, trial 2 rows as trial 1 rows
    lefts = ev(wid, "[...document.querySelectorAll('details.task > summary')].map(s =>"
                    " [...s.children].map(c => Math.round(c.getBoundingClientRect().left)))")
    assert len(lefts) == 4 and all(row == lefts[0] for row in lefts), lefts
    # per-domain rates with interval whiskers
    whiskers = ev(wid, "[...document.querySelectorAll('svg.domain-whiskers g.domain')].map(g =>"
                       " [g.dataset.domain, g.querySelector('line.whisker').getBBox().width,"
                       "  g.querySelector('circle.rate').getBBox().width])")
    assert whiskers and all(w > 0 and dot > 0 for _, w, dot in whiskers), whiskers
    assert ev(wid, "document.querySelector('.meta').textContent").count(
        "evals.agents.oracle:OracleAgent") == 1

    look = write_view(runs.results / "look-3")
    wid = _open(browser, look, tmp_path / "look.png")
    ev = browser.evaluate
    assert ev(wid, "document.querySelector('.answers-banner')") is None
    assert "looks=3" in ev(wid, "document.querySelector('.meta').textContent")
    # a click's marker sits on its screenshot; the tree is in a closed block beside it
    ev(wid, "(async () => { document.querySelectorAll('details.task').forEach(d => d.open = true);"
            " await Promise.all([...document.images].map(i => { i.loading = 'eager';"
            " return i.decode().catch(() => null) })) })()")
    marks = ev(wid, "[...document.querySelectorAll('.click-marker')].map(m => {"
                                  " const s = m.closest('.shot').getBoundingClientRect();"
                                  " const r = m.getBoundingClientRect();"
                                  " return [r.left - s.left, r.top - s.top, s.width, s.height] })")
    assert marks and all(0 < x < w and 0 < y < h for x, y, w, h in marks), marks
    trees = ev(wid, "[...document.querySelectorAll('details.tree')].map(d =>"
                                  " [d.open, d.querySelector('pre').textContent.length])")
    assert trees and all(not is_open and n > 0 for is_open, n in trees)


def test_compare_page_in_chromium(runs: LocalRuns, browser: BrowserScreen, tmp_path: Path) -> None:
    from evals.report.compare import compare_runs, write_comparison

    # neither run's page was written before: the step links must still open one
    for name in ("noop-b", "look-1b"):
        assert not (runs.results / name / "view.html").exists()
    page = write_comparison(compare_runs(runs.results / "noop-b", runs.results / "look-1b"),
                            tmp_path / "compare.html")
    wid = _open(browser, page, tmp_path / "compare.png")
    ev = browser.evaluate
    points = ev(wid, "[...document.querySelectorAll('svg.task-plot circle.task-point')].map(c =>"
                     " c.getBoundingClientRect().width)")
    assert len(points) == 2 and all(w > 0 for w in points)
    rows = ev(wid, "[...document.querySelectorAll('table.manifest-diff tr')].map(r =>"
                   " r.textContent)")
    assert any("agent.class" in r and "LookThenStop" in r for r in rows), rows
    assert any("agent.arguments.label" in r for r in rows), rows
    links = ev(wid, "[...document.querySelectorAll('a')].filter(a => a.textContent == 'steps')"
                    ".map(a => a.href)")
    assert len(links) == 4
    from urllib.parse import unquote, urlparse

    assert all(Path(unquote(urlparse(h).path)).is_file() for h in links), links


def test_run_waits_for_a_new_pool_to_be_ready(tmp_path: Path) -> None:
    from oa_vm import api
    from oa_vm.model import state

    home = tmp_path / "home"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OA_VM_HOME", str(home))
        api.create_pool(name="fresh", cloud="local", workers=1, ttl_hours=1.0)  # not waited for
        try:
            done = run_cli("openadapt-evals", "run", "--pool", "fresh", "--wait-ready", "5m",
                           "--tasks", "1", "--agent", "noop", "--run-name", "r",
                           "--results-dir", str(tmp_path / "results"), home=home, timeout=300)
            assert done.returncode == 0, done.stdout + done.stderr
            assert "waiting for pool fresh to be ready (at most 5m)" in done.stderr
            assert (tmp_path / "results" / "r" / "summary.json").is_file()
        finally:
            for name in state.list_names():
                api.cleanup_pool(name)
