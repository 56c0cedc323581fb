"""What a run spends: worker time priced per worker-hour, model tokens priced per model; the cap.

A task costs the seconds it held a worker (every attempt, failed ones included: the worker was
billing) times the pool's price per worker-hour, plus the tokens its agent reported, priced by
:func:`evals.cost.token_cost`.

The cap (``--max-cost-usd``) is checked before each lease: the spend so far, plus what the tasks
in flight are expected to cost, plus what the next task is expected to cost, must stay within it.
Expectations start from the task's expected seconds and are corrected by what finished tasks
actually took, so a run whose estimates are pessimistic is not stopped early for ever. A task's
real cost can still exceed its expectation, which is why the spend may pass the cap by at most
what was in flight when dispatching stopped.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from evals.records import CostRecord

TokenPricer = Callable[[str, int, int], float]


def default_token_pricer() -> TokenPricer | None:
    """:func:`evals.cost.token_cost` when the cost module is installed, else ``None``."""
    try:
        from evals.cost import token_cost
    except ImportError:
        return None
    return token_cost


@dataclass
class _TaskAccount:
    worker_seconds: float = 0.0
    tokens_in: int = 0
    tokens_out: int = 0
    model_usd: float = 0.0


class Ledger:
    """Per-task and per-run spend, and the budget check. Thread-safe.

    Args:
        price_per_hour: $ per worker-hour (``None``: worker time is free, e.g. an unpriced pool).
        cap_usd: The run's cap (``None``: no cap).
        token_pricer: ``(model, tokens_in, tokens_out) -> $``; tokens with no model, or a model
            the pricer does not know, count as $0 and the model is listed in ``unpriced_models``.
    """

    def __init__(
        self,
        price_per_hour: float | None,
        cap_usd: float | None = None,
        token_pricer: TokenPricer | None = None,
    ) -> None:
        self.price_per_hour = price_per_hour
        self.cap_usd = cap_usd
        self._pricer = token_pricer
        self._lock = threading.Lock()
        self._accounts: dict[str, _TaskAccount] = {}
        self._reserved: dict[str, float] = {}
        self._carried_usd = 0.0  # spend of tasks finished by an earlier controller (resume)
        self._carried_seconds = 0.0
        self._expected_done = 0.0
        self._actual_done = 0.0
        self._model_usd_done: list[float] = []
        self.unpriced_models: set[str] = set()
        # Each charged task's total as of its last charge: the spend is asked for at every run
        # event, and pricing every task again each time made it quadratic in the run's size.
        self._charged_usd: dict[str, float] = {}

    # --- pricing ------------------------------------------------------------------------------

    def vm_usd(self, seconds: float) -> float:
        """The price of ``seconds`` of one worker."""
        return 0.0 if self.price_per_hour is None else seconds * self.price_per_hour / 3600.0

    def token_usd(self, usage: Mapping[str, Any]) -> float:
        """The price of one step's reported usage."""
        model = usage.get("model")
        tokens_in = int(usage.get("tokens_in", 0) or 0)
        tokens_out = int(usage.get("tokens_out", 0) or 0)
        if not tokens_in and not tokens_out:
            return 0.0
        if not isinstance(model, str) or self._pricer is None:
            self.unpriced_models.add(str(model))
            return 0.0
        try:
            return float(self._pricer(model, tokens_in, tokens_out))
        except (LookupError, ValueError):
            # An unknown model must not end a run: it counts as $0 and is reported.
            self.unpriced_models.add(model)
            return 0.0

    # --- charging -----------------------------------------------------------------------------

    def charge(
        self,
        task_id: str,
        worker_seconds: float,
        usages: Iterable[Mapping[str, Any] | None],
    ) -> CostRecord:
        """Add one attempt's worker time and token usage to the task; returns its total so far."""
        with self._lock:
            account = self._accounts.setdefault(task_id, _TaskAccount())
            account.worker_seconds += max(0.0, worker_seconds)
            for usage in usages:
                if not usage:
                    continue
                account.tokens_in += int(usage.get("tokens_in", 0) or 0)
                account.tokens_out += int(usage.get("tokens_out", 0) or 0)
                account.model_usd += self.token_usd(usage)
            cost = self._cost(account)
            self._charged_usd[task_id] = cost.total_usd
            return cost

    def _cost(self, account: _TaskAccount) -> CostRecord:
        vm = self.vm_usd(account.worker_seconds)
        return CostRecord(
            worker_seconds=round(account.worker_seconds, 3),
            vm_usd=round(vm, 6),
            tokens_in=account.tokens_in,
            tokens_out=account.tokens_out,
            model_usd=round(account.model_usd, 6),
            total_usd=round(vm + account.model_usd, 6),
        )

    def task_cost(self, task_id: str) -> CostRecord:
        """The task's cost so far (zeros for a task never charged)."""
        with self._lock:
            return self._cost(self._accounts.get(task_id, _TaskAccount()))

    def carry(self, costs: Iterable[Mapping[str, Any]]) -> None:
        """Count the spend of tasks an earlier controller finished (``cost`` dicts of records)."""
        with self._lock:
            for cost in costs:
                self._carried_usd += float(cost.get("total_usd", 0.0) or 0.0)
                self._carried_seconds += float(cost.get("worker_seconds", 0.0) or 0.0)

    # --- the cap ------------------------------------------------------------------------------

    def _expected_locked(self, expected_seconds: float) -> float:
        ratio = self._actual_done / self._expected_done if self._expected_done > 0 else 1.0
        model = (
            sum(self._model_usd_done) / len(self._model_usd_done) if self._model_usd_done else 0.0
        )
        return self.vm_usd(expected_seconds * ratio) + model

    def expected_cost(self, expected_seconds: float) -> float:
        """What a task expected to take ``expected_seconds`` is expected to cost now."""
        with self._lock:
            return self._expected_locked(expected_seconds)

    def _spent_locked(self) -> float:
        # the same sum, in the same order, as pricing every account again (an account only
        # changes in charge(), which refreshes its entry)
        vm_and_model = sum(self._charged_usd.values())
        return self._carried_usd + vm_and_model

    def spent(self) -> float:
        """$ spent so far by this run (finished, failed and running attempts that were charged)."""
        with self._lock:
            return self._spent_locked()

    def try_reserve(self, task_id: str, expected_seconds: float) -> bool:
        """Admit a task under the cap and hold its expected cost until :meth:`settle`.

        Returns:
            False when spend + in flight + this task's expected cost would pass the cap.
        """
        with self._lock:
            expected = self._expected_locked(expected_seconds)
            if self.cap_usd is not None:
                in_flight = sum(self._reserved.values())
                if self._spent_locked() + in_flight + expected > self.cap_usd + 1e-12:
                    return False
            self._reserved[task_id] = expected
            return True

    def settle(
        self, task_id: str, *, expected_seconds: float, actual_seconds: float, final: bool
    ) -> None:
        """Drop the task's reservation once an attempt ended (its charge is already counted);
        a final attempt also calibrates later expectations."""
        with self._lock:
            self._reserved.pop(task_id, None)
            if final and expected_seconds > 0:
                self._expected_done += expected_seconds
                self._actual_done += max(0.0, actual_seconds)
                account = self._accounts.get(task_id)
                self._model_usd_done.append(account.model_usd if account else 0.0)

    def in_flight(self) -> float:
        """$ reserved by tasks running now."""
        with self._lock:
            return sum(self._reserved.values())

    def totals(self) -> dict[str, Any]:
        """The run's totals (for ``metadata.json``)."""
        with self._lock:
            seconds = self._carried_seconds + sum(
                a.worker_seconds for a in self._accounts.values()
            )
            model = sum(a.model_usd for a in self._accounts.values())
            return {
                "price_per_hour": self.price_per_hour,
                "cap_usd": self.cap_usd,
                "worker_seconds": round(seconds, 3),
                "total_usd": round(self._spent_locked(), 6),
                "model_usd_this_session": round(model, 6),
                "unpriced_models": sorted(self.unpriced_models),
            }
