"""A run of WAA tasks, its page and the task listing start without what they do not use: numpy
and scipy (the summary's quantiles are ``evals.results.quantiles``'; only ``compare``'s power
simulation loads them), and the Cua-Bench and OpenApps machinery (yaml, asyncio, their task
packages), loaded only for a selection that names such tasks. Each cost the commands a third
of their CPU or more (``docs/performance.md``), so a stray top-level import is caught here,
through the real CLI (``PYTHONPROFILEIMPORTTIME`` lists every module a process imports)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import run_cli

pytestmark = [pytest.mark.integration, pytest.mark.pool(name="imports")]

UNUSED = ("numpy", "scipy", "yaml", "asyncio", "evals.tasks.cua_bench", "evals.tasks.openapps")


def imported(stderr: str) -> set[str]:
    """The modules a process imported, from its ``-X importtime`` lines."""
    return {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines()
            if line.startswith("import time:") and "|" in line}


def unused_loaded(stderr: str) -> list[str]:
    names = imported(stderr)
    assert "evals" in names, "no import was listed"
    return sorted(n for n in names if any(n == u or n.startswith(u + ".") for u in UNUSED))


def test_a_run_its_page_and_the_task_listing_import_nothing_they_do_not_use(
        pooled: Path, tmp_path: Path) -> None:
    results = str(tmp_path / "results")
    traced = {"PYTHONPROFILEIMPORTTIME": "1"}
    ran = run_cli("openadapt-evals", "run", "--pool", "imports", "--tasks", "all",
                  "--agent", "random", "--results-dir", results, "--run-name", "r",
                  home=pooled, env=traced, timeout=600)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert unused_loaded(ran.stderr) == []
    viewed = run_cli("openadapt-evals", "view", "r", "--results-dir", results, home=pooled,
                     env=traced)
    assert viewed.returncode == 0, viewed.stderr[-2000:]
    assert unused_loaded(viewed.stderr) == []
    listed = run_cli("openadapt-evals", "tasks", home=pooled, env=traced)
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert unused_loaded(listed.stderr) == []
