"""Fixtures shared by every test: an isolated oa-vm home, local pools, a simulated worker and
desktop, the WAA data path."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.support.controller import Controller
from tests.support.http_servers import RefusingPort
from tests.support.pools import leftover_processes, make_local_pool, pool_home, remove_pools
from tests.support.schedule import long_first
from tests.support.worker_proc import WorkerProcess, running_worker

if TYPE_CHECKING:
    from infra.local.desktop import Desktop
    from infra.local.worker import RunningWorker

ROOT = Path(__file__).resolve().parent.parent
WAA_DATA = ROOT.parent / "shared" / "waa"


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C reaches the processes the tests start, however the suite itself was started.

    Tests send SIGINT to the CLIs they start and expect a clean interrupt. A suite started as a
    background job of a non-interactive shell (``pytest ... &``) inherits SIGINT *ignored*, and
    so would every process it starts: their Python then installs no KeyboardInterrupt handler
    and they ignore the test's Ctrl-C (a hang, or a run that finishes instead of stopping). A
    handled signal is reset to its default in a child, so handling it here fixes the children.
    """
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    _keep_bytecode()
    config.addinivalue_line("markers", "pool(**options): the options of the module's local "
                                       "pools (fixtures pool, pooled), e.g. workers=2")
    config.addinivalue_line("markers", "worker(**options): the options of the simulated worker "
                                       "(fixtures worker, shared_worker), e.g. auth=False")


@pytest.hookimpl(trylast=True)  # after ``-m`` deselected: the shares are of what runs
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist, each test process's first share begins with its part of the tests
    marked ``long`` (:func:`tests.support.schedule.long_first`)."""
    processes = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 0)
    marked = [item.get_closest_marker("long") is not None for item in items]
    items[:] = long_first(items, marked, processes)


def _keep_bytecode() -> None:
    """Let every Python the tests start reuse compiled modules, kept in the venv.

    The suite starts thousands of Python processes (CLIs, workers, controllers, test
    processes). A shell that exports ``PYTHONDONTWRITEBYTECODE`` (CI images often do) made each
    of them compile every module it imported from source again: the cloud SDKs' modules alone
    cost about 1.2 s of CPU per process (measured: ``import pulumi_aws.ec2,
    pulumi_azure_native.compute`` 2.0 s of CPU from source, 0.84 s from bytecode). The
    bytecode goes under the venv (``PYTHONPYCACHEPREFIX``), never into the source tree.
    """
    prefix = str(Path(sys.prefix) / "pycache")
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = prefix
    sys.dont_write_bytecode = False
    sys.pycache_prefix = prefix


@pytest.fixture(scope="session", autouse=True)
def _session_oa_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Never the user's ``~/.oa-vm``: a test that sets no home gets one per test process.

    Tests run in parallel processes (pytest-xdist), so a home they would otherwise share is
    one per process; tests that need their own use :func:`oa_home` (or set ``OA_VM_HOME``).
    """
    home = tmp_path_factory.mktemp("session-oa-home")
    previous = os.environ.get("OA_VM_HOME")
    os.environ["OA_VM_HOME"] = str(home)
    try:
        yield home
    finally:
        if previous is None:
            os.environ.pop("OA_VM_HOME", None)
        else:
            os.environ["OA_VM_HOME"] = previous


