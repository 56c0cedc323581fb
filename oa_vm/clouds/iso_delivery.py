"""A user's own Windows ISO (``image-create --iso PATH``) carried onto the image builder over SSH.

The builder's bootstrap waits for it in its ``iso`` step (``bootstrap.sh``, ``await_iso``) and
binds it into the container as ``/custom.iso``, where dockur looks first
(:data:`infra.worker.units.ISO_FILE`). Why SSH and not an object store: see
:mod:`oa_vm.clouds.iso_source`.

The bytes go to the command's standard input through the project's one SSH runner (the
builder's own key, its host key pinned on first contact), into ``custom.iso.part`` beside the
target; only a part file of exactly the local size is renamed into place, so the bootstrap never
sees half an ISO. SSH's own message authentication guards every byte on the way, so the size is
the only check left to make (a checksum would re-read gigabytes on both sides).

Every step has a deadline: each connection attempt and each chunk (``CHUNK_TIMEOUT_S``), and the
whole upload, retried from the start while the builder's SSH is not up yet or a session was
lost (:func:`oa_vm.clouds.iso_source.upload_budget_s`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from oa_vm.clouds.base import Progress
from oa_vm.errors import ProvisioningError
from oa_vm.model.state import SshEndpoint
from oa_vm.reach.host_status import iso_upload_command, remote_error

CHUNK_TIMEOUT_S = 120.0
"""Seconds the builder may take to accept one chunk (or to answer at the end)."""
RETRY_S = 10.0
"""Between attempts while the builder's SSH is not up yet."""
HEARTBEAT_S = 30.0


def deliver(
    iso: Path,
    ssh: SshEndpoint,
    known_hosts: Path,
    *,
    name: str,
    progress: Progress,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Upload ``iso`` to the builder at ``ssh`` (waiting for its SSH to come up), whole.

    Raises:
        ProvisioningError: the deadline passed, the builder refused the key or changed its
            host key, or the builder's command failed (its last line).
    """
    from oa_vm.clouds import iso_source
    from oa_vm.kit.durations import format_duration
    from waa_client.errors import TunnelError
    from waa_client.poll import poll_until
    from waa_client.ssh import SshCommandRunner

    size = iso.stat().st_size
    budget = iso_source.upload_budget_s(size)
    started = clock()
    deadline = started + budget
    command = iso_upload_command(size)
    runner = SshCommandRunner(known_hosts)
    last = [started - HEARTBEAT_S]

    def sent(count: int) -> None:
        now = clock()
        if now - last[0] >= HEARTBEAT_S or count == size:
            progress(f"[{format_duration(now - started):>6}] {name}: uploading your ISO, "
                     f"{count / 1e9:.2f} of {size / 1e9:.2f} GB")
            last[0] = now
        if now >= deadline:
            raise ProvisioningError(f"{name}: your ISO was not uploaded within "
                                    f"{format_duration(budget)}; check your uplink and retry")

    last_error: list[str] = []

    def attempt() -> bool | None:
        """One upload; None when the builder's SSH is not up yet (tried again)."""
        try:
            with iso.open("rb") as handle:
                result = runner.run(ssh.host, ssh.port, ssh.user, ssh.key_path, command,
                                    CHUNK_TIMEOUT_S, worker=name, stdin=handle, on_sent=sent)
        except TunnelError as exc:
            error = remote_error(exc)
            if error.final:  # a refused key or a changed host key: waiting cannot help
                raise ProvisioningError(f"{name}: {error}") from exc
            last_error[:] = [str(error)]
            progress(f"[{format_duration(clock() - started):>6}] {name}: ssh: {error}")
            return None
        if result.status != 0:
            words = (result.output.strip().splitlines() or [f"exit code {result.status}"])[-1]
            raise ProvisioningError(f"{name}: storing your ISO on the builder failed: "
                                    f"{words[:200]}")
        return True

    if poll_until(attempt, timeout_s=budget, interval_s=RETRY_S, clock=clock,
                  sleep=sleep) is None:
        raise ProvisioningError(
            f"{name}: your ISO was not uploaded within {format_duration(budget)} "
            f"(last: {last_error[0] if last_error else 'no answer'})")
