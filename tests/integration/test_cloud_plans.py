"""Cloud plans through the real ``oa-vm`` CLI: what they refuse, what they compare, and that
many of them in one process leave nothing behind (no event loop for the interpreter to collect
at exit, which printed an ``Exception ignored ... BaseEventLoop.__del__`` traceback)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

# 22 plans through the CLI's own entry point in one interpreter, then: how many event loops
# are still open once the plans are done (each would be closed, or not, by the collector at
# exit; the traceback came from that).
MANY_PLANS = """
import asyncio, gc, sys
from oa_vm.cli import app
for i in range(22):
    cloud = ("aws", "azure")[i % 2]
    try:
        app(["pool-create", "--cloud", cloud, "--pool", f"p{i}", "--workers", str(1 + i % 3),
             "--plan", "--allow-cidr", "203.0.113.7/32"], standalone_mode=False)
    except SystemExit as exc:
        assert not exc.code, exc.code
gc.collect()
left = [o for o in gc.get_objects()
        if isinstance(o, asyncio.AbstractEventLoop) and not o.is_closed()]
print(f"open event loops: {len(left)}", file=sys.stderr)
"""


def _offline_env(tmp_path: Path) -> dict[str, str]:
    """No pulumi CLI on PATH, and caller-IP detection pointed at a closed loopback port."""
    empty = tmp_path / "empty-path"
    empty.mkdir(exist_ok=True)
    return {"PATH": str(empty), "OA_VM_IP_ECHO_URL": "http://127.0.0.1:9/"}


def test_many_plans_in_one_process_leave_no_event_loop(tmp_path: Path) -> None:
    env = {**os.environ, "OA_VM_HOME": str(tmp_path / "home"), **_offline_env(tmp_path)}
    proc = subprocess.run(  # fixed argv, no shell
        [sys.executable, "-c", MANY_PLANS], capture_output=True, text=True, env=env,
        timeout=600, stdin=subprocess.DEVNULL, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("Plan: ") == 22
    assert "Exception ignored" not in proc.stderr, proc.stderr
    assert "open event loops: 0" in proc.stderr, proc.stderr
