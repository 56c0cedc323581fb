"""A real browser on the simulated worker's screen: headless Chromium driven over DevTools.

Cua-Bench task modules open HTML pages with ``session.launch_window`` and act on them at *screen*
coordinates (``window.screenX`` + an element's ``getBoundingClientRect()``). This module gives a
simulated worker such windows: one Chromium per worker, started on the first window and stopped
with the worker, each window a page target placed on the worker's 1280x720 screen. Placement is
Chromium's own device-metrics emulation (``screenX``/``screenY``, the viewport, the screen size),
so the page itself reports where it is; a window has no frame (``outerWidth == innerWidth``).

Input reaches a window through :meth:`BrowserScreen.window_at`: the worker's input player
(:mod:`infra.local.inputs`), the same one that plays an agent's pyautogui source, hands clicks,
drags, keys and text at screen coordinates to the window under the pointer, which receives them
as DevTools input events at the point's place in its page. Screenshots of the screen paste each
window's picture at its place (:mod:`infra.local.render`).

The DevTools protocol is spoken over ``websocket-client`` (a small, well-kept synchronous client;
the worker is threaded, so an asyncio client would need a loop thread of its own for nothing).
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import re
import shutil
import string
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger("infra.local")

CHROMIUM_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "chrome")
CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--mute-audio",
)
START_TIMEOUT_S = 60.0
CALL_TIMEOUT_S = 30.0
_LISTENING = re.compile(r"DevTools listening on (ws://\S+)")
# A frameless window: the page's outer size is its inner size, so a module adding the title
# bar's height (outerHeight - innerHeight) adds 0, as on a window without decorations.
_FRAMELESS = (
    "Object.defineProperty(window,'outerWidth',{get:()=>window.innerWidth});"
    "Object.defineProperty(window,'outerHeight',{get:()=>window.innerHeight});"
)
# DevTools key descriptions of the named keys an agent presses (pyautogui's names, folded).
# (key, code, virtual key code, text); a key that types nothing has its key as its code.
_KEYS: dict[str, tuple[str, str, int, str]] = {
    "enter": ("Enter", "Enter", 13, "\r"),
    "space": (" ", "Space", 32, " "),
    **{name: (key, key, vk, "") for name, key, vk in (
        ("tab", "Tab", 9), ("backspace", "Backspace", 8), ("delete", "Delete", 46),
        ("escape", "Escape", 27), ("left", "ArrowLeft", 37), ("right", "ArrowRight", 39),
        ("up", "ArrowUp", 38), ("down", "ArrowDown", 40), ("home", "Home", 36),
        ("end", "End", 35), ("pageup", "PageUp", 33), ("pagedown", "PageDown", 34),
        ("insert", "Insert", 45), ("capslock", "CapsLock", 20),
    )},
    **{f"f{n}": (f"F{n}", f"F{n}", 111 + n, "") for n in range(1, 13)},
    **{f"num{n}": (str(n), f"Numpad{n}", 96 + n, str(n)) for n in range(10)},
    **{name: (char, code, vk, char) for name, char, code, vk in (
        ("multiply", "*", "NumpadMultiply", 106), ("add", "+", "NumpadAdd", 107),
        ("subtract", "-", "NumpadSubtract", 109), ("decimal", ".", "NumpadDecimal", 110),
        ("divide", "/", "NumpadDivide", 111),
    )},
}
# The US keyboard's printable characters: the key (code, virtual key code) each is typed with.
_US_KEYS: dict[str, tuple[str, int]] = {
    **{c: (f"Key{c.upper()}", ord(c.upper())) for c in string.ascii_letters},
    **{c: (f"Digit{d}", 48 + int(d)) for c, d in zip("0123456789", "0123456789", strict=True)},
    **{c: (f"Digit{d}", 48 + int(d)) for c, d in zip(")!@#$%^&*(", "0123456789", strict=True)},
    **{c: (code, vk) for chars, code, vk in (
        ("-_", "Minus", 189), ("=+", "Equal", 187), ("[{", "BracketLeft", 219),
        ("]}", "BracketRight", 221), ("\\|", "Backslash", 220), (";:", "Semicolon", 186),
        ("'\"", "Quote", 222), (",<", "Comma", 188), (".>", "Period", 190),
        ("/?", "Slash", 191), ("`~", "Backquote", 192), (" ", "Space", 32),
    ) for c in chars},
}
_MODIFIER_BITS = {"alt": 1, "ctrl": 2, "win": 4, "shift": 8}
# A page's own drag (HTML5 ``draggable``, a dragged selection or link) is intercepted as this
# event instead of being handed to a desktop the headless browser does not have.
KEPT_EVENTS = frozenset({"Input.dragIntercepted"})
# Watches the page for a dragstart it lets happen; ``this`` of the checks below is its box.
_WATCH_DRAGSTART = (
    "(() => { const box = {event: null};"
    " box.listener = (e) => { box.event = e; };"
    " addEventListener('dragstart', box.listener, {capture: true}); return box; })()"
)
_DRAG_STARTED = ("function () { removeEventListener('dragstart', this.listener, {capture: true});"
                 " return !!this.event && !this.event.defaultPrevented; }")


class BrowserError(Exception):
    """A browser operation that cannot be done (no Chromium, no such window, a page error)."""


def find_chromium() -> str | None:
    """The Chromium executable (``$OA_VM_CHROMIUM`` first), or None when none is installed."""
    given = os.environ.get("OA_VM_CHROMIUM")
    if given:
        return given if Path(given).is_file() else None
    for name in CHROMIUM_CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


class _DevTools:
    """One DevTools connection to the browser: calls wait for their own answer; events are
    dropped, but those named in ``KEPT_EVENTS``, kept for :meth:`take_event`."""

    def __init__(self, url: str) -> None:
        import websocket  # imported with the browser: a worker without windows never needs it

        self._ws = websocket.create_connection(url, timeout=CALL_TIMEOUT_S, suppress_origin=True)
        self._lock = threading.Lock()
        self._next = 0
        self._kept: dict[tuple[str, str | None], list[dict[str, Any]]] = {}

    def _keep(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method in KEPT_EVENTS:
            key = (str(method), message.get("sessionId"))
            self._kept.setdefault(key, []).append(message.get("params") or {})

    def take_event(self, method: str, session: str | None, *,
                   timeout: float = CALL_TIMEOUT_S) -> dict[str, Any] | None:
        """The oldest kept event ``method`` of ``session`` (its params), waiting up to
        ``timeout`` for it; None when none came."""
        from websocket import WebSocketTimeoutException

        with self._lock:
            deadline = time.monotonic() + timeout
            while True:
                waiting = self._kept.get((method, session))
                if waiting:
                    return waiting.pop(0)
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._ws.settimeout(left)
                try:
                    message = json.loads(self._ws.recv())
                except WebSocketTimeoutException:
                    return None
                self._keep(message)

    def drop_events(self, method: str, session: str | None) -> None:
        """Forget the kept events ``method`` of ``session``."""
        with self._lock:
            self._kept.pop((method, session), None)

    def call(self, method: str, session: str | None = None, *, timeout: float = CALL_TIMEOUT_S,
             **params: Any) -> dict[str, Any]:
        with self._lock:
            self._next += 1
            ident = self._next
            message: dict[str, Any] = {"id": ident, "method": method, "params": params}
            if session is not None:
                message["sessionId"] = session
            self._ws.settimeout(timeout)
            self._ws.send(json.dumps(message))
            deadline = time.monotonic() + timeout
            while True:
                if time.monotonic() > deadline:
                    raise BrowserError(f"{method}: no answer from the browser in {timeout:g} s")
                answer = json.loads(self._ws.recv())
                if answer.get("id") != ident:
                    self._keep(answer)  # an event, or the answer of a call that timed out
                    continue
                if "error" in answer:
                    raise BrowserError(f"{method}: {answer['error'].get('message', answer)}")
                result = answer.get("result", {})
                return result if isinstance(result, dict) else {}

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._ws.close()


@dataclass
class BrowserWindow:
    """One window: a page target placed at ``(x, y)`` on the screen, ``width`` x ``height``."""

    wid: str
    target: str
    session: str
    title: str
    x: int
    y: int
    width: int
    height: int

    def contains(self, x: int, y: int) -> bool:
        """Whether the screen point is inside the window."""
        return self.x <= x < self.x + self.width and self.y <= y < self.y + self.height

    def describe(self) -> dict[str, Any]:
        """The window as the worker reports it."""
        return {"id": self.wid, "title": self.title, "x": self.x, "y": self.y,
                "width": self.width, "height": self.height}


class BrowserScreen:
    """The browser windows of one worker, in stacking order (the last one in front).

    Args:
        root: The worker's folder (the browser's profile goes in a fresh folder under it).
        screen: The worker's screen size in pixels.
    """

    def __init__(self, root: Path, screen: tuple[int, int]) -> None:
        self.root = root
        self.screen = screen
        self.lock = threading.RLock()
        self.windows: list[BrowserWindow] = []
        self.focused = False  # keys go to the front window while the browser has the focus
        self.version = 0  # bumped by every change a screenshot shows
        self._process: subprocess.Popen[bytes] | None = None
        self._profile: Path | None = None
        self._tools: _DevTools | None = None
        self._count = 0

    # -- the browser process ---------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether this worker's Chromium is up."""
        return self._process is not None and self._process.poll() is None

    def pid(self) -> int | None:
        """The browser's process ID (for memory figures), or None."""
        return self._process.pid if self.running and self._process is not None else None

    def _devtools(self) -> _DevTools:
        if self._tools is not None and self.running:
            return self._tools
        self._stop_process()
        binary = find_chromium()
        if binary is None:
            raise BrowserError("this worker has no Chromium (install Debian's chromium, or set "
                               "OA_VM_CHROMIUM to a Chromium executable)")
        self._profile = Path(tempfile.mkdtemp(prefix="browser-profile-", dir=self.root))
        width, height = self.screen
        command = [binary, *CHROMIUM_FLAGS, f"--user-data-dir={self._profile}",
                   "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
                   f"--window-size={width},{height}", "about:blank"]
        self._process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, start_new_session=True,
        )
        url = self._await_listening(self._process)
        self._tools = _DevTools(url)
        log.info("browser started, pid %d", self._process.pid)
        return self._tools

    @staticmethod
    def _await_listening(process: subprocess.Popen[bytes]) -> str:
        assert process.stderr is not None
        found: list[str] = []

        def read() -> None:
            assert process.stderr is not None
            for raw in process.stderr:
                match = _LISTENING.search(raw.decode("utf-8", "replace"))
                if match and not found:
                    found.append(match.group(1))
            # keeps draining until the browser exits, so its stderr never blocks it

        reader = threading.Thread(target=read, name="chromium-stderr", daemon=True)
        reader.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not found:
            if process.poll() is not None:
                raise BrowserError(f"Chromium exited with code {process.returncode} at start")
            if time.monotonic() > deadline:
                process.kill()
                raise BrowserError(f"Chromium did not start within {START_TIMEOUT_S:g} s")
            time.sleep(0.05)
        return found[0]

    def _stop_process(self) -> None:
        if self._tools is not None:
            self._tools.close()
            self._tools = None
        if self._process is not None:
            if self._process.poll() is None:
                self._process.terminate()
                try:
                    self._process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self._process.kill()
                    self._process.wait(timeout=10)
            self._process = None
        if self._profile is not None:
            shutil.rmtree(self._profile, ignore_errors=True)
            self._profile = None

    def stop(self) -> None:
        """Close every window and stop the browser (idempotent)."""
        with self.lock:
            self.windows.clear()
            self._stop_process()
            self.version += 1

    # -- windows ---------------------------------------------------------------------------

    def launch(self, *, html: str | None = None, url: str | None = None,
               folder: str | None = None, title: str = "Window", x: int | None = None,
               y: int | None = None, width: int | None = None,
               height: int | None = None) -> BrowserWindow:
        """Open a window showing ``html``, ``url`` or ``folder`` at a place on the screen.

        Raises:
            BrowserError: none or several of ``html``, ``url``, ``folder``; no Chromium; the
                page could not be opened.
        """
        given = [v for v in (html, url, folder) if v is not None]
        if len(given) != 1:
            raise BrowserError("give exactly one of html, url or folder")
        screen_w, screen_h = self.screen
        w = max(50, min(int(width or 800), screen_w))
        h = max(50, min(int(height or 600), screen_h))
        left = max(0, min(int(x if x is not None else 40 + 30 * len(self.windows)), screen_w - w))
        top = max(0, min(int(y if y is not None else 40 + 30 * len(self.windows)), screen_h - h))
        with self.lock:
            tools = self._devtools()
            target = str(tools.call("Target.createTarget", url="about:blank")["targetId"])
            session = str(tools.call("Target.attachToTarget", targetId=target,
                                     flatten=True)["sessionId"])
            self._count += 1
            window = BrowserWindow(f"w{self._count}", target, session, title, left, top, w, h)
            tools.call("Page.enable", session)
            tools.call("Page.addScriptToEvaluateOnNewDocument", session, source=_FRAMELESS)
            self._place(window)
            if html is not None:
                frame = tools.call("Page.getFrameTree", session)["frameTree"]["frame"]["id"]
                tools.call("Runtime.evaluate", session, expression=_FRAMELESS)
                tools.call("Page.setDocumentContent", session, frameId=frame, html=html)
            else:
                address = url if url is not None else Path(str(folder)).resolve().as_uri()
                answer = tools.call("Page.navigate", session, url=address)
                if answer.get("errorText"):
                    tools.call("Target.closeTarget", targetId=target)
                    raise BrowserError(f"cannot open {address}: {answer['errorText']}")
                self._await_load(window)
            self.windows.append(window)
            self.focused = True
            self.version += 1
            return window

    def _await_load(self, window: BrowserWindow) -> None:
        deadline = time.monotonic() + CALL_TIMEOUT_S
        while time.monotonic() < deadline:
            state = self._evaluate(window, "document.readyState")
            if state == "complete":
                return
            time.sleep(0.05)

    def _place(self, window: BrowserWindow) -> None:
        screen_w, screen_h = self.screen
        self._devtools().call(
            "Emulation.setDeviceMetricsOverride", window.session, width=window.width,
            height=window.height, deviceScaleFactor=1, mobile=False, screenWidth=screen_w,
            screenHeight=screen_h, positionX=window.x, positionY=window.y,
        )

    def get(self, wid: str) -> BrowserWindow:
        """The window of that id.

        Raises:
            BrowserError: no such window (closed, or never opened on this worker).
        """
        for window in self.windows:
            if window.wid == wid:
                return window
        raise BrowserError(f"no browser window {wid!r} on this worker "
                           f"(open: {', '.join(w.wid for w in self.windows) or 'none'})")

    def move(self, wid: str, x: int, y: int) -> BrowserWindow:
        """Move a window to ``(x, y)`` (kept on the screen) and bring it to the front."""
        with self.lock:
            window = self.get(wid)
            screen_w, screen_h = self.screen
            window.x = max(0, min(int(x), screen_w - window.width))
            window.y = max(0, min(int(y), screen_h - window.height))
            self._place(window)
            self.raise_window(window)
            return window

    def raise_window(self, window: BrowserWindow) -> None:
        """Bring a window to the front."""
        with self.lock:
            if self.windows and self.windows[-1] is not window:
                self.windows.remove(window)
                self.windows.append(window)
            self.version += 1

    def close_all(self) -> int:
        """Close every window (the browser keeps running for the next task); returns how many."""
        with self.lock:
            closed = len(self.windows)
            if self._tools is not None and self.running:
                for window in self.windows:
                    with contextlib.suppress(BrowserError):  # gone already
                        self._tools.call("Target.closeTarget", targetId=window.target)
            self.windows.clear()
            self.focused = False
            self.version += 1
            return closed

    def window_at(self, x: int, y: int) -> BrowserWindow | None:
        """The front-most window at a screen point, or None."""
        with self.lock:
            return next((w for w in reversed(self.windows) if w.contains(x, y)), None)

    # -- pages -----------------------------------------------------------------------------

    def _evaluate(self, window: BrowserWindow, script: str) -> Any:
        answer = self._devtools().call(
            "Runtime.evaluate", window.session, expression=script, returnByValue=True,
            awaitPromise=True,
        )
        if "exceptionDetails" in answer:
            details = answer["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise BrowserError(f"the script raised: {text}")
        return answer.get("result", {}).get("value")

    def evaluate(self, wid: str, script: str) -> Any:
        """Evaluate JavaScript in a window's page; returns its JSON value.

        Raises:
            BrowserError: no such window, or the script raised (its message).
        """
        with self.lock:
            value = self._evaluate(self.get(wid), script)
            self.version += 1  # a script may change what the page shows
            return value

    def capture(self, window: BrowserWindow) -> bytes:
        """The window's picture as PNG bytes."""
        data = self._devtools().call("Page.captureScreenshot", window.session,
                                     format="png")["data"]
        return base64.b64decode(data)

    def accessibility(self, window: BrowserWindow) -> list[dict[str, Any]]:
        """The page's accessibility nodes that carry a name or a value (role, name, value)."""
        nodes = self._devtools().call("Accessibility.getFullAXTree", window.session)["nodes"]
        found = []
        for node in nodes:
            if node.get("ignored"):
                continue
            role = str(node.get("role", {}).get("value", ""))
            name = str(node.get("name", {}).get("value", "") or "")
            value = str(node.get("value", {}).get("value", "") or "")
            if role in ("RootWebArea", "generic", "none", "InlineTextBox") or not (name or value):
                continue
            found.append({"role": role, "name": name, "value": value,
                          "node": node.get("backendDOMNodeId")})
        return found

    def node_rect(self, window: BrowserWindow, node: int) -> tuple[int, int, int, int] | None:
        """A node's box in screen coordinates (left, top, right, bottom), or None."""
        try:
            quad = self._devtools().call("DOM.getBoxModel", window.session,
                                         backendNodeId=node)["model"]["border"]
        except (BrowserError, KeyError):
            return None
        xs, ys = quad[0::2], quad[1::2]
        return (int(min(xs)) + window.x, int(min(ys)) + window.y,
                int(max(xs)) + window.x, int(max(ys)) + window.y)

    # -- input at screen coordinates ------------------------------------------------------

    def _mouse(self, window: BrowserWindow, kind: str, x: int, y: int, *, button: str = "left",
               clicks: int = 1, pressed: bool = False, dx: int = 0, dy: int = 0) -> None:
        # a move carries the button only while it is held (a held left button is a drag)
        moving_free = kind == "mouseMoved" and not pressed
        params: dict[str, Any] = {
            "type": kind, "x": x - window.x, "y": y - window.y,
            "button": "none" if moving_free else button, "clickCount": clicks,
            "buttons": _BUTTON_BITS.get(button, 1) if pressed else 0,
        }
        if kind == "mouseWheel":
            params.update(deltaX=dx, deltaY=dy, button="none")
        self._devtools().call("Input.dispatchMouseEvent", window.session, **params)

    def click(self, window: BrowserWindow, x: int, y: int, *, clicks: int = 1,
              button: str = "left") -> None:
        """Press and release a button at a screen point inside ``window``."""
        with self.lock:
            self.raise_window(window)
            self.focused = True
            self._mouse(window, "mouseMoved", x, y)
            for count in range(1, clicks + 1):
                self._mouse(window, "mousePressed", x, y, button=button, clicks=count,
                            pressed=True)
                self._mouse(window, "mouseReleased", x, y, button=button, clicks=count)
            self.version += 1

    def drag(self, window: BrowserWindow, start: tuple[int, int], end: tuple[int, int],
             steps: int = 8) -> None:
        """Press at ``start``, move in steps to ``end`` and release there (screen points).

        When the page starts a drag of its own (an HTML5 ``draggable``: its ``dragstart`` not
        cancelled), the rest of the way is that drag, as on a desktop: ``dragenter`` and
        ``dragover`` where the pointer goes, ``drop`` where it is released (DevTools' drag
        interception, the browser's own drag events with the data the page put in them).
        """
        with self.lock:
            self.raise_window(window)
            self.focused = True
            self._mouse(window, "mouseMoved", *start)
            self._forget_empty_selection(window)
            self._mouse(window, "mousePressed", *start, pressed=True)
            data: dict[str, Any] | None = None
            for i in range(1, steps + 1):
                px = round(start[0] + (end[0] - start[0]) * i / steps)
                py = round(start[1] + (end[1] - start[1]) * i / steps)
                if data is not None:
                    self._drag_event(window, "dragOver", px, py, data)
                    continue
                data = self._move_watching_drag(window, px, py)
                if data is not None:
                    self._drag_event(window, "dragEnter", px, py, data)
            if data is not None:
                self._drag_event(window, "drop", *end, data)
            self._mouse(window, "mouseReleased", *end)
            self.version += 1

    def _move_watching_drag(self, window: BrowserWindow, x: int, y: int) -> dict[str, Any] | None:
        """Move with the button held; the drag data when the page started a drag of its own."""
        tools = self._devtools()
        box = tools.call("Runtime.evaluate", window.session, expression=_WATCH_DRAGSTART)
        box_id = box.get("result", {}).get("objectId")
        tools.drop_events("Input.dragIntercepted", window.session)
        tools.call("Input.setInterceptDrags", window.session, enabled=True)
        try:
            self._mouse(window, "mouseMoved", x, y, pressed=True)
            started = box_id is not None and tools.call(
                "Runtime.callFunctionOn", window.session, objectId=box_id,
                functionDeclaration=_DRAG_STARTED, returnByValue=True,
            ).get("result", {}).get("value") is True
            if not started:
                return None
            event = tools.take_event("Input.dragIntercepted", window.session)
            if event is None:
                raise BrowserError("the page started a drag that the browser never handed over")
            data = event.get("data")
            return data if isinstance(data, dict) else None
        finally:
            tools.call("Input.setInterceptDrags", window.session, enabled=False)
            if box_id is not None:
                with contextlib.suppress(BrowserError):
                    tools.call("Runtime.releaseObject", window.session, objectId=box_id)

    def _drag_event(self, window: BrowserWindow, kind: str, x: int, y: int,
                    data: dict[str, Any]) -> None:
        self._devtools().call("Input.dispatchDragEvent", window.session, type=kind,
                              x=x - window.x, y=y - window.y, data=data)

    def _forget_empty_selection(self, window: BrowserWindow) -> None:
        """Drop a selection holding no text before a drag. A drag across a page leaves one
        (a caret range); headless Chromium then takes the next press-and-move for a native
        drag of it, which it has no desktop to hand to, and the page sees no more mouse
        events (a browser on a desktop drags no empty selection)."""
        self._evaluate(window, "(() => { const s = getSelection();"
                       " if (s && !s.toString()) s.removeAllRanges(); })()")

    def scroll(self, window: BrowserWindow, x: int, y: int, clicks: int) -> None:
        """Turn the wheel ``clicks`` notches at a screen point (positive: up, as pyautogui)."""
        with self.lock:
            self._mouse(window, "mouseWheel", x, y, dy=-100 * clicks)
            self.version += 1

    def front(self) -> BrowserWindow | None:
        """The window keys go to: the front one, while the browser has the focus."""
        with self.lock:
            return self.windows[-1] if self.focused and self.windows else None

    def _focused(self) -> BrowserWindow:
        window = self.front()
        if window is None:
            raise BrowserError("no browser window has the focus")
        return window

    def type_text(self, text: str) -> None:
        """Type text into the focused element of the front window, a key press per character
        (``keydown``, ``keypress``/``input``, ``keyup``, as a keyboard types it); a character
        no US key types is inserted as text (an input method's way)."""
        with self.lock:
            window = self._focused()
            for char in text:
                if char in "\n\r":
                    self.press("enter")
                elif char == "\t":
                    self.press("tab")
                elif char in _US_KEYS:
                    code, vk = _US_KEYS[char]
                    self._key_stroke(window, (char, code, vk, char), 0)
                else:
                    self._devtools().call("Input.insertText", window.session, text=char)
            self.version += 1

    def _key_stroke(self, window: BrowserWindow, described: tuple[str, str, int, str],
                    bits: int) -> None:
        name, code, vk, text = described
        down: dict[str, Any] = {"type": "keyDown", "key": name, "code": code,
                                "windowsVirtualKeyCode": vk, "modifiers": bits}
        if text:
            down["text"] = text
        tools = self._devtools()
        tools.call("Input.dispatchKeyEvent", window.session, **down)
        tools.call("Input.dispatchKeyEvent", window.session, type="keyUp", key=name, code=code,
                   windowsVirtualKeyCode=vk, modifiers=bits)

    def press(self, key: str, modifiers: frozenset[str] = frozenset()) -> None:
        """Press and release one key (a pyautogui name, folded) in the front window.

        Raises:
            BrowserError: no window has the focus, or a key name this keyboard lacks.
        """
        with self.lock:
            window = self._focused()
            bits = sum(_MODIFIER_BITS.get(m, 0) for m in modifiers)
            if key in _KEYS:
                described = _KEYS[key]
            elif len(key) == 1:
                code, vk = _US_KEYS.get(key, ("", ord(key.upper())))
                # with ctrl, alt or win held the key is a shortcut: it types nothing
                described = (key, code, vk, "" if bits & 7 else key)
            else:
                raise BrowserError(f"unknown key {key!r}")
            self._key_stroke(window, described, bits)
            self.version += 1


_BUTTON_BITS = {"left": 1, "right": 2, "middle": 4}

