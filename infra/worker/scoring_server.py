"""The scoring server: WAA's own checker behind HTTP (WAA_PROTOCOL section 3).

It runs inside the WAA container, beside WAA's client code, because that is where WAA's getters
and metrics (``desktop_env.evaluators``) and setup controller live; the host reaches it through
the 5050 -> 5051 bridge. Cloud-init ships it as a loose file next to ``scoring_rules.py`` (the
rule combiner shared with the simulated worker), so it uses the standard library only and runs
on the container's Python (3.9, checked in CI by ``vermin`` and a test run under 3.9).

Endpoints:

- ``GET /probe`` -> ``{"status": "ok", "service": "evaluate"}``
- ``GET /tasks[?index=NAME]`` -> a task index the worker holds, ``{domain: [task_id]}``
- ``GET /indexes`` -> ``{"indexes": [names]}``, the index files held (main one first)
- ``GET /task/<task_id>`` -> that task's JSON; 404 if unknown
- ``POST /tasks/batch`` ``{"ids": [task_id, ...]}`` (at most 1000) -> ``{"tasks": {task_id:
  json}, "missing": [task_id]}``: many tasks in one round trip
- ``POST /setup`` ``{"config": [steps], "task_id"?}`` -> ``{"status", "results": [{"type", "status",
  "error"?}]}``; 422 if a step failed (later steps are skipped, as WAA stops at the first failure)
- ``POST /evaluate`` ``{"task": <task json>, "last_action": "DONE"}`` -> ``{"score", "success",
  "reason"}``; the task's ``postconfig`` runs first; 422 where WAA's own ``evaluate`` would
  raise and drop the task (an ``evaluation`` error, never a score)

Errors answer ``{"status": "error", "message": ...}``: 400 for a malformed request, 404 for an
unknown path or task, 422 for a failed setup step or an unusable evaluator block, 500 otherwise.
Setup and evaluation share one lock: they drive the same Windows guest, one task at a time.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import inspect
import json
import logging
import os
import re
import sys
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import parse_qs, urlsplit

try:
    from infra import scoring_rules
except ImportError:  # shipped as loose files side by side on the worker host
    import scoring_rules  # type: ignore[no-redef, import-not-found, unused-ignore]

DEFAULT_VM_IP = "172.30.0.2"
"""dockur's guest address (``qemu/src/network.sh``), the same as ``lib.sh``'s ``OA_VM_GUEST_IP``
and :data:`infra.worker.units.GUEST_IP`; the container's ``VM_NET_IP``, when set, wins."""
DEFAULT_WAA_CLIENT = "/client"
DEFAULT_TASKS_DIR = "/client/evaluation_examples_windows"
MAX_BODY = 8 * 1024 * 1024
MAX_BATCH = 1000
_TASK_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,200}$")


class RequestError(Exception):
    """A request the server refuses; carries the HTTP status to answer with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class GuestEnv:
    """What WAA's getters and setup steps read off their ``env`` argument (a ``DesktopEnv``).

    WAA's getters take the environment as first argument and read ``controller`` (the guest's
    HTTP server), ``vm_ip``, ``cache_dir`` (one folder per task, as ``DesktopEnv`` makes it) and
    ``vm_platform`` (a property asking the controller, as in ``DesktopEnv``); a test scans WAA's
    getters for every attribute they read and fails if one is missing here. Nothing else of the
    full environment (the agent loop, recording) is needed to check a task.
    """

    def __init__(self, vm_ip: str, cache_dir: str, server_port: int = 5000) -> None:
        self.vm_ip = vm_ip
        self.server_port = server_port
        self.http_server = f"http://{vm_ip}:{server_port}"
        self.chromium_port = 9222
        self.vlc_port = 8080
        self.cache_dir_base = cache_dir
        self.cache_dir = cache_dir
        self.task_id: str | None = None
        self.controller: Any = None
        self.setup_controller: Any = None
        self.action_history: list[str] = []

    @property
    def vm_platform(self) -> Any:
        """The guest's platform, asked of the controller as ``DesktopEnv.vm_platform`` does."""
        if self.controller is None:
            raise RuntimeError("WAA's PythonController is missing: no vm_platform")
        return self.controller.get_vm_platform()

    @property
    def vm_screen_size(self) -> Any:
        """The guest's screen size, as ``DesktopEnv.vm_screen_size``."""
        if self.controller is None:
            raise RuntimeError("WAA's PythonController is missing: no vm_screen_size")
        return self.controller.get_vm_screen_size()

    def use_task(self, task_id: str | None) -> None:
        """Point ``cache_dir`` at the task's own folder (``<base>/<task id>``), as WAA does."""
        safe = task_id if task_id and _TASK_ID_RE.match(task_id) else "_no_task_id"
        self.task_id = task_id
        self.cache_dir = os.path.join(self.cache_dir_base, safe)
        os.makedirs(self.cache_dir, exist_ok=True)
        if self.setup_controller is not None and hasattr(self.setup_controller, "reset_cache_dir"):
            self.setup_controller.reset_cache_dir(self.cache_dir)


