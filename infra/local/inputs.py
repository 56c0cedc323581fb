"""Keyboard and mouse on the simulated desktop: plays checked pyautogui/``computer.*`` calls.

A click goes where :mod:`infra.local.gui` says the screen shows a control; keys go to the
focused control of the window in front. What each control and key does is listed in
``docs/local-worker.md`` ("Keyboard and mouse"). A call the desktop refuses (a click outside the
screen, a bad time typed in a field...) raises :class:`~infra.local.apps.AppError`: the calls
before it have happened, the ones after it do not run, as when a real script raises.
"""

from __future__ import annotations

import math
from functools import partialmethod
from typing import Any

from infra.local import cancel, launcher
from infra.local.apps import (
    Alarm,
    AppError,
    Timer,
    Window,
    format_duration,
    parse_clock_time,
    parse_duration,
)
from infra.local.arith import (
    ArithmeticInputError,
    calculate,
    date_history_line,
    days_between,
    history_line,
)
from infra.local.browser import BrowserError, BrowserWindow
from infra.local.commands import MAX_SLEEP, CommandSyntaxError, split_command
from infra.local.desktop import Desktop, app_name
from infra.local.gui import (
    HEIGHT,
    OPENAPPS_ROWS,
    SETTING_LABELS,
    WIDTH,
    Control,
    WindowLayout,
    hit,
)
from infra.local.pysource import Call, Program

MODIFIERS = {"ctrl", "shift", "alt", "win"}
_KEY_ALIASES = {
    "control": "ctrl", "ctrlleft": "ctrl", "ctrlright": "ctrl", "shiftleft": "shift",
    "shiftright": "shift", "altleft": "alt", "altright": "alt", "winleft": "win",
    "winright": "win", "command": "ctrl", "cmd": "ctrl", "option": "alt", "super": "win",
    "return": "enter", "esc": "escape", "del": "delete", "\n": "enter", "\t": "tab",
    " ": "space", "spacebar": "space",
}
_SETTING_BY_LABEL = {label: key for key, label in SETTING_LABELS.items()}
_PLATFORM = {"platform.system": "Windows", "platform.release": "11", "platform.machine": "AMD64",
             "pyautogui.size": f"Size(width={WIDTH}, height={HEIGHT})"}
_BUTTONS = {"primary": "left", "secondary": "right"}
_WIN_APPS = {"e": "explorer", "i": "settings"}
_NAVI_CLICKS: dict[str, dict[str, Any]] = {"mouse.single_click": {}, "mouse.click": {},
                                           "mouse.double_click": {"clicks": 2},
                                           "mouse.right_click": {"button": "right"}}


def key_name(key: str) -> str:
    """pyautogui's key names folded to one spelling (``ctrlleft`` -> ``ctrl``, ``\\n`` ->
    ``enter``...)."""
    lowered = key if len(key) == 1 and not key.isalpha() else key.lower()
    return _KEY_ALIASES.get(lowered, lowered)


