"""``oa-vm smoke``'s plan, budget and timeline: what a first cloud run will do and may cost.

Pure data and formatting; the run itself is :mod:`oa_vm.cli.smoke_run`. The phases, in order:

- ``plan``: the plan and its price are shown, the most it can spend is checked against
  ``--max-cost-usd``; nothing is created;
- ``image``: the region's prepared image (the newest ready one), or one built now;
- ``create``: one worker, through :func:`oa_vm.api.create_pool` (as ``pool-create``);
- ``wait``: :func:`oa_vm.api.wait_pool` (as ``pool-wait``);
- ``task``: one ``test_small`` task with the ``noop`` agent, run by ``openadapt-evals run``
  (setup, the scoring server, WAA's checker);
- ``cleanup``: :func:`oa_vm.api.cleanup_pool` (skipped with ``--keep``).

**The most it can spend is a hard bound**, not an estimate: the pool's expiry (which the cloud
enforces, see ``docs/providers.md``) is set to the sum of the create, wait, task and cleanup
deadlines, so the worker cannot bill longer than that even if this laptop dies; a builder ends
itself after :data:`oa_vm.images.BUILDER_TTL`. The bound is those hours times the catalog's
prices (what the catalog does not price, e.g. disks and public IPs, is listed beside it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from oa_vm.clouds import facts
from oa_vm.clouds.base import Plan
from oa_vm.clouds.quota import VcpuQuota, vcpus_needed
from oa_vm.cost import cloud_plan
from oa_vm.kit import timings
from oa_vm.kit.durations import format_duration
from oa_vm.kit.tables import money, render_table

PHASES = ("plan", "image", "create", "wait", "task", "cleanup")
CLOUDS = ("aws", "azure")

CREATE_DEADLINE_S = 20 * 60.0
"""One worker's stack up (instance, volumes, network): minutes; 20 bounds a slow region."""
TASK_DEADLINE_S = 20 * 60.0
"""The task phase: connect, pick the task, one attempt of at most :data:`TASK_TIMEOUT_S`."""
TASK_TIMEOUT_S = 10 * 60.0
"""One attempt of the task (``openadapt-evals run --task-timeout``; its own default)."""
CLEANUP_DEADLINE_S = 15 * 60.0
"""Destroying one worker's stack and checking nothing is left by tag."""
DEFAULT_MAX_COST_USD = 5.0
TASK_SELECTION = "test_small"
AGENT = "noop"


def wait_deadline_s() -> float:
    """``pool-wait``'s default deadline for a pool from an image (see :mod:`oa_vm.cost.cloud_plan`):
    a smoke's pool may be the first from its snapshot."""
    return float(cloud_plan.FIRST_POOL_WAIT_S)


@dataclass(frozen=True)
class PhaseBudget:
    """One phase's deadline and the price of what bills during it.

    Attributes:
        name: one of :data:`PHASES`.
        deadline_s: the longest the phase may take (0: nothing runs).
        price_per_hour: $/hour of what bills meanwhile (None: unknown).
        what: what runs (shown in the plan).
    """

    name: str
    deadline_s: float
    price_per_hour: float | None
    what: str

    @property
    def max_cost_usd(self) -> float | None:
        """The most the phase can cost (None when the price is unknown)."""
        if self.deadline_s <= 0:
            return 0.0
        return None if self.price_per_hour is None else self.price_per_hour * self.deadline_s / 3600


