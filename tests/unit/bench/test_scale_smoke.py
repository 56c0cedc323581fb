"""The scale benchmark end to end, tiny: a local pool of several workers per process, the real
runner, tunnels through the test sshd with both backends, one JSON object."""

from __future__ import annotations

import json
import pstats
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.support.sshd import sshd_available


@pytest.mark.integration
def test_scale_prints_figures_for_the_direct_run_and_each_tunnel_backend(tmp_path: Path) -> None:
    profile = tmp_path / "dispatch.pstats"
    done = subprocess.run(  # our own script, fixed arguments
        [sys.executable, str(ROOT / "bench" / "scale.py"), "--workers", "6", "--per-process",
         "3", "--tasks", "18", "--tunnel-workers", "2", "--tunnel-tasks", "6", "--json",
         "--profile", str(profile)],
        capture_output=True, text=True, timeout=300, cwd=ROOT, check=False,
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    direct = figures["direct"]
    assert (direct["workers"], direct["tasks"], direct["errors"]) == (6, 18, 0)
    assert direct["processes"] == 2  # six workers, three to a process: the pool option
    assert direct["steps"] == 3 * 18
    assert direct["controller_cpu_ms_per_step"] > 0
    assert 0 <= direct["controller_sys_cpu_ms_per_step"] <= direct["controller_cpu_ms_per_step"]
    # the dispatch's profile: every dispatch thread, merged, with a readable summary
    stats = pstats.Stats(str(profile))
    loops = [v for k, v in stats.stats.items() if k[2] == "_worker_loop"]
    assert loops and loops[0][1] == 6  # one per worker thread
    summary = Path(f"{profile}.txt").read_text(encoding="utf-8")
    assert "per step:" in summary and "_run_one" in summary
    assert set(figures["tunnels"]) == {"openssh", "paramiko"}
    if not sshd_available():
        assert all("skipped" in t for t in figures["tunnels"].values())
        return
    for backend, tunnel in figures["tunnels"].items():
        assert (tunnel["backend"], tunnel["tasks"], tunnel["errors"]) == (backend, 6, 0)
    # the tunnels are measured against the same workers and tasks reached directly
    baseline = figures["tunnel_baseline"]
    assert (baseline["workers"], baseline["tasks"], baseline["errors"]) == (2, 6, 0)
    # OpenSSH forwards in ssh child processes, paramiko in the controller. The children's CPU
    # is read in clock ticks (10 ms), and six small tasks may stay under one: a figure, >= 0.
    assert figures["tunnels"]["openssh"]["ssh_client_cpu_s"] >= 0
    assert figures["tunnels"]["paramiko"]["ssh_client_cpu_s"] == 0
    capacity = figures["tunnel_capacity"]
    # the ssh processes' share follows their CPU, which may be under one tick (above)
    openssh_cpu = figures["tunnels"]["openssh"]["ssh_client_cpu_s"]
    in_ssh = capacity["openssh"]["tunnel_cpu_ms_per_mb_in_ssh_processes"]
    assert (in_ssh > 0) == (openssh_cpu > 0), (in_ssh, openssh_cpu)
    assert capacity["paramiko"]["tunnel_cpu_ms_per_mb_in_ssh_processes"] == 0


@pytest.mark.parametrize(
    "args", [["--tunnel-backends", "putty"], ["--profile", "no/such/folder/p.pstats"]]
)
def test_bad_input_is_one_line_and_exit_2(args: list[str]) -> None:
    done = subprocess.run(  # our own script, fixed arguments
        [sys.executable, str(ROOT / "bench" / "scale.py"), *args],
        capture_output=True, text=True, timeout=60, cwd=ROOT, check=False,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert len([ln for ln in done.stderr.splitlines() if ln.strip()]) == 1
