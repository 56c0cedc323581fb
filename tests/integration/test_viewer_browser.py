"""The run page of a real small run, rendered by headless Chromium."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest
from PIL import Image

from evals import (
    BenchmarkAction,
    BenchmarkAgent,
    BenchmarkObservation,
    BenchmarkTask,
    WAASimulatedAdapter,
    evaluate_agent_on_benchmark,
)
from evals.agents.oracle import OracleAgent
from evals.report.viewer import task_anchor, write_view

pytestmark = pytest.mark.integration

CHROMIUM = Path("/usr/bin/chromium")
WINDOW = (1400, 1800)
OK_GREEN = (0x1A, 0x7F, 0x37)
BAD_RED = (0xB4, 0x23, 0x18)


def chromium_screenshot(url: str, png: Path, profile: Path, timeout: float = 120.0) -> None:
    """Render ``url`` in headless Chromium and save a screenshot to ``png``.

    Chromium runs in its own process group so that every child process it forks is killed with it,
    however it ends.
    """
    args = [
        str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
        "--no-first-run", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", f"--user-data-dir={profile}", f"--screenshot={png}",
        f"--window-size={WINDOW[0]},{WINDOW[1]}", url,
    ]
    proc = subprocess.Popen(  # fixed argv, no shell
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        _, err = proc.communicate(timeout=timeout)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    if not png.is_file():
        tail = err.decode(errors="replace")[-2000:]
        raise AssertionError(f"chromium wrote no screenshot: {tail}")


class MixedAgent(BenchmarkAgent):
    """Plays the reference solution on every other task and gives up at once on the rest."""

    sees_answers = True  # it plays the reference solutions, so it opts in as the oracle does

    def __init__(self) -> None:
        self.oracle = OracleAgent()
        self.count = 0

    def reset(self, task: BenchmarkTask) -> None:
        self.count += 1
        self.oracle.reset(task)

    def act(
        self,
        observation: BenchmarkObservation,
        task: BenchmarkTask,
        history: Sequence[BenchmarkAction] | None = None,
    ) -> BenchmarkAction:
        if self.count % 2 == 0:
            return BenchmarkAction(type="done")
        return self.oracle.act(observation, task, history)


def make_real_run(run_dir: Path, num_tasks: int = 3) -> list[str]:
    """Run ``num_tasks`` local tasks on a throwaway local pool, recorded in ``run_dir``."""
    with WAASimulatedAdapter(num_tasks=num_tasks) as adapter:
        results = evaluate_agent_on_benchmark(MixedAgent(), adapter, run_dir=run_dir)
    return [r.task_id for r in results]


def _near(pixel: tuple[int, ...], color: tuple[int, int, int], tolerance: int = 12) -> bool:
    return all(abs(a - b) <= tolerance for a, b in zip(pixel[:3], color, strict=True))


def test_page_renders_in_chromium(oa_home: Path, tmp_path: Path) -> None:
    if not (CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK)):
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)")
    run_dir = tmp_path / "results" / "browser-run"
    task_ids = make_real_run(run_dir)
    page = write_view(run_dir)
    png = tmp_path / "page.png"

    # The anchor opens the first task's steps, so its thumbnails are drawn too.
    chromium_screenshot(f"{page.as_uri()}#{task_anchor(task_ids[0])}", png, tmp_path / "profile")

    with Image.open(png) as image:
        assert image.size == WINDOW
        rgb = image.convert("RGB")
        colors = rgb.getcolors(maxcolors=1_000_000) or []
    assert len(colors) > 200, "the screenshot looks blank"
    most_common = max(count for count, _ in colors)
    assert most_common < 0.95 * WINDOW[0] * WINDOW[1], "the screenshot is one flat color"
    pixels = [color for _, color in colors if isinstance(color, tuple)]
    assert any(_near(c, OK_GREEN) for c in pixels), "no success color drawn"
    assert any(_near(c, BAD_RED) for c in pixels), "no failure color drawn"
