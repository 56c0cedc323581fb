"""The guest's WAA server (``:5000``): observations, commands, files and setup endpoints.

Shapes follow WAA_PROTOCOL section 2. ``/execute`` and ``/execute_windows`` take WAA's real
action format (pyautogui source, checked and played without running it, see
:mod:`infra.local.actions`) or the command language of :mod:`infra.local.commands`. The getters
WAA's own ``PythonController`` calls (screen size, desktop and documents paths, wallpaper, file
and folder checks...) answer in the shapes that client reads.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable
from typing import Any

from infra.local import cancel, commands, setup_steps
from infra.local.actions import run_action
from infra.local.apps import AppError
from infra.local.desktop import Desktop
from infra.local.guest_info import build_info_routes
from infra.local.gui import window_rect
from infra.local.pysource import ForbiddenSource
from infra.local.render import Screen, accessibility_xml
from infra.local.sandbox import SandboxError
from infra.local.server import App, HttpError, Request, Response, Route

log = logging.getLogger("infra.local")
PROBE = {"status": "Probe successful", "message": "Service is operational"}


def guarded(handler: Route, *, missing: int = 400) -> Route:
    """Map desktop errors to HTTP errors (sandbox 403/400, refusals ``missing``, absent 404)."""

    def wrapped(request: Request) -> Response:
        try:
            return handler(request)
        except SandboxError as exc:
            raise HttpError(exc.status, exc.message) from None
        except (commands.CommandSyntaxError, setup_steps.StepError) as exc:
            raise HttpError(400, str(exc)) from None
        except ForbiddenSource as exc:
            raise HttpError(400, f"refused, nothing ran: {exc}") from None
        except AppError as exc:
            raise HttpError(missing, str(exc)) from None
        except FileNotFoundError as exc:
            raise HttpError(404, str(exc)) from None
        except cancel.ActionStopped as exc:
            # WAA's answer to a command it stopped at its limit: an error the action caused
            log.info("%s: %s", request.path, exc)
            raise HttpError(500, str(exc)) from None

    return wrapped


def _path_arg(data: dict[str, Any], name: str = "path") -> str:
    value = data.get(name)
    if not isinstance(value, str) or not value:
        raise HttpError(400, f"missing {name!r}: give a Windows path such as C:\\Users\\Docker")
    return value


def _command_arg(data: dict[str, Any]) -> str | list[str]:
    command = data.get("command")
    if isinstance(command, str) or (
        isinstance(command, list) and all(isinstance(w, str) for w in command)
    ):
        return command
    raise HttpError(400, "missing 'command': a string or a list of strings")


def build_waa_app(app: App, desktop: Desktop, screen: Screen) -> App:
    """Register the WAA endpoints of one worker on ``app``."""

    def accessibility(request: Request) -> Response:
        backend = (request.query.get("backend") or ["uia"])[-1]
        if backend not in ("uia", "win32"):
            raise HttpError(400, f"backend must be uia or win32, not {backend!r}")
        return Response.json({"AT": accessibility_xml(desktop, backend)})

    def obs_winagent(request: Request) -> Response:
        with desktop.lock:
            active = desktop.active
            titles = desktop.titles()
            clipboard = desktop.clipboard
        left, top, right, bottom = window_rect(active) if active else (0, 0, 0, 0)
        return Response.json(
            {
                "image": base64.b64encode(screen.png()).decode("ascii"),
                "window_title": active.title if active else "",
                "rect": {"left": left, "top": top, "right": right, "bottom": bottom},
                "window_names_str": "\n".join(titles),
                "computer_clipboard": clipboard,
                "human_input": "",
            }
        )

    def execute(request: Request) -> Response:
        result = run_action(desktop, _command_arg(request.json()))
        return Response.json(result.to_json())

    def execute_windows(request: Request) -> Response:
        result = run_action(desktop, _command_arg(request.json()))
        if result.returncode != 0:
            raise HttpError(500, result.error)
        return Response.json(result.to_json())

    def file(request: Request) -> Response:
        form = request.form() if request.body else {}
        path = form.get("file_path")
        if not isinstance(path, str) or not path:
            raise HttpError(400, "missing form field 'file_path'")
        return Response(200, desktop.read_file(path), "application/octet-stream")

    def list_directory(request: Request) -> Response:
        path = _path_arg(request.json())
        try:
            return Response.json({"directory_tree": desktop.tree(path)})
        except FileNotFoundError:  # WAA's answer, for a missing path and for a file alike
            raise HttpError(400, "The provided path is not a directory") from None

    def upload(request: Request) -> Response:
        form = request.form()
        path, data = form.get("file_path"), form.get("file_data")
        if not isinstance(path, str) or data is None:
            raise HttpError(400, "multipart fields 'file_path' and 'file_data' are required")
        desktop.write_file(path, data)
        return Response.text("File uploaded")

    def recycle(request: Request) -> Response:
        path = _path_arg(request.json())
        desktop.delete(path)
        return Response.text(f"{path} moved to the recycle bin")

    def step(kind: str, done: Callable[[dict[str, Any]], str]) -> Route:
        def run(request: Request) -> Response:
            params = request.json()
            setup_steps.apply_step(desktop, kind, params)
            return Response.text(done(params))

        return run

    routes: list[tuple[str, str, Route, int]] = [
        ("GET", "/probe", lambda _r: Response.json(PROBE), 400),
        ("GET", "/screenshot", lambda _r: Response(200, screen.png(), "image/png"), 400),
        ("GET", "/accessibility", accessibility, 400),
        ("GET", "/obs_winagent", obs_winagent, 400),
        ("POST", "/execute", execute, 400),
        ("POST", "/setup/execute", execute, 400),
        ("POST", "/execute_windows", execute_windows, 400),
        ("POST", "/file", file, 404),
        ("POST", "/list_directory", list_directory, 404),
        ("POST", "/setup/upload", upload, 400),
        ("POST", "/setup/recycle", recycle, 404),
    ]
    # /setup/<name>: one setup step each, (name, step kind, answer, status of a refusal)
    for name, kind, done, missing in (
        ("launch", "launch", lambda p: f"{p.get('command')} launched", 400),
        ("open_file", "open", lambda p: f"{p.get('path')} opened", 404),
        ("activate_window", "activate_window", lambda p: f"{p.get('window_name')} activated", 404),
        ("close_window", "close_window", lambda p: f"{p.get('window_name')} closed", 404),
        ("close_all", "close_all", lambda p: "All windows closed", 400),
        ("clear_task_files", "clear_task_files", lambda p: "Task files cleared", 400),
        ("create_folder", "create_folder", lambda p: f"{p.get('path')} created", 400),
        ("create_file", "create_file", lambda p: f"{p.get('path')} created", 400),
        ("download_file", "download_file", lambda p: "", 400),
    ):
        routes.append(("POST", f"/setup/{name}", step(kind, done), missing))
    routes += build_info_routes(desktop, screen)
    for method, path, handler, missing in routes:
        app.route(method, path, guarded(handler, missing=missing))
    return app
