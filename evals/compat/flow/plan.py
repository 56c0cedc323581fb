"""Flow runs (compiled workflow replay on WAA): task selection, the bundle preflight, the dry run.

A bundle is ``<bundles>/<task_id>/workflow.json``. Live runs refuse to start while any selected
task has none (:func:`missing_bundles`); dry runs only count them. :func:`plan_dry_run` prices a
selection with :mod:`evals.results.cost` at a ``--vm-hourly`` figure or, by default, the price
catalog's figure for the machine a pool would run on (:func:`resolve_vm_price`); it creates
nothing and spends nothing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import oa_vm
from evals.agents.replay import BUNDLE_FILE, bundle_path
from evals.results.cost import (
    FULL_SUITE_TASKS,
    CostEstimate,
    EstimateInput,
    estimate,
    format_rate,
)
from oa_vm.errors import InvalidInputError
from oa_vm.kit.validate import MAX_PRICE_PER_HOUR_USD
from waa_client import inputs
from waa_client.catalog import check_not_synthetic


def missing_bundles(task_ids: Iterable[str], bundles_dir: Path) -> list[str]:
    """The task IDs, in the order given, that have no ``<bundles_dir>/<id>/workflow.json``."""
    return [t for t in task_ids if not bundle_path(bundles_dir, t).is_file()]


def present_bundles(bundles_dir: Path) -> list[str]:
    """Task IDs that have a bundle in ``bundles_dir``, sorted."""
    if not bundles_dir.is_dir():
        return []
    return sorted(p.parent.name for p in bundles_dir.glob(f"*/{BUNDLE_FILE}") if p.is_file())


def split_task_ids(text: str) -> list[str]:
    """Task IDs from comma- and/or newline-separated text; ``#`` starts a comment; duplicates
    are dropped, the first occurrence keeping its place."""
    return list(dict.fromkeys(i for line in text.splitlines() for i in inputs.split_ids(line)))


def read_task_ids(spec: str) -> list[str]:
    """``A,B,C`` or ``@file`` (one ID per line or comma-separated) as a list of task IDs.

    Raises:
        InvalidInputError: the file cannot be read, an ID breaks the ID rule, or no task ID was
            given.
    """
    from_file = spec.startswith("@")
    try:
        if from_file:  # the one reader of ID files: bounded, a bad line named by its number
            ids = list(dict.fromkeys(inputs.read_id_file(Path(spec[1:]).expanduser(),
                                                         what="the task ID file")))
        else:
            inputs.check_argument("--task-ids", spec)
            ids = [inputs.check_id("task ID", task_id) for task_id in split_task_ids(spec)]
    except inputs.InputError as exc:
        raise InvalidInputError(str(exc)) from exc
    if not ids:
        where = f"file {spec[1:]}" if from_file else "--task-ids"
        raise InvalidInputError(f"no task IDs in {where}; give IDs like 'A,B,C' or '@ids.txt'")
    return ids


# --- the dry run -------------------------------------------------------------------------------


@dataclass(frozen=True)
class VmPrice:
    """The $/hour a plan is priced at, and where that figure comes from.

    Attributes:
        hourly: USD per worker-hour.
        origin: ``flag`` (``--price-per-hour``) or ``catalog``.
        cloud, region, size, spot: the catalog entry used (``catalog`` only).
        source, date: the entry's source page and the date of the figure (``catalog`` only).
        defaulted: which of cloud, size and region were not given and took their defaults.
    """

    hourly: float
    origin: str
    cloud: str | None = None
    region: str | None = None
    size: str | None = None
    spot: bool = False
    source: str | None = None
    date: str | None = None
    defaulted: tuple[str, ...] = ()

    def describe(self) -> str:
        """One phrase: ``$0.5/h (--price-per-hour)`` or ``$0.4234/h on-demand, aws m8i.2xlarge in
        us-east-1 (price catalog, figure of ...)``, saying so when the machine is the default."""
        rate = f"${format_rate(self.hourly)}/h"
        if self.origin != "catalog":
            return f"{rate} (--price-per-hour)"  # the same line for its old name --vm-hourly
        kind = "spot" if self.spot else "on-demand"
        note = f"price catalog, figure of {self.date}"
        if self.defaulted:
            named = self.defaulted
            what = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
            flags = "/".join(f"--{name}" for name in named)
            note += f"; the default {what}: pick with {flags} or --price-per-hour"
        return f"{rate} {kind}, {self.cloud} {self.size} in {self.region} ({note})"


def default_flow_cloud(catalog: oa_vm.PriceCatalog) -> str:
    """The cloud a dry run is priced on when none is given: the configured default cloud
    (``oa-vm config set default-cloud``) when it bills, else the catalog's first (``aws``)."""
    configured = oa_vm.default_cloud()
    return configured if configured in catalog.clouds() else catalog.clouds()[0]


