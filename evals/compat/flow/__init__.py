"""Flow runs on WAA: the dry run and bundle preflight (:mod:`evals.compat.flow.plan`) and the
reference tool's flow cost API (:mod:`evals.compat.flow.cost`, ``openadapt_evals.flow.cost``
with only the import changed).

The reference's replay runner and hybrid agent (``FlowTask``, ``run_demonstrate_then_replay``,
``HybridFlowAgent``) need openadapt-flow's compiler and are not offered: compiled bundles replay
through the sweep runner (``openadapt-eval-flow --live``, ``openadapt-evals run --agent replay``).
"""

from __future__ import annotations

from evals.agents.replay import BUNDLE_FILE, bundle_path
from evals.compat.flow.cost import (
    MODELS,
    CostGuardConfig,
    FlowRunCostEstimate,
    ModelPricing,
    SpendLedger,
    estimate_flow_waa_cost,
    looks_like_billing_error,
)
from evals.compat.flow.plan import (
    BundleCount,
    DryRun,
    VmPrice,
    count_bundles,
    missing_bundles,
    plan_dry_run,
    present_bundles,
    read_task_ids,
    resolve_vm_price,
    split_task_ids,
)

__all__ = [
    "BUNDLE_FILE",
    "MODELS",
    "BundleCount",
    "CostGuardConfig",
    "DryRun",
    "FlowRunCostEstimate",
    "ModelPricing",
    "SpendLedger",
    "VmPrice",
    "bundle_path",
    "count_bundles",
    "estimate_flow_waa_cost",
    "looks_like_billing_error",
    "missing_bundles",
    "plan_dry_run",
    "present_bundles",
    "read_task_ids",
    "resolve_vm_price",
    "split_task_ids",
]
