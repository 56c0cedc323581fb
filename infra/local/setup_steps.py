"""WAA setup steps (``config`` and ``postconfig``) run against the simulated desktop.

Steps run in order and stop at the first failure, because later steps usually rely on earlier
ones (a folder, then a file in it). ``download`` is refused: the simulated worker has no internet,
so local tasks ship their files with ``create_file`` steps instead.
"""

from __future__ import annotations

import base64
import binascii
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from infra.local import commands
from infra.local.apps import APPS, AppError
from infra.local.desktop import Desktop, app_name
from infra.local.sandbox import SandboxError


class StepError(ValueError):
    """A setup step that could not be done; the message says which and why."""


@dataclass(frozen=True)
class StepResult:
    """The outcome of one step, as ``/setup`` reports it."""

    type: str
    ok: bool
    error: str = ""

    def to_json(self) -> dict[str, Any]:
        """``{"type", "status", "error"?}``."""
        data: dict[str, Any] = {"type": self.type, "status": "ok" if self.ok else "error"}
        if not self.ok:
            data["error"] = self.error
        return data


def _param(params: Mapping[str, Any], name: str, kind: type = str) -> Any:
    value = params.get(name)
    if not isinstance(value, kind):
        raise StepError(f"parameter {name!r} is missing or not a {kind.__name__}")
    return value


def launch_words(command: str | Sequence[str]) -> tuple[str, str | None]:
    """The app and optional path a ``launch`` command names (``["explorer", "C:\\..."]``).

    Raises:
        StepError: the command names no app the simulated desktop has.
    """
    try:
        words = commands.split_command(command)
    except commands.CommandSyntaxError as exc:
        raise StepError(str(exc)) from None
    if words[0].lower() in ("start", "start-process") and len(words) > 1:
        words = words[1:]
    app = app_name(words[0])
    if app is None:
        raise StepError(f"cannot launch {words[0]!r} here; apps: {', '.join(APPS)}")
    path = words[1] if len(words) > 1 else None
    if path is None and ":" in words[0] and app in ("settings", "clock"):
        path = words[0].split(":", 1)[1].strip("/") or None
    return app, path


def _execute(desktop: Desktop, params: Mapping[str, Any]) -> None:
    command = params.get("command")
    if not isinstance(command, str | list):
        raise StepError("parameter 'command' is missing or not a string or list")
    try:
        result = commands.run(desktop, command)
    except commands.CommandSyntaxError as exc:
        raise StepError(str(exc)) from None
    if result.returncode != 0:
        raise StepError(result.error)


def _create_file(desktop: Desktop, params: Mapping[str, Any]) -> None:
    path = _param(params, "path")
    if "content_base64" in params:
        try:
            data: str | bytes = base64.b64decode(_param(params, "content_base64"), validate=True)
        except (binascii.Error, ValueError):
            raise StepError("content_base64 is not valid base64") from None
    else:
        data = params.get("content", "")
        if not isinstance(data, str):
            raise StepError("parameter 'content' must be a string")
    folder = path.replace("/", "\\").rsplit("\\", 1)[0]
    desktop.make_folder(folder)
    desktop.write_file(path, data)


def _sleep(desktop: Desktop, params: Mapping[str, Any]) -> None:
    seconds = params.get("seconds", 0)
    if not isinstance(seconds, int | float) or not 0 <= seconds <= commands.MAX_SLEEP:
        raise StepError(f"seconds must be a number from 0 to {commands.MAX_SLEEP:g}")
    time.sleep(seconds)


def _download(desktop: Desktop, params: Mapping[str, Any]) -> None:
    raise StepError("the simulated worker has no internet; ship the file with a create_file step")


STEPS: dict[str, Callable[[Desktop, Mapping[str, Any]], object]] = {
    "launch": lambda d, p: d.open_app(*launch_words(p.get("command") or "")),
    "open": lambda d, p: d.open_path(_param(p, "path")),
    "activate_window": lambda d, p: d.activate(_param(p, "window_name"),
                                               strict=bool(p.get("strict", False))),
    "close_window": lambda d, p: d.close(_param(p, "window_name"),
                                         strict=bool(p.get("strict", False))),
    "close_all": lambda d, p: d.close_all(),
    "clear_task_files": lambda d, p: d.clear_task_files(),
    "execute": _execute,
    "command": _execute,
    "create_folder": lambda d, p: d.make_folder(_param(p, "path")),
    "create_file": _create_file,
    "upload_file": _create_file,
    "sleep": _sleep,
    "download": _download,
    "download_file": _download,
}
"""Step types the simulated worker runs, by WAA name."""


def apply_step(desktop: Desktop, kind: str, params: Any) -> None:
    """Run one step of type ``kind``.

    Raises:
        StepError: unknown type, bad parameters, or the step failed.
        AppError: the desktop refused (no such window, folder missing...).
        SandboxError: a path leaves the simulated drive.
        FileNotFoundError: a file the step needs is missing.
    """
    handler = STEPS.get(kind)
    if handler is None:
        raise StepError(f"unknown step type {kind!r}; known: {', '.join(STEPS)}")
    if not isinstance(params, Mapping):
        raise StepError("'parameters' must be an object")
    handler(desktop, params)


def run_step(desktop: Desktop, step: Any) -> StepResult:
    """Run one ``{"type", "parameters"}`` step; never raises."""
    if not isinstance(step, Mapping) or not isinstance(step.get("type"), str):
        return StepResult("?", False, "a step must be an object with a 'type'")
    kind = step["type"]
    try:
        apply_step(desktop, kind, step.get("parameters") or {})
    except (StepError, AppError, SandboxError, FileNotFoundError) as exc:
        return StepResult(kind, False, str(exc))
    return StepResult(kind, True)


def run_steps(desktop: Desktop, steps: Sequence[Any]) -> list[StepResult]:
    """Run steps in order, stopping after the first that fails."""
    results: list[StepResult] = []
    for step in steps:
        results.append(run_step(desktop, step))
        if not results[-1].ok:
            break
    return results
