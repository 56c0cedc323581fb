"""``openadapt-evals audit-verifier`` for any benchmark: the built-in toy and a user's own
adapter given as ``module:Class``, through the real CLI."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.support.cli import run_cli

pytestmark = pytest.mark.integration


def _rows(stdout: str, header: str) -> list[list[str]]:
    """The rows of the table whose header line starts with ``header``."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] == [header])
    rows = []
    for line in lines[start + 2:]:  # header, then the dashes
        if not line.strip():
            break
        rows.append(line.split())
    return rows


def test_toy_prints_both_tables_and_exits_1(oa_home: Path, tmp_path: Path) -> None:
    report = tmp_path / "toy.json"
    done = run_cli("openadapt-evals", "audit-verifier", "--benchmark", "toy", "--out",
                   str(report), home=oa_home)
    assert done.returncode == 1, done.stdout + done.stderr
    accepts = _rows(done.stdout, "task")
    assert sorted((r[0], r[1]) for r in accepts) == [
        ("invite-guests", "extra"), ("invite-guests", "extra-ni"),
        ("tag-photo", "extra"), ("tag-photo", "extra-ni")]
    per_op = {r[0]: r for r in _rows(done.stdout, "operator")}
    assert list(per_op) == ["claim-only", "omit", "partial", "wrong-value", "extra", "extra-ni"]
    # columns: operator class runs killed false-accept equivalent unconfirmed refused error invalid
    assert per_op["extra"][4] == "2" and per_op["extra-ni"][4] == "2"
    assert all(per_op[op][4] == "0" for op in ("claim-only", "omit", "partial", "wrong-value"))
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["summary"]["false_accepts"] == 4
    assert data["schema"] == "openadapt-evals/verifier-audit/v1"
    assert "no false accept" in done.stderr  # one progress line per task
    clean = run_cli("openadapt-evals", "audit-verifier", "--benchmark", "toy", "--tasks",
                    "invite-guests-counted,star-repos", "--json", home=oa_home)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert json.loads(clean.stdout)["summary"]["false_accepts"] == 0
    zero = run_cli("openadapt-evals", "audit-verifier", "--benchmark", "toy", "--exit-zero",
                   "--operators", "extra", home=oa_home)
    assert zero.returncode == 0 and "false accept" in zero.stdout


USER_ADAPTER = '''
"""A user's benchmark: a counter app whose verifier checks the total only."""
from evals.verifier_audit import Delivery, Reference
from evals.verifier_audit.operators import CallPolicy


class CounterAdapter:
    name = "counter"
    ignore_fields = frozenset({"id"})
    policy = CallPolicy(is_auth=lambda c: False, is_claim=lambda c: c["url"] == "/done")

    def describe(self):
        return {"name": self.name, "version": "1"}

    def task_ids(self, split, limit):
        return ["add-two"]

    def _play(self, calls):
        rows = []
        for call in calls:
            if call["url"] == "/add":
                rows.append({"id": len(rows) + 1, "n": call["data"]["n"]})
        return rows, {"c.Add": {"added": rows, "removed": [], "updated": []}} if rows else {}

    def reference(self, task_id):
        calls = [{"method": "post", "url": "/add", "data": {"n": 1}},
                 {"method": "post", "url": "/add", "data": {"n": 1}},
                 {"method": "post", "url": "/done", "data": {}}]
        return Reference(task_id, calls, self._play(calls)[1])

    def deliver(self, task_id, runs):
        out = []
        for run in runs:
            rows, effect = self._play(run.calls)
            verdict = ("PASS" if sum(r["n"] for r in rows) >= 2 else "FAIL") if run.grade else None
            out.append(Delivery(run.run_id, effect, verdict, [200] * len(run.calls)))
        return out
'''


def test_a_user_adapter_given_as_module_class_runs(oa_home: Path, tmp_path: Path) -> None:
    (tmp_path / "mybench.py").write_text(textwrap.dedent(USER_ADAPTER), encoding="utf-8")
    env = {"PYTHONPATH": str(tmp_path)}
    done = run_cli("openadapt-evals", "audit-verifier", "--benchmark", "mybench:CounterAdapter",
                   "--json", home=oa_home, env=env)
    assert done.returncode == 1, done.stdout + done.stderr  # ">= 2" passes a third add
    data = json.loads(done.stdout)
    assert data["benchmark"] == {"name": "counter", "version": "1"}
    classes = {r["operator"]: r["run_class"] for r in data["tasks"][0]["runs"]}
    assert classes["extra"] == "false-accept"
    assert classes["omit"] == "killed" and classes["claim-only"] == "killed"
    assert classes["wrong-value"] == "false-accept"  # n=2 instead of 1 still sums to >= 2
    bad = run_cli("openadapt-evals", "audit-verifier", "--benchmark", "mybench:Nope",
                  home=oa_home, env=env)
    assert "cannot load the adapter" in bad.assert_one_line_error()


@pytest.mark.parametrize(("args", "fragment"), [
    (["--benchmark", "nosuch"], "package.module:Class"),
    (["--benchmark", "no_such_module_here:X"], "cannot load the adapter"),
    (["--benchmark", "json:JSONDecoder"], "is not a benchmark adapter"),
    (["--benchmark", "toy", "--operators", "extra,bogus"], "unknown operator(s) bogus"),
    (["--benchmark", "toy", "--tasks", "nope"], "1 unknown task ID(s) in --benchmark toy: 'nope'"),
    (["--benchmark", "toy", "--pool", "p"], "--pool is for --benchmark local"),
    (["--benchmark", "toy", "--jobs", "0"], "--jobs must be at least 1"),
    (["--benchmark", "local", "--split", "train"], "only for adapter benchmarks"),
])
def test_bad_input_is_one_line(oa_home: Path, args: list[str], fragment: str) -> None:
    done = run_cli("openadapt-evals", "audit-verifier", *args, home=oa_home)
    assert fragment in done.assert_one_line_error()
    assert done.returncode == 2
    assert not (oa_home / "pools").exists() or not any((oa_home / "pools").iterdir())
