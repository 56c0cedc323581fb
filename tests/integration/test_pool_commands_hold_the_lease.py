"""Commands that reset or drive an existing pool's workers outside a run (``audit-verifier``,
``study ui-change``) hold the pool's lease as a run does: while another process holds it, each
is refused in one line naming the holder, with the lease left as it was."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from oa_vm.model.lease import read_lease
from tests.integration.test_audit_verifier import STATUS_TASK
from tests.support.cli import run_cli

pytestmark = pytest.mark.integration

COMMANDS = {
    "audit-verifier": ("audit-verifier", "--tasks", STATUS_TASK),
    "study ui-change": ("study", "ui-change", "--runs", "1"),
}


@pytest.fixture
def held(pool: str, home: Path) -> Iterator[str]:
    """``pool``, its lease held by another process (as a run holds it) until the test ends."""
    holder = subprocess.Popen(  # fixed argv
        [sys.executable, "-c", "import sys, oa_vm\n"
         f"with oa_vm.hold_pool({pool!r}, 'holder-run'):\n"
         "    print('held', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "OA_VM_HOME": str(home)},
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline().strip() == "held"
        yield pool
    finally:
        holder.stdin.close()
        assert holder.wait(timeout=60) == 0


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_pool_a_run_holds_is_refused_in_one_line(command: str, held: str, home: Path) -> None:
    before = read_lease(held)
    done = run_cli("openadapt-evals", *COMMANDS[command], "--pool", held, home=home,
                   timeout=300)
    line = done.assert_one_line_error()
    assert done.returncode == 1, line
    assert f"pool {held!r} is in use by" in line and "holder-run" in line, line
    assert command in line and "--wait-for-pool" not in line, line
    assert read_lease(held) == before  # the holder's lease, untouched