@dataclass
class SmokePlan:
    """What ``oa-vm smoke`` will do, its deadlines and the most it can spend.

    Attributes:
        cloud, region, pool, size: where and what.
        image: the image used (its plan's description), or None when one is built.
        image_plan: the build's plan when the region has no image.
        pool_plan: the one-worker pool's plan (resources, price, notes).
        phases: one budget per phase of :data:`PHASES`.
        ttl_hours: the pool's expiry, from its creation (the cloud ends it then).
        limit_usd: ``--max-cost-usd``.
        keep: ``--keep`` (the pool stays).
        quota: the account's vCPU quota for the worker (:mod:`oa_vm.clouds.quota`), or None.
        delete_image: ``--delete-image`` (an image built for the smoke is removed after it).
    """

    cloud: str
    region: str
    pool: str
    size: str | None
    image: dict[str, Any] | None
    image_plan: Plan | None
    pool_plan: Plan
    phases: list[PhaseBudget]
    ttl_hours: float
    limit_usd: float
    keep: bool = False
    not_priced: list[str] = field(default_factory=list)
    quota: VcpuQuota | None = None
    delete_image: bool = False

    @property
    def worker_price_per_hour(self) -> float | None:
        """$/hour of the one worker (None: the catalog has no price)."""
        return self.pool_plan.price_per_hour

    @property
    def max_cost_usd(self) -> float | None:
        """The hard bound: the builder until it ends itself, the worker until its expiry
        (None when a price is unknown)."""
        worker = self.worker_price_per_hour
        parts = [None if worker is None else worker * self.ttl_hours]
        if self.image_plan is not None:
            parts.append(self.image_plan.max_spend_usd)
        if any(p is None for p in parts):
            return None
        return float(sum(p for p in parts if p is not None))

    @property
    def within_limit(self) -> bool:
        """The bound is known and at most ``--max-cost-usd``."""
        bound = self.max_cost_usd
        return bound is not None and bound <= self.limit_usd

    def refusal(self) -> str | None:
        """One line when the smoke must not start (over the limit, or an unknown price)."""
        bound = self.max_cost_usd
        if bound is None:
            return (f"the most the smoke can spend is unknown (no catalog price for "
                    f"{self.size} in {self.cloud} {self.region}); pass --region with a listed "
                    "region (see 'oa-vm prices')")
        if bound > self.limit_usd:
            return (f"the smoke can spend up to ${bound:.2f}, more than --max-cost-usd "
                    f"{self.limit_usd:g}; raise --max-cost-usd to at least {math.ceil(bound)}, "
                    "or build the image first with 'oa-vm image-create "
                    f"--cloud {self.cloud} --region {self.region}'"
                    if self.image_plan is not None else
                    f"the smoke can spend up to ${bound:.2f}, more than --max-cost-usd "
                    f"{self.limit_usd:g}; raise --max-cost-usd to at least {math.ceil(bound)}")
        return None

    def to_json(self) -> dict[str, Any]:
        """The plan as a document (``--plan --json``)."""
        return {
            "kind": "smoke",
            "cloud": self.cloud,
            "region": self.region,
            "pool": self.pool,
            "size": self.size,
            "task_selection": TASK_SELECTION,
            "agent": AGENT,
            "worker_price_per_hour": self.worker_price_per_hour,
            "image": self.image,
            "image_build": self.image_plan.to_json() if self.image_plan else None,
            "pool_plan": self.pool_plan.to_json(),
            "phases": [
                {"name": p.name, "deadline_s": p.deadline_s, "price_per_hour": p.price_per_hour,
                 "max_cost_usd": p.max_cost_usd, "what": p.what}
                for p in self.phases
            ],
            "ttl_hours": self.ttl_hours,
            "max_cost_usd": self.max_cost_usd,
            "max_cost_limit_usd": self.limit_usd,
            "within_limit": self.within_limit,
            "not_priced": self.not_priced,
            "keep": self.keep,
            "vcpu_quota": None if self.quota is None else {
                "quota": self.quota.quota, "limit": self.quota.limit,
                "in_use": self.quota.in_use, "missing": self.quota.missing or None},
            "expectations": self.expectations(),
        }

    def describe(self) -> str:
        """The plan as text: what each phase does, its deadline and the most it costs."""
        lines = [
            f"Smoke plan: one {self.size} worker on {self.cloud} {self.region} (pool "
            f"{self.pool}), one {TASK_SELECTION} task with the {AGENT} agent, then "
            + ("the pool is kept (--keep)" if self.keep else "everything it made is removed"),
        ]
        if self.image is not None:
            lines.append(f"Image: {self.image.get('id')} ({self.image.get('cloud_id')})")
        elif self.image_plan is not None:
            lines.append(
                f"Image: none in {self.region} yet: one is built first ({self.image_plan.name}, "
                f"{timings.IMAGE_BUILD.text()}, "
                f"{money(self.image_plan.price_per_hour)}/hour for the builder; it stays "
                "afterwards for later pools unless --delete-image)"
            )
        rows = [
            [p.name, format_duration(p.deadline_s) if p.deadline_s else "-",
             money(p.price_per_hour) if p.deadline_s else "-", money(p.max_cost_usd), p.what]
            for p in self.phases
        ]
        lines.append(render_table(["PHASE", "DEADLINE", "$/HOUR", "AT MOST", "WHAT"], rows))
        bound = self.max_cost_usd
        lines.append(
            f"Most it can spend: {money(bound)} (limit --max-cost-usd {self.limit_usd:g}); the "
            f"pool expires {format_duration(self.ttl_hours * 3600)} after it is created, enforced "
            "by the cloud"
        )
        if self.not_priced:
            lines.append("Not priced: " + "; ".join(self.not_priced))
        lines += self.expectations()
        return "\n".join(lines)

    def expectations(self) -> list[str]:
        """What must happen first, the expected times (:mod:`oa_vm.kit.timings`) and what keeps
        billing after, each marked measured or estimated: the same answer ``sweep --plan``
        gives, for one worker and one task."""
        first = []
        if self.image_plan is not None:
            first.append(f"an image build, {timings.IMAGE_BUILD.text()}")
        if self.quota is not None:
            needed = vcpus_needed(self.cloud, str(self.size), 1)
            basis = timings.MEASURED if self.quota.limit is not None else "not read"
            first.append(f"vCPU quota: {self.quota.describe(needed)} [{basis}]")
        slow = self.image_plan is not None and facts(self.cloud).slow_first_pool
        ready = timings.FIRST_POOL_READY if slow else timings.WARM_READY
        build_s = timings.IMAGE_BUILD.typical_s if self.image_plan is not None else 0.0
        done_s = build_s + ready.typical_s + timings.AGENT_TASK.typical_s
        kept = ("the image's snapshot until 'oa-vm image-delete'" if not self.delete_image
                else "nothing of the image (--delete-image)")
        if self.keep:
            kept += "; the pool, until its expiry or 'oa-vm pool-cleanup'"
        return [
            "First: " + ("; ".join(first) if first else "nothing"),
            f"Expected: ready in {timings.about(build_s + ready.typical_s)} "
            f"({'the build, then ' if build_s else ''}the worker {ready.text()}), done in "
            f"{timings.about(done_s)} [estimated; the deadlines above bound it]",
            f"Keeps billing after the smoke: {kept}",
        ]


