"""Client of the scoring server beside the WAA container (port 5051 on the host)."""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import quote

import requests

from waa_client.errors import MalformedResponseError, SetupFailedError
from waa_client.http import HttpClient, json_body, json_object, malformed, server_message

DEFAULT_SETUP_TIMEOUT = 600.0
DEFAULT_EVALUATE_TIMEOUT = 300.0


class ScoringClient(HttpClient):
    """Speaks the scoring server's contract (``WAA_PROTOCOL.md`` section 3).

    ``probe``, ``tasks`` and ``task`` are retried on infrastructure failures; ``setup`` and
    ``evaluate`` act on the guest and are sent exactly once.

    Takes :class:`~waa_client.http.HttpClient`'s arguments (``base_url``: usually a tunnel's
    local URL).
    """

    def probe(self, deadline: float | None = None) -> dict[str, Any]:
        """``GET /probe``: ``{"status": "ok", "service": "evaluate"}`` (by ``deadline``,
        retries included, when given: a ``time.monotonic()`` value)."""
        return json_object(self._request("GET", "/probe", idempotent=True, deadline=deadline))

    def indexes(self) -> list[str] | None:
        """``GET /indexes``: names of the index files the worker serves (``local_all``,
        ``local_small``...), or None when the server predates the endpoint (404).

        Raises:
            MalformedResponseError: The answer is not ``{"indexes": [names]}``.
        """
        response = self._request("GET", "/indexes", idempotent=True, accept=(404,))
        if response.status_code == 404:
            return None
        names = json_object(response).get("indexes")
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise malformed(response, "'indexes' is not a list of names")
        return list(names)

    def tasks(self, index: str | None = None) -> dict[str, list[str]]:
        """``GET /tasks[?index=NAME]``: a task index the worker holds, ``{domain: [task_id]}``
        (its main index when ``index`` is None).

        Raises:
            MalformedResponseError: The index is not an object of lists of strings.
        """
        params = {"index": index} if index is not None else None
        response = self._request("GET", "/tasks", idempotent=True, params=params)
        body = json_object(response)
        result: dict[str, list[str]] = {}
        for domain, ids in body.items():
            if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
                raise malformed(response, f"domain {domain!r} is not a list of task IDs")
            result[domain] = list(ids)
        return result

    def task(self, task_id: str) -> dict[str, Any]:
        """``GET /task/<task_id>``: that task's JSON.

        Raises:
            NotFoundError: The worker does not hold that task.
        """
        path = "/task/" + quote(task_id, safe="")
        return json_object(self._request("GET", path, idempotent=True))

    def state(self) -> dict[str, Any]:
        """``GET /state``: the guest's end state (simulated workers only; used by the audit).

        Raises:
            NotFoundError: The worker has no state endpoint (a cloud worker).
        """
        return json_object(self._request("GET", "/state", idempotent=True))

    def tasks_batch(self, task_ids: list[str]) -> dict[str, dict[str, Any]] | None:
        """``POST /tasks/batch``: many tasks' JSON in one round trip (retried like ``task``).

        Returns ``{task_id: json}`` for the IDs the worker holds (unknown ones are left out), or
        None when the server predates the endpoint (404), so callers fall back to :meth:`task`.

        Raises:
            MalformedResponseError: The answer is not ``{"tasks": {id: object}, ...}``.
        """
        response = self._request(
            "POST", "/tasks/batch", idempotent=True, accept=(404,), json={"ids": task_ids}
        )
        if response.status_code == 404:
            return None
        tasks = json_object(response).get("tasks")
        if not isinstance(tasks, dict) or not all(isinstance(t, dict) for t in tasks.values()):
            raise malformed(response, "'tasks' is not an object of task objects")
        return {str(k): v for k, v in tasks.items()}

    def setup(
        self,
        config: list[dict[str, Any]],
        timeout: float | None = DEFAULT_SETUP_TIMEOUT,
        task_id: str | None = None,
    ) -> dict[str, Any]:
        """``POST /setup``: run a task's setup steps in the guest; never retried.

        Args:
            config: The task's ``config`` steps, ``[{"type", "parameters"}]``.
            timeout: Seconds to wait (``None``: the client's read timeout); setup downloads
                files, so the default is generous.
            task_id: The task's ID, so the checker gives the task its own cache folder.

        Returns:
            ``{"status", "results": [{"type", "status", "error"?}]}``.

        Raises:
            SetupFailedError: A step failed (HTTP 422); ``results`` says which.
        """
        response = self._request(
            "POST", "/setup", idempotent=False, timeout=timeout, accept=(422,),
            json={"config": config} if task_id is None else {"config": config,
                                                              "task_id": task_id},
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
        return _validated_score(json_object(response), response)


def _validated_score(body: dict[str, Any], response: requests.Response) -> dict[str, Any]:
    """``{"score": float, "success": bool, "reason": str}`` or MalformedResponseError."""
    score, success, reason = body.get("score"), body.get("success"), body.get("reason", "")
    # bool is an int subclass: a bare true/false is not a score.
    if isinstance(score, int | float) and not isinstance(score, bool) and math.isfinite(score):
        if not isinstance(success, bool):
            problem = f"'success' is {success!r}, not a boolean"
        elif not isinstance(reason, str):
            problem = f"'reason' is {reason!r}, not text"
        else:
            return {"score": float(score), "success": success, "reason": reason}
    else:
        problem = f"'score' is {score!r}, not a finite number"
    raise malformed(response, f"malformed score: {problem}")


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
