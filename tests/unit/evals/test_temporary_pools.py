"""Every command that makes a pool for itself removes it with ``oa_vm.remove_temporary_pool``,
and a removal that fails never replaces the error that ended the command.

Each command runs in process through its console entry point (``run_main``: the error policy
that turns an error into one line and an exit status); the pool's creation is skipped, the wait
for it fails (the error that ends the command) and its removal fails at ``cleanup_pool``, the
one function every temporary pool's removal goes through.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import oa_vm
from evals.cli.app import main
from oa_vm import api
from oa_vm.clouds.base import CleanupReport
from oa_vm.errors import OaVmError, PoolNotFoundError, WaitTimeoutError

ENDED_BY = "worker-0 of the pool did not become ready (simulated)"
COMMANDS = {
    "mock": ["mock", "--tasks", "1"],
    "audit-verifier": ["audit-verifier"],
    "study ui-change": ["study", "ui-change", "--runs", "1"],
    "sweep": ["sweep", "--cloud", "local", "--workers", "1", "--agent", "noop",
              "--tasks", "1"],
}


def _run(argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
         tmp_path: Path, cleanup: object) -> tuple[int, list[str], list[str]]:
    """Run ``openadapt-evals argv``; return its exit status, its stderr lines and the pools
    it removed."""
    made: list[str] = []
    removed: list[str] = []

    def create_pool(spec: object = None, *, name: str | None = None, **_: object) -> None:
        made.append(name or str(getattr(spec, "name", "")))

    def wait_pool(pool: str, **_: object) -> None:
        raise WaitTimeoutError(ENDED_BY)  # the error that ends the command

    def cleanup_pool(pool: str | None, **_: object) -> CleanupReport:
        assert pool in made
        removed.append(pool)
        if isinstance(cleanup, BaseException):
            raise cleanup
        assert isinstance(cleanup, CleanupReport)
        return cleanup

    tmp_path.mkdir()
    monkeypatch.setenv("OA_VM_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(oa_vm, "create_pool", create_pool)
    monkeypatch.setattr(oa_vm, "wait_pool", wait_pool)
    monkeypatch.setattr(oa_vm, "pool_exists", lambda pool: pool in made)
    monkeypatch.setattr(api, "cleanup_pool", cleanup_pool)  # what remove_temporary_pool calls
    monkeypatch.setattr(sys, "stdout", sys.stdout)  # run_main wraps it: put it back after
    monkeypatch.setattr(sys, "argv", ["openadapt-evals", *argv])
    with pytest.raises(SystemExit) as ended:
        main()
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    return int(ended.value.code or 0), lines, removed


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("failure", ["raises", "leaves"])
def test_a_failed_removal_keeps_the_commands_error_and_names_the_pool(
    command: str, failure: str, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    argv = COMMANDS[command]
    code, lines, removed = _run(argv, monkeypatch, capsys, tmp_path / "ok", CleanupReport())
    assert len(removed) == 1, lines
    ending = [line for line in lines if ENDED_BY in line]
    assert len(ending) == 1 and "unexpected" not in ending[0], lines  # the wait's error...
    assert not any("pool-cleanup" in line for line in lines), lines  # ...and removed its pool
    broken = (OaVmError("the record could not be written: disk full") if failure == "raises"
              else CleanupReport(left=["worker process 4242 (still running)"]))
    failed_code, failed_lines, failed_removed = _run(argv, monkeypatch, capsys,
                                                     tmp_path / "failed", broken)
    pool = failed_removed[0]
    # the command's own error: the same line and the same exit status
    assert failed_code == code != 0
    assert [line for line in failed_lines if ENDED_BY in line] == ending
    # and one more line: the pool left behind, named with what to run
    said = [line for line in failed_lines if "pool-cleanup" in line]
    assert len(said) == 1, failed_lines
    assert f"'oa-vm pool-cleanup --pool {pool}'" in said[0]
    why = "disk full" if failure == "raises" else "worker process 4242"
    assert why in said[0]
    assert not any("Traceback" in line for line in failed_lines)


def test_the_removal_of_a_pool_already_gone_says_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def cleanup_pool(pool: str | None, **_: object) -> CleanupReport:
        raise PoolNotFoundError(str(pool))

    monkeypatch.setattr(api, "cleanup_pool", cleanup_pool)
    said: list[str] = []
    assert oa_vm.remove_temporary_pool("gone", said.append) is True
    assert said == []


def test_an_unexpected_error_of_the_removal_is_said_not_raised(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def cleanup_pool(pool: str | None, **_: object) -> CleanupReport:
        raise OSError("read-only file system")

    monkeypatch.setattr(api, "cleanup_pool", cleanup_pool)
    said: list[str] = []
    assert oa_vm.remove_temporary_pool("p", said.append) is False
    assert said == ["could not remove pool p: OSError: read-only file system; "
                    "run 'oa-vm pool-cleanup --pool p'"]


def test_the_simulated_adapters_failed_start_keeps_its_error_when_its_removal_fails(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    """The reference API's ``WAASimulatedAdapter`` makes a pool on first use and removes it when
    the start fails, while that error is on its way out: the start's error is the one raised."""
    from evals.compat.benchmark_api import WAASimulatedAdapter

    made: list[str] = []

    def create_pool(*, name: str, **_: object) -> None:
        made.append(name)

    def wait_pool(pool: str, **_: object) -> None:
        raise WaitTimeoutError(ENDED_BY)

    def cleanup_pool(pool: str | None, **_: object) -> CleanupReport:
        raise OaVmError("the record could not be written: disk full")

    monkeypatch.setenv("OA_VM_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(oa_vm, "create_pool", create_pool)
    monkeypatch.setattr(oa_vm, "wait_pool", wait_pool)
    monkeypatch.setattr(api, "cleanup_pool", cleanup_pool)
    adapter = WAASimulatedAdapter(num_tasks=1)
    try:
        with pytest.raises(WaitTimeoutError, match="did not become ready"):
            adapter.default_task_ids()
    finally:
        adapter.close()
    said = [line for line in capsys.readouterr().err.splitlines() if "pool-cleanup" in line]
    assert said == [f"WAASimulatedAdapter: could not remove pool {made[0]}: the record could "
                    f"not be written: disk full; run 'oa-vm pool-cleanup --pool {made[0]}'"]
