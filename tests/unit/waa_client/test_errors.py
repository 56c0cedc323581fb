"""The exception tree: what is infrastructure, what exit code a CLI uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from waa_client import errors as e


@pytest.mark.parametrize(
    ("error", "infrastructure"),
    [
        (e.WorkerUnreachableError("x"), True),
        (e.WorkerTimeoutError("x"), True),
        (e.SshUnreachableError("x"), True),
        (e.ServerError("x", status=500), False),
        (e.ServerError("x", status=502), True),
        (e.ServerError("x", status=503), True),
        (e.ServerError("x", status=504), True),
        (e.RequestRejectedError("x", status=400), False),
        (e.NotFoundError("x", status=404), False),
        (e.SetupFailedError("x"), False),
        (e.MalformedResponseError("x"), False),
        (e.HostKeyMismatchError("x", host="h", known_fingerprint="a", offered_fingerprint="b"),
         False),
        (e.UnknownTaskError("x", task_ids=["a"]), False),
    ],
)
def test_is_infrastructure(error: e.WaaError, infrastructure: bool) -> None:
    assert error.is_infrastructure is infrastructure


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (e.WorkerUnreachableError("x"), 1),
        (e.ServerError("x", status=500), 1),
        (e.HostKeyMismatchError("x", host="h", known_fingerprint="a", offered_fingerprint="b"), 1),
        (e.KeyFileError("x", path=Path("k")), 2),
        (e.CatalogError("x"), 2),
        (e.SyntheticTaskError("x", task_ids=["notepad_1"]), 2),
        (e.InvalidWorkerUrlError("x"), 2),
    ],
)
def test_exit_codes(error: e.WaaError, code: int) -> None:
    assert error.exit_code == code


def test_errors_carry_data() -> None:
    url = "http://127.0.0.1:1/setup"
    error = e.SetupFailedError(
        "setup failed", url=url, results=[{"type": "launch", "status": "error"}]
    )
    assert isinstance(error, e.RequestRejectedError)
    assert (error.url, error.status, error.message) == (url, 422, "setup failed")
    assert error.results == [{"type": "launch", "status": "error"}]
    assert str(error) == "setup failed"


def test_one_tree() -> None:
    for cls in (e.TunnelError, e.CatalogError, e.WorkerTimeoutError, e.NotFoundError):
        assert issubclass(cls, e.WaaError)
    assert issubclass(e.WorkerTimeoutError, e.WorkerUnreachableError)
    assert issubclass(e.HostKeyMismatchError, e.TunnelError)
