"""A new pool named like one whose record is unreadable: the refusal says the record is
unreadable and to fix or move the file (naming it), as every other command does, never to
remove the pool with ``pool-cleanup`` (which refuses such a record too). The file is untouched.

The console scripts run as real subprocesses.
"""

from __future__ import annotations

from pathlib import Path

import pytest

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
