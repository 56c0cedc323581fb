"""Reading the task catalog from a pool without depending on any one worker.

Every worker serves the same tasks, so a read that fails on one worker for an infrastructure
reason (refused or reset connection, timeout, any 5xx) is tried on the next live one, for a few
rounds with a short backoff. A run no longer aborts because the worker it happened to ask first
died or answered 500 while the tasks were loading. Answers that are not infrastructure failures
(404 unknown task, a malformed index) are final: another worker would say the same.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from waa_client import retry
from waa_client.errors import ServerError, WaaError

T = TypeVar("T")

DEFAULT_ROUNDS = 3
DEFAULT_BACKOFF_S = 0.5


def is_infra_failure(exc: WaaError) -> bool:
    """Worth trying elsewhere: the path to the worker failed or the worker failed (5xx)."""
    return exc.is_infrastructure or isinstance(exc, ServerError)


class FailoverScoring:
    """The read-only part of :class:`waa_client.ScoringClient`, over several workers.

    Args:
        clients: One scoring client per worker (in the order to try them).
        rounds: Passes over the workers before giving up.
        backoff_s: Wait between passes (doubled each pass).
        sleep: Injected for tests.
    """

    def __init__(
        self,
        clients: Sequence[Any],
        *,
        rounds: int = DEFAULT_ROUNDS,
        backoff_s: float = DEFAULT_BACKOFF_S,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not clients:
            raise ValueError("FailoverScoring needs at least one client")
        self.clients = list(clients)
        self.rounds = rounds
        self.backoff_s = backoff_s
        self.sleep = sleep
        self._preferred = 0

    @property
    def base_url(self) -> str:
        """Where tasks come from (for messages): the worker that last answered."""
        return str(self.clients[self._preferred].base_url)

    def _call(self, call: Callable[[Any], T]) -> T:
        """``call`` on the preferred worker, else on the next ones: one round; rounds are
        retried under the retry policy while every worker failed for an infrastructure
        reason (the last such error is raised once the rounds are spent)."""
        def one_round() -> T:
            last: WaaError | None = None
            count = len(self.clients)
            for offset in range(count):
                index = (self._preferred + offset) % count
                try:
                    result = call(self.clients[index])
                except WaaError as exc:
                    if not is_infra_failure(exc):
                        raise
                    last = exc
                    continue
                self._preferred = index
                return result
            assert last is not None
            raise last

        return retry.call(one_round, attempts=max(1, self.rounds),
                          retryable=lambda e: isinstance(e, WaaError) and is_infra_failure(e),
                          backoff_max=math.inf, first_wait=self.backoff_s, sleep=self.sleep)

    def indexes(self) -> list[str] | None:
        """``GET /indexes`` from any worker."""
        names: list[str] | None = self._call(lambda c: c.indexes())
        return names

    def tasks(self, index: str | None = None) -> dict[str, list[str]]:
        """``GET /tasks`` from any worker."""
        return self._call(lambda c: c.tasks(index=index))

    def task(self, task_id: str) -> dict[str, Any]:
        """``GET /task/<id>`` from any worker."""
        return self._call(lambda c: c.task(task_id))

    def tasks_batch(self, task_ids: list[str]) -> dict[str, dict[str, Any]] | None:
        """``POST /tasks/batch`` from any worker (None when the workers predate it)."""
        found: dict[str, dict[str, Any]] | None = self._call(lambda c: c.tasks_batch(task_ids))
        return found
