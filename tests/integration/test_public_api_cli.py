"""``openadapt-evals mock``, ``view`` and ``compare`` as a user runs them (real subprocesses)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import run_cli

pytestmark = pytest.mark.integration


def _pools_left(home: Path) -> list[Path]:
    return list((home / "pools").glob("*/pool.json"))


def test_mock_view_compare(tmp_path: Path) -> None:
    home, results = tmp_path / "oa-home", tmp_path / "results"
    env = {"OA_EVALS_RESULTS": str(results)}

    oracle = run_cli("openadapt-evals", "mock", "--tasks", "3", "--workers", "2",
                     "--run-name", "quick-oracle", home=home, env=env, timeout=240)
    assert oracle.returncode == 0, oracle.stderr
    assert oracle.stdout.startswith("Attempts: 3\nOutcomes: 3  (success 3, failure 0)\n")
    assert "Success rate: 100.0% (outcomes only)" in oracle.stdout
    assert "Mean score: 1.000 (WAA's headline: the mean score over scored tasks)" in oracle.stdout
    # The oracle read the answers: the run says so, in its summary and its metadata.
    assert "Agent saw the answers: oracle" in oracle.stdout
    metadata = json.loads((results / "quick-oracle" / "metadata.json").read_text())
    assert metadata["answer_visible_agents"] == ["oracle"]
    assert f"Page: {results / 'quick-oracle' / 'view.html'}" in oracle.stdout
    assert "removing local pool mock-" in oracle.stderr
    assert _pools_left(home) == []

    noop = run_cli("openadapt-evals", "mock", "--tasks", "3", "--agent", "noop",
                   "--run-name", "quick-noop", "--results-dir", str(results), home=home,
                   timeout=240)
    assert noop.returncode == 0, noop.stderr
    assert "Success rate: 0.0% (outcomes only)" in noop.stdout
    assert "saw the answers" not in noop.stdout
    assert _pools_left(home) == []

    viewed = run_cli("openadapt-evals", "view", "--run-name", "quick-noop", home=home, env=env)
    assert viewed.returncode == 0, viewed.stderr
    assert viewed.stdout == f"{results / 'quick-noop' / 'view.html'}\n"

    compared = run_cli("openadapt-evals", "compare", "quick-oracle", "quick-noop", "--json",
                       home=home, env=env)
    assert compared.returncode == 0, compared.stderr
    data = json.loads(compared.stdout)
    # noop reports DONE at once: every task the oracle solved is lost.
    assert data["common_tasks"] == 3
    assert data["changes"] == {"improved": 0, "regressed": 3, "changed": 0, "same": 0}
    assert Path(data["page"]).is_file()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["view", "--run-name", "missing"], "no run named 'missing'"),
        (["compare", "a", "b"], "no run named 'a'"),
        (["mock", "--agent", "replay"], "--agent 'replay' is not available for mock"),
    ],
)
def test_bad_input_is_one_line(tmp_path: Path, args: list[str], expected: str) -> None:
    result = run_cli("openadapt-evals", *args, home=tmp_path / "oa-home",
                     env={"OA_EVALS_RESULTS": str(tmp_path / "results")})
    line = result.assert_one_line_error()
    assert expected in line
    assert result.returncode == 2
    assert _pools_left(tmp_path / "oa-home") == []


@pytest.mark.parametrize("args", [["view", "notarun"], ["compare", "notarun", "notarun"],
                                  ["export", "notarun"],
                                  ["run", "--rerun-errors", "notarun", "--pool", "absent"]])
def test_a_folder_that_holds_no_run_is_said_to_be_one(tmp_path: Path, args: list[str]) -> None:
    # a folder of the user's own in the results folder: "no run named 'notarun'" was false (the
    # folder is there) and sent the user looking for a typo
    results = tmp_path / "results"
    (results / "notarun").mkdir(parents=True)
    (results / "notarun" / "notes.txt").write_text("mine", encoding="utf-8")
    result = run_cli("openadapt-evals", *args, "--results-dir", str(results),
                     home=tmp_path / "oa-home")
    assert result.assert_one_line_error() == (
        f"openadapt-evals: error: {results / 'notarun'} exists but holds no run (no "
        f"metadata.json); list the runs with 'openadapt-evals runs --results-dir {results}'")
    assert result.returncode == 2
    assert sorted(p.name for p in (results / "notarun").iterdir()) == ["notes.txt"]
    assert _pools_left(tmp_path / "oa-home") == []
