"""Run statistics, manifests and paired comparisons end to end: the real ``openadapt-evals`` CLI
over real local worker processes, with the ``random`` agent (the reference solution with a known
probability)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from oa_vm import api
from tests.support.cli import Result, run_cli
from tests.support.pools import READY_S

pytestmark = pytest.mark.integration

LOCAL_TASKS = 24
SMALL_TASKS = 6  # local_small: the trials tests run each task five times, so on these only
REPO = Path(__file__).resolve().parents[2]


def evals(*args: str, home: Path, results: Path, timeout: float = 240.0) -> Result:
    """``openadapt-evals ARGS --results-dir RESULTS`` as a subprocess."""
    return run_cli("openadapt-evals", *args, "--results-dir", str(results), home=home,
                   timeout=timeout)


def _edited_tasks(root: Path) -> tuple[Path, str]:
    """A copy of the local task suite with one task's JSON changed (not its solution)."""
    folder = root / "tasks-edited"
    shutil.copytree(REPO / "infra" / "local" / "tasks", folder)
    path = sorted((folder / "examples").glob("notepad/*.json"))[0]
    task = json.loads(path.read_text(encoding="utf-8"))
    task["instruction"] = str(task["instruction"]) + " (edited)"
    path.write_text(json.dumps(task), encoding="utf-8")
    return folder, path.stem


