"""A new pool named like one whose record is unreadable: the refusal says the record is
unreadable and to fix or move the file (naming it), as every other command does, never to
remove the pool with ``pool-cleanup`` (which refuses such a record too). The file is untouched.

A plan (``--plan``) of a name that is taken is refused as the create is, in the same line.

The console scripts run as real subprocesses.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from oa_vm.model.state import PoolRecord, PoolState
from tests.support.cli import run_cli

pytestmark = pytest.mark.integration

CREATES = {
    "pool-create": ("oa-vm", ("pool-create", "--cloud", "local", "--name", "pb", "-y")),
    "sweep": ("openadapt-evals", ("sweep", "--cloud", "local", "--pool", "pb", "--tasks", "1",
                                  "--agent", "noop", "--results-dir", "{results}", "-y")),
}


@pytest.mark.parametrize("text", ["{", '{"version": 1, "name": "pb", "clo'])
@pytest.mark.parametrize("command", sorted(CREATES))
def test_a_corrupt_record_s_name_is_refused_with_advice_that_works(
    tmp_path: Path, command: str, text: str
) -> None:
    home = tmp_path / "home"
    record = home / "pools" / "pb" / "pool.json"
    record.parent.mkdir(parents=True)
    record.write_text(text)
    script, args = CREATES[command]
    args = tuple(a.replace("{results}", str(tmp_path / "results")) for a in args)
    line = run_cli(script, *args, home=home).assert_one_line_error()
    assert f"pool record {record} is unreadable: not valid JSON" in line, line
    assert "fix or move the file by hand" in line, line
    assert "pool-cleanup" not in line, line
    # the advice of that line is what the cleanup says too
    cleanup = run_cli("oa-vm", "pool-cleanup", "--pool", "pb", "-y", home=home)
    assert "fix or move the file by hand" in cleanup.assert_one_line_error()
    assert record.read_text() == text
    assert sorted(p.name for p in home.rglob("*") if p.is_file()
                  and "lock" not in p.name) == ["pool.json"]


# the commands that make a pool, each with and without --plan; "{results}" is a folder of tmp_path
MAKERS = {
    "pool-create, local": ("oa-vm", ("pool-create", "--cloud", "local", "--pool", "pb", "-y")),
    "pool-create, aws": ("oa-vm", ("pool-create", "--cloud", "aws", "--pool", "pb", "--workers",
                                   "1", "--allow-cidr", "203.0.113.7/32", "-y")),
    "smoke": ("oa-vm", ("smoke", "--cloud", "aws", "--pool", "pb", "--allow-cidr",
                        "203.0.113.7/32", "-y")),
    "sweep, local": ("openadapt-evals", ("sweep", "--cloud", "local", "--pool", "pb", "--tasks",
                                         "1", "--agent", "noop", "--results-dir", "{results}",
                                         "-y")),
    "sweep, aws": ("openadapt-evals", ("sweep", "--cloud", "aws", "--pool", "pb", "--tasks", "1",
                                       "--agent", "noop", "--allow-cidr", "203.0.113.7/32",
                                       "--results-dir", "{results}", "-y")),
}


@pytest.mark.parametrize("command", sorted(MAKERS))
def test_a_plan_of_a_taken_name_is_refused_as_its_create_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    # a plan of a pool that cannot be made under that name is no plan: the same line as the
    # create's, exit 2, and nothing planned, priced or written
    home = tmp_path / "home"
    monkeypatch.setenv("OA_VM_HOME", str(home))
    from oa_vm.model import state

    state.save(PoolRecord(name="pb", cloud="aws", state=PoolState.READY,
                          created_at=state.utcnow()))
    before = sorted(home.rglob("*"))
    empty = tmp_path / "empty-path"  # no engine; no address is detected
    empty.mkdir()
    env = {"PATH": str(empty), "OA_VM_IP_ECHO_URL": "http://127.0.0.1:9/"}
    script, args = MAKERS[command]
    args = tuple(a.replace("{results}", str(tmp_path / "results")) for a in args)
    create = run_cli(script, *args, home=home, env=env)
    plan = run_cli(script, *args, "--plan", home=home, env=env)
    line = create.assert_one_line_error()
    assert "a pool named 'pb' already exists" in line, line
    assert plan.assert_one_line_error() == line
    assert (create.returncode, plan.returncode) == (2, 2)
    assert plan.stdout == "", f"planned a pool it cannot make: {plan.stdout!r}"
    assert sorted(home.rglob("*")) == before and not (tmp_path / "results").exists()