def ttl_hours_for(phases: list[PhaseBudget]) -> float:
    """The pool's expiry: the create, wait, task and cleanup deadlines, rounded up to 15 min."""
    seconds = sum(p.deadline_s for p in phases if p.name in ("create", "wait", "task", "cleanup"))
    return math.ceil(seconds / 900.0) / 4.0


def budgets(
    *,
    worker_price: float | None,
    builder_price: float | None,
    build_s: float,
    wait_s: float,
) -> list[PhaseBudget]:
    """One :class:`PhaseBudget` per phase. ``build_s`` is 0 when the image exists."""
    return [
        PhaseBudget("plan", 0.0, None, "show this plan; nothing is created"),
        PhaseBudget("image", build_s, builder_price if build_s else 0.0,
                    "build the region's image (the builder ends itself by then)" if build_s
                    else "use the region's prepared image"),
        PhaseBudget("create", CREATE_DEADLINE_S, worker_price, "one worker (oa-vm pool-create)"),
        PhaseBudget("wait", wait_s, worker_price, "until it is ready (oa-vm pool-wait)"),
        PhaseBudget("task", TASK_DEADLINE_S, worker_price,
                    f"one {TASK_SELECTION} task, {AGENT} agent, WAA's checker"),
        PhaseBudget("cleanup", CLEANUP_DEADLINE_S, worker_price,
                    "remove the pool (oa-vm pool-cleanup)"),
    ]


