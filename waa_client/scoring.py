"""Client of the scoring server beside the WAA container (port 5051 on the host)."""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import quote

import requests

from waa_client.errors import MalformedResponseError, SetupFailedError
from waa_client.http import HttpClient, json_body, json_object, server_message

DEFAULT_SETUP_TIMEOUT = 600.0
DEFAULT_EVALUATE_TIMEOUT = 300.0


class ScoringClient(HttpClient):
    """Speaks the scoring server's contract (``WAA_PROTOCOL.md`` section 3).

    ``probe``, ``tasks`` and ``task`` are retried on infrastructure failures; ``setup`` and
    ``evaluate`` act on the guest and are sent exactly once.

    Args:
        base_url: ``http://host:port`` of the scoring server (usually a tunnel's local URL).
        connect_timeout: Seconds to connect.
        read_timeout: Seconds to wait for an answer, unless a call says otherwise.
        retries: Extra attempts for idempotent calls.
        backoff_max: Cap of the wait between attempts, in seconds.
    """

    def probe(self) -> dict[str, Any]:
        """``GET /probe``: ``{"status": "ok", "service": "evaluate"}``."""
        return json_object(self._request("GET", "/probe", idempotent=True))

    def tasks(self) -> dict[str, list[str]]:
        """``GET /tasks``: the task index the worker holds, ``{domain: [task_id]}``.

        Raises:
            MalformedResponseError: The index is not an object of lists of strings.
        """
        response = self._request("GET", "/tasks", idempotent=True)
        body = json_object(response)
        index: dict[str, list[str]] = {}
        for domain, ids in body.items():
            if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
                raise MalformedResponseError(
                    f"GET {response.url}: domain {domain!r} is not a list of task IDs",
                    url=response.url,
                    status=response.status_code,
                )
            index[domain] = list(ids)
        return index

    def task(self, task_id: str) -> dict[str, Any]:
        """``GET /task/<task_id>``: that task's JSON.

        Raises:
            NotFoundError: The worker does not hold that task.
        """
        path = "/task/" + quote(task_id, safe="")
        return json_object(self._request("GET", path, idempotent=True))

    def setup(
        self, config: list[dict[str, Any]], timeout: float | None = DEFAULT_SETUP_TIMEOUT
    ) -> dict[str, Any]:
        """``POST /setup``: run a task's setup steps in the guest; never retried.

        Args:
            config: The task's ``config`` steps, ``[{"type", "parameters"}]``.
            timeout: Seconds to wait; setup downloads files, so the default is generous.

        Returns:
            ``{"status", "results": [{"type", "status", "error"?}]}``.

        Raises:
            SetupFailedError: A step failed (HTTP 422); ``results`` says which.
        """
        response = self._request(
            "POST", "/setup", idempotent=False, timeout=timeout, accept=(422,),
            json={"config": config},
        )
        if response.status_code == 422:
            raise _setup_failed(response)
        return json_object(response)

    def evaluate(
        self,
        task: dict[str, Any],
        last_action: str,
        timeout: float | None = DEFAULT_EVALUATE_TIMEOUT,
    ) -> dict[str, Any]:
        """``POST /evaluate``: score a task with WAA's checker; never retried.

        Args:
            task: The task JSON (as from :meth:`task`).
            last_action: The agent's last action (``"DONE"``, ``"FAIL"``, ...).
            timeout: Seconds to wait for the checker.

        Returns:
            ``{"score": float, "success": bool, "reason": str}``, validated.

        Raises:
            MalformedResponseError: The answer lacks one of those fields or has a wrong type.
        """
        response = self._request(
            "POST", "/evaluate", idempotent=False, timeout=timeout,
            json={"task": task, "last_action": last_action},
        )
        body = json_object(response)
        score = body.get("score")
        success = body.get("success")
        reason = body.get("reason", "")
        problem = None
        if isinstance(score, bool) or not isinstance(score, int | float):
            problem = f"'score' is {score!r}, not a number"
        elif not math.isfinite(score):
            problem = f"'score' is {score!r}"
        elif not isinstance(success, bool):
            problem = f"'success' is {success!r}, not a boolean"
        elif not isinstance(reason, str):
            problem = f"'reason' is {reason!r}, not text"
        if problem is not None:
            raise MalformedResponseError(
                f"POST {response.url}: malformed score: {problem}",
                url=response.url,
                status=response.status_code,
            )
        assert isinstance(score, int | float)  # narrowed above; restated for the type checker
        return {"score": float(score), "success": success, "reason": reason}


def _setup_failed(response: requests.Response) -> SetupFailedError:
    """A 422 from ``/setup`` as SetupFailedError, carrying the server's per-step results."""
    try:
        body = json_body(response)
    except MalformedResponseError:
        body = None
    results: list[dict[str, Any]] = []
    if isinstance(body, dict) and isinstance(body.get("results"), list):
        results = [r for r in body["results"] if isinstance(r, dict)]
    failed = [r for r in results if r.get("status") not in ("ok", "success")]
    detail = "; ".join(
        f"{r.get('type', '?')}: {r.get('error') or r.get('status')}" for r in failed
    ) or server_message(response)
    return SetupFailedError(
        f"POST {response.url}: task setup failed: {detail} (fix the task's config or the "
        "worker, then run the task again)",
        url=response.url,
        status=422,
        results=results,
    )
