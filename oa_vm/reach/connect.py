"""Clients for a pool's workers, through SSH tunnels where the workers need them.

Cloud workers (and local workers registered behind an SSH server) are never reached directly:
their WAA and scoring ports are forwarded to free local ports for as long as the connection is
open. Local workers on loopback are reached directly.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from oa_vm.errors import PoolNotReadyError
from oa_vm.kit.redact import register_url_secrets
from oa_vm.model import state
from oa_vm.model.state import PoolRecord, WorkerRecord, WorkerState

if TYPE_CHECKING:
    from waa_client import ScoringClient, WaaClient
    from waa_client.ssh import ForwardingTunnel, TunnelTarget, WorkerTunnel


@dataclass
class WorkerConnection:
    """Clients for one ready worker; the URLs are the ones this machine uses (maybe tunnels)."""

    name: str
    waa: WaaClient
    scoring: ScoringClient
    waa_url: str
    scoring_url: str
    egress: str | None = None
    """The pool's egress mode (what the guest may reach, docs/security.md); None for a pool
    created before egress modes."""
    host: str | None = None
    """The machine the worker runs on (its record's ``host``): workers with the same host fail
    together, and the dispatcher quarantines a lost host once (:mod:`evals.run.dispatcher`). None:
    the worker is its own host."""
    tunnel: ForwardingTunnel | None = None
    """The SSH tunnel the URLs go through (its ``target.endpoint`` is the worker's path, which
    workers behind one SSH server share); None for a worker reached directly. A run asks it
    whether a failure was the path's rather than the worker's (:mod:`evals.run.paths`)."""

    def __post_init__(self) -> None:
        # whatever built it (a pool's record, a repair, a caller's URLs): its capability is
        # masked in every text from now on (oa_vm.kit.redact)
        register_url_secrets(self.waa_url)
        register_url_secrets(self.scoring_url)


def known_hosts_path(pool: str) -> Path:
    """Host keys remembered for this pool's workers (trust on first use, then enforced)."""
    return state.pool_dir(pool) / "known_hosts"


def tunnel_target(worker: WorkerRecord) -> TunnelTarget:
    """Where the tunnel of ``worker`` goes: its SSH endpoint and the ports behind it."""
    from waa_client.ssh import TunnelTarget

    assert worker.ssh is not None, "only workers reached over SSH have a tunnel"
    return TunnelTarget(
        name=worker.name,
        ssh_host=worker.ssh.host,
        ssh_port=worker.ssh.port,
        ssh_user=worker.ssh.user,
        key_path=Path(worker.ssh.key_path),
        remote_waa_port=worker.remote_waa_port,
        remote_scoring_port=worker.remote_scoring_port,
        # A local worker's URLs start with its pool's secret; the forwarded ones must too.
        base_path=urlsplit(worker.waa_url).path.rstrip("/") if worker.waa_url else "",
    )


def tunnel_for(record: PoolRecord, worker: WorkerRecord) -> WorkerTunnel:
    """An unstarted tunnel to one worker of ``record``."""
    from waa_client.ssh import WorkerTunnel

    return WorkerTunnel(tunnel_target(worker), known_hosts_path(record.name))


@contextmanager
def connect_record(
    record: PoolRecord,
    *,
    connect_timeout: float = 5.0,
    read_timeout: float = 60.0,
    only: str | None = None,
) -> Iterator[list[WorkerConnection]]:
    """Yield clients for every READY worker of ``record`` (or just ``only``), tunnels included.

    Everything opened here (tunnels, HTTP sessions) is closed on exit.

    Raises:
        PoolNotReadyError: no worker of the pool is ready.
    """
    from waa_client import ScoringClient, WaaClient

    ready = [w for w in record.workers if w.state == WorkerState.READY]
    if only is not None:
        ready = [w for w in ready if w.name == only]
    if not ready:
        states = ", ".join(f"{w.name}: {w.state.value}" for w in record.workers) or "no workers"
        # a worker still starting is waited for; lost ones only a repair brings back
        starting = any(w.state in (WorkerState.STARTING, WorkerState.BOOTING)
                       for w in record.workers)
        step = "pool-wait" if starting or not record.workers else "pool-repair"
        raise PoolNotReadyError(
            f"pool {record.name!r} has no ready worker ({states}); "
            f"run 'oa-vm {step} --pool {record.name}'"
        )
    with ExitStack() as stack:
        urls: dict[str, tuple[str, str]] = {}
        tunnel_of: dict[str, ForwardingTunnel] = {}
        via_ssh = [w for w in ready if w.ssh is not None]
        if via_ssh:
            from waa_client.ssh import PoolTunnels

            tunnels = stack.enter_context(
                PoolTunnels([tunnel_target(w) for w in via_ssh], known_hosts_path(record.name))
            )
            for w in via_ssh:
                tunnel = tunnel_of[w.name] = tunnels.tunnels[w.name]
                urls[w.name] = (tunnel.local_waa_url, tunnel.local_scoring_url)
        for w in ready:
            if w.ssh is None:
                assert w.waa_url and w.scoring_url
                urls[w.name] = (w.waa_url, w.scoring_url)
        connections = []
        for w in ready:
            waa_url, scoring_url = urls[w.name]
            waa = WaaClient(waa_url, connect_timeout=connect_timeout, read_timeout=read_timeout)
            scoring = ScoringClient(
                scoring_url, connect_timeout=connect_timeout, read_timeout=read_timeout
            )
            stack.callback(waa.close)
            stack.callback(scoring.close)
            connections.append(WorkerConnection(w.name, waa, scoring, waa_url, scoring_url,
                                                egress=record.settings.get("egress"),
                                                host=w.host, tunnel=tunnel_of.get(w.name)))
        yield connections
