"""The session a Cua-Bench module's lifecycle functions receive, over a worker's own channels.

Everything goes through the worker's WAA server, as for any task: windows through
``/browser/...`` (the simulated worker's real Chromium, :mod:`infra.local.browser`), input as
pyautogui source through ``/execute_windows`` (the path an agent's actions take, so a module's
clicks and an agent's land the same way), screenshots through ``/screenshot``, commands through
``/execute``, files through ``/file``, ``/setup/upload`` and ``/list_directory``.

Operations are coroutines, as Cua-Bench's are; each worker call runs in a thread
(``asyncio.to_thread``) so the attempt's deadline can always cancel the coroutine waiting on it,
and the call itself, retries included, ends by that deadline: the thread runs in the caller's
context, where the attempt set :func:`waa_client.retry.deadline_scope`. A ``WaitAction`` waits no
longer than that deadline leaves either, awaited or played through ``env.step``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

from evals.tasks.cua_bench import namespace as ns
from waa_client import retry
from waa_client.errors import NotFoundError, RequestRejectedError, WaaError
from waa_client.poll import poll_until
from waa_client.waa import WaaClient

SCROLL_NOTCH = 100  # Cua-Bench's scroll amounts are pixels; pyautogui's are notches
# Cua-Bench's simulated session: a window's default size, the cascade of default places, and
# how long an element is waited for before a click on it fails.
DEFAULT_WIDTH, DEFAULT_HEIGHT = 600, 400
CASCADE_START, CASCADE_STEP = 100, 30
ELEMENT_WAIT_S = 0.5


# Cua-Bench's key names that pyautogui spells otherwise (Cua-Bench's own are Playwright's
# names, folded to lower case); every other name is pyautogui's already ("enter", "f5", "a").
_KEY_NAMES = {
    "arrowleft": "left", "arrowright": "right", "arrowup": "up", "arrowdown": "down",
    "leftarrow": "left", "rightarrow": "right", "uparrow": "up", "downarrow": "down",
    "return": "enter", "ret": "enter", "esc": "escape", "back": "backspace", "del": "delete",
    " ": "space", "control": "ctrl", "option": "alt", "meta": "win", "command": "win",
    "cmd": "win", "windows": "win", "pgup": "pageup", "pgdn": "pagedown", "ins": "insert",
    "caps": "capslock", "numpadenter": "enter",
    **{f"numpad{n}": f"num{n}" for n in range(10)},
    **{f"numpad{op}": op for op in ("add", "subtract", "multiply", "divide", "decimal")},
}


def key_name(key: str) -> str:
    """A Cua-Bench key name (``Return``, ``ArrowLeft``, ``cmd``, ``F5``) as pyautogui's."""
    lowered = key if len(key) == 1 else key.lower()
    return _KEY_NAMES.get(lowered, lowered)


def window_document(html: str) -> str:
    """The page a window shows for ``html``: Cua-Bench's simulated session puts it in the body
    of a page of its own (the page fills the window, its body a column without margins that
    never scrolls), so a module's page lays out as it does there. Cua-Bench's page also loads
    Tailwind and Iconify from a CDN; a worker loads nothing from outside, so they are left out
    (their classes and icons have no effect here)."""
    return (
        "<!doctype html>\n<html style=\"height: 100%;\">\n<head>\n<meta charset=\"UTF-8\" />\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1.0\" />\n"
        "</head>\n<body style=\"margin: 0; padding: 0; width: 100%; height: 100%; display: flex;"
        " flex-direction: column; overflow: hidden;\">\n" + html + "\n</body>\n</html>\n"
    )


class SessionError(Exception):
    """A session operation the worker refused (the message says what and why)."""


_AT_POINT = {"ClickAction": "click", "RightClickAction": "rightClick",
             "DoubleClickAction": "doubleClick", "MiddleClickAction": "middleClick",
             "MoveToAction": "moveTo"}


def action_source(action: Any) -> str | None:
    """A Cua-Bench action as the pyautogui source an agent would send (None: nothing to send).

    Raises:
        SessionError: not an action this session knows.
    """
    kind = type(action).__name__
    point = f"{int(getattr(action, 'x', 0))}, {int(getattr(action, 'y', 0))}"
    if kind in _AT_POINT:
        return f"pyautogui.{_AT_POINT[kind]}({point})"
    if kind == "DragAction":
        return (f"pyautogui.moveTo({int(action.from_x)}, {int(action.from_y)}); "
                f"pyautogui.dragTo({int(action.to_x)}, {int(action.to_y)})")
    if kind == "ScrollAction":
        notches = max(1, round(int(action.amount) / SCROLL_NOTCH))
        return f"pyautogui.scroll({notches if action.direction == 'up' else -notches})"
    if kind == "TypeAction":
        return f"pyautogui.typewrite({str(action.text)!r})"
    if kind == "KeyAction":
        return f"pyautogui.press({key_name(str(action.key))!r})"
    if kind == "HotkeyAction":
        return f"pyautogui.hotkey({', '.join(repr(key_name(str(k))) for k in action.keys)})"
    if kind in ("WaitAction", "DoneAction"):
        return None
    raise SessionError(f"{kind} is not a Cua-Bench action this session can deliver")


