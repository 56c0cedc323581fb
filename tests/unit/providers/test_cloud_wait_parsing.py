"""What the host's files say, read the way ``pool-wait``, image builds and the drain read them."""

from __future__ import annotations

import pytest

from oa_vm.clouds.pulumi.wait import cloud_init_state
from oa_vm.reach.drain import DrainNotice, notice_from_status
from oa_vm.reach.host_status import parse_status


def test_a_status_value_may_hold_equals_signs() -> None:
    text = ("state=failed\nstep=container\n"
            "message=docker run failed: --env VERSION=11e --env RAM_SIZE=8G\nnot a pair\n")
    assert parse_status(text) == {
        "state": "failed", "step": "container",
        "message": "docker run failed: --env VERSION=11e --env RAM_SIZE=8G",
    }


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("status: done\n", "done"),
        # cloud-init 23.4+ finishes with recoverable errors as "degraded done": it is done.
        ("status: degraded done\n", "done"),
        ("status: disabled\n", "done"),
        ("status: running\n", "running"),
        ("status: not started\n", "running"),
        ("status: error\n", "error"),
        ("no status line\n", "unknown"),
    ],
)
def test_cloud_init_states(output: str, expected: str) -> None:
    assert cloud_init_state(output) == expected


def test_only_a_draining_status_is_a_notice() -> None:
    draining = {"state": "draining", "message": "spot interruption: terminate at "
                "2026-12-01T10:02:00Z; no new task", "action": "terminate",
                "action_time": "2026-12-01T10:02:00Z"}
    assert notice_from_status(draining) == DrainNotice(
        message=draining["message"], action="terminate", action_time="2026-12-01T10:02:00Z"
    )
    for state in ("failed", "done", "running", ""):
        assert notice_from_status({"state": state, "step": "guest", "message": "x"}) is None
    assert notice_from_status({}) is None
