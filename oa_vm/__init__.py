"""oa-vm's public face: pools of Windows Agent Arena workers, from Python.

Every name is loaded on first use, so ``import oa_vm`` costs nothing until one is used (the CLI's
start-up and ``openadapt-evals`` depend on that). The sweep engine (``evals``) reaches oa-vm only
through these names, :mod:`oa_vm.errors` and :mod:`oa_vm.kit` (an import-linter contract)::

    import oa_vm

    spec = oa_vm.build_spec(name="demo", cloud="local", workers=2)
    oa_vm.create_pool(spec)
    oa_vm.wait_pool("demo", timeout_s=300)
    with oa_vm.connect("demo") as workers:
        print([worker.name for worker in workers])
    oa_vm.cleanup_pool("demo")

The groups below say where each name lives: pools (:mod:`oa_vm.api`, :mod:`oa_vm.fleet`,
:mod:`oa_vm.images`), what is recorded (:mod:`oa_vm.model`), reaching workers
(:mod:`oa_vm.reach`), the clouds (:mod:`oa_vm.clouds`) and prices (:mod:`oa_vm.cost`).
"""

from __future__ import annotations

import importlib

# typing is not imported at run time (every oa-vm command starts here); mypy reads this as typing's.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from oa_vm.api import (
        build_spec,
        check_available,
        cleanup_pool,
        connect,
        create_pool,
        detect_caller_cidr,
        list_pools,
        plan_pool,
        pool_status,
        resolve_name,
        wait_pool,
    )
    from oa_vm.clouds import facts as cloud_facts
    from oa_vm.clouds import get_provider
    from oa_vm.clouds.base import Capability, Plan, PoolSpec, Provider
    from oa_vm.clouds.declared import ProviderFacts
    from oa_vm.clouds.local.suite import local_tasks_dir
    from oa_vm.clouds.quota import VcpuQuota, read_vcpu_quota, vcpus_needed
    from oa_vm.clouds.quota import refusal as quota_refusal
    from oa_vm.cost.pricing import PriceCatalog, load_catalog
    from oa_vm.fleet import repair_pool
    from oa_vm.images import cloud_provider, plan_image
    from oa_vm.model.config import default_cloud
    from oa_vm.model.lease import (
        Hold,
        LeaseLostError,
        PoolRemovingError,
        hold_pool,
        save_fenced,
    )
    from oa_vm.model.snapshots import SnapshotControl, SnapshotError
    from oa_vm.model.state import (
        PoolRecord,
        PoolState,
        WorkerRecord,
        WorkerState,
        atomic_write_json,
        home_problem,
        pool_dir,
    )
    from oa_vm.model.state import exists as pool_exists
    from oa_vm.model.state import load as load_pool
    from oa_vm.reach.connect import WorkerConnection, known_hosts_path, tunnel_target
    from oa_vm.reach.drain import DrainNotice, DrainWatch, mark_draining
    from oa_vm.reach.replacements import replaced_by, successor

#: public name -> (module, name there)
_EXPORTS: dict[str, tuple[str, str]] = {
    # pools
    **{name: ("oa_vm.api", name) for name in (
        "build_spec", "check_available", "cleanup_pool", "connect", "create_pool",
        "detect_caller_cidr", "list_pools", "plan_pool", "pool_status", "resolve_name",
        "wait_pool")},
    "repair_pool": ("oa_vm.fleet", "repair_pool"),
    "cloud_provider": ("oa_vm.images", "cloud_provider"),
    "plan_image": ("oa_vm.images", "plan_image"),
    # what is recorded
    **{name: ("oa_vm.model.state", name) for name in (
        "PoolRecord", "PoolState", "WorkerRecord", "WorkerState", "atomic_write_json",
        "home_problem", "pool_dir")},
    "pool_exists": ("oa_vm.model.state", "exists"),
    "load_pool": ("oa_vm.model.state", "load"),
    **{name: ("oa_vm.model.lease", name) for name in (
        "Hold", "LeaseLostError", "PoolRemovingError", "hold_pool", "save_fenced")},
    "SnapshotControl": ("oa_vm.model.snapshots", "SnapshotControl"),
    "SnapshotError": ("oa_vm.model.snapshots", "SnapshotError"),
    "default_cloud": ("oa_vm.model.config", "default_cloud"),
    # reaching workers
    **{name: ("oa_vm.reach.connect", name) for name in (
        "WorkerConnection", "known_hosts_path", "tunnel_target")},
    **{name: ("oa_vm.reach.drain", name) for name in (
        "DrainNotice", "DrainWatch", "mark_draining")},
    "replaced_by": ("oa_vm.reach.replacements", "replaced_by"),
    "successor": ("oa_vm.reach.replacements", "successor"),
    # clouds
    "get_provider": ("oa_vm.clouds", "get_provider"),
    "cloud_facts": ("oa_vm.clouds", "facts"),
    **{name: ("oa_vm.clouds.base", name)
       for name in ("Capability", "Plan", "PoolSpec", "Provider")},
    "ProviderFacts": ("oa_vm.clouds.declared", "ProviderFacts"),
    "local_tasks_dir": ("oa_vm.clouds.local.suite", "local_tasks_dir"),
    "VcpuQuota": ("oa_vm.clouds.quota", "VcpuQuota"),
    "read_vcpu_quota": ("oa_vm.clouds.quota", "read_vcpu_quota"),
    "vcpus_needed": ("oa_vm.clouds.quota", "vcpus_needed"),
    "quota_refusal": ("oa_vm.clouds.quota", "refusal"),
    # prices
    "PriceCatalog": ("oa_vm.cost.pricing", "PriceCatalog"),
    "load_catalog": ("oa_vm.cost.pricing", "load_catalog"),
}

__all__ = [
    "Capability",
    "DrainNotice",
    "DrainWatch",
    "Hold",
    "LeaseLostError",
    "Plan",
    "PoolRecord",
    "PoolRemovingError",
    "PoolSpec",
    "PoolState",
    "PriceCatalog",
    "Provider",
    "ProviderFacts",
    "SnapshotControl",
    "SnapshotError",
    "VcpuQuota",
    "WorkerConnection",
    "WorkerRecord",
    "WorkerState",
    "atomic_write_json",
    "build_spec",
    "check_available",
    "cleanup_pool",
    "cloud_facts",
    "cloud_provider",
    "connect",
    "create_pool",
    "default_cloud",
    "detect_caller_cidr",
    "get_provider",
    "hold_pool",
    "home_problem",
    "known_hosts_path",
    "list_pools",
    "load_catalog",
    "load_pool",
    "local_tasks_dir",
    "mark_draining",
    "plan_image",
    "plan_pool",
    "pool_dir",
    "pool_exists",
    "pool_status",
    "quota_refusal",
    "read_vcpu_quota",
    "repair_pool",
    "replaced_by",
    "resolve_name",
    "save_fenced",
    "successor",
    "tunnel_target",
    "vcpus_needed",
    "wait_pool",
]


def __getattr__(name: str) -> Any:
    """Load a public name on use (PEP 562).

    Looked up in its module at every use, never kept here: a name kept would go on answering
    with whatever the module held at the first use, a test's stand-in included, after the
    module got its own back (a sys.modules hit and a getattr cost about a microsecond)."""
    try:
        module, attr = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'oa_vm' has no attribute {name!r}") from None
    return getattr(importlib.import_module(module), attr)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