@dataclass
class CommandResult:
    """What ``run_command`` returns (also readable as a mapping: ``result["stdout"]``)."""

    stdout: str
    stderr: str
    return_code: int

    def __getitem__(self, key: str) -> Any:
        return getattr(self, "return_code" if key == "returncode" else key)

    @property
    def returncode(self) -> int:
        """``return_code`` under subprocess's name."""
        return self.return_code


class _Stepped:
    """A step already taken, awaitable too: ``env.step(a)`` works with and without ``await``."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __await__(self) -> Generator[Any, None, Any]:
        return self.value
        yield  # a generator that returns at once


class _Env:
    """``session.env``: Cua-Bench's environment face, ``step(action)`` counted as a step."""

    def __init__(self, session: WorkerSession) -> None:
        self._session = session

    def step(self, action: Any) -> _Stepped:
        """Deliver an action now (through the worker's input path); counted in ``steps``."""
        self._session.steps += 1
        self._session.deliver(action)
        return _Stepped(None)


class WorkerSession:
    """A ``cb.DesktopSession`` on one worker.

    Args:
        waa: The worker's WAA server client.
        timeout: Seconds any one call may wait for the worker (the attempt's deadline cuts it,
            :func:`waa_client.retry.deadline_scope`).
    """

    def __init__(self, waa: WaaClient, *, timeout: float = 60.0,
                 on_action: Callable[[str], None] | None = None) -> None:
        self.waa = waa
        self.timeout = timeout
        self.steps = 0
        self.env = _Env(self)
        self._on_action = on_action
        #: A ``WaitAction``'s seconds when the attempt's time ended it (cut at the deadline):
        #: the attempt then ends as ``error/timeout``, not as a module that did not finish.
        self.wait_cut: float | None = None
        self._launched = 0  # windows open since the last close_all_windows (the cascade)
        # The session's window ids, "1", "2"... in launch order as Cua-Bench's simulated
        # session numbers them (modules write `click_element(1, ...)`), to the worker's own.
        self._windows: dict[str, str] = {}

    # -- windows -----------------------------------------------------------------------------

    async def launch_window(self, url: str | None = None, *, html: str | None = None,
                            folder: str | None = None, title: str = "Window",
                            x: int | None = None, y: int | None = None,
                            width: int = DEFAULT_WIDTH, height: int = DEFAULT_HEIGHT,
                            **_: Any) -> str:
        """Open a window showing ``html``, ``url`` or ``folder`` at ``(x, y)``; its id, the
        session's count of windows launched (``"1"`` for the first), as Cua-Bench numbers them.

        ``html`` is placed in the body of a page of its own, as Cua-Bench's simulated session
        places it (:func:`window_document`); the default size and the cascade of places where
        no ``x``/``y`` is given are Cua-Bench's too.
        """
        count = self._launched
        payload = {"html": None if html is None else window_document(html), "url": url,
                   "folder": folder, "title": title,
                   "x": x if x is not None else CASCADE_START + CASCADE_STEP * count,
                   "y": y if y is not None else CASCADE_START + CASCADE_STEP * count,
                   "width": width, "height": height}
        answer = await self._browser("launch", {k: v for k, v in payload.items()
                                                if v is not None})
        self._launched += 1
        pid = str(len(self._windows) + 1)  # never reused, as Cua-Bench's are not
        self._windows[pid] = str(answer["id"])
        return pid

    def _window_id(self, pid: Any) -> str:
        """The worker's id of the session's window ``pid`` (``1`` and ``"1"`` alike).

        Raises:
            SessionError: the session launched no window ``pid``.
        """
        found = self._windows.get(str(pid))
        if found is None:
            launched = ", ".join(self._windows) or "none yet"
            raise SessionError(f"no window {pid!r} in this session (its windows: {launched})")
        return found

    async def execute_javascript(self, pid: Any, javascript: str) -> Any:
        """Evaluate JavaScript in the window ``pid``; its JSON value. The parameter's name is
        Cua-Bench's (modules pass it by name)."""
        answer = await self._browser("evaluate", {"id": self._window_id(pid),
                                                  "script": javascript})
        return answer.get("value")

    async def move_window(self, pid: Any, x: int, y: int) -> None:
        """Move the window ``pid`` to ``(x, y)`` on the screen (an oa-vm extension)."""
        await self._browser("move", {"id": self._window_id(pid), "x": int(x), "y": int(y)})

    async def close_all_windows(self) -> None:
        """Close every browser window of the worker."""
        await self._browser("close_all", {})
        self._launched = 0

    async def get_element_rect(self, pid: Any, selector: str, *, space: str = "window",
                               timeout: float = ELEMENT_WAIT_S) -> dict[str, Any] | None:
        """The box of the first element matching ``selector`` in window ``pid``
        (``{"x", "y", "width", "height"}``, whole pixels, in the window's page or, with
        ``space="screen"``, on the screen), waiting up to ``timeout`` seconds for one to
        appear; None when none did. The page is not scrolled (Cua-Bench's rule)."""
        if space not in ("window", "screen"):
            raise SessionError(f"space must be 'window' or 'screen', not {space!r}")
        script = (
            "(() => { const e = document.querySelector(" + json.dumps(selector) + ");"
            " if (!e) return null; const r = e.getBoundingClientRect();"
            " return {x: Math.round(r.x), y: Math.round(r.y),"
            " width: Math.round(r.width), height: Math.round(r.height),"
            " screenX: window.screenX, screenY: window.screenY}; })()"
        )

        def find() -> dict[str, Any] | None:
            value = self._call_browser("evaluate", {"id": self._window_id(pid),
                                                   "script": script})
            return value.get("value") if isinstance(value.get("value"), dict) else None

        rect = await asyncio.to_thread(poll_until, find, timeout_s=float(timeout),
                                       interval_s=max(0.1, float(timeout) / 2))
        if rect is None:
            return None
        left, top = rect.pop("screenX"), rect.pop("screenY")
        if space == "screen":
            rect["x"] += int(left)
            rect["y"] += int(top)
        return rect

    async def click_element(self, pid: Any, selector: str) -> None:
        """Click the centre of the element ``selector`` through the worker's input path."""
        await self.execute_action(ns.ClickAction(*await self._element_centre(pid, selector)))

    async def right_click_element(self, pid: Any, selector: str) -> None:
        """Right-click the centre of the element ``selector``, as :meth:`click_element`."""
        await self.execute_action(
            ns.RightClickAction(*await self._element_centre(pid, selector)))

    async def _element_centre(self, pid: Any, selector: str) -> tuple[int, int]:
        """Where Cua-Bench clicks an element: its screen box's centre, the halves cut to
        whole pixels; wherever that is (an element scrolled out of its window is not brought
        into view, and a closed ``<select>``'s options have an empty box at the page's
        corner)."""
        rect = await self.get_element_rect(pid, selector, space="screen")
        if rect is None:
            raise SessionError(f"no element matches {selector!r} in window {pid}")
        return int(rect["x"] + rect["width"] / 2), int(rect["y"] + rect["height"] / 2)

    async def execute_action(self, action: Any) -> None:
        """Deliver a Cua-Bench action as the pyautogui source an agent would send."""
        if type(action).__name__ == "WaitAction":
            await asyncio.sleep(self._wait_s(action))
            return
        await asyncio.to_thread(self.deliver, action)

    def _wait_s(self, action: Any) -> float:
        """How long a ``WaitAction`` waits: its seconds, cut to the time the attempt has left
        (:func:`waa_client.retry.deadline_scope`), as the agent loop cuts an agent's wait;
        a cut wait is noted in :attr:`wait_cut`."""
        seconds = float(getattr(action, "seconds", 1.0))
        left = retry.try_timeout(seconds)
        if left < seconds:
            self.wait_cut = seconds
        return max(0.0, left)

    # Cua-Bench's shorthands for one action each (its native session's), through
    # execute_action as there.

    async def click(self, x: int, y: int) -> None:
        """Left-click at a screen point."""
        await self.execute_action(ns.ClickAction(x, y))

    async def right_click(self, x: int, y: int) -> None:
        """Right-click at a screen point."""
        await self.execute_action(ns.RightClickAction(x, y))

    async def double_click(self, x: int, y: int) -> None:
        """Double-click at a screen point."""
        await self.execute_action(ns.DoubleClickAction(x, y))

    async def move_to(self, x: int, y: int) -> None:
        """Move the pointer to a screen point."""
        await self.execute_action(ns.MoveToAction(x, y))

    async def drag(self, from_x: int, from_y: int, to_x: int, to_y: int) -> None:
        """Drag from one screen point to another."""
        await self.execute_action(ns.DragAction(from_x, from_y, to_x, to_y))

    async def type(self, text: str) -> None:
        """Type text into whatever has the focus."""
        await self.execute_action(ns.TypeAction(text))

    async def key(self, key: str) -> None:
        """Press one key (Cua-Bench's key names)."""
        await self.execute_action(ns.KeyAction(key))

    async def hotkey(self, keys: list[str]) -> None:
        """Press keys together."""
        await self.execute_action(ns.HotkeyAction(list(keys)))

    async def scroll(self, direction: str = "down", amount: int = 300) -> None:
        """Turn the wheel (``amount`` pixels; Cua-Bench's shorthand scrolls down 300)."""
        await self.execute_action(ns.ScrollAction(direction, amount))

    def deliver(self, action: Any) -> None:
        """Send an action now (blocking); ``WaitAction`` waits here."""
        source = action_source(action)
        if source is None:
            if type(action).__name__ == "WaitAction":
                time.sleep(self._wait_s(action))
            return
        code = f"import pyautogui; {source}"
        if self._on_action is not None:
            self._on_action(code)
        answer = self.waa.execute_windows(code, timeout=self.timeout)
        if answer.get("returncode", 0) not in (0, None):
            raise SessionError(f"the worker refused {source}: {answer.get('error')}")

    async def screenshot(self) -> bytes:
        """The worker's whole screen, PNG."""
        return await asyncio.to_thread(self.waa.screenshot)

    # -- shell and files ---------------------------------------------------------------------

    async def run_command(self, command: str, *, check: bool = True, **_: Any) -> CommandResult:
        """Run a command in the worker's shell (``/execute``).

        Raises:
            RuntimeError: ``check`` (the default, as Cua-Bench's) and the command failed (a
                non-zero return code); ``check=False`` returns the result whatever it is.
        """
        answer = await asyncio.to_thread(self.waa.execute, command, shell=True,
                                         timeout=self.timeout)
        result = CommandResult(str(answer.get("output", "")), str(answer.get("error", "")),
                               int(answer.get("returncode", 0) or 0))
        if check and result.return_code != 0:
            raise RuntimeError(f"command failed with return code {result.return_code}: "
                               f"{command}; stdout: {result.stdout}; stderr: {result.stderr}")
        return result

    shell_command = run_command  # Cua-Bench's session has both names

    async def read_file(self, path: str) -> str:
        """A file's text (``/file``)."""
        return (await self.read_bytes(path)).decode("utf-8", "replace")

    async def read_bytes(self, path: str) -> bytes:
        """A file's bytes (``/file``)."""
        return await asyncio.to_thread(self.waa.file, path)

    async def write_file(self, path: str, content: str | bytes) -> None:
        """Write a file (``/setup/upload``)."""
        data = content.encode("utf-8") if isinstance(content, str) else content
        await asyncio.to_thread(self.waa.upload, path, data)

    async def write_bytes(self, path: str, data: bytes) -> None:
        """Write a file's bytes (``/setup/upload``)."""
        await self.write_file(path, bytes(data))

    async def file_exists(self, path: str) -> bool:
        """Whether a file exists (``/file`` answers it or 404)."""
        try:
            await asyncio.to_thread(self.waa.file, path)
        except NotFoundError:
            return False
        return True

    async def directory_exists(self, path: str) -> bool:
        """Whether a folder exists (``/list_directory`` lists it, or answers 400 as WAA does for
        a missing path or a file)."""
        try:
            await asyncio.to_thread(self.waa.list_directory, path)
        except RequestRejectedError as exc:
            if exc.status != 400:
                raise
            return False
        return True

    async def list_dir(self, path: str) -> list[str]:
        """The names in a folder (``/list_directory``)."""
        tree = await asyncio.to_thread(self.waa.list_directory, path)
        children = tree.get("directory_tree", {}).get("children") or []
        return sorted(str(c.get("name")) for c in children if isinstance(c, dict))

    async def _browser(self, operation: str, payload: dict[str, Any]) -> dict[str, Any]:
        return await asyncio.to_thread(self._call_browser, operation, payload)

    def _call_browser(self, operation: str, payload: dict[str, Any]) -> dict[str, Any]:
        """``/browser/<operation>`` now (blocking); the worker's refusal as a SessionError."""
        try:
            return self.waa.browser(operation, payload, timeout=self.timeout)
        except WaaError as exc:
            if exc.is_infrastructure:
                raise
            if isinstance(exc, NotFoundError) and not self._has_browser():
                raise SessionError(
                    f"{operation}: the worker has no browser (no /browser/{operation}: a WAA "
                    "worker has none, a local pool's workers have one); run this module on a "
                    "local pool (--cloud local)") from exc
            raise SessionError(f"{operation}: {exc}") from exc

    def _has_browser(self) -> bool:
        """Whether the worker serves ``/browser/status`` at all: a 404 on an operation is
        either a window it does not know or, on a WAA worker, the endpoint missing."""
        try:
            self.waa.browser("status", timeout=self.timeout)
        except NotFoundError:
            return False
        except WaaError:
            return True  # it could not say; the operation's own error stands
        return True
