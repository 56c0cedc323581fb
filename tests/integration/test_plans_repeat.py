"""Every plan prints the same bytes on every run of one command: pools on AWS and Azure, an
image build, a smoke run and a sweep, in text and ``--json``, and a local pool, each run three
times at once (each with a hash seed of its own) through the real CLI, offline. Only what truly
depends on the clock may differ (:data:`tests.support.plan_repeat.CLOCK_DERIVED` names it and
says why); the resource tree, the resources, their inputs and their stand-in outputs may not
move. (Own hosts' plans:
``test_own_hosts_plan.py``.)

Pools have four workers: that is already more resources than Pulumi's executor has threads
(a pool of four on Azure is 25 resources, on AWS 10, against min(32, CPUs + 4) threads: 6 on a
two-core machine), so their registrations queue and race as sixteen workers' did, and anything
a plan shows per worker (names, addresses, disks, schedules) comes four times, in one of 24
orders if it followed a set, which three hash seeds seldom agree on by chance. (Put back in
registration order, the record failed every pool and sweep kind here; an Azure program walking
its workers as a set failed the Azure ones.) Sixteen only repeated the same resources, at four
times the CPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.plan_repeat import assert_same_plan, run_at_once

pytestmark = pytest.mark.integration

CIDR = ["--allow-cidr", "203.0.113.7/32"]
POOL = ["pool-create", "--pool", "p1", "--workers", "4", "--plan", *CIDR]
SWEEP = ["sweep", "--workers", "4", "--tasks", "all", "--agent", "api-claude", "--plan"]

PLANS: dict[str, tuple[str, list[str]]] = {
    "pool aws": ("oa-vm", [*POOL, "--cloud", "aws"]),
    "pool aws json": ("oa-vm", [*POOL, "--cloud", "aws", "--json"]),
    "pool azure": ("oa-vm", [*POOL, "--cloud", "azure"]),
    "pool azure json": ("oa-vm", [*POOL, "--cloud", "azure", "--json"]),
    "pool aws spot, two per host, two regions": (
        "oa-vm", [*POOL, "--cloud", "aws", "--spot", "--workers-per-host", "2",
                  "--region", "us-east-1,us-east-2", "--json"]),
    "pool local": ("oa-vm", ["pool-create", "--cloud", "local", "--workers", "3", "--plan"]),
    "image aws": ("oa-vm", ["image-create", "--cloud", "aws", "--region", "us-east-1",
                            "--plan"]),
    "image azure json": ("oa-vm", ["image-create", "--cloud", "azure", "--region", "eastus",
                                   "--plan", "--json"]),
    "smoke aws json": ("oa-vm", ["smoke", "--cloud", "aws", "--region", "us-east-1", "--plan",
                                 "--json"]),
    "smoke azure": ("oa-vm", ["smoke", "--cloud", "azure", "--region", "eastus", "--plan"]),
    "sweep aws": ("openadapt-evals", [*SWEEP, "--cloud", "aws"]),
    "sweep azure json": ("openadapt-evals", [*SWEEP, "--cloud", "azure", "--json"]),
}


@pytest.mark.parametrize("kind", list(PLANS))
@pytest.mark.long
def test_a_plan_prints_the_same_on_every_run(kind: str, tmp_path: Path) -> None:
    script, args = PLANS[kind]
    if script == "openadapt-evals":
        args = [*args, "--results-dir", str(tmp_path / "results")]
    assert_same_plan(run_at_once(tmp_path, script, args))
