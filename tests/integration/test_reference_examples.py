"""The reference tool's documented Python examples, run as subprocesses with only the import
line changed (``openadapt_evals`` -> ``evals``).

The model API is a loopback stand-in (tests/support/fake_model_apis.py); the "live" worker is a
real local worker process listening where the README's example looks (``localhost:5001``, and
the scoring server on ``127.0.0.1:5050``, this package's default).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fake_model_apis import FakeModelApis
from tests.support.worker_proc import WorkerProcess, running_worker

pytestmark = pytest.mark.integration

QUICK_START = textwrap.dedent("""\
    from evals import (
        WAAMockAdapter,
        SmartMockAgent,
        evaluate_agent_on_benchmark,
        compute_metrics,
    )

    # Create mock adapter for testing
    adapter = WAAMockAdapter(num_tasks=10)

    # Create agent
    agent = SmartMockAgent()

    # Run evaluation
    results = evaluate_agent_on_benchmark(agent, adapter, max_steps=15)

    # Compute metrics
    metrics = compute_metrics(results)
    print(f"Success rate: {metrics['success_rate']:.1%}")
""")

README_API = textwrap.dedent("""\
    from evals import (
        ApiAgent,
        WAALiveAdapter,
        WAALiveConfig,
        evaluate_agent_on_benchmark,
        compute_metrics,
    )

    adapter = WAALiveAdapter(WAALiveConfig(server_url="http://localhost:5001"))
    agent = ApiAgent(provider="anthropic")

    results = evaluate_agent_on_benchmark(agent, adapter, task_ids=["notepad_1"])
    metrics = compute_metrics(results)
    print(f"Success rate: {metrics['success_rate']:.1%}")
""")

ADAPTERS_DOC = textwrap.dedent("""\
    from evals import WAAMockAdapter, WAALiveAdapter

    # For local testing (no Windows VM)
    adapter = WAAMockAdapter(num_tasks=10)

    # For remote evaluation
    adapter = WAALiveAdapter(server_url="http://vm-ip:5000")
    print(type(adapter).__name__, adapter.config.server_url)
""")

DRAFT_TASK = "c499b229-110c-5fc8-9895-f2f879ac1512-WOS"  # the local suite's first notepad task
DRAFT_SCRIPT = [
    {"action": "type", "text": "This is a draft."},
    {"action": "key", "text": "ctrl+s"},
    {"action": "type", "text": "C:\\Users\\Docker\\Documents\\draft.txt\n"},
    {"final": "Saved draft.txt in Documents."},
]


def _free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _python(script: str, tmp_path: Path, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "example.py"
    path.write_text(script, encoding="utf-8")
    full = {**os.environ, "OA_VM_HOME": str(tmp_path / "home"), **(env or {})}
    return subprocess.run(  # a fixed argv, no shell
        [sys.executable, str(path)], capture_output=True, text=True, timeout=300, env=full,
        cwd=tmp_path, stdin=subprocess.DEVNULL, check=False,
    )


@pytest.fixture
def readme_worker(tmp_path: Path) -> Iterator[WorkerProcess]:
    if not (_free(5001) and _free(5050)):
        pytest.skip("ports 5001/5050 (the README's) are taken on this machine")
    # The README's worker is reached at fixed URLs, as a tunnelled cloud worker is: no local
    # pool's secret prefix.
    with running_worker(tmp_path / "w", extra_args=["--waa-port", "5001",
                                                    "--scoring-port", "5050"],
                        auth=False) as worker:
        yield worker


def test_quick_start_runs(tmp_path: Path) -> None:
    done = _python(QUICK_START, tmp_path)
    assert done.returncode == 0, done.stderr
    # The synthetic mock, as the reference's: SmartMockAgent clicks Submit on every mock task.
    assert done.stdout == "Success rate: 100.0%\n"
    # In-process: no pool was created and no run folder written.
    assert not (tmp_path / "home" / "pools").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["example.py"]


def test_adapter_examples_construct_without_contacting_anything(tmp_path: Path) -> None:
    done = _python(ADAPTERS_DOC, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "WAALiveAdapter http://vm-ip:5000\n"


@pytest.mark.long
def test_readme_python_api_against_a_live_worker(readme_worker: WorkerProcess,
                                                 tmp_path: Path) -> None:
    with FakeModelApis(anthropic_script=DRAFT_SCRIPT) as fake:
        env = {"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": fake.url}
        # As written: "notepad_1" is a mock-style ID, which live adapters refuse (the
        # reference's own WAALiveAdapter raises SyntheticTaskError for it too).
        verbatim = _python(README_API, tmp_path, env)
        assert verbatim.returncode == 1
        assert "SyntheticTaskError" in verbatim.stderr and "notepad_1" in verbatim.stderr
        assert fake.requests == []
        # With a real task ID the same code runs the task end to end.
        real = _python(README_API.replace('"notepad_1"', f'"{DRAFT_TASK}"'), tmp_path, env)
        assert real.returncode == 0, real.stderr
        assert real.stdout == "Success rate: 100.0%\n"
        assert len(fake.requests) == 4
