"""What a run spends: worker time priced per worker-hour, model tokens priced per model; the cap.

A task costs the seconds it held a worker (every attempt, failed ones included: the worker was
billing) times the pool's price per worker-hour, plus the tokens its agent reported, priced by
:func:`evals.results.cost.token_cost`. A run over several pools (``run --pool a --pool b``) prices
each attempt at the hourly price of the pool its worker belongs to (``worker_pools`` and
``pool_prices``), and each task's cost also says how much of its worker time each pool billed.

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
from dataclasses import dataclass, field
from typing import Any

from evals.results.records import CostRecord

TokenPricer = Callable[[str, int, int], float]


def default_token_pricer() -> TokenPricer | None:
    """:func:`evals.results.cost.token_cost` when the cost module is installed, else ``None``."""
    try:
        from evals.results.cost import token_cost
    except ImportError:
        return None
    return token_cost


@dataclass
class _TaskAccount:
    worker_seconds: float = 0.0
    tokens_in: int = 0
    tokens_out: int = 0
    model_usd: float = 0.0
    # Worker seconds by the pool that billed them (multi-pool runs only; None: the one price).
    pool_seconds: dict[str | None, float] = field(default_factory=dict)


class Ledger:
    """Per-task and per-run spend, and the budget check. Thread-safe.

    Args:
        price_per_hour: $ per worker-hour (``None``: worker time is free, e.g. an unpriced pool).
            With several pools, the price that estimates (the cap's reservations) use: give the
            highest, so the cap is checked against the dearest worker a task could land on.
        cap_usd: The run's cap (``None``: no cap).
        token_pricer: ``(model, tokens_in, tokens_out) -> $``; tokens with no model, or a model
            the pricer does not know, count as $0 and the model is listed in ``unpriced_models``.
        worker_pools: Worker name -> its pool's name (multi-pool runs); a worker not listed is
            priced at ``price_per_hour``.
        pool_prices: Pool name -> $ per worker-hour (``None``: unpriced) for ``worker_pools``.
    """

    def __init__(
        self,
        price_per_hour: float | None,
        cap_usd: float | None = None,
        token_pricer: TokenPricer | None = None,
        *,
        worker_pools: Mapping[str, str] | None = None,
        pool_prices: Mapping[str, float | None] | None = None,
    ) -> None:
        self.price_per_hour = price_per_hour
        self.worker_pools = dict(worker_pools or {})
        self.pool_prices = dict(pool_prices or {})
        self.cap_usd = cap_usd
        self._pricer = token_pricer
        self._lock = threading.Lock()
        self._accounts: dict[str, _TaskAccount] = {}
        self._reserved: dict[str, float] = {}
        self._carried_usd = 0.0  # spend of tasks finished by an earlier controller (resume)
        self._carried_seconds = 0.0
        self._carried_pools: dict[str, list[float]] = {}  # pool -> [seconds, $] carried
        self._expected_done = 0.0
        self._actual_done = 0.0
        self._model_usd_done: list[float] = []
        self.unpriced_models: set[str] = set()
        # Each charged task's total as of its last charge: the spend is asked for at every run
        # event, and pricing every task again each time made it quadratic in the run's size.
        self._charged_usd: dict[str, float] = {}

    # --- pricing ------------------------------------------------------------------------------

    def vm_usd(self, seconds: float, pool: str | None = None) -> float:
        """The price of ``seconds`` of one worker (of ``pool``; default: ``price_per_hour``)."""
        price = self.price_per_hour if pool is None else self.pool_prices.get(pool)
        return 0.0 if price is None else seconds * price / 3600.0

    def pool_of(self, worker: str | None) -> str | None:
        """The pool whose price applies to ``worker`` (None: ``price_per_hour``)."""
        return None if worker is None else self.worker_pools.get(worker)

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
        worker: str | None = None,
    ) -> CostRecord:
        """Add one attempt's worker time and token usage to the task; returns its total so far.

        ``worker`` (the attempt's worker) selects its pool's price in a multi-pool run.
        """
        pool = self.pool_of(worker)
        with self._lock:
            account = self._accounts.setdefault(task_id, _TaskAccount())
            account.worker_seconds += max(0.0, worker_seconds)
            account.pool_seconds[pool] = account.pool_seconds.get(pool, 0.0) + max(
                0.0, worker_seconds
            )
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
        if not self.worker_pools:
            # one price (the single-pool path, computed exactly as it always was)
            vm = self.vm_usd(account.worker_seconds)
            by_pool: dict[str, dict[str, float]] = {}
        else:
            by_pool = {
                pool or "unassigned": {"worker_seconds": round(seconds, 3),
                            "vm_usd": round(self.vm_usd(seconds, pool), 6)}
                for pool, seconds in sorted(account.pool_seconds.items(), key=lambda i: str(i[0]))
            }
            vm = sum(self.vm_usd(seconds, pool) for pool, seconds in account.pool_seconds.items())
        return CostRecord(
            worker_seconds=round(account.worker_seconds, 3),
            vm_usd=round(vm, 6),
            tokens_in=account.tokens_in,
            tokens_out=account.tokens_out,
            model_usd=round(account.model_usd, 6),
            total_usd=round(vm + account.model_usd, 6),
            by_pool=by_pool,
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
                by_pool = cost.get("by_pool")
                for pool, part in (by_pool.items() if isinstance(by_pool, dict) else ()):
                    if isinstance(part, dict):
                        entry = self._carried_pools.setdefault(str(pool), [0.0, 0.0])
                        entry[0] += float(part.get("worker_seconds", 0.0) or 0.0)
                        entry[1] += float(part.get("vm_usd", 0.0) or 0.0)

    def carry_task(self, task_id: str, cost: Mapping[str, Any]) -> None:
        """Start a task's account from what its earlier attempts cost (a task reopened by
        ``--rerun-errors``), so its next record, and the summary summing the records, count
        every attempt, as the run's totals do."""
        seconds = max(0.0, float(cost.get("worker_seconds", 0.0) or 0.0))
        with self._lock:
            account = self._accounts.setdefault(task_id, _TaskAccount())
            account.worker_seconds += seconds
            account.tokens_in += int(cost.get("tokens_in", 0) or 0)
            account.tokens_out += int(cost.get("tokens_out", 0) or 0)
            account.model_usd += float(cost.get("model_usd", 0.0) or 0.0)
            by_pool = cost.get("by_pool")
            if self.worker_pools and isinstance(by_pool, dict) and by_pool:
                for pool, part in by_pool.items():
                    if isinstance(part, dict):
                        account.pool_seconds[str(pool)] = account.pool_seconds.get(
                            str(pool), 0.0) + float(part.get("worker_seconds", 0.0) or 0.0)
            else:
                account.pool_seconds[None] = account.pool_seconds.get(None, 0.0) + seconds
            self._charged_usd[task_id] = self._cost(account).total_usd

    # --- the cap ------------------------------------------------------------------------------

    def _expected_locked(self, expected_seconds: float) -> float:
        ratio = self._actual_done / self._expected_done if self._expected_done > 0 else 1.0
        model = (
            sum(self._model_usd_done) / len(self._model_usd_done) if self._model_usd_done else 0.0
        )
        return self.vm_usd(expected_seconds * ratio) + model

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
            totals: dict[str, Any] = {
                "price_per_hour": self.price_per_hour,
                "cap_usd": self.cap_usd,
                "worker_seconds": round(seconds, 3),
                "total_usd": round(self._spent_locked(), 6),
                "model_usd_this_session": round(model, 6),
                "unpriced_models": sorted(self.unpriced_models),
            }
            if self.worker_pools:
                totals["by_pool"] = self._pool_totals_locked()
            return totals

    def _pool_totals_locked(self) -> dict[str, dict[str, Any]]:
        """Per pool: its price, the worker time it billed and its $ (earlier sessions included)."""
        parts = {pool: list(carried) for pool, carried in self._carried_pools.items()}
        for name in self.pool_prices:
            parts.setdefault(name, [0.0, 0.0])
        for account in self._accounts.values():
            for pool, secs in account.pool_seconds.items():
                entry = parts.setdefault(pool or "unassigned", [0.0, 0.0])
                entry[0] += secs
                entry[1] += self.vm_usd(secs, pool)
        return {
            pool: {"price_per_hour": self.pool_prices.get(pool),
                   "worker_seconds": round(secs, 3), "vm_usd": round(usd, 6)}
            for pool, (secs, usd) in sorted(parts.items())
        }
