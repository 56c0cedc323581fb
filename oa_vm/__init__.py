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
if TYPE_CHECKING:  # "name as name", or a name set here: one mypy sees as re-exported
    from typing import Any

    from oa_vm.api import build_spec as build_spec
    from oa_vm.api import check_available as check_available
    from oa_vm.api import cleanup_pool as cleanup_pool
    from oa_vm.api import connect as connect
    from oa_vm.api import create_pool as create_pool
    from oa_vm.api import detect_caller_cidr as detect_caller_cidr
    from oa_vm.api import list_pools as list_pools
    from oa_vm.api import plan_pool as plan_pool
    from oa_vm.api import pool_catalog as pool_catalog
    from oa_vm.api import pool_status as pool_status
    from oa_vm.api import remove_temporary_pool as remove_temporary_pool
    from oa_vm.api import resolve_name as resolve_name
    from oa_vm.api import wait_pool as wait_pool
    from oa_vm.clouds import check_name_free as check_name_free
    from oa_vm.clouds import facts, price_per_hour
    from oa_vm.clouds import get_provider as get_provider
    from oa_vm.clouds import load_pool as load_pool
    from oa_vm.clouds import pool_exists as pool_exists
    from oa_vm.clouds.base import Capability as Capability
    from oa_vm.clouds.base import Plan as Plan
    from oa_vm.clouds.base import PoolSpec as PoolSpec
    from oa_vm.clouds.base import Provider as Provider
    from oa_vm.clouds.declared import ProviderFacts as ProviderFacts
    from oa_vm.clouds.local.suite import local_tasks_dir as local_tasks_dir
    from oa_vm.clouds.quota import VcpuQuota as VcpuQuota
    from oa_vm.clouds.quota import read_vcpu_quota as read_vcpu_quota
    from oa_vm.clouds.quota import refusal
    from oa_vm.clouds.quota import vcpus_needed as vcpus_needed
    from oa_vm.cost.pricing import PriceCatalog as PriceCatalog
    from oa_vm.cost.pricing import load_catalog as load_catalog
    from oa_vm.fleet import repair_pool as repair_pool
    from oa_vm.images import cloud_provider as cloud_provider
    from oa_vm.images import plan_image as plan_image
    from oa_vm.model.config import default_cloud as default_cloud
    from oa_vm.model.lease import Hold as Hold
    from oa_vm.model.lease import LeaseLostError as LeaseLostError
    from oa_vm.model.lease import PoolRemovingError as PoolRemovingError
    from oa_vm.model.lease import hold_pool as hold_pool
    from oa_vm.model.lease import removing
    from oa_vm.model.lease import save_fenced as save_fenced
    from oa_vm.model.snapshots import SnapshotControl as SnapshotControl
    from oa_vm.model.snapshots import SnapshotError as SnapshotError
    from oa_vm.model.state import PoolRecord as PoolRecord
    from oa_vm.model.state import PoolState as PoolState
    from oa_vm.model.state import WorkerRecord as WorkerRecord
    from oa_vm.model.state import WorkerState as WorkerState
    from oa_vm.model.state import atomic_write_json as atomic_write_json
    from oa_vm.model.state import home_problem as home_problem
    from oa_vm.model.state import pool_dir as pool_dir
    from oa_vm.model.state import refuse_unsettled as refuse_unsettled
    from oa_vm.reach.connect import WorkerConnection as WorkerConnection
    from oa_vm.reach.connect import known_hosts_path as known_hosts_path
    from oa_vm.reach.connect import tunnel_target as tunnel_target
    from oa_vm.reach.drain import DrainNotice as DrainNotice
    from oa_vm.reach.drain import DrainWatch as DrainWatch
    from oa_vm.reach.drain import mark_draining as mark_draining
    from oa_vm.reach.replacements import replaced_by as replaced_by
    from oa_vm.reach.replacements import successor as successor

    cloud_facts, quota_refusal = facts, refusal
    pool_removing = removing
    pool_price = price_per_hour

#: module -> the public names it holds ("name there:public name" where they differ)
_HOMES = {
    # pools
    "oa_vm.api": "build_spec check_available cleanup_pool connect create_pool detect_caller_cidr"
                 " list_pools plan_pool pool_catalog pool_status remove_temporary_pool resolve_name"
                 " wait_pool",
    "oa_vm.fleet": "repair_pool",
    "oa_vm.images": "cloud_provider plan_image",
    # what is recorded
    "oa_vm.model.state": "PoolRecord PoolState WorkerRecord WorkerState atomic_write_json"
                         " home_problem pool_dir"
                         " refuse_unsettled",
    "oa_vm.model.lease": "Hold LeaseLostError PoolRemovingError hold_pool save_fenced"
                         " removing:pool_removing",
    "oa_vm.model.snapshots": "SnapshotControl SnapshotError",
    "oa_vm.model.config": "default_cloud",
    # reaching workers
    "oa_vm.reach.connect": "WorkerConnection known_hosts_path tunnel_target",
    "oa_vm.reach.drain": "DrainNotice DrainWatch mark_draining",
    "oa_vm.reach.replacements": "replaced_by successor",
    # clouds
    "oa_vm.clouds": "check_name_free get_provider load_pool pool_exists facts:cloud_facts"
                    " price_per_hour:pool_price",
    "oa_vm.clouds.base": "Capability Plan PoolSpec Provider",
    "oa_vm.clouds.declared": "ProviderFacts",
    "oa_vm.clouds.local.suite": "local_tasks_dir",
    "oa_vm.clouds.quota": "VcpuQuota read_vcpu_quota vcpus_needed refusal:quota_refusal",
    # prices
    "oa_vm.cost.pricing": "PriceCatalog load_catalog",
}
#: public name -> (module, name there)
_EXPORTS = {public or there: (module, there) for module, names in _HOMES.items()
            for there, _, public in (name.partition(":") for name in names.split())}
if not TYPE_CHECKING:  # mypy would take a computed __all__ for an empty one
    __all__ = sorted(_EXPORTS)


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
