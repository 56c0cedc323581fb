"""Fixtures shared by every test: an isolated oa-vm home, the WAA data path."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.controller import Controller
from tests.support.http_servers import RefusingPort

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