class Player:
    """Plays calls on one desktop; ``output`` collects what ``print`` calls wrote."""

    def __init__(self, desktop: Desktop, *, sleep_cap: float = MAX_SLEEP) -> None:
        self.desktop = desktop
        self.output: list[str] = []
        self.sleep_cap = sleep_cap  # for the whole program: many sleeps share it
        self._pressed_at: tuple[int, int] | None = None

    def play(self, program: Program) -> str:
        """Play every call in order; returns the printed output.

        Raises:
            AppError: a call the desktop refuses (the message names its line).
        """
        for call in program.calls:
            cancel.check()
            try:
                self._call(call)
            except (AppError, ArithmeticInputError) as exc:
                raise AppError(f"line {call.line}: {call.function}: {exc}") from None
        return "".join(self.output)

    # -- dispatch ------------------------------------------------------------------------

    def _call(self, call: Call) -> None:
        name, args, kwargs = call.function, call.args, call.kwargs
        if name == "print":
            self.output.append(f"{self._getter(args[0]) if kwargs.get('call') else args[0]}\n")
            return
        if name in ("time.sleep", "pyautogui.sleep"):
            seconds = max(0.0, min(_number(_arg(args, kwargs, 0, "seconds", 0)), self.sleep_cap))
            self.sleep_cap -= seconds
            cancel.sleep(seconds)
            return
        module, _, function = name.partition(".")
        if module == "computer":
            self._computer(function, args, kwargs)
            return
        handler = getattr(self, f"_pg_{function}", None)
        if handler is not None:
            handler(args, kwargs)
        # position(), size(), screenshot() outside print have no effect on the desktop

    def _getter(self, name: str) -> str:
        if name in _PLATFORM:
            return _PLATFORM[name]
        x, y = self.desktop.pointer
        return f"Point(x={x}, y={y})"

    # -- pyautogui -----------------------------------------------------------------------

    def _move_to(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[int, int]:
        """Move the pointer to the call's point, if it gives one; returns where it is."""
        point = self._point(args, kwargs)
        if point is not None:
            self.desktop.pointer = point
        return self.desktop.pointer

    def _point(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[int, int] | None:
        x = _arg(args, kwargs, 0, "x", None)
        y = _arg(args, kwargs, 1, "y", None)
        if isinstance(x, list) and len(x) == 2 and y is None:
            x, y = x
        if x is None and y is None:
            return None
        if x is None or y is None:
            raise AppError("give both x and y")
        return _pixel(_number(x), _number(y))

    def _pg_click(self, args: tuple[Any, ...], kwargs: dict[str, Any],
                  *, clicks: int | None = None, button: str | None = None) -> None:
        self._move_to(args, kwargs)
        count = clicks if clicks is not None else _count(kwargs.get("clicks", 1))
        which = button or str(kwargs.get("button", "left")).lower()
        which = _BUTTONS.get(which, which)
        if count < 1:
            return
        self.click(*self.desktop.pointer, clicks=count, button=which)

    _pg_leftClick = partialmethod(_pg_click, button="left")
    _pg_doubleClick = partialmethod(_pg_click, clicks=2)
    _pg_tripleClick = partialmethod(_pg_click, clicks=3)
    _pg_rightClick = partialmethod(_pg_click, button="right")
    _pg_middleClick = partialmethod(_pg_click, button="middle")
    _pg_moveTo = _move_to

    def _pg_moveRel(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        dx = _number(_arg(args, kwargs, 0, "xOffset", 0))
        dy = _number(_arg(args, kwargs, 1, "yOffset", 0))
        x, y = self.desktop.pointer
        self.desktop.pointer = _pixel(x + dx, y + dy)

    _pg_move = _pg_moveRel

    def _pg_mouseDown(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self._pressed_at = self._move_to(args, kwargs)

    def _pg_mouseUp(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self._move_to(args, kwargs)
        start, self._pressed_at = self._pressed_at, None
        if start is None:
            return
        if start == self.desktop.pointer:
            self.click(*start)
        else:
            self.drag(start, self.desktop.pointer)

    def _pg_dragTo(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        target = self._point(args, kwargs)
        if target is None:
            raise AppError("dragTo needs x and y")
        start = self.desktop.pointer
        self.desktop.pointer = target
        self.drag(start, target)

    def _pg_dragRel(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        start = self.desktop.pointer
        self._pg_moveRel(args, kwargs)
        self.drag(start, self.desktop.pointer)

    _pg_drag = _pg_dragRel

    def _pg_scroll(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        clicks = _number(_arg(args, kwargs, 0, "clicks", 0))
        self._move_to(args[1:], {k: v for k, v in kwargs.items() if k in ("x", "y")})
        window_there = self._browser_at(*self.desktop.pointer)
        browser = self.desktop.browser
        if window_there is not None and browser is not None:
            where = self.desktop.pointer
            self._in_browser(lambda: browser.scroll(window_there, *where, int(clicks)))
            return
        # the OpenApps window's list scrolls; every other list of the desktop's fits on screen
        with self.desktop.lock:
            placed, _ = hit(self.desktop, *self.desktop.pointer)
            if placed is not None and placed.window.app == "openapps":
                launcher.scroll(self.desktop, placed.window, int(clicks), OPENAPPS_ROWS)
                self.desktop.touch()

    _pg_hscroll = _pg_scroll
    _pg_vscroll = _pg_scroll

    def _pg_typewrite(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        message = _arg(args, kwargs, 0, "message", "")
        if isinstance(message, list):  # typewrite(['a', 'enter']) presses named keys
            for key in message:
                self.press(str(key))
            return
        if not isinstance(message, str):
            raise AppError("typewrite takes text")
        self.type_text(message)

    _pg_write = _pg_typewrite

    def _pg_press(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        keys = _arg(args, kwargs, 0, "keys", None)
        presses = _count(kwargs.get("presses", args[1] if len(args) > 1 else 1))
        names = keys if isinstance(keys, list) else [keys]
        for _ in range(max(0, min(presses, 1000))):
            cancel.check()
            for key in names:
                if not isinstance(key, str):
                    raise AppError("press takes a key name or a list of them")
                self.press(key)

    def _pg_hotkey(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        keys = list(args[0]) if len(args) == 1 and isinstance(args[0], list) else list(args)
        if not keys or not all(isinstance(k, str) for k in keys):
            raise AppError("hotkey takes key names")
        names = [key_name(k) for k in keys]
        self.combo({n for n in names if n in MODIFIERS}, [n for n in names if n not in MODIFIERS])

    def _pg_keyDown(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        key = key_name(str(_arg(args, kwargs, 0, "key", "")))
        if key in MODIFIERS:
            self.desktop.held.add(key)
        else:
            self.press(key)

    def _pg_keyUp(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.desktop.held.discard(key_name(str(_arg(args, kwargs, 0, "key", ""))))

    # -- computer.* (WAA Navi) -------------------------------------------------------------

    def _computer(self, function: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if function in ("mouse.move_abs", "mouse.move_rel"):
            x = _number(_arg(args, kwargs, 0, "x", 0))
            y = _number(_arg(args, kwargs, 1, "y", 0))
            if function == "mouse.move_abs":  # normalized 0..1 coordinates, as Navi sends them
                self.desktop.pointer = _pixel(x * WIDTH if 0 <= x <= 1 else x,
                                              y * HEIGHT if 0 <= y <= 1 else y)
            else:
                px, py = self.desktop.pointer
                self.desktop.pointer = _pixel(px + x, py + y)
        elif function in _NAVI_CLICKS:
            self.click(*self.desktop.pointer, **_NAVI_CLICKS[function])
        elif function in ("mouse.scroll", "mouse.drag"):
            pass  # not played here (Navi's drag names elements by ids this desktop lacks)
        elif function == "keyboard.write":
            self.type_text(str(_arg(args, kwargs, 0, "text", "")))
        elif function == "keyboard.press":
            self.press(str(_arg(args, kwargs, 0, "key", "")))
        elif function == "keyboard.hotkey":
            self._pg_hotkey(args, kwargs)
        elif function == "os.open_program":
            self.launch(str(_arg(args, kwargs, 0, "prog_name", "")))
        elif function == "clipboard.copy_text":
            with self.desktop.lock:
                self.desktop.clipboard = str(_arg(args, kwargs, 0, "text", ""))
                self.desktop.touch()
        elif function == "clipboard.paste":
            self.type_text(self.desktop.clipboard)

    # -- mouse -------------------------------------------------------------------------------

    def _browser_at(self, x: int, y: int) -> BrowserWindow | None:
        """The browser window at a screen point (browser windows stand in front)."""
        browser = self.desktop.browser
        return browser.window_at(x, y) if browser is not None else None

    def _in_browser(self, action: Any) -> None:
        try:
            action()
        except BrowserError as exc:
            raise AppError(f"the browser: {exc}") from None

    def click(self, x: int, y: int, *, clicks: int = 1, button: str = "left") -> None:
        """A click at a point: raises the window there and acts on its control (a browser
        window there gets the click at that point of its page)."""
        desktop = self.desktop
        window_there = self._browser_at(x, y)
        if window_there is not None and desktop.browser is not None:
            browser = desktop.browser
            self._in_browser(lambda: browser.click(window_there, x, y, clicks=clicks,
                                                   button=button))
            return
        if desktop.browser is not None:
            desktop.browser.focused = False  # the click went to the desktop's windows
        with desktop.lock:
            placed, control = hit(desktop, x, y)
            if placed is None:
                if control is not None and control.key.startswith("task:"):
                    target = desktop.window_by_id(int(control.key.split(":", 1)[1]))
                    if target is not None:
                        desktop.raise_window(target)
                return
            window = placed.window
            desktop.raise_window(window)
            if control is not None and button != "middle":
                self._blur(window, control.key)
                self._activate(window, control, clicks=clicks, right=button == "right")
            desktop.touch()

    def _blur(self, window: Window, new_key: str) -> None:
        """Leaving a settings field commits what was typed in it (as Settings does)."""
        if window.app == "settings" and window.focus and window.focus != new_key:
            self._commit_setting(window)
        if window.app == "explorer" and window.renaming and not new_key.startswith("item:"):
            self._commit_rename(window)

    def _activate(self, window: Window, control: Control, *, clicks: int, right: bool) -> None:
        kind, _, arg = control.key.partition(":")
        settings = self.desktop.settings
        if kind == "close":
            self._close(window)
        elif kind == "doc":
            window.focus, window.select_all = "doc", clicks >= 3
        elif kind == "field":
            window.fields.setdefault(arg, control.value)
            if not window.is_dialog:
                window.fields[arg] = control.value
            # clicking an edit selects its text; in a text area it puts the caret at the end
            lines = window.app == "openapps" and launcher.multiline(self.desktop, arg)
            window.focus, window.select_all = control.key, not lines or clicks >= 3
        elif kind == "item":
            self._click_item(window, arg, clicks=clicks, right=right)
        elif kind == "tool":
            self._explorer_tool(window, arg)
        elif kind == "toggle":
            settings.set(arg, "off" if settings.get(arg) == "on" else "on")
        elif kind == "dialog":
            self.desktop.open_dialog(arg, owner=window)
        elif kind == "calc":
            self._calc_key(window, arg)
        elif kind == "ok":
            self._dialog_ok(window)
        elif kind == "cancel":
            self._close_dialog(window)
        elif kind == "openapps":
            launcher.press(self.desktop, window, arg)

    def drag(self, start: tuple[int, int], end: tuple[int, int]) -> None:
        """A drag: explorer items dropped on a folder item move into it (all the selected
        items when the drag starts on one of them); a drag that starts on a browser window
        is played in its page, press to release."""
        desktop = self.desktop
        window_there = self._browser_at(*start)
        if window_there is not None and desktop.browser is not None:
            browser = desktop.browser
            self._in_browser(lambda: browser.drag(window_there, start, end))
            return
        with desktop.lock:
            source_win, source = hit(desktop, *start)
            target_win, target = hit(desktop, *end)
            if (
                source_win is None or source is None or target is None
                or not source.key.startswith("item:") or not target.key.startswith("item:")
                or target_win is None or source_win.window is not target_win.window
            ):
                return
            window = source_win.window
            folder = window.path or "C:\\"
            dst = _join(folder, target.name)
            moving = window.selection if source.name in window.selection else [source.name]
            if not desktop.host(dst).is_dir() or target.name in moving:
                return
            for name in list(moving):
                desktop.move(_join(folder, name), dst)
            window.selection = []

    # -- keyboard ----------------------------------------------------------------------------

    def type_text(self, text: str) -> None:
        """Type text into the focused control, character by character (``\\n`` is Enter)."""
        browser = self.desktop.browser
        if browser is not None and browser.front() is not None:
            self._in_browser(lambda: browser.type_text(text))
            return
        buffer = ""
        for count, char in enumerate(text):
            if not count % 1024:
                cancel.check()  # a long text stops when its caller is gone
            if char in "\n\t":
                if buffer:
                    self._type(buffer)
                    buffer = ""
                self.press(char)
            else:
                buffer += char
        if buffer:
            self._type(buffer)

    def _type(self, text: str) -> None:
        """Insert typed text as every input changes the desktop: under its lock, and
        recorded, so the next screenshot shows it (it is cached per desktop version)."""
        with self.desktop.lock:
            self._insert(text)
            self.desktop.touch()

    def press(self, key: str) -> None:
        """Press and release one key (with the modifiers held down by ``keyDown``)."""
        name = key_name(key)
        if name in MODIFIERS:
            return  # a modifier alone does nothing here (the Start menu is not simulated)
        self.combo(set(self.desktop.held), [name])

    def combo(self, modifiers: set[str], keys: list[str]) -> None:
        """A key with modifiers held (``hotkey('ctrl', 's')`` -> ``({'ctrl'}, ['s'])``)."""
        desktop = self.desktop
        browser = desktop.browser
        if browser is not None and browser.front() is not None:
            for key in keys:
                name = key.lower() if len(key) > 1 else key
                self._in_browser(lambda n=name: browser.press(n, frozenset(modifiers)))
            return
        with desktop.lock:
            for key in keys or [""]:
                self._key(modifiers, key.lower() if len(key) > 1 else key)
            desktop.touch()

    def _key(self, mods: set[str], key: str) -> None:
        desktop = self.desktop
        lower = key.lower()
        if mods == {"win"} and lower == "r":
            desktop.open_dialog("run")
            return
        if mods == {"win"} and lower in _WIN_APPS:
            desktop.open_app(_WIN_APPS[lower])
            return
        if mods == {"alt"} and lower == "f4":
            if desktop.active is not None:
                desktop.close()
            return
        window = desktop.active
        if window is None:
            if mods or len(key) == 1 or lower in ("enter", "tab", "backspace", "delete"):
                return
            raise AppError(f"unknown key {key!r}")
        if mods == {"ctrl"}:
            self._ctrl(window, lower)
            return
        if mods == {"ctrl", "shift"}:
            if lower == "s" and window.app == "notepad":
                desktop.open_dialog("save_as", owner=window)
            elif lower == "n" and window.app == "explorer":
                self._explorer_tool(window, "New folder")
            return
        if mods and mods != {"shift"}:
            return  # other shortcuts do nothing on this desktop
        if len(key) == 1:
            self._insert(key.upper() if mods == {"shift"} and key.isalpha() else key)
            return
        if lower == "space":
            self._insert(" ")
        elif lower == "enter":
            self._enter(window)
        elif lower == "tab":
            self._tab(window, backwards=mods == {"shift"})
        elif lower == "backspace":
            self._backspace(window)
        elif lower == "delete":
            self._delete(window)
        elif lower == "escape":
            self._escape(window)
        elif lower == "f2" and window.app == "explorer":
            self._explorer_tool(window, "Rename")
        elif lower in ("up", "down", "left", "right", "home", "end", "pageup", "pagedown",
                       "capslock", "numlock", "printscreen", "insert", "menu") or (
                           lower.startswith("f") and lower[1:].isdigit()):
            pass  # the caret stays at the end; these move nothing this desktop shows
        else:
            raise AppError(f"unknown key {key!r}")

    def _ctrl(self, window: Window, key: str) -> None:
        desktop = self.desktop
        if key == "a":
            if window.app == "explorer" and not window.focus.startswith("field:"):
                window.selection = desktop.list_names(window.path or "C:\\")
            else:
                window.select_all = True
        elif key == "s" and window.app == "notepad":
            if window.path:
                desktop.save_window(window)
            else:
                desktop.open_dialog("save_as", owner=window)
        elif key == "n" and window.app == "notepad":
            desktop.open_app("notepad")
        elif key == "w":
            self._close(window)
        elif key in ("l", "d", "e") and window.app == "explorer":
            window.fields["Address"] = window.path or "C:\\"
            window.focus, window.select_all = "field:Address", True
        elif key in ("c", "x") and window.app == "explorer":
            self._explorer_tool(window, "Copy" if key == "c" else "Cut")
        elif key == "v" and window.app == "explorer":
            self._explorer_tool(window, "Paste")
        elif key == "v":
            self._insert(desktop.clipboard)
        elif key == "c" and window.app == "notepad" and window.select_all:
            desktop.clipboard = window.text

    # -- text editing --------------------------------------------------------------------------

    def _insert(self, text: str) -> None:
        window = self.desktop.active
        if window is None:
            return
        if window.app == "notepad":
            window.text = text if window.select_all else window.text + text
            window.select_all = False
        elif (field := _edited_field(window)) is not None:
            name, current = field
            window.fields[name] = text if window.select_all else current + text
            window.select_all = False
            if window.app == "calc":
                self._calc_dates(window)
            elif window.app == "openapps":
                launcher.typed(self.desktop, window, name)
        elif window.app == "calc" and window.page != "date" and not window.focus:
            for char in text:
                if char == "=":
                    self._calc_key(window, "=")
                elif char in "0123456789.+-*/()%xX":
                    self._calc_key(window, "*" if char in "xX" else char)

    def _backspace(self, window: Window) -> None:
        if window.app == "notepad":
            window.text = "" if window.select_all else window.text[:-1]
        elif (field := _edited_field(window)) is not None:
            name, current = field
            window.fields[name] = "" if window.select_all else current[:-1]
            if window.app == "openapps":
                launcher.typed(self.desktop, window, name)
        elif window.app == "calc":
            window.display = window.display[:-1] or "0"
        window.select_all = False

    def _delete(self, window: Window) -> None:
        if window.app == "explorer" and window.renaming is None and not window.focus:
            folder = window.path or "C:\\"
            for name in list(window.selection):
                self.desktop.delete(_join(folder, name))
            window.selection = []
        elif window.select_all:
            self._backspace(window)

    def _enter(self, window: Window) -> None:
        if window.is_dialog:
            self._dialog_ok(window)
        elif window.app == "notepad":
            self._insert("\n")
        elif window.app == "settings" and window.focus:
            self._commit_setting(window)
        elif window.app == "explorer":
            if window.renaming is not None:
                self._commit_rename(window)
            elif window.focus == "field:Address":
                self._navigate(window, window.fields.get("Address", ""))
            elif window.selection:
                self._open_item(window, window.selection[0])
        elif window.app == "calc" and window.page != "date":
            self._calc_key(window, "=")
        elif window.app == "openapps" and self._in_text_area(window):
            self._insert("\n")
        elif window.app == "openapps" and window.focus.startswith("field:"):
            launcher.submit(self.desktop, window)

    def _tab(self, window: Window, *, backwards: bool) -> None:
        if window.app == "notepad":
            self._insert("\t")
            return
        names = [n for n in window.fields] if window.is_dialog else []
        if window.app == "calc" and window.page == "date":
            names = ["From", "To"]
        if window.app == "openapps" and self._in_text_area(window) and not backwards:
            self._insert(launcher.INDENT)
            return
        if window.app == "openapps":
            names = list(launcher.form(self.desktop))
        if window.app == "settings" and window.focus:
            self._commit_setting(window)
            return
        if not names:
            return
        current = window.focus.split(":", 1)[1] if window.focus.startswith("field:") else None
        index = names.index(current) if current in names else -1
        index = (index + (-1 if backwards else 1)) % len(names)
        window.focus, window.select_all = f"field:{names[index]}", True
        window.fields.setdefault(names[index], "")
        if window.app == "openapps" and self._in_text_area(window):
            window.select_all = False  # a text area gets the caret at its end, as on a click

    def _in_text_area(self, window: Window) -> bool:
        """The focus is in the OpenApps page's multi-line field (Enter and Tab type there)."""
        name = window.focus.split(":", 1)[1] if window.focus.startswith("field:") else ""
        return bool(name) and launcher.multiline(self.desktop, name)

    def _escape(self, window: Window) -> None:
        if window.is_dialog:
            self._close_dialog(window)
        elif window.app == "explorer" and window.renaming is not None:
            window.renaming = None
            window.fields.pop("Rename", None)
        else:
            window.focus, window.select_all = "", False

    # -- dialogs -------------------------------------------------------------------------------

    def _close(self, window: Window) -> None:
        """Close a window (a dialog returns to its owner; unsaved text is discarded)."""
        if window.is_dialog:
            self._close_dialog(window)
            return
        desktop = self.desktop
        if window in desktop.windows:
            desktop.windows.remove(window)
        for dialog in [w for w in desktop.windows if w.owner == window.wid]:
            desktop.windows.remove(dialog)
        desktop.touch()

    def _close_dialog(self, window: Window) -> None:
        desktop = self.desktop
        if window in desktop.windows:
            desktop.windows.remove(window)
        owner = desktop.window_by_id(window.owner)
        if owner is not None:
            desktop.raise_window(owner)
        desktop.touch()

    def _dialog_ok(self, window: Window) -> None:
        desktop, fields = self.desktop, window.fields
        if window.app == "run":
            text = fields.get("Open", "").strip()
            if not text:
                return
            self._close_dialog(window)
            self.launch(text)
            return
        owner = desktop.window_by_id(window.owner)
        if window.app == "save_as":
            if owner is None:
                raise AppError("the window this Save As belongs to is closed")
            name = fields.get("File name", "").strip().strip('"')
            if not name:
                raise AppError("type a file name first")
            if ":" not in name and not name.startswith("\\"):
                name = "C:\\Users\\Docker\\Documents\\" + name  # the dialog opens in Documents
            desktop.save_window(owner, name)
        elif window.app == "timer_dialog":
            seconds = parse_duration(fields.get("Duration", ""))
            label = fields.get("Name", "").strip() or f"Timer ({format_duration(seconds)})"
            desktop.clock.timers.append(Timer(label=label, seconds=seconds))
        elif window.app == "alarm_dialog":
            hour, minute = parse_clock_time(fields.get("Time", ""))
            label = fields.get("Name", "").strip() or "Alarm"
            desktop.clock.alarms.append(Alarm(time=f"{hour:02d}:{minute:02d}", label=label))
        elif window.app == "worldclock_dialog":
            city = fields.get("City", "").strip()
            if not city:
                raise AppError("type a city first")
            if city.lower() not in (c.lower() for c in desktop.clock.world_clocks):
                desktop.clock.world_clocks.append(city)
        self._close_dialog(window)

    def launch(self, text: str) -> Window:
        """What the Run dialog (and Navi's ``open_program``) does with a command line:
        ``notepad``, ``notepad C:\\...\\a.txt``, ``explorer C:\\...``, ``ms-settings:``, ``calc``,
        or a file or folder path.

        Raises:
            AppError: Windows cannot find it.
        """
        desktop = self.desktop
        try:
            words = split_command(text)
        except CommandSyntaxError:  # unbalanced quotes: the whole line names it
            words = [text] if text.strip() else []
        if words and words[0].lower() == "start" and len(words) > 1:
            words = words[1:]
        if not words:
            raise AppError("nothing to open")
        app = app_name(words[0])
        if app is not None:
            page = words[0].split(":", 1)[1] if ":" in words[0] else None
            return desktop.open_app(app, " ".join(words[1:]) if len(words) > 1 else page)
        target = text.strip().strip('"')
        if ":" in target or target.startswith("\\"):
            return desktop.open_path(target)
        raise AppError(f"Windows cannot find '{text}'. Make sure you typed the name correctly")

    # -- settings ------------------------------------------------------------------------------

    def _commit_setting(self, window: Window) -> None:
        focus, window.focus = window.focus, ""
        window.select_all = False
        if not focus.startswith("field:"):
            return
        label = focus.split(":", 1)[1]
        value = window.fields.pop(label, None)
        setting = _SETTING_BY_LABEL.get(label)
        if setting is not None and value is not None and value.strip():
            self.desktop.settings.set(setting, value)

    # -- explorer ------------------------------------------------------------------------------

    def _click_item(self, window: Window, name: str, *, clicks: int, right: bool) -> None:
        window.focus = ""
        if window.renaming is not None and window.renaming != name:
            self._commit_rename(window)
        if "ctrl" in self.desktop.held and not right:
            if name in window.selection:
                window.selection.remove(name)
            else:
                window.selection.append(name)
            return
        if not (right and name in window.selection):
            window.selection = [name]
        if clicks >= 2 and not right:
            self._open_item(window, name)

    def _open_item(self, window: Window, name: str) -> None:
        path = _join(window.path or "C:\\", name)
        if self.desktop.host(path).is_dir():
            self._navigate(window, path)
        else:
            self.desktop.open_path(path)

    def _navigate(self, window: Window, path: str) -> None:
        path = path.strip().strip('"')
        host = self.desktop.host(path)
        if not host.is_dir():
            raise AppError(f"Windows can't find '{path}'")
        window.path = self.desktop.sandbox.to_guest(host)
        window.selection, window.focus, window.renaming = [], "", None
        window.fields.pop("Address", None)

    def _explorer_tool(self, window: Window, tool: str) -> None:
        desktop = self.desktop
        folder = window.path or "C:\\"
        if tool == "New folder":
            names = {n.lower() for n in desktop.list_names(folder)}
            name, number = "New folder", 2
            while name.lower() in names:
                name, number = f"New folder ({number})", number + 1
            desktop.make_folder(_join(folder, name))
            window.selection, window.renaming = [name], name
            window.fields["Rename"], window.select_all, window.focus = name, True, ""
        elif tool == "Rename":
            if len(window.selection) != 1:
                raise AppError("select one item to rename")
            window.renaming = window.selection[0]
            window.fields["Rename"], window.select_all = window.renaming, True
        elif tool == "Delete":
            window.focus = ""
            self._delete(window)
        elif tool in ("Copy", "Cut"):
            if not window.selection:
                raise AppError(f"select something to {tool.lower()} first")
            desktop.file_clipboard = (tool.lower(), [_join(folder, n) for n in window.selection])
        elif tool == "Paste":
            if desktop.file_clipboard is None:
                raise AppError("nothing to paste: copy or cut files first")
            mode, paths = desktop.file_clipboard
            for path in paths:
                (desktop.copy if mode == "copy" else desktop.move)(path, folder)
            if mode == "cut":
                desktop.file_clipboard = None
            window.selection = [p.rsplit("\\", 1)[-1] for p in paths]

    def _commit_rename(self, window: Window) -> None:
        old, new = window.renaming, window.fields.pop("Rename", "").strip()
        window.renaming, window.select_all = None, False
        if old is None or not new or new == old:
            return
        self.desktop.rename(_join(window.path or "C:\\", old), new)
        window.selection = [new]

    # -- calculator ----------------------------------------------------------------------------

    def _calc_key(self, window: Window, key: str) -> None:
        if key == "mode":
            window.page = "" if window.page == "date" else "date"
            window.focus = "field:From" if window.page == "date" else ""
            window.display = "" if window.page == "date" else "0"
            window.fresh = True
        elif key == "C":
            window.display, window.fresh = "0", True
        elif key == "=":
            expression = window.display
            window.display, window.fresh = calculate(expression), True
            window.record(history_line(expression, window.display))
        else:
            if window.fresh and (key.isdigit() or key in ".("):
                window.display = ""
            window.fresh = False
            shown = "" if window.display == "0" and key.isdigit() else window.display
            window.display = shown + key

    def _calc_dates(self, window: Window) -> None:
        first, second = window.fields.get("From", ""), window.fields.get("To", "")
        try:
            days = days_between(first, second)
        except (ArithmeticInputError, ValueError):
            window.display = ""
            return
        window.display = str(days)  # the number, as the calculator's own result (shown "N days")
        window.record_dates(date_history_line(first, second, days))


def play(desktop: Desktop, program: Program) -> str:
    """Play a checked program on a desktop; returns what it printed.

    Raises:
        AppError: a call the desktop refused (earlier calls have happened).
    """
    return Player(desktop).play(program)


def _edited_field(window: Window) -> tuple[str, str] | None:
    """The field that typing edits (an explorer rename, or the focused field) and its text."""
    if window.app == "explorer" and window.renaming is not None:
        return "Rename", window.fields.get("Rename", window.renaming)
    if window.focus.startswith("field:"):
        name = window.focus.split(":", 1)[1]
        return name, window.fields.get(name, "")
    return None


def _join(folder: str, name: str) -> str:
    return folder.rstrip("\\") + "\\" + name


def _arg(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str,
         default: Any) -> Any:
    if name in kwargs:
        return kwargs[name]
    return args[index] if len(args) > index else default


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise AppError(f"{value!r} is not a number")
    if not math.isfinite(value):
        raise AppError(f"{value!r} is not a finite number")
    return float(value)


def _count(value: Any) -> int:
    """A repeat count (clicks, presses), 0 to 1000."""
    number = _number(value)
    if not 0 <= number <= 1000:
        raise AppError(f"{value!r} is not a count from 0 to 1000")
    return int(number)


def _pixel(x: float, y: float) -> tuple[int, int]:
    """The screen pixel a pointer at (``x``, ``y``) ends on. Windows keeps the pointer on the
    screen (``SetCursorPos`` stops it at the edge), and WAA's client turns pyautogui's
    fail-safe off, so a point beyond an edge is not an error there: the pointer, and a click
    made there, land on the edge, as they do here."""
    return (min(max(int(round(x)), 0), WIDTH - 1), min(max(int(round(y)), 0), HEIGHT - 1))


__all__ = ["Player", "WindowLayout", "key_name", "play"]
