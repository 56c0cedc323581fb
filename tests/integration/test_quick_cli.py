"""``pool-status`` and ``pool-list`` answered without Typer print what the Typer commands print."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from oa_vm.cli.quick import parse
from tests.support.cli import run_cli
from tests.support.pools import READY_S
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

TYPER = {"OA_VM_FAST_PATH": "0"}


def _steady(text: str) -> str:
    """Ages and costs so far grow between two runs; the rest must match.

    A table's columns are as wide as their widest cell, so an age that grows from ``9s`` to
    ``10s`` between the two runs shifts every column after it: runs of spaces are compared as
    one space.
    """
    text = re.sub(r"\$\d+\.\d+|\"cost_so_far_usd\": [\d.e-]+", "COST", text)
    text = re.sub(r"age \w+|\b\d+[smhd](\d+[smh])?\b|\"age_s\": [\d.]+", "AGE", text)
    return re.sub(r" {2,}", " ", text)


# What the fast path must not load: each costs milliseconds of start-up, which is all these two
# commands take (docs/performance.md, "CLI start-up"); the commit before the renovation loaded none.
SLOW_IMPORTS = ("typing", "dataclasses", "inspect", "logging", "threading", "typer", "click",
                "psutil", "oa_vm.api", "oa_vm.clouds.base", "oa_vm.clouds.local.provider")
# With no pool there is nothing to show: ``pool-status`` refuses before the views, prices and
# provider facts are imported (they were 10 % of its start-up against the commit before).
VIEW_IMPORTS = ("oa_vm.cli.pool_views", "oa_vm.cost.pool_cost", "oa_vm.clouds.declared",
                "oa_vm.clouds.local.proc_check")


def _slow_imports(home: Path, *args: str, slow: tuple[str, ...] = SLOW_IMPORTS) -> list[str]:
    """The modules of ``slow`` that ``oa-vm ARGS`` loads on its fast path."""
    code = ("import sys\nsys.argv = ['oa-vm', *sys.argv[1:]]\nfrom oa_vm.cli.entry import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(' '.join(sys.modules), file=sys.stderr)\n")
    proc = subprocess.run(  # fixed argv, no shell
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60,
        env={**os.environ, "OA_VM_HOME": str(home)}, check=True,
    )
    loaded = set(proc.stderr.split())
    return [name for name in slow if name in loaded]


def test_parse_takes_only_the_plain_forms() -> None:
    assert parse(["pool-status"]) == ("pool-status", None, False, False)
    assert parse(["pool-status", "-n", "a", "--json"]) == ("pool-status", "a", True, False)
    assert parse(["pool-status", "--name=a", "--debug"]) == ("pool-status", "a", False, True)
    assert parse(["pool-list", "--json"]) == ("pool-list", None, True, False)
    assert parse(["pool-status", "--pool", "a"]) == ("pool-status", "a", False, False)
    assert parse(["pool-status", "--pool=a", "--json"]) == ("pool-status", "a", True, False)
    for other in (["pool-status", "--help"], ["pool-status", "--refresh"], ["pool-list", "-n", "a"],
                  ["pool-status", "--name"], ["pool-status", "--nme", "a"], ["pool-create"],
                  # names the full path refuses in one line (an empty one is not "the only pool")
                  ["pool-status", "--name", ""], ["pool-status", "--name=../x"],
                  # a pool named twice: the full path's rule refuses two (clikit.target_option)
                  ["pool-status", "-n", "a", "-n", "b"], ["pool-status", "--pool=a", "-n", "a"]):
        assert parse(other) is None, other


def test_fast_path_prints_what_typer_prints(home: Path) -> None:
    for args in (["pool-status"], ["pool-list"], ["pool-list", "--json"]):
        fast, slow = run_cli("oa-vm", *args, home=home), run_cli("oa-vm", *args, home=home,
                                                                  env=TYPER)
        assert (fast.returncode, fast.stdout, fast.stderr) == (
            slow.returncode, slow.stdout, slow.stderr), args
        assert _slow_imports(home, *args) == [], args
    assert _slow_imports(home, "pool-status", slow=VIEW_IMPORTS) == []
    created = run_cli("oa-vm", "pool-create", "--cloud", "local", "--workers", "1", "--name",
                      "q", "--price-per-hour", "2", "-y", home=home)
    assert created.returncode == 0, created.stderr
    # A worker still booting may turn ready between the two runs compared: wait for it first.
    waited = run_cli("oa-vm", "pool-wait", "--pool", "q", home=home)
    assert waited.returncode == 0, waited.stderr
    for args in (["pool-status", "--name", "q"], ["pool-status", "-n", "q", "--json"],
                 ["pool-list"], ["pool-list", "--json"], ["pool-status", "--name", "nope"],
                 ["pool-status", "--pool", "q"], ["pool-status", "--pool=q", "--json"],
                 ["pool-status", "--name", ""], ["pool-status", "--pool", "Bad/Name"]):
        fast, slow = run_cli("oa-vm", *args, home=home), run_cli("oa-vm", *args, home=home,
                                                                  env=TYPER)
        assert fast.returncode == slow.returncode, args
        assert _steady(fast.stdout) == _steady(slow.stdout), args
        assert fast.stderr == slow.stderr, args
    for args in (["pool-status", "--name", "q"], ["pool-status", "--json"], ["pool-list"]):
        assert _slow_imports(home, *args) == [], args
    data = json.loads(run_cli("oa-vm", "pool-list", "--json", home=home).stdout)
    assert data[0]["name"] == "q" and data[0]["price_per_hour_total"] == 2
    assert "$2.00/h" in run_cli("oa-vm", "pool-list", home=home).stdout


def test_the_proc_check_agrees_with_the_provider(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import signal

    from oa_vm import api
    from oa_vm.clouds.local.proc_check import record_is_current
    from oa_vm.model import state

    monkeypatch.setenv("OA_VM_HOME", str(home))
    api.create_pool(name="pc", cloud="local", workers=2)
    api.wait_pool("pc", timeout_s=READY_S)
    record = state.load("pc")
    assert record_is_current(record)
    changed = state.load("pc")
    mark = changed.workers[0].pid_start_mark
    assert changed.workers[0].pid_create_time is not None and mark is not None
    changed.workers[0].pid_create_time -= 5.0  # a clock stepped by 5 s: the mark still holds
    assert record_is_current(changed)
    boot, ticks = mark.rsplit("/", 1)
    changed.workers[0].pid_start_mark = f"{boot}/{int(ticks) + 1}"  # a reused PID
    assert not record_is_current(changed)
    changed.workers[0].pid_start_mark = None  # a record written without a mark: by the time
    assert not record_is_current(changed)
    victim = record.workers[1].pid
    assert victim is not None
    os.kill(victim, signal.SIGKILL)
    wait_until(lambda: not record_is_current(state.load("pc")),
               "the killed worker to look dead")
    # the fast path then refreshes through the provider, exactly as Typer's command does
    fast = run_cli("oa-vm", "pool-status", "--name", "pc", "--json", home=home)
    worker = json.loads(fast.stdout)["workers"][1]
    assert worker["state"] == "lost"
    slow = run_cli("oa-vm", "pool-status", "--name", "pc", "--json", home=home, env=TYPER)
    assert json.loads(slow.stdout)["workers"][1]["state"] == "lost"