@pytest.fixture(scope="session", autouse=True)
def _no_real_cloud_account(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A real ``aws`` or ``az`` CLI that a test reaches (plans read the account's vCPU quota
    with whichever is on PATH) finds no credentials and asks no metadata service, so it fails
    at once without a network call: tests that read a quota put a stand-in with a recorded
    answer on PATH (:mod:`tests.support.fake_quota_cli`)."""
    empty = tmp_path_factory.mktemp("no-cloud-account")
    values = {
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": str(empty / "aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(empty / "aws-credentials"),
        "AZURE_CONFIG_DIR": str(empty / "azure"),
    }
    previous = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture
def oa_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Point ``OA_VM_HOME`` at a fresh folder for the test."""
    home = tmp_path / "oa-home"
    monkeypatch.setenv("OA_VM_HOME", str(home))
    yield home


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An oa-vm home for the test (``OA_VM_HOME`` here; give it to a CLI as ``home=``).

    Afterwards every pool in it is removed, even if the test failed half-way, and no process of
    it may be left running (the test fails naming them, once they are killed).
    """
    home = tmp_path / "home"
    monkeypatch.setenv("OA_VM_HOME", str(home))
    yield home
    remove_pools(home)
    leftovers = leftover_processes(home)
    assert not leftovers, f"processes left running: {leftovers}"


@pytest.fixture
def local_pool(home: Path) -> Callable[..., str]:
    """Makes ready local pools in the test's ``home``, removed with it: ``local_pool()`` is a
    one-worker pool ``p``; ``local_pool("q", workers=2, cli=True)`` is made by the real CLI (see
    :func:`tests.support.pools.make_local_pool` for the options). Returns the pool's name."""

    def make(name: str = "p", *, cli: bool = False, **options: Any) -> str:
        return make_local_pool(name, home=home if cli else None, **options)

    return make


@pytest.fixture
def pool(request: pytest.FixtureRequest, local_pool: Callable[..., str]) -> str:
    """A ready local pool in ``home`` for this test alone (it may change it); returns its name.
    One worker named ``p`` unless the module says otherwise, with :func:`local_pool`'s options:
    ``pytestmark = pytest.mark.pool(name="fence", workers=2, cli=True)``."""
    return local_pool(**_marked(request, "pool"))


@pytest.fixture(scope="module")
def pooled(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A home with one ready local pool that a module's tests share (they only read it, or run
    on it one after the other; a test that changes the pool itself takes :func:`pool`). Its
    options from the module's ``pytest.mark.pool(...)``, as :func:`pool`'s."""
    options = _marked(request, "pool")
    options.pop("cli", None)  # made in this process, which lives as long as the module
    name = options.pop("name", "p")
    with pool_home(tmp_path_factory.mktemp("pooled") / "home", {name: options}) as home:
        yield home


def _marked(request: pytest.FixtureRequest, marker: str) -> dict[str, Any]:
    """The keywords of the closest ``pytest.mark.<marker>(...)`` (none: no keywords)."""
    found = request.node.get_closest_marker(marker)
    return dict(found.kwargs) if found else {}


def _worker(request: pytest.FixtureRequest, folder: Path) -> Iterator[WorkerProcess]:
    """A worker started in ``folder`` with the options of ``pytest.mark.worker(...)``; an
    option given as a callable is called with ``folder`` first (a suite the module writes)."""
    options = {key: value(folder) if callable(value) else value
               for key, value in _marked(request, "worker").items()}
    with running_worker(folder, **options) as process:
        yield process


@pytest.fixture
def worker(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[WorkerProcess]:
    """A simulated worker process (``python -m infra.local``) for this test alone; its options
    (:func:`tests.support.worker_proc.start_worker_process`) from ``pytest.mark.worker(...)``."""
    yield from _worker(request, tmp_path)


@pytest.fixture(scope="module")
def shared_worker(request: pytest.FixtureRequest,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorkerProcess]:
    """One simulated worker process that a module's tests share (as :func:`worker`, for tests
    that leave no state behind that another test would see)."""
    yield from _worker(request, tmp_path_factory.mktemp("worker"))


@pytest.fixture
def in_process_worker(tmp_path: Path) -> Iterator[RunningWorker]:
    """A simulated worker ``w`` served by threads of this process (its drive under
    ``tmp_path / "root"``), stopped after the test."""
    from infra.local import start_worker

    running = start_worker("w", tmp_path / "root")
    yield running
    running.stop()


@pytest.fixture
def desktop(tmp_path: Path) -> Desktop:
    """A simulated Windows desktop whose drive is a fresh folder of the test."""
    from infra.local.desktop import Desktop

    return Desktop(tmp_path / "root")


@pytest.fixture
def waa_data() -> Path:
    """WAA's real task data (``../shared/waa``); skips the test when it is absent."""
    if not (WAA_DATA / "test_all.json").is_file():
        pytest.skip(f"WAA task data not found at ../shared/waa (looked for {WAA_DATA.name})")
    return WAA_DATA


@pytest.fixture
def controllers() -> Iterator[list[Controller]]:
    """Controllers started by a test; any still running at the end are killed."""
    started: list[Controller] = []
    yield started
    for controller in started:
        controller.kill()


@pytest.fixture
def refused_port() -> Iterator[Callable[[], int]]:
    """Hands out loopback ports that refuse connections until the test ends.

    Each is bound and never listening, so no process of a test running beside this one can take
    it meanwhile (a port found free and let go can be), and a client there is refused at once.
    """
    held: list[RefusingPort] = []

    def take() -> int:
        held.append(RefusingPort())
        return held[-1].port

    yield take
    for port in held:
        port.close()
