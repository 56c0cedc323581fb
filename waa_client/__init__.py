"""Speaking to WAA workers: the WAA and scoring clients, SSH tunnels, the task catalog.

This package imports nothing else of the project; ``oa_vm`` and ``evals`` build on it.
Its names are imported on first use, so importing the package (or one of its modules, such as
the task catalog) loads neither requests nor paramiko.
"""

import importlib
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from waa_client.catalog import Catalog, TaskRef, is_infeasible, is_synthetic
    from waa_client.http import FENCE_HEADER, no_retry_waits
    from waa_client.scoring import ScoringClient
    from waa_client.ssh import PoolTunnels, TunnelTarget, WorkerTunnel, ssh_command
    from waa_client.waa import WaaClient

_HOMES = {
    "catalog": "Catalog TaskRef is_infeasible is_synthetic",
    "http": "FENCE_HEADER no_retry_waits",
    "scoring": "ScoringClient",
    "ssh": "PoolTunnels TunnelTarget WorkerTunnel ssh_command",
    "waa": "WaaClient",
}
_MODULE_OF = {name: module for module, names in _HOMES.items() for name in names.split()}


def __getattr__(name: str) -> Any:
    """The public name ``name``, imported from its module on first use (the errors are
    imported with the package: they are light and every reader catches them)."""
    if name not in _MODULE_OF:
        raise AttributeError(f"module 'waa_client' has no attribute {name!r}")
    return getattr(importlib.import_module(f"waa_client.{_MODULE_OF[name]}"), name)


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
