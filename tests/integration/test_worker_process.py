"""The worker process: its ready file, signals, command-line errors and fault knobs."""

from __future__ import annotations

import datetime as dt
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from infra.local.faults import CRASH_EXIT_CODE
from tests.support.waiting import WAIT_LIMIT_S
from tests.support.worker_proc import PROJECT_ROOT, running_worker, start_worker_process

pytestmark = pytest.mark.integration
TIMEOUT = 10


def _port_is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def test_ready_file_and_sigterm_frees_the_ports(tmp_path: Path) -> None:
    worker = start_worker_process(tmp_path, name="solo")
    try:
        ready = worker.ready
        assert set(ready) == {"pid", "started_at", "workers"}
        assert ready["pid"] == worker.proc.pid
        started = dt.datetime.fromisoformat(ready["started_at"])
        assert started.tzinfo is not None and started.utcoffset() == dt.timedelta(0)
        [entry] = ready["workers"]
        assert entry["name"] == "solo" and entry["host"] == "127.0.0.1"
        assert Path(entry["root"]) == (tmp_path / "worker-solo" / "root").resolve()
        assert (Path(entry["root"]) / "drive_c" / "Users" / "Docker" / "Desktop").is_dir()
        ports = [entry["waa_port"], entry["scoring_port"]]
        assert requests.get(f"{worker.waa_url}/probe", timeout=TIMEOUT).ok
        assert not any(_port_is_free(p) for p in ports)
        assert worker.stop() == 0
        assert all(_port_is_free(p) for p in ports)
    finally:
        worker.kill()


def test_sigterm_exits_promptly_with_a_request_in_flight(tmp_path: Path) -> None:
    worker = start_worker_process(tmp_path, faults=["hang-after=2"])
    try:
        requests.get(f"{worker.waa_url}/probe", timeout=TIMEOUT)
        with pytest.raises(requests.Timeout):
            requests.get(f"{worker.waa_url}/probe", timeout=0.5)
        assert worker.stop(timeout=10) == 0
    finally:
        worker.kill()


@pytest.mark.parametrize("made_again", [False, True])
def test_its_folder_removed_the_process_exits_by_itself(tmp_path: Path, made_again: bool) -> None:
    """A folder removed by hand (a pool's, with its record) leaves no command that could stop
    the process, so it stops itself; a folder made again under the same path (a new pool of the
    same name) is not the one it was started in."""
    with running_worker(tmp_path, count=2) as worker:
        root = tmp_path / "worker-w" / "root"
        shutil.rmtree(root)
        if made_again:
            root.mkdir()
        assert worker.proc.wait(timeout=WAIT_LIMIT_S) == 0
        assert f"its folder {root} is gone: stopping" in worker.log()


def test_count_runs_independent_workers(tmp_path: Path) -> None:
    with running_worker(tmp_path, name="pool", count=3) as worker:
        names = [w["name"] for w in worker.workers]
        assert names == ["pool-0", "pool-1", "pool-2"]
        assert len({w["root"] for w in worker.workers}) == 3
        requests.post(
            f"{worker.url(0)}/execute", json={"command": "set dark_mode on"}, timeout=TIMEOUT
        )
        first = requests.post(
            f"{worker.url(0)}/execute", json={"command": "get dark_mode"}, timeout=TIMEOUT
        )
        second = requests.post(
            f"{worker.url(1)}/execute", json={"command": "get dark_mode"}, timeout=TIMEOUT
        )
        assert (first.json()["output"], second.json()["output"]) == ("on", "off")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--fault", "bogus=1"], "unknown fault 'bogus'"),
        (["--fault", "error-rate=2"], "error-rate=2"),
        (["--fault", "latency"], "expected KEY=VALUE"),
        (["--fault", "crash-after=zero"], "not a whole number"),
        (["--count", "0"], "--count"),
        (["--waa-port", "notaport"], "invalid int value"),
    ],
)
def test_bad_command_line_is_one_line_and_exit_2(
    tmp_path: Path, args: list[str], needle: str
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "infra.local", "--name", "w", "--root", str(tmp_path / "r"),
         "--ready-file", str(tmp_path / "ready.json"), *args],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in result.stderr
    assert not (tmp_path / "ready.json").exists()


def test_crash_after_kills_the_process(tmp_path: Path) -> None:
    worker = start_worker_process(tmp_path, faults=["crash-after=3"])
    try:
        for _ in range(2):
            assert requests.get(f"{worker.waa_url}/probe", timeout=TIMEOUT).ok
        with pytest.raises(requests.ConnectionError):
            requests.get(f"{worker.scoring_url}/probe", timeout=TIMEOUT)
        assert worker.proc.wait(timeout=10) == CRASH_EXIT_CODE
        assert "crash-after=3" in worker.log()
    finally:
        worker.kill()


def test_hang_after_times_out_client_side(tmp_path: Path) -> None:
    with running_worker(tmp_path, faults=["hang-after=2"]) as worker:
        assert requests.get(f"{worker.scoring_url}/probe", timeout=TIMEOUT).ok
        for url in (worker.waa_url, worker.scoring_url):
            with pytest.raises(requests.ReadTimeout):
                requests.get(f"{url}/probe", timeout=0.5)


def test_error_rate_one_answers_500(tmp_path: Path) -> None:
    with running_worker(tmp_path, faults=["error-rate=1", "seed=7"]) as worker:
        for url in (worker.waa_url + "/probe", worker.scoring_url + "/tasks"):
            response = requests.get(url, timeout=TIMEOUT)
            assert response.status_code == 500
            # the server failing, not an endpoint answering: no WAA JSON error body
            assert response.headers["Content-Type"].startswith("text/plain")
            assert "injected fault (error-rate=1)" in response.text


def test_screenshot_min_bytes_pads_a_valid_png(tmp_path: Path) -> None:
    from io import BytesIO

    from PIL import Image

    with running_worker(tmp_path, faults=["screenshot-min-bytes=400000"]) as worker:
        png = requests.get(f"{worker.waa_url}/screenshot", timeout=TIMEOUT).content
        assert len(png) >= 400_000
        with Image.open(BytesIO(png)) as image:
            image.load()
            assert image.size == (1280, 720)
