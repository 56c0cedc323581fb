"""``sweep --plan``'s answer, in one block: what must happen first, how long, what it costs.

A new user asks three things before a sweep ("154 tasks on 40 AWS workers"): what has to happen
first (an image build when the region has none; a vCPU quota that holds the workers), how long
until the workers are ready and until the last task is done, and what it costs (the VMs, the
model's tokens for a model agent, and what keeps billing once the run is over). :func:`estimate`
answers them from the pool's plan (:func:`oa_vm.api.plan_pool`), the account's quota
(:mod:`oa_vm.clouds.quota`), the time figures (:mod:`oa_vm.kit.timings`, the one source of every
time estimate) and the model prices (:mod:`evals.results.cost`); :meth:`SweepEstimate.describe`
prints them with each figure marked *measured* (read from the price catalog or the account) or
*estimated*.

Pure: the plan, the quota and the image plan are passed in; no secret is needed (a model
agent's price comes from its model's name, not from its API).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import oa_vm
from oa_vm.kit import timings

if TYPE_CHECKING:
    from evals.run.settings import RunConfig
    from oa_vm import Plan, VcpuQuota


IDS_UNCHECKED = "checked by the workers' task catalog when the run starts (it is on the workers)"
"""What a cloud sweep can say of named task IDs before its pool exists, when its image recorded
no task catalog (:func:`oa_vm.pool_catalog`)."""


@dataclass(frozen=True)
class Figure:
    """One line of the block: what, its value, and whether it is measured or estimated."""

    label: str
    value: str
    basis: str = timings.ESTIMATED

    def line(self) -> str:
        """``  label: value [basis]``."""
        return f"  {self.label + ':':<14}{self.value} [{self.basis}]"


@dataclass
class SweepEstimate:
    """What a sweep will need first, take and cost (see the module docstring).

    Attributes:
        first: what must happen before the tasks can start (empty: nothing).
        figures: the time and cost lines, in order.
        after: what keeps billing once the sweep has ended.
        json: the same as data (``--plan --json``).
    """

    headline: str
    first: list[Figure] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    after: list[str] = field(default_factory=list)
    json: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        """The block: a headline, then First, Time and cost, Keeps billing after."""
        lines = [self.headline]
        lines.append("First:" if self.first else "First: nothing")
        lines += [f.line() for f in self.first]
        lines.append("Time and cost:")
        lines += [f.line() for f in self.figures]
        lines.append("Keeps billing after the sweep:")
        lines += [f"  - {item}" for item in self.after]
        return "\n".join(lines)


def waa_ids(selection: str) -> list[str] | None:
    """The WAA task IDs ``selection`` names one by one (one, a list, an ``@file``), counted and
    said unchecked before a cloud pool exists; None for what only a catalog resolves and for
    task modules and configs (``cua-bench:``, ``openapps:``), which are not WAA IDs."""
    from evals.tasks import is_cua_selection, is_openapps_selection
    from waa_client.catalog import named_ids

    if is_cua_selection(selection) or is_openapps_selection(selection):
        return None
    return named_ids(selection)


def task_count(selection: str, cloud: str,
               counted: tuple[int, str] | None) -> tuple[int | None, str, bool]:
    """How many tasks ``selection`` is, how that was found, and whether it is exact (read
    here) rather than what the workers' catalog is expected to give.

    ``counted``: the count and how it was found when the pool's catalog is known here (a local
    pool's; a cloud pool's image's). Else a cloud worker's is WAA's, read on the worker, so
    ``all`` is WAA's suite, ``N`` the first N, and the IDs given by name (one, a list, an
    ``@file``) as many as they are.
    """
    from evals.tasks import is_cua_selection, is_openapps_selection
    from waa_client.catalog import WAA_SUITE_TASKS, selection_count

    text = selection.strip()
    if is_cua_selection(text):  # loaded here, whatever the pool
        from evals.tasks.cua_bench import load_selection

        return len(load_selection(text)), "the modules' variants", True
    if is_openapps_selection(text):
        from evals.tasks.openapps import select_openapps

        return len(select_openapps(text)[0]), "the task config's entries", True
    if counted is not None:
        return counted[0], counted[1], True
    count = selection_count(text)
    if count is not None:
        return count, "--tasks N", False
    if text == "all":
        return WAA_SUITE_TASKS, "WAA's test_all.json", False
    named = None if oa_vm.cloud_facts(cloud).simulated else waa_ids(text)
    if named is not None:
        return len(dict.fromkeys(named)), f"the IDs given, {IDS_UNCHECKED}", False
    return None, "read from the worker's catalog when the run starts", False


def agent_model(agent: str, agent_args: dict[str, Any]) -> str | None:
    """The price catalog's name of a model agent's model (None for other agents), from
    ``--agent-arg model=...`` or the agent's default; no key is read."""
    from evals.agents import MODEL_AGENTS

    if agent not in MODEL_AGENTS:
        return None
    from evals.agents.model_api import catalog_model
    from evals.results.cost import known_models

    if agent == "api-claude":
        from evals.agents.api_claude import DEFAULT_MODEL
    else:
        from evals.agents.api_openai import DEFAULT_MODEL
    return catalog_model(str(agent_args.get("model") or DEFAULT_MODEL), known_models())


