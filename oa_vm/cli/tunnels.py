"""``oa-vm pool-tunnel``: keep a pool's SSH tunnels open in the foreground.

Shows, per worker, the local URLs to use and the equivalent ``ssh -N -L ...`` command (for
people who prefer their own ssh), follows drops and reconnects (done by
:class:`waa_client.ssh.PoolTunnels` in the background) and closes everything on Ctrl-C, and on
SIGTERM or SIGHUP as on Ctrl-C: the OpenSSH backend's ``ssh -M`` processes would otherwise
outlive a ``kill`` of the command and keep forwarding the pool's ports.
"""

from __future__ import annotations

import shlex
import signal
import threading
import time
from collections.abc import Callable

from oa_vm import api
from oa_vm.errors import InvalidInputError
from oa_vm.kit.signals import sigterm_as_interrupt
from oa_vm.kit.tables import render_table
from oa_vm.model import state
from oa_vm.reach.connect import known_hosts_path, tunnel_target

HEALTH_REPORT_INTERVAL_S = 2.0


def run_foreground(
    pool: str,
    worker: str | None,
    *,
    echo: Callable[[str], None],
    stop: threading.Event | None = None,
) -> None:
    """Open the tunnels of ``pool`` (or of one ``worker``) until Ctrl-C, SIGTERM, SIGHUP or
    ``stop``; every tunnel is closed before it returns."""
    from waa_client.ssh import PoolTunnels

    record = api.pool_status(pool)
    state.refuse_paused(record)  # a stopped worker has no URL to give or tunnel to
    workers = [w for w in record.workers if worker is None or w.name == worker]
    if worker is not None and not workers:
        names = ", ".join(w.name for w in record.workers)
        raise InvalidInputError(f"pool {pool!r} has no worker {worker!r} (workers: {names})")
    for w in workers:
        if w.ssh is None:
            echo(f"{w.name}: reached directly, no tunnel needed: WAA {w.waa_url}, "
                 f"scoring {w.scoring_url}")
    via_ssh = [w for w in workers if w.ssh is not None]
    if not via_ssh:
        return
    targets = [tunnel_target(w) for w in via_ssh]
    with (sigterm_as_interrupt((signal.SIGTERM, signal.SIGHUP)),
          PoolTunnels(targets, known_hosts_path(pool)) as tunnels):
        rows = []
        commands = []
        for target in targets:
            tunnel = tunnels.tunnels[target.name]
            rows.append([target.name, target.endpoint,
                         tunnel.local_waa_url, tunnel.local_scoring_url])
            commands.append(f"{target.name}: {shlex.join(tunnel.command())}")
        echo(render_table(["WORKER", "SSH", "WAA (local)", "SCORING (local)"], rows))
        echo("Equivalent ssh commands:")
        for line in commands:
            echo(f"  {line}")
        echo("Tunnels open; press Ctrl-C to close them.")
        healthy = {t.name: True for t in targets}
        try:
            while stop is None or not stop.is_set():
                time.sleep(HEALTH_REPORT_INTERVAL_S)
                for target in targets:
                    ok = tunnels.tunnels[target.name].is_healthy()
                    if ok != healthy[target.name]:
                        healthy[target.name] = ok
                        echo(f"{target.name}: " + ("reconnected" if ok else "connection lost, "
                                                   "reconnecting"))
        except KeyboardInterrupt:
            echo("Closing tunnels...")
    echo("Tunnels closed.")