def _construct(cls: Any, candidates: Mapping[str, Any]) -> Any:
    """Build ``cls`` passing only the keyword arguments its constructor accepts.

    WAA's controllers changed signatures across versions (``vm_ip``, ``server_port``,
    ``cache_dir``...); matching by name keeps this server working with each of them.
    """
    params = inspect.signature(cls).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return cls(**candidates)
    return cls(**{k: v for k, v in candidates.items() if k in params})


def _optional_import(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


class Checker:
    """WAA's evaluator modules and controllers, loaded once, used under one lock."""

    def __init__(self, vm_ip: str, cache_dir: str) -> None:
        self.getters = importlib.import_module("desktop_env.evaluators.getters")
        self.metrics = importlib.import_module("desktop_env.evaluators.metrics")
        self.env = GuestEnv(vm_ip, cache_dir)
        Path(cache_dir).mkdir(parents=True, exist_ok=True)
        args = {
            "vm_ip": vm_ip,
            "server_port": self.env.server_port,
            "http_server": self.env.http_server,
            "cache_dir": cache_dir,
            "chromium_port": self.env.chromium_port,
            "vlc_port": self.env.vlc_port,
        }
        for module, cls, attribute in (("python", "PythonController", "controller"),
                                       ("setup", "SetupController", "setup_controller")):
            found = getattr(_optional_import(f"desktop_env.controllers.{module}"), cls, None)
            if found is not None:
                setattr(self.env, attribute, _construct(found, args))
        self.lock = threading.Lock()

    def getter_exists(self, kind: str) -> bool:
        """True if WAA has a getter ``get_<kind>`` (WAA checks them all before scoring)."""
        return callable(getattr(self.getters, f"get_{kind}", None))

    def get_value(self, config: Mapping[str, Any]) -> Any:
        """Run WAA's getter ``get_<type>(env, config)``."""
        kind = config.get("type")
        getter = getattr(self.getters, f"get_{kind}", None)
        if getter is None:
            raise scoring_rules.Unscorable(f"WAA has no getter for type {kind!r}")
        return getter(self.env, dict(config))

    def metric(self, name: str) -> Callable[..., Any]:
        """WAA's metric function called ``name``; ``KeyError`` if there is none."""
        fn = getattr(self.metrics, name, None)
        if not callable(fn):
            raise KeyError(name)
        return fn  # type: ignore[no-any-return]

    def run_steps(
        self, steps: list[Any], task_id: str | None = None
    ) -> tuple[bool, list[dict[str, Any]]]:
        """Run setup steps in order, stopping at the first failure (later ones are skipped).

        ``task_id`` (when given) points the cache folder at the task's own, as WAA's ``reset``
        does before its setup.
        """
        if task_id is not None:
            self.env.use_task(task_id)
        results: list[dict[str, Any]] = []
        failed = False
        for step in steps:
            kind = step.get("type") if isinstance(step, dict) else None
            if failed:
                results.append({"type": kind, "status": "skipped"})
                continue
            try:
                self._run_step(step)
            except Exception as exc:
                failed = True
                results.append({"type": kind, "status": "error", "error": f"{exc}"})
            else:
                results.append({"type": kind, "status": "ok"})
        return not failed, results

    def _run_step(self, step: Any) -> None:
        if not isinstance(step, dict) or not isinstance(step.get("type"), str):
            raise ValueError("a setup step must be an object with a string 'type'")
        if self.env.setup_controller is None:
            raise RuntimeError("WAA's setup controller (desktop_env.controllers.setup) is missing")
        handler = getattr(self.env.setup_controller, f"_{step['type']}_setup", None)
        if handler is None:
            raise ValueError(f"unknown setup step type {step['type']!r}")
        parameters = step.get("parameters") or {}
        if not isinstance(parameters, dict):
            raise ValueError("a setup step's 'parameters' must be an object")
        # WAA's SetupController logs a failed request (the guest answering non-200, or not at
        # all) and carries on; the watch turns those logged errors into a failed step.
        with _ErrorWatch() as watch:
            handler(**parameters)
        if watch.errors:
            raise RuntimeError("; ".join(watch.errors))

    def evaluate(self, task: Mapping[str, Any], last_action: str | None) -> dict[str, Any]:
        """Run the task's postconfig, then WAA's checker; ``{"score", "success", "reason"}``.

        Where WAA's own ``evaluate`` would raise (and drop the task) this answers 422, which
        the runner records as an ``evaluation`` error, never as a score.
        """
        evaluator = task.get("evaluator")
        if not isinstance(evaluator, dict):
            raise RequestError(422, "the task has no 'evaluator' object")
        task_id = task.get("id")
        self.env.use_task(task_id if isinstance(task_id, str) else None)
        postconfig = evaluator.get("postconfig") or []
        if not isinstance(postconfig, list):
            raise RequestError(422, "evaluator.postconfig must be a list of setup steps")
        ok, results = self.run_steps(postconfig)
        if not ok:
            failed = next(r for r in results if r["status"] == "error")
            raise RequestError(
                500, f"postconfig step {failed['type']!r} failed: {failed.get('error')}"
            )
        try:
            verdict = scoring_rules.evaluate(
                evaluator, last_action, get_value=self.get_value, metric=self.metric,
                getter_exists=self.getter_exists,
            )
        except scoring_rules.Unscorable as exc:
            raise RequestError(422, f"WAA's checker cannot score this task: {exc}") from exc
        except scoring_rules.EvaluatorConfigError as exc:
            raise RequestError(422, f"unusable evaluator: {exc}") from exc
        return verdict.to_json()


class _ErrorWatch(logging.Handler):
    """Collects the errors WAA's ``desktopenv.*`` loggers report while it is active."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.errors: list[str] = []
        self._logger = logging.getLogger("desktopenv")

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.errors.append(record.getMessage())
        except Exception:  # a malformed log call is still a failure
            self.errors.append(str(record.msg))

    def __enter__(self) -> _ErrorWatch:
        self._logger.addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self._logger.removeHandler(self)


_INDEX_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")


class TaskStore:
    """The task index and task files the worker holds (WAA's ``evaluation_examples_windows``)."""

    def __init__(self, tasks_dir: str, index_name: str) -> None:
        self.root = Path(tasks_dir)
        self.index_name = index_name

    def index_names(self) -> list[str]:
        """Names of the index files held (``test_all``, ``test_small``...), the main one first."""
        main = Path(self.index_name).stem
        others = sorted(p.stem for p in self.root.glob("*.json") if p.stem != main)
        return [main, *others]

    def index(self, name: str | None = None) -> dict[str, list[str]]:
        if name is not None and (not _INDEX_NAME_RE.match(name) or name not in self.index_names()):
            raise RequestError(404, f"unknown index {name!r}; known: {self.index_names()}")
        path = self.root / (f"{name}.json" if name is not None else self.index_name)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise RequestError(404, f"no task index at {path}") from None
        except json.JSONDecodeError as exc:
            raise RequestError(500, f"task index {path} is not valid JSON: {exc.msg}") from exc
        if not isinstance(data, dict):
            raise RequestError(500, f"task index {path} is not an object")
        return {str(k): [str(t) for t in v] for k, v in data.items() if isinstance(v, list)}

    def task(self, task_id: str) -> dict[str, Any]:
        if not _TASK_ID_RE.match(task_id):
            raise RequestError(404, f"unknown task {task_id!r}")
        for candidate in sorted((self.root / "examples").glob(f"*/{task_id}.json")):
            data = json.loads(candidate.read_text(encoding="utf-8"))
            if isinstance(data, dict):
                return data
        raise RequestError(404, f"unknown task {task_id!r}")


def make_handler(checker: Checker, store: TaskStore) -> type[BaseHTTPRequestHandler]:
    """The request handler class bound to one checker and one task store."""

    class Handler(BaseHTTPRequestHandler):
        server_version = "oa-vm-scoring/1"
        protocol_version = "HTTP/1.1"
        # Headers and body are separate writes: without this each answer waits ~40 ms for
        # the client's delayed ACK.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            sys.stderr.write(f"scoring: {self.address_string()} {format % args}\n")

        def _send(self, status: int, payload: Any) -> None:
            body = json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _fail(self, status: int, message: str) -> None:
            self._send(status, {"status": "error", "message": message})

        def _body(self) -> dict[str, Any]:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                raise RequestError(400, f"request body over {MAX_BODY} bytes")
            raw = self.rfile.read(length) if length else b""
            try:
                data = json.loads(raw or b"null")
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise RequestError(400, f"the body is not valid JSON: {exc}") from exc
            if not isinstance(data, dict):
                raise RequestError(400, "the body must be a JSON object")
            return data

        def _query(self, key: str) -> str | None:
            values = parse_qs(urlsplit(self.path).query).get(key)
            return values[0] if values else None

        def _dispatch(self, routes: Mapping[str, Callable[[], tuple[int, Any]]]) -> None:
            path = self.path.split("?", 1)[0]
            try:
                route = routes.get(path)
                if route is None and self.command == "GET" and path.startswith("/task/"):
                    task_id = path[len("/task/"):]
                    status, payload = 200, store.task(task_id)
                elif route is None:
                    raise RequestError(404, f"no endpoint {self.command} {path}")
                else:
                    status, payload = route()
            except RequestError as exc:
                self._fail(exc.status, str(exc))
            except Exception as exc:
                self._fail(500, f"{type(exc).__name__}: {exc}")
            else:
                self._send(status, payload)

        def do_GET(self) -> None:
            self._dispatch({"/probe": lambda: (200, {"status": "ok", "service": "evaluate"}),
                            "/tasks": lambda: (200, store.index(self._query("index"))),
                            "/indexes": lambda: (200, {"indexes": store.index_names()})})

        def do_POST(self) -> None:
            self._dispatch({"/setup": self._setup, "/evaluate": self._evaluate,
                            "/tasks/batch": self._tasks_batch})

        def _tasks_batch(self) -> tuple[int, Any]:
            ids = self._body().get("ids")
            if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
                raise RequestError(400, "'ids' must be a list of task IDs")
            if len(ids) > MAX_BATCH:
                raise RequestError(400, f"at most {MAX_BATCH} IDs per request, not {len(ids)}")
            found: dict[str, Any] = {}  # annotations are not evaluated: fine on 3.9
            missing: list[str] = []
            for task_id in ids:
                try:
                    found[task_id] = store.task(task_id)
                except RequestError:
                    missing.append(task_id)
            return 200, {"tasks": found, "missing": missing}

        def _setup(self) -> tuple[int, Any]:
            body = self._body()
            steps = body.get("config")
            if not isinstance(steps, list):
                raise RequestError(400, "'config' must be a list of setup steps")
            task_id = body.get("task_id")
            if task_id is not None and not isinstance(task_id, str):
                raise RequestError(400, "'task_id' must be a string")
            with checker.lock:
                ok, results = checker.run_steps(steps, task_id=task_id)
            return (200 if ok else 422), {"status": "ok" if ok else "error", "results": results}

        def _evaluate(self) -> tuple[int, Any]:
            body = self._body()
            task = body.get("task")
            if not isinstance(task, dict):
                raise RequestError(400, "'task' must be the task's JSON object")
            last_action = body.get("last_action")
            if last_action is not None and not isinstance(last_action, str):
                raise RequestError(400, "'last_action' must be a string")
            with checker.lock:
                return 200, checker.evaluate(task, last_action)

    return Handler


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options (defaults fit the WAA container's layout)."""
    parser = argparse.ArgumentParser(description="WAA scoring server (oa-vm)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5050, help="0 picks a free port")
    parser.add_argument("--waa-client", default=DEFAULT_WAA_CLIENT,
                        help="folder holding WAA's desktop_env package")
    parser.add_argument("--tasks-dir", default=DEFAULT_TASKS_DIR)
    parser.add_argument("--index", default="test_all.json")
    parser.add_argument("--vm-ip", default=os.environ.get("VM_NET_IP") or DEFAULT_VM_IP)
    parser.add_argument("--cache-dir", default="/tmp/oa-vm-scoring-cache")  # noqa: S108
    parser.add_argument("--pidfile", default=None)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Serve until interrupted; prints ``listening on http://HOST:PORT`` once bound."""
    args = parse_args(argv)
    if args.waa_client and args.waa_client not in sys.path:
        sys.path.insert(0, args.waa_client)
    try:
        checker = Checker(args.vm_ip, args.cache_dir)
    except ImportError as exc:
        print(
            f"scoring: cannot import WAA's evaluators ({exc}); pass --waa-client <folder "
            "holding desktop_env>",
            file=sys.stderr,
        )
        return 2
    store = TaskStore(args.tasks_dir, args.index)
    server = ThreadingHTTPServer((args.host, args.port), make_handler(checker, store))
    server.daemon_threads = True
    if args.pidfile:
        Path(args.pidfile).write_text(f"{os.getpid()}\n", encoding="utf-8")
    host, port = server.server_address[:2]
    print(f"listening on http://{host!s}:{port}", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        if args.pidfile:
            with contextlib.suppress(FileNotFoundError):
                Path(args.pidfile).unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
