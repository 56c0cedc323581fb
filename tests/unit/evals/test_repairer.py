"""``run --repair``'s repairer (:class:`evals.run.repair.WorkerRepairer`): a replacement that was
made but cannot be reached (its tunnel does not open: the SSH path it sits behind is still down)
is no replacement, as a repair that failed is; it used to raise out of the dispatch loop that
asked, and the run stopped as a crashed loop."""

from __future__ import annotations

import pytest

from evals.run.repair import WorkerRepairer
from evals.run.settings import RunConfig
from waa_client.errors import SshUnreachableError


def test_a_replacement_that_cannot_be_reached_is_no_replacement(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    repairer = WorkerRepairer("p", RunConfig(pool="p", selection="all", agent="noop"))

    def unreachable(_record: object, worker: str) -> None:
        raise SshUnreachableError(f"SSH to worker {worker} at 127.0.0.1:22: connection refused")

    monkeypatch.setattr(repairer, "_replace", lambda worker, _asked: (object(), worker))
    monkeypatch.setattr(repairer, "_connect", unreachable)
    try:
        assert repairer("w0") is None
        assert repairer.repairs == {"w0": 1}  # counted: a worker that never comes back is dropped
    finally:
        repairer.close()