def _money(usd: float | None) -> str:
    return "unknown" if usd is None else f"${usd:,.2f}"


def estimate(
    *,
    plan: Plan,
    config: RunConfig,
    counted: tuple[int, str] | None = None,
    quota: VcpuQuota | None = None,
    vcpus_needed: int | None = None,
    image_plan: Plan | None = None,
    price_date: str | None = None,
) -> SweepEstimate:
    """The sweep's block from the pool's plan (see the module docstring).

    Args:
        plan: the pool's plan (its price for the whole pool, its image or the lack of one).
        config: the run's options (its selection, agent and arguments, steps and trials).
        counted: the selection's size and how it was found, when the pool's catalog is
            known here (a local pool's, a cloud image's).
        quota, vcpus_needed: the account's vCPU quota and what the pool needs (cloud pools).
        image_plan: the image build's plan when the region has no image (else None).
        price_date: the catalog figure's date, said beside the VM price.
    """
    from evals.agents.model_api import parse_agent_args
    from evals.results.cost import model_price, step_cost

    agent, max_steps, trials = config.agent, config.max_steps, config.trials
    cloud, workers = plan.cloud, max(plan.workers, 1)
    count, counted_by, exact = task_count(config.selection, cloud, counted)
    runs = None if count is None else count * max(trials, 1)
    per_task = timings.REPLAY_TASK if agent == "replay" else timings.AGENT_TASK
    needs_build = image_plan is not None
    simulated = oa_vm.cloud_facts(cloud).simulated
    if simulated:
        ready = timings.Timing("a local pool", 60, 60, 60, timings.ESTIMATED,
                               "simulated workers on this machine start in seconds")
    elif needs_build and oa_vm.cloud_facts(cloud).slow_first_pool:
        ready = timings.FIRST_POOL_READY
    else:
        ready = timings.WARM_READY
    build_s = timings.IMAGE_BUILD.typical_s if needs_build else 0.0
    tasks_s = None if runs is None else runs * per_task.typical_s / workers

    first: list[Figure] = []
    if image_plan is not None:
        builder = image_plan.price_per_hour
        build_usd = None if builder is None else builder * build_s / 3600
        first.append(Figure(
            "image", f"none in {plan.region} yet: an image build first, "
            f"{timings.IMAGE_BUILD.text()}, {_money(build_usd)} for its {image_plan.size} "
            f"builder (about ${builder or 0:.2f}/h); drop --plan with --build-image, or run "
            f"'oa-vm image-create --cloud {cloud} --region {plan.region}'"))
    else:
        build_usd = 0.0
    if quota is not None:
        first.append(Figure("vCPU quota", quota.describe(vcpus_needed),
                            timings.MEASURED if quota.limit is not None else "not read"))

    figures = [Figure("tasks", "unknown until the run starts (" + counted_by + ")"
                      if runs is None else
                      f"{runs} ({counted_by}"
                      + (f": {count} tasks x {trials} trials" if trials > 1 else "") + ")",
                      timings.MEASURED if exact else timings.ESTIMATED)]
    ready_total = build_s + ready.typical_s
    ready_text = (f"{timings.about(ready_total)}: the image build, then the pool, "
                  f"{ready.text()}" if needs_build else ready.text())
    figures.append(Figure("ready in", ready_text))
    if tasks_s is None:
        figures.append(Figure("done in", "unknown (the task count is)"))
    else:
        figures.append(Figure(
            "done in", f"{timings.about(ready_total + tasks_s)} from the start: {runs} tasks x "
            f"{per_task.typical_s / 60:g} min / {workers} worker(s) = "
            f"{timings.about(tasks_s)} of tasks ({per_task.source})"))
    pool_hours = None if tasks_s is None else (ready.typical_s + tasks_s) / 3600
    vm_usd = (None if plan.price_per_hour is None or pool_hours is None
              else plan.price_per_hour * pool_hours)
    priced = (f"${plan.price_per_hour:.4f}/h for the pool"
              + (f" (price catalog, {price_date})" if price_date else "")
              if plan.price_per_hour is not None else "no price for this machine")
    figures.append(Figure(
        "VM cost", f"{_money(vm_usd)}: {priced} x "
        + ("? h" if pool_hours is None else f"{pool_hours:.2f} h (ready + tasks)")
        + ("" if not needs_build else f", plus the build's {_money(build_usd)}")
        + "; the hours are estimated, the price is the catalog's"))
    model = agent_model(agent, parse_agent_args(config.agent_options.args))
    token_usd: float | None = 0.0
    if model is not None:
        try:
            model_price(model)
            per_step = step_cost(model)
        except Exception:  # an unpriced model: said, not guessed
            per_step = None
        token_usd = None if per_step is None or runs is None else runs * max_steps * per_step
        what = (f"{model} is not in the price catalog" if per_step is None else
                f"{runs or '?'} tasks x at most {max_steps} steps (--max-steps) x "
                f"${per_step:.4f}/step ({model} list price, a 1920x1080 screenshot a step)")
        figures.append(Figure("model tokens", f"at most {_money(token_usd)}: {what}"))
    else:
        figures.append(Figure("model tokens", f"$0.00: the {agent} agent calls no model API",
                              timings.MEASURED))
    total = (None if vm_usd is None or token_usd is None or build_usd is None
             else vm_usd + token_usd + build_usd)
    figures.append(Figure("total", f"{_money(total)} (VMs, build and tokens)"))

    after = _after(cloud, plan, image_plan)
    headline = (f"Sweep plan: {runs if runs is not None else '?'} task(s) with agent {agent!r} on "
                f"{workers} {cloud} worker(s)" + (f" ({plan.size} in {plan.region})"
                                                   if plan.size else "")
                + "; nothing was created (drop --plan to run it)")
    json = {
        "tasks": runs, "tasks_source": counted_by, "workers": workers,
        "needs_image_build": needs_build,
        "ready_in_s": ready_total, "tasks_s": tasks_s,
        "done_in_s": None if tasks_s is None else ready_total + tasks_s,
        "minutes_per_task": per_task.typical_s / 60, "minutes_per_task_source": per_task.source,
        "vm_usd": vm_usd, "build_usd": build_usd, "model": model, "token_usd_at_most": token_usd,
        "total_usd": total, "basis": timings.ESTIMATED,
        "vcpus_needed": vcpus_needed,
        "vcpu_quota": None if quota is None else {
            "quota": quota.quota, "limit": quota.limit, "in_use": quota.in_use,
            "missing": quota.missing or None},
        "keeps_billing_after": after,
    }
    return SweepEstimate(headline, first, figures, after, json)


def _after(cloud: str, plan: Plan, image_plan: Plan | None) -> list[str]:
    """What bills once the sweep is over: the image, and the pool if its cleanup never ran."""
    if oa_vm.cloud_facts(cloud).simulated:
        return ["nothing: a local pool costs nothing"]
    monthly = (image_plan.image or {}).get("storage_usd_per_month") if image_plan else None
    snapshot = (f"the image's snapshot (about ${monthly:.2f}/month)" if monthly
                else "the image's snapshot (see 'oa-vm image-list')")
    items = [f"{snapshot} until 'oa-vm image-delete'; the pool itself is removed when the "
             "sweep ends"]
    kept = "; ".join(plan.bills_after_expiry[:-1] or plan.bills_after_expiry)
    items.append("if the sweep is killed before its cleanup: the workers bill until the "
                 f"pool's expiry; then {kept}")
    return items
