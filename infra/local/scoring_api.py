"""The scoring server (host ``:5051`` contract, WAA_PROTOCOL section 3) of a simulated worker.

It shares the desktop with the worker's WAA server: setup steps and the checker act on the very
state the agent changed through ``/execute``.
"""

from __future__ import annotations

import hashlib
from typing import Any

from infra.local import setup_steps
from infra.local.checker import PostconfigError, evaluate_task
from infra.local.desktop import Desktop
from infra.local.server import App, HttpError, Request, Response
from infra.local.taskstore import TaskStore
from infra.scoring_rules import EvaluatorConfigError

PROBE = {"status": "ok", "service": "evaluate"}
MAX_BATCH = 1000  # IDs per POST /tasks/batch


def end_state(desktop: Desktop) -> dict[str, Any]:
    """The guest's whole state as read back after a run: every file on the drive (a SHA-256 of
    its bytes, by guest path), folders, windows with their text, settings, clock, clipboard.

    Local workers only (``GET /state``): the audit compares a run's end state with the
    reference solution's to tell an edit that changed nothing from one the checker missed.
    """
    with desktop.lock:
        files: dict[str, str] = {}
        folders: list[str] = []
        drive = desktop.sandbox.drive
        for path in sorted(drive.rglob("*")):
            guest = desktop.sandbox.to_guest(path)
            if path.is_dir():
                folders.append(guest)
            elif path.is_file():
                files[guest] = hashlib.sha256(path.read_bytes()).hexdigest()
        snapshot = desktop.snapshot()
        snapshot["windows"] = [
            {"title": w.title, "app": w.app, "path": w.path, "dirty": w.dirty,
             "text": getattr(w, "text", None), "display": getattr(w, "display", None),
             "history": list(getattr(w, "history", []))}
            for w in reversed(desktop.windows)
        ]
    return {"files": files, "folders": folders, **snapshot}


def build_scoring_app(app: App, desktop: Desktop, store: TaskStore) -> App:
    """Register the scoring endpoints of one worker on ``app``."""

    def tasks(request: Request) -> Response:
        names = request.query.get("index")
        if not names:
            return Response.json(store.index)
        index = store.indexes.get(names[0])
        if index is None:
            known = ", ".join(store.indexes)
            raise HttpError(404, f"unknown index {names[0]!r}; known: {known}")
        return Response.json(index)

    def task(request: Request) -> Response:
        task_id = request.path.removeprefix("/task/")
        data = store.task(task_id)
        if data is None:
            raise HttpError(404, f"unknown task {task_id!r}; GET /tasks lists the known ones")
        return Response.json(data)

    def tasks_batch(request: Request) -> Response:
        # Every task of a run in one round trip instead of one request each (far regions).
        ids = request.json().get("ids")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise HttpError(400, "'ids' must be a list of task IDs")
        if len(ids) > MAX_BATCH:
            raise HttpError(400, f"at most {MAX_BATCH} IDs per request, not {len(ids)}")
        found: dict[str, Any] = {}
        missing: list[str] = []
        for task_id in ids:
            data = store.task(task_id)
            if data is None:
                missing.append(task_id)
            else:
                found[task_id] = data
        return Response.json({"tasks": found, "missing": missing})

    def setup(request: Request) -> Response:
        config = request.json().get("config")
        if not isinstance(config, list):
            raise HttpError(400, "'config' must be a list of setup steps")
        results = setup_steps.run_steps(desktop, config)
        failed = any(not r.ok for r in results)
        body = {"status": "error" if failed else "ok", "results": [r.to_json() for r in results]}
        return Response.json(body, 422 if failed else 200)

    def evaluate(request: Request) -> Response:
        data = request.json()
        task_json: Any = data.get("task")
        if task_json is None and isinstance(data.get("task_id"), str):
            task_json = store.task(data["task_id"])
            if task_json is None:
                raise HttpError(404, f"unknown task {data['task_id']!r}")
        if not isinstance(task_json, dict):
            raise HttpError(400, "'task' must be the task's JSON object (or give 'task_id')")
        last_action = data.get("last_action")
        if last_action is not None and not isinstance(last_action, str):
            raise HttpError(400, "'last_action' must be a string such as DONE or FAIL")
        try:
            verdict = evaluate_task(desktop, task_json, last_action)
        except (PostconfigError, EvaluatorConfigError) as exc:
            raise HttpError(422, str(exc)) from None
        return Response.json(verdict.to_json())

    app.route("GET", "/probe", lambda _request: Response.json(PROBE))
    app.route("GET", "/tasks", tasks)
    app.route("GET", "/indexes", lambda _request: Response.json({"indexes": list(store.indexes)}))
    app.route("GET", "/task/", task)
    app.route("GET", "/state", lambda _request: Response.json(end_state(desktop)))
    app.route("POST", "/tasks/batch", tasks_batch)
    app.route("POST", "/setup", setup)
    app.route("POST", "/evaluate", evaluate)
    return app