@pytest.mark.long
def test_sweep_summary_manifest_and_paired_compare(home: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    agent = ["--agent", "random", "--agent-arg", "p=0.5", "--agent-arg", "seed=3"]
    swept = evals("sweep", "--cloud", "local", "--workers", "2", *agent, "--tasks", "all",
                  "--run-name", "a", home=home, results=results)
    assert swept.returncode == 0, swept.stderr
    # the closing summary carries the statistics
    assert "95% CI of the success rate: [" in swept.stdout
    assert "95% CI of the mean score: [" in swept.stdout
    assert "Trials per task: 1; pass@1" in swept.stdout
    summary = json.loads((results / "a" / "summary.json").read_text())
    for key in ("trials", "success_rate_ci", "mean_score_ci", "pass_at_k", "pass_all_k",
                "flaky_tasks"):
        assert key in summary, key
    rate = summary["success_rate_ci"]
    assert rate["low"] <= summary["success_rate"] <= rate["high"]
    assert summary["pass_at_k"]["tasks"] == LOCAL_TASKS

    # manifest.json pins tasks, checker, worker, agent, project and pool
    manifest = json.loads((results / "a" / "manifest.json").read_text())
    assert len(manifest["tasks"]["sha256"]) == LOCAL_TASKS
    assert all(len(h) == 64 for h in manifest["tasks"]["sha256"].values())
    served = next(iter(manifest["tasks"]["indexes"].values()))
    assert {"(main)", "local_all", "local_small"} <= set(served)
    assert len(manifest["checker"]["scoring_rules_sha256"]) == 64
    assert len(manifest["checker"]["scoring_server_sha256"]) == 64
    assert manifest["workers"][0]["kind"] == "local"
    assert manifest["workers"][0]["local_worker_version"]
    assert manifest["agent"]["class"] == "evals.agents.chance:ChanceAgent"
    assert manifest["agent"]["arguments"] == {"p": 0.5, "seed": 3}
    assert len(manifest["agent"]["module_sha256"]) == 64
    assert manifest["project"]["oa_vm"]
    assert manifest["pools"][0]["cloud"] == "local"

    # the same setup, another agent: no warning
    again = evals("sweep", "--cloud", "local", "--workers", "2", "--agent", "oracle",
                  "--tasks", "all", "--run-name", "b", home=home, results=results)
    assert again.returncode == 0, again.stderr
    compared = evals("compare", "a", "b", "--json", home=home, results=results)
    assert compared.returncode == 0, compared.stderr
    paired = json.loads(compared.stdout)["paired"]
    assert paired["warnings"] == []
    assert any("saw the answers" in c for c in paired["caveats"])  # random and oracle did
    assert paired["tasks"] == LOCAL_TASKS
    assert paired["success_rate"]["test"] == "paired score test (t)"
    assert 0 <= paired["success_rate"]["p_value"] <= 1
    assert paired["success_rate"]["ci"]["low"] <= paired["success_rate"]["difference"]
    assert paired["worse_in_b"] == []  # the oracle solves every task
    assert paired["verdict"]

    # a pool serving one edited task: compare warns, before its verdict
    folder, edited = _edited_tasks(tmp_path)
    api.create_pool(name="edited", cloud="local", workers=1, tasks_dir=str(folder))
    api.wait_pool("edited", timeout_s=READY_S)
    ran = evals("run", "--pool", "edited", *agent, "--tasks", "all", "--run-name", "c",
                home=home, results=results)
    assert ran.returncode == 0, ran.stderr
    compared = evals("compare", "a", "c", "--json", home=home, results=results)
    warnings = json.loads(compared.stdout)["paired"]["warnings"]
    assert any(w.startswith("1 task(s) differ in their JSON: " + edited) for w in warnings)
    assert not any(w.startswith("tasks.indexes") for w in warnings)  # same IDs, same index
    text = evals("compare", "a", "c", home=home, results=results).stdout
    lines = text.splitlines()
    warning_at = next(i for i, line in enumerate(lines) if line.startswith("Warning: 1 task(s)"))
    verdict_at = next(i for i, line in enumerate(lines) if line.startswith("Verdict: "))
    assert warning_at < verdict_at
    viewed = evals("view", "c", home=home, results=results)
    assert viewed.returncode == 0, viewed.stderr
    page = (results / "c" / "view.html").read_text(encoding="utf-8")
    assert "What was measured" in page and "Statistics" in page


@pytest.mark.long
def test_compare_one_trial_against_five_and_oracle_against_noop(
        home: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    # The random agent's seeded draws belong to each task's trial (on any number of workers),
    # so the same-agent comparison below is the same on every machine, not a false alarm 5% of
    # the time.
    api.create_pool(name="cmp", cloud="local", workers=1)
    api.wait_pool("cmp", timeout_s=READY_S)

    def run(name: str, tasks: str, *args: str) -> None:
        done = evals("run", "--pool", "cmp", "--tasks", tasks, "--run-name", name, *args,
                     home=home, results=results, timeout=600.0)
        assert done.returncode == 0, done.stderr

    # the same agent, 1 trial against 5: compared on equal trials, no difference is called (on
    # the small suite: five trials of each task)
    run("one", "local_small", "--agent", "random", "--agent-arg", "p=0.3", "--agent-arg",
        "seed=11")
    run("five", "local_small", "--agent", "random", "--agent-arg", "p=0.3", "--agent-arg",
        "seed=12", "--trials", "5")
    compared = evals("compare", "one", "five", "--json", home=home, results=results)
    assert compared.returncode == 0, compared.stderr
    paired = json.loads(compared.stdout)["paired"]
    assert paired["tasks"] == SMALL_TASKS and paired["tasks_with_trials_cut"] == SMALL_TASKS
    assert paired["verdict"].startswith("no detectable difference (")
    assert not paired["significant"]
    ci = paired["success_rate"]["ci"]
    assert ci["low"] < 0 < ci["high"] and ci["high"] - ci["low"] > 0.1
    text = evals("compare", "one", "five", home=home, results=results).stdout
    assert "compared on the first trials of the longer side" in text
    assert "Warning: A's agent (random) saw the answers" in text

    # oracle against noop: a difference, the test and the interval agreeing (on the whole
    # suite: six tasks are too few for a paired test to call any difference)
    run("noop", "all", "--agent", "noop")
    run("oracle", "all", "--agent", "oracle")
    compared = evals("compare", "noop", "oracle", "--json", home=home, results=results)
    paired = json.loads(compared.stdout)["paired"]
    assert paired["significant"] and paired["success_rate"]["p_value"] < 0.05
    assert paired["success_rate"]["ci"]["low"] > 0
    assert paired["verdict"].startswith("B is better than A: +100.0 points, 95% CI [+")
    assert len(paired["better_in_b"]) == LOCAL_TASKS


def test_sweep_with_trials_reports_pass_k_and_flaky_tasks(home: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    swept = evals("sweep", "--cloud", "local", "--workers", "2", "--agent", "random",
                  "--agent-arg", "p=0.5", "--trials", "5", "--tasks", "local_small",
                  "--run-name", "t5",
                  home=home, results=results, timeout=420.0)
    assert swept.returncode == 0, swept.stderr
    run_dir = results / "t5"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["trials"] == 5
    assert summary["attempts"] == 5 * SMALL_TASKS
    assert summary["successes"] + summary["failures"] + summary["errors"] == 5 * SMALL_TASKS
    # every task's five trials are recorded, trial 1 where a run without trials has it
    for task_id in json.loads((run_dir / "metadata.json").read_text())["task_ids"]:
        folder = run_dir / "tasks" / task_id
        assert (folder / "execution.json").is_file()
        for n in range(2, 6):
            record = json.loads((folder / f"trial-{n}" / "execution.json").read_text())
            assert record["task_id"] == task_id and record["trial"] == n
        assert [t["trial"] for t in summary["trials_by_task"][task_id]] == [1, 2, 3, 4, 5]
    # the trials of a task went to more than one worker
    spread = [len({t["worker"] for t in ts}) for ts in summary["trials_by_task"].values()]
    assert max(spread) > 1
    assert summary["pass_at_k"]["k"] == 5 and summary["pass_at_k"]["tasks"] == SMALL_TASKS
    at, every = summary["pass_at_k"]["value"], summary["pass_all_k"]["value"]
    assert every <= summary["success_rate"] <= at
    counts = {tid: sum(t["status"] == "success" for t in ts)
              for tid, ts in summary["trials_by_task"].items()}
    assert sorted(f["task_id"] for f in summary["flaky_tasks"]) == sorted(
        tid for tid, c in counts.items() if 0 < c < 5)
    assert every == pytest.approx(sum(c == 5 for c in counts.values()) / SMALL_TASKS, abs=1e-6)
    assert "method" in summary["success_rate_ci"] and "mean_score_ci" in summary
    out = swept.stdout
    assert "Trials per task: 5; pass@5 " in out and "pass^5 " in out
    assert "95% CI of the success rate: [" in out
    assert ("Flaky tasks (" in out) or ("Flaky tasks: none" in out)

    # resuming with another number of trials is refused, in one line, changing nothing
    before = (run_dir / "metadata.json").read_text()
    api.create_pool(name="again", cloud="local", workers=1)
    api.wait_pool("again", timeout_s=READY_S)
    resumed = evals("run", "--pool", "again", "--agent", "random", "--tasks", "local_small",
                    "--run-name", "t5", "--resume", "--trials", "3", home=home, results=results)
    assert resumed.returncode == 2
    assert "--trials" in resumed.stderr and "Traceback" not in resumed.stderr
    assert (run_dir / "metadata.json").read_text() == before


def test_rerun_errors_reruns_only_error_tasks_and_keeps_their_attempts(
    home: Path, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    # One worker that crashes part-way: the tasks after the crash end in infrastructure errors.
    # (its requests counted from the start's probes of both its servers: its first task ends)
    swept = evals("sweep", "--cloud", "local", "--workers", "1", "--fault", "crash-after=41",
                  "--agent", "oracle", "--tasks", "local_small", "--run-name", "e",
                  home=home, results=results)
    run_dir = results / "e"
    first = {p.parent.name: json.loads(p.read_text())
             for p in (run_dir / "tasks").glob("*/execution.json")}
    errors = sorted(t for t, r in first.items() if r["status"] == "error")
    kept = {t: (run_dir / "tasks" / t / "execution.json").read_bytes()
            for t, r in first.items() if r["status"] != "error"}
    assert errors and kept, swept.stdout  # both kinds, or the test shows nothing
    assert {first[t]["error_type"] for t in errors} <= {"infrastructure", "setup", "timeout"}

    api.create_pool(name="good", cloud="local", workers=1)
    api.wait_pool("good", timeout_s=READY_S)
    rerun = evals("run", "--rerun-errors", "e", "--pool", "good", home=home, results=results)
    assert rerun.returncode == 0, rerun.stderr
    assert f"Rerun: {len(errors)} task(s) that had ended in an infrastructure, setup or " \
           "timeout error" in rerun.stdout
    for task_id in errors:
        folder = run_dir / "tasks" / task_id
        record = json.loads((folder / "execution.json").read_text())
        assert record["status"] == "success"
        (kept_attempt,) = folder.glob("attempt-*/execution.json")  # n: earlier attempts
        assert kept_attempt.parent.name == f"attempt-{len(record['previous_attempts'])}"
        earlier = json.loads(kept_attempt.read_text())
        assert earlier == first[task_id]  # the earlier attempt is kept as it was
        assert record["previous_attempts"][-1]["error_message"] == first[task_id]["error_message"]
    for task_id, content in kept.items():  # finished tasks were not run again
        assert (run_dir / "tasks" / task_id / "execution.json").read_bytes() == content
    summary = json.loads((run_dir / "summary.json").read_text())
    assert sorted(summary["reruns"][-1]["tasks"]) == errors
    assert summary["errors"] == 0


def test_a_capped_trials_run_resumes_the_trials_it_did_not_run(home: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    # $1 per worker-second: the cap stops the run part-way through its 2 x 6 trials.
    capped = evals("sweep", "--workers", "2", "--agent", "oracle", "--tasks", "local_small",
                   "--trials", "2", "--price-per-hour", "3600", "--max-cost-usd", "12",
                   "--step-pause", "0.5", "--run-name", "cap", home=home, results=results)
    assert capped.returncode == 3, capped.stderr
    run_dir = results / "cap"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["not_run"] > 0 and summary["successes"] > 0
    assert summary["attempts"] + summary["not_run"] == 12
    finished = {p: p.read_bytes() for p in (run_dir / "tasks").glob("**/execution.json")
                if json.loads(p.read_text())["status"] == "success"}

    api.create_pool(name="more", cloud="local", workers=1)
    api.wait_pool("more", timeout_s=READY_S)
    # A resume keeps the run's cap unless given another one: raise it so the rest can run.
    resumed = evals("run", "--pool", "more", "--agent", "oracle", "--tasks", "local_small",
                    "--trials", "2", "--run-name", "cap", "--resume", "--max-cost-usd", "10000",
                    home=home, results=results)
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["successes"] == 12 and summary["not_run"] == 0
    assert summary["pass_all_k"]["value"] == 1.0 and summary["pass_all_k"]["tasks"] == 6
    for path, content in finished.items():  # what was finished was not run again
        assert path.read_bytes() == content
    trials = [t["trial"] for ts in summary["trials_by_task"].values() for t in ts]
    assert sorted(trials) == [1] * 6 + [2] * 6
