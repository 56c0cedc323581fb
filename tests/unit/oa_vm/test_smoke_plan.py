"""``oa-vm smoke``'s bound and verdict: pure functions, no cloud."""

from __future__ import annotations

from pathlib import Path

import pytest

from oa_vm.cli.smoke_plan import PhaseResult, Timeline, budgets, ttl_hours_for, wait_deadline_s
from oa_vm.cli.smoke_run import SmokeOptions, make_plan
from oa_vm.cost import cloud_plan
from oa_vm.errors import InvalidInputError
from oa_vm.kit import timings


def test_the_expiry_covers_every_phase_that_bills_and_rounds_up() -> None:
    phases = budgets(worker_price=1.0, builder_price=2.0, build_s=4 * 3600, wait_s=40 * 60)
    billed = sum(p.deadline_s for p in phases if p.name not in ("plan", "image"))
    ttl = ttl_hours_for(phases)
    assert ttl * 3600 >= billed and ttl * 3600 - billed < 900
    assert ttl * 4 == int(ttl * 4), "a quarter-hour expiry"


def test_deadlines_cover_the_slow_end_of_each_estimate() -> None:
    assert wait_deadline_s() >= timings.FIRST_POOL_READY.high_s
    assert timings.IMAGE_BUILD.high_s <= cloud_plan.BUILD_READY_S * cloud_plan.WAIT_MARGIN
    assert cloud_plan.BUILD_READY_S == 2 * 3600 and cloud_plan.WARM_READY_S == 20 * 60


def _bootstrap_default(name: str, mode: str = "") -> float:
    """A timeout default of the shipped bootstrap.sh (``${NAME:-seconds}``), read from the
    script itself; ``mode`` picks the line after ``if/else`` of that mode when there are two."""
    import re

    text = (Path(__file__).resolve().parents[3] / "infra/worker/bootstrap.sh").read_text()
    found = re.findall(r"\$\{" + name + r":-(\d+)\}", text)
    assert found, name
    return float(found[-1] if mode == "pool" else found[0])


def test_deadlines_add_up() -> None:
    """Each waiting side outlasts what it waits for: pool-wait (and smoke's wait) the host's own
    budget for a first pool, the builder's life the build wait and the snapshot stage at its
    slowest, and the plan's build price the snapshot stage too."""
    import datetime as dt

    from infra.image_aws import SNAPSHOT_TIMEOUTS
    from oa_vm import api, images
    from oa_vm.kit.durations import parse_duration

    host_budget = (_bootstrap_default("OA_VM_DEVICE_WAIT_S")
                   + _bootstrap_default("OA_VM_GUEST_TIMEOUT_S", "pool")
                   + _bootstrap_default("OA_VM_SCORING_TIMEOUT_S"))
    assert wait_deadline_s() >= host_budget + 10 * 60  # and the boot, cloud-init, the load
    assert wait_deadline_s() == cloud_plan.FIRST_POOL_WAIT_S == 70 * 60
    import inspect

    assert inspect.signature(api.wait_pool).parameters["timeout_s"].default == wait_deadline_s()
    snapshot_s = parse_duration(str(SNAPSHOT_TIMEOUTS.create))
    assert snapshot_s == cloud_plan.SNAPSHOT_MAX_S
    assert dt.timedelta(seconds=images.BUILD_WAIT_S + snapshot_s) <= images.BUILDER_TTL


def test_plan_bound_is_expiry_times_price_plus_the_builder(oa_home: Path) -> None:
    plan = make_plan(SmokeOptions(cloud="aws", region="us-east-1", name="smoke-u"))
    assert plan.image is None and plan.image_plan is not None  # no image here: a build
    worker = plan.worker_price_per_hour
    assert worker is not None and worker > 0
    assert plan.max_cost_usd == pytest.approx(
        worker * plan.ttl_hours + (plan.image_plan.max_spend_usd or 0)
    )
    assert plan.within_limit and plan.refusal() is None
    tight = make_plan(SmokeOptions(cloud="aws", region="us-east-1", name="smoke-u",
                                   max_cost_usd=1.0))
    refusal = tight.refusal()
    assert refusal is not None and "more than --max-cost-usd 1" in refusal
    assert "oa-vm image-create --cloud aws --region us-east-1" in refusal
    assert not oa_home.exists(), "a plan writes nothing"


def test_an_unknown_price_is_refused_not_taken_as_free(oa_home: Path) -> None:
    plan = make_plan(SmokeOptions(cloud="aws", region="ap-south-1", name="smoke-u"))
    assert plan.max_cost_usd is None and not plan.within_limit
    assert "unknown" in (plan.refusal() or "")


@pytest.mark.parametrize("cloud", ["local", "gcp"])
def test_only_billing_clouds(cloud: str, oa_home: Path) -> None:
    with pytest.raises(InvalidInputError, match="use aws or azure"):
        make_plan(SmokeOptions(cloud=cloud))


def test_verdict_names_the_first_failed_phase_and_its_logs() -> None:
    timeline = Timeline()
    timeline.add(PhaseResult("plan", "ok"))
    timeline.add(PhaseResult("wait", "failed", 3.0, 0.01, "worker lost",
                             "oa-vm pool-status --pool p"))
    timeline.add(PhaseResult("cleanup", "failed", 1.0, 0.0, "left: sg",
                             "oa-vm pool-cleanup --pool p -y"))
    verdict = timeline.verdict()
    assert verdict.startswith("smoke FAILED at wait: the wait phase failed (worker lost)")
    assert "logs: oa-vm pool-status --pool p" in verdict
    assert "cleanup failed too: oa-vm pool-cleanup --pool p -y" in verdict
    assert timeline.total_cost_usd == pytest.approx(0.01)
    unknown = Timeline([PhaseResult("create", "ok", 1.0, None)])
    assert unknown.total_cost_usd is None and unknown.verdict().startswith("smoke PASSED")
