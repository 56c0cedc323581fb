"""The worker's browser endpoints (``/browser/...`` on the WAA server), for Cua-Bench sessions.

A real WAA guest has no such endpoints (``docs/tasks.md`` says how a session reaches a WAA
worker's browser); the simulated worker offers them over its real browser
(:mod:`infra.local.browser`). Input never goes through here: a session clicks, drags and types
through ``/execute_windows`` as pyautogui source, as an agent does.
"""

from __future__ import annotations

from typing import Any

from infra.local.browser import BrowserError, BrowserScreen, find_chromium
from infra.local.server import App, HttpError, Request, Response, Route


def _int(data: dict[str, Any], name: str) -> int | None:
    value = data.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise HttpError(400, f"{name!r} must be a number of pixels")
    return int(value)


def _text(data: dict[str, Any], name: str) -> str | None:
    value = data.get(name)
    if value is not None and not isinstance(value, str):
        raise HttpError(400, f"{name!r} must be a string")
    return value


def _wid(data: dict[str, Any]) -> str:
    value = data.get("id")
    if not isinstance(value, str) or not value:
        raise HttpError(400, "missing 'id': the window id launch returned")
    return value


def build_browser_routes(app: App, browser: BrowserScreen) -> None:
    """Register ``/browser/{status,launch,evaluate,move,close_all}`` on ``app``."""

    def guarded(handler: Route) -> Route:
        def wrapped(request: Request) -> Response:
            try:
                return handler(request)
            except BrowserError as exc:
                missing = str(exc).startswith("no browser window")
                raise HttpError(404 if missing else 400, str(exc)) from None

        return wrapped

    def status(request: Request) -> Response:
        return Response.json({
            "available": find_chromium() is not None, "running": browser.running,
            "pid": browser.pid(), "windows": [w.describe() for w in browser.windows],
            "screen": list(browser.screen),
        })

    def launch(request: Request) -> Response:
        data = request.json()
        window = browser.launch(
            html=_text(data, "html"), url=_text(data, "url"), folder=_text(data, "folder"),
            title=_text(data, "title") or "Window", x=_int(data, "x"), y=_int(data, "y"),
            width=_int(data, "width"), height=_int(data, "height"),
        )
        return Response.json(window.describe())

    def evaluate(request: Request) -> Response:
        data = request.json()
        script = _text(data, "script")
        if not script:
            raise HttpError(400, "missing 'script': the JavaScript to evaluate")
        return Response.json({"value": browser.evaluate(_wid(data), script)})

    def move(request: Request) -> Response:
        data = request.json()
        x, y = _int(data, "x"), _int(data, "y")
        if x is None or y is None:
            raise HttpError(400, "give 'x' and 'y', the window's new place on the screen")
        return Response.json(browser.move(_wid(data), x, y).describe())

    def close_all(request: Request) -> Response:
        return Response.json({"closed": browser.close_all()})

    for method, path, handler in (
        ("GET", "/browser/status", status),
        ("POST", "/browser/launch", launch),
        ("POST", "/browser/evaluate", evaluate),
        ("POST", "/browser/move", move),
        ("POST", "/browser/close_all", close_all),
    ):
        app.route(method, path, guarded(handler))