def resolve_vm_price(
    *,
    vm_hourly: float | None,
    cloud: str | None,
    size: str | None = None,
    region: str | None = None,
    spot: bool = False,
    catalog: oa_vm.PriceCatalog | None = None,
) -> VmPrice:
    """The VM price to plan with: ``--vm-hourly``, or the catalog's figure for the cloud, size
    and region given, each defaulting as a pool's would (the configured default cloud, else
    ``aws``; the cloud's default size and region), so the dry run prices the machine a pool
    would run on rather than a built-in figure.

    Raises:
        InvalidInputError: ``--vm-hourly`` with catalog options, a negative or non-finite
            price, or an unknown cloud, size or region (the known ones are listed).
    """
    if vm_hourly is not None:
        from oa_vm.kit.clikit import typed_name

        # errors name the price option as the user typed it (new name, or the old one)
        option = typed_name(("--price-per-hour", "--vm-hourly")) or "--price-per-hour"
        given = [flag for flag, value in (("--cloud", cloud), ("--size", size),
                                          ("--region", region), ("--spot", spot)) if value]
        if given:
            raise InvalidInputError(
                f"give either {option} or {', '.join(given)} (a catalog price), not both"
            )
        if not math.isfinite(vm_hourly) or not 0 <= vm_hourly <= MAX_PRICE_PER_HOUR_USD:
            raise InvalidInputError(
                f"{option} must be a number of $/hour from 0 to {MAX_PRICE_PER_HOUR_USD:g}, "
                f"not {vm_hourly:g}"
            )
        return VmPrice(hourly=vm_hourly, origin="flag")
    cat = catalog or oa_vm.load_catalog()
    defaulted = tuple(what for what, value in (("cloud", cloud), ("size", size),
                                               ("region", region)) if not value)
    chosen_cloud = cloud or default_flow_cloud(cat)
    chosen_size = size or cat.default_size(chosen_cloud)
    entry = cat.lookup(chosen_cloud, region, chosen_size)
    return VmPrice(
        hourly=entry.price(spot),
        origin="catalog",
        cloud=entry.cloud,
        region=entry.region,
        size=entry.size,
        spot=spot,
        source=entry.spot_source if spot else entry.source,
        date=entry.spot_date if spot else entry.date,
        defaulted=defaulted,
    )


@dataclass(frozen=True)
class BundleCount:
    """What ``--bundles`` holds for the selection.

    Attributes:
        folder: the bundles folder.
        present: selected tasks with a bundle (or, with no task IDs, every bundle in the folder).
        missing: selected task IDs without one (empty when no IDs were given).
    """

    folder: str
    present: int
    missing: tuple[str, ...] = ()


def check_bundles(bundles_dir: Path) -> None:
    """Refuse a ``--bundles`` that is not a folder there is to read (missing, a file).

    Raises:
        InvalidInputError: one line naming the path and what to give.
    """
    from oa_vm.kit.validate import read_problem

    problem = read_problem("--bundles", bundles_dir, kind="folder",
                           fix="give the folder holding <task_id>/workflow.json")
    if problem is not None:
        raise InvalidInputError(problem)


def count_bundles(bundles_dir: Path, task_ids: Sequence[str] | None) -> BundleCount:
    """Count the bundles for ``task_ids`` (or all bundles when None).

    Raises:
        InvalidInputError: ``bundles_dir`` is not a folder (:func:`check_bundles`).
    """
    check_bundles(bundles_dir)
    if task_ids is None:
        return BundleCount(str(bundles_dir), len(present_bundles(bundles_dir)))
    missing = missing_bundles(task_ids, bundles_dir)
    return BundleCount(str(bundles_dir), len(task_ids) - len(missing), tuple(missing))


@dataclass(frozen=True)
class DryRun:
    """A priced plan: nothing created, nothing spent.

    Attributes:
        task_ids: the selected IDs, or None when only a count was given.
        bundles: the bundle count, or None without ``--bundles``.
        price: the VM price used.
        estimate: the estimate for the selection.
        full_suite: the same estimate for all 154 WAA tasks (None when the selection is that).
    """

    task_ids: tuple[str, ...] | None
    bundles: BundleCount | None
    price: VmPrice
    estimate: CostEstimate
    full_suite: CostEstimate | None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (the ``--json`` output)."""
        return {
            "dry_run": True,
            "plan": {
                "num_tasks": self.estimate.n_tasks,
                "task_ids": list(self.task_ids) if self.task_ids is not None else None,
                "task_ids_checked": False if self.task_ids is not None else None,
                "bundles": asdict(self.bundles) if self.bundles else None,
            },
            "price": asdict(self.price),
            "estimate": self.estimate.to_json(),
            "full_suite": self.full_suite.to_json() if self.full_suite else None,
        }


def plan_dry_run(
    *,
    n_tasks: int | None,
    task_ids: Sequence[str] | None,
    bundles_dir: Path | None,
    inputs: EstimateInput,
    price: VmPrice,
) -> DryRun:
    """Price a run of ``task_ids`` (or ``n_tasks`` tasks; default the full WAA suite).

    ``inputs.n_tasks`` and ``inputs.vm_hourly`` are replaced by the selection and ``price``.

    WAA's catalog is on its workers, so IDs are checked here only by the rule a pool of real
    WAA workers has without it (no synthetic IDs); the plan says the rest is not checked.

    Raises:
        InvalidInputError: both a count and IDs were given, or an input is out of range.
        waa_client.errors.SyntheticTaskError: some IDs name mock/toy tasks (exit code 2).
    """
    if n_tasks is not None and task_ids is not None:
        raise InvalidInputError("give either --tasks N or --task-ids, not both")
    if task_ids is not None:
        check_not_synthetic(task_ids)
    count = len(task_ids) if task_ids is not None else n_tasks
    count = FULL_SUITE_TASKS if count is None else count
    est = estimate(replace(inputs, n_tasks=count, vm_hourly=price.hourly))
    full = None
    if count != FULL_SUITE_TASKS:
        full = estimate(replace(inputs, n_tasks=FULL_SUITE_TASKS, vm_hourly=price.hourly))
    bundles = count_bundles(bundles_dir, task_ids) if bundles_dir is not None else None
    ids = tuple(task_ids) if task_ids is not None else None
    return DryRun(task_ids=ids, bundles=bundles, price=price, estimate=est, full_suite=full)
