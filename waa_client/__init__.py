"""Speaking to WAA workers: the WAA and scoring clients, SSH tunnels, the task catalog.

This package imports nothing else of the project; ``oa_vm`` and ``evals`` build on it.
The tunnel names are imported on first use, so importing the package does not load paramiko.
"""

from typing import TYPE_CHECKING, Any

from waa_client.catalog import Catalog, TaskRef, is_infeasible, is_synthetic
from waa_client.errors import (
    CatalogError,
    HostKeyMismatchError,
    InvalidWorkerUrlError,
    KeyFileError,
    MalformedResponseError,
    NotFoundError,
    RequestRejectedError,
    ServerError,
    SetupFailedError,
    SshAuthenticationError,
    SshUnreachableError,
    SyntheticTaskError,
    TunnelError,
    TunnelNotStartedError,
    UnknownTaskError,
    WaaError,
    WorkerTimeoutError,
    WorkerUnreachableError,
)
from waa_client.http import FENCE_HEADER, no_retry_waits
from waa_client.scoring import ScoringClient
from waa_client.waa import WaaClient

if TYPE_CHECKING:
    from waa_client.ssh import PoolTunnels, TunnelTarget, WorkerTunnel, ssh_command

_LAZY = {"PoolTunnels", "TunnelTarget", "WorkerTunnel", "ssh_command"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from waa_client import ssh

        return getattr(ssh, name)
    raise AttributeError(f"module 'waa_client' has no attribute {name!r}")

__all__ = [
    "FENCE_HEADER",
    "Catalog",
    "CatalogError",
    "HostKeyMismatchError",
    "InvalidWorkerUrlError",
    "KeyFileError",
    "MalformedResponseError",
    "NotFoundError",
    "PoolTunnels",
    "RequestRejectedError",
    "ScoringClient",
    "ServerError",
    "SetupFailedError",
    "SshAuthenticationError",
    "SshUnreachableError",
    "SyntheticTaskError",
    "TaskRef",
    "TunnelError",
    "TunnelNotStartedError",
    "TunnelTarget",
    "UnknownTaskError",
    "WaaClient",
    "WaaError",
    "WorkerTimeoutError",
    "WorkerTunnel",
    "WorkerUnreachableError",
    "is_infeasible",
    "is_synthetic",
    "no_retry_waits",
    "ssh_command",
]