# --- the timeline of a run ------------------------------------------------------------------


@dataclass
class PhaseResult:
    """How one phase went.

    Attributes:
        name: one of :data:`PHASES`.
        status: ``ok``, ``failed``, ``interrupted``, ``skipped`` or ``kept``.
        duration_s: how long it took.
        cost_usd: its duration times the price of what billed meanwhile (None: unknown).
        detail: one line (what it used or made, or why it failed).
        logs: the command that shows its logs (failed phases).
    """

    name: str
    status: str
    duration_s: float = 0.0
    cost_usd: float | None = 0.0
    detail: str = ""
    logs: str = ""

    def to_json(self) -> dict[str, Any]:
        """The phase as a document."""
        return {"name": self.name, "status": self.status, "duration_s": round(self.duration_s, 3),
                "cost_usd": self.cost_usd, "detail": self.detail, "logs": self.logs}


@dataclass
class Timeline:
    """The phases of one smoke run, in order, and its verdict."""

    phases: list[PhaseResult] = field(default_factory=list)

    def add(self, result: PhaseResult) -> PhaseResult:
        """Record a phase's result."""
        self.phases.append(result)
        return result

    @property
    def failed(self) -> PhaseResult | None:
        """The first phase that failed or was interrupted."""
        return next((p for p in self.phases if p.status in ("failed", "interrupted")), None)

    @property
    def cleanup_failed(self) -> bool:
        """Removing what the smoke made did not finish."""
        return any(p.name == "cleanup" and p.status == "failed" for p in self.phases)

    @property
    def total_cost_usd(self) -> float | None:
        """The sum of the phases' costs (None when one is unknown)."""
        costs = [p.cost_usd for p in self.phases]
        return None if any(c is None for c in costs) else float(sum(c or 0.0 for c in costs))

    def verdict(self) -> str:
        """One line: passed, or the phase that failed and the command that shows its logs."""
        failed = self.failed
        if failed is None:
            task = next((p for p in self.phases if p.name == "task"), None)
            scored = f": {task.detail}" if task and task.detail else ""
            return f"smoke PASSED: every phase worked{scored}"
        how = "was interrupted" if failed.status == "interrupted" else "failed"
        line = f"smoke FAILED at {failed.name}: the {failed.name} phase {how}"
        if failed.detail:
            line += f" ({failed.detail})"
        if failed.logs:
            line += f"; logs: {failed.logs}"
        if self.cleanup_failed and failed.name != "cleanup":
            cleanup = next(p for p in self.phases if p.name == "cleanup")
            line += f"; cleanup failed too: {cleanup.logs}"
        return line

    def table(self) -> str:
        """The timeline: each phase, its status, duration and cost."""
        rows = [[p.name, p.status, format_duration(p.duration_s), money(p.cost_usd), p.detail]
                for p in self.phases]
        rows.append(["total", "", format_duration(sum(p.duration_s for p in self.phases)),
                     money(self.total_cost_usd), ""])
        return render_table(["PHASE", "STATUS", "TOOK", "COST", "DETAIL"], rows)

    def to_json(self) -> dict[str, Any]:
        """The timeline and verdict as a document."""
        failed = self.failed
        return {
            "passed": failed is None,
            "failed_phase": failed.name if failed else None,
            "phases": [p.to_json() for p in self.phases],
            "total_cost_usd": self.total_cost_usd,
            "verdict": self.verdict(),
        }
