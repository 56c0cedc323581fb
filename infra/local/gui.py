"""Where things are on the simulated screen: windows, their controls, and the taskbar.

One layout serves three readers, so they always agree: the screenshot draws it
(:mod:`infra.local.render`), the accessibility tree lists it with each control's ``rect``, and a
click is played against it (:mod:`infra.local.inputs`): a click at a point lands on the
topmost control whose rectangle holds that point, which is what the screenshot shows there.

Positions depend only on the open windows (each keeps the cascade slot it was opened in), so the
same task set up the same way has the same layout every time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from infra.local import launcher
from infra.local.apps import DIALOGS, SETTING_KEYS, Window, format_duration
from infra.local.desktop import Desktop
from infra.local.planner import APP_PATHS, APP_TITLES

WIDTH, HEIGHT = 1280, 720
TASKBAR = 40
WIN_W, WIN_H = 760, 460
TITLE_H = 28
ROW_H = 24
OPENAPPS_RECT = (100, 20, 1180, 670)
"""The OpenApps window: wide, as a browser showing a web app is."""

Rect = tuple[int, int, int, int]
"""``(left, top, right, bottom)`` in screen pixels; right and bottom are exclusive."""


@dataclass(frozen=True)
class Control:
    """One control on screen.

    Attributes:
        role: UI Automation control type (``Button``, ``Edit``, ``ListItem``, ``Document``...).
        name: Its accessible name (a button's label, an edit's caption, a file's name).
        rect: Where it is.
        key: What a click on it does (``close``, ``field:Time zone``, ``item:a.txt``...);
            empty for text that does nothing.
        value: Its value (an edit's text, a switch's ``On``/``Off``).
        focused: It has the keyboard focus.
        selected: A selected list item.
    """

    role: str
    name: str
    rect: Rect
    key: str = ""
    value: str = ""
    focused: bool = False
    selected: bool = False

    def contains(self, x: int, y: int) -> bool:
        """True when the point is inside the control."""
        left, top, right, bottom = self.rect
        return left <= x < right and top <= y < bottom

    @property
    def center(self) -> tuple[int, int]:
        """The middle of the control (where an agent would click)."""
        left, top, right, bottom = self.rect
        return (left + right) // 2, (top + bottom) // 2


@dataclass(frozen=True)
class WindowLayout:
    """One window on screen, with its controls (title bar buttons first)."""

    window: Window
    rect: Rect
    active: bool
    controls: list[Control] = field(default_factory=list)


def window_rect(window: Window) -> Rect:
    """Where a window sits: apps cascade by slot from the top left, dialogs are centred
    (the Run dialog sits above the Start button, as on Windows)."""
    if window.app == "run":
        return 12, HEIGHT - TASKBAR - 212, 432, HEIGHT - TASKBAR - 12
    if window.is_dialog:
        return 430, 230, 850, 450
    if window.app == "openapps":
        return OPENAPPS_RECT
    left, top = 60 + 36 * (window.slot % 8), 30 + 30 * (window.slot % 8)
    return left, top, left + WIN_W, top + WIN_H


def layout(desktop: Desktop) -> list[WindowLayout]:
    """Every open window, bottom first (the last one is in front). Call under ``desktop.lock``
    or accept a picture of a moment."""
    with desktop.lock:
        windows = list(desktop.windows)
        result = []
        for index, window in enumerate(windows):
            rect = window_rect(window)
            active = index == len(windows) - 1
            result.append(WindowLayout(window, rect, active, _controls(desktop, window, rect)))
        return result


def taskbar(desktop: Desktop) -> list[Control]:
    """The taskbar: one button per open app window (a click brings it to the front)."""
    with desktop.lock:
        apps = [w for w in desktop.windows if not w.is_dialog]
    top = HEIGHT - TASKBAR + 4
    return [
        Control("Button", w.title, (90 + 150 * i, top, 230 + 150 * i, HEIGHT - 4), f"task:{w.wid}")
        for i, w in enumerate(apps)
    ]


def hit(desktop: Desktop, x: int, y: int) -> tuple[WindowLayout | None, Control | None]:
    """What a click at ``(x, y)`` lands on: the topmost window there and its control, if any
    (``(None, taskbar button)`` on the taskbar, ``(None, None)`` on the wallpaper)."""
    with desktop.lock:
        if y >= HEIGHT - TASKBAR:
            return None, next((c for c in taskbar(desktop) if c.contains(x, y)), None)
        for placed in reversed(layout(desktop)):
            left, top, right, bottom = placed.rect
            if left <= x < right and top <= y < bottom:
                return placed, next((c for c in reversed(placed.controls)
                                     if c.key and c.contains(x, y)), None)
        return None, None


# -- controls per app ------------------------------------------------------------------------


def _controls(desktop: Desktop, window: Window, rect: Rect) -> list[Control]:
    left, top, right, bottom = rect
    controls = [Control("Button", "Close", (right - 30, top + 2, right - 4, top + TITLE_H - 2),
                        "close")]
    body_top = top + TITLE_H + 6
    if window.is_dialog:
        controls += _dialog(window, left, body_top, right, bottom)
    elif window.app == "notepad":
        controls.append(Control("Document", "Text editor", (left + 4, body_top, right - 4,
                                                             bottom - 4), "doc", window.text,
                                focused=True))
    elif window.app == "explorer":
        controls += _explorer(desktop, window, left, body_top, right, bottom)
    elif window.app == "settings":
        controls += _settings(desktop, window, left, body_top)
    elif window.app == "clock":
        controls += _clock(desktop, left, body_top, bottom)
    elif window.app == "calc":
        controls += _calc(window, left, body_top, right)
    elif window.app == "openapps":
        controls += _openapps(desktop, window, left + 12, body_top, right - 12)
    return controls


def _field(window: Window, name: str, rect: Rect, committed: str = "") -> Control:
    key = f"field:{name}"
    focused = window.focus == key
    value = window.fields.get(name, committed) if focused or window.is_dialog else committed
    return Control("Edit", name, rect, key, value, focused=focused)


def _dialog(window: Window, left: int, top: int, right: int, bottom: int) -> list[Control]:
    title, names = DIALOGS[window.app]
    controls: list[Control] = []
    if window.app == "run":
        controls.append(Control("Text", "Type the name of a program, folder or document",
                                (left + 16, top, right - 16, top + 20)))
        top += 28
    for index, name in enumerate(names):
        row = top + index * 40
        controls.append(Control("Text", f"{name}:", (left + 16, row + 4, left + 110, row + 28)))
        controls.append(_field(window, name, (left + 116, row, right - 16, row + 30)))
    ok = "OK" if window.app == "run" else "Save"
    controls.append(Control("Button", ok, (right - 196, bottom - 46, right - 106, bottom - 14),
                            "ok"))
    controls.append(Control("Button", "Cancel", (right - 96, bottom - 46, right - 16,
                                                 bottom - 14), "cancel"))
    return controls


EXPLORER_TOOLS = ("New folder", "Cut", "Copy", "Paste", "Rename", "Delete")


def _explorer(
    desktop: Desktop, window: Window, left: int, top: int, right: int, bottom: int
) -> list[Control]:
    path = window.path or "C:\\"
    controls = [_field(window, "Address", (left + 8, top, right - 8, top + 26), path)]
    tool_top = top + 32
    for index, tool in enumerate(EXPLORER_TOOLS):
        x = left + 8 + index * 96
        controls.append(Control("Button", tool, (x, tool_top, x + 90, tool_top + 26),
                                f"tool:{tool}"))
    try:
        names = desktop.list_names(path)
    except (ValueError, OSError):
        names = []
    row = tool_top + 34
    for name in names:
        if row + ROW_H > bottom - 4:
            break
        renaming = window.renaming == name
        value = window.fields.get("Rename", name) if renaming else ""
        controls.append(Control("ListItem", name, (left + 8, row, right - 8, row + ROW_H),
                                f"item:{name}", value, focused=renaming,
                                selected=name in window.selection))
        row += ROW_H
    if not names:
        controls.append(Control("Text", "This folder is empty.", (left + 8, row, right - 8,
                                                                  row + ROW_H)))
    return controls


SETTING_LABELS = {
    "night_light": "Night light",
    "night_light_start": "Night light start",
    "night_light_end": "Night light end",
    "notifications": "Notifications",
    "do_not_disturb": "Do not disturb",
    "dark_mode": "Dark mode",
    "time_zone": "Time zone",
}
"""Each setting's label on screen (its accessible name)."""

SWITCHES = ("night_light", "notifications", "do_not_disturb", "dark_mode")


def _settings(desktop: Desktop, window: Window, left: int, top: int) -> list[Control]:
    controls: list[Control] = []
    for index, key in enumerate(SETTING_KEYS):
        row = top + 8 + index * 40
        label = SETTING_LABELS[key]
        controls.append(Control("Text", label, (left + 20, row + 6, left + 300, row + 28)))
        value = desktop.settings.get(key)
        box = (left + 320, row, left + 560, row + 32)
        if key in SWITCHES:
            controls.append(Control("Button", label, box, f"toggle:{key}",
                                    "On" if value == "on" else "Off"))
        else:
            controls.append(_field(window, label, box, value))
    return controls


CLOCK_SECTIONS = (("Timers", "Add timer", "timer_dialog"),
                  ("Alarms", "Add alarm", "alarm_dialog"),
                  ("World clock", "Add world clock", "worldclock_dialog"))


def _clock(desktop: Desktop, left: int, top: int, bottom: int) -> list[Control]:
    clock = desktop.clock
    items = (
        [f"{t.label}  {format_duration(t.seconds)}  {'running' if t.running else 'paused'}"
         for t in clock.timers],
        [f"{a.time}  {a.label}  {'on' if a.enabled else 'off'}" for a in clock.alarms],
        list(clock.world_clocks),
    )
    controls: list[Control] = []
    for index, (heading, button, dialog) in enumerate(CLOCK_SECTIONS):
        x = left + 12 + index * 248
        controls.append(Control("Text", heading, (x, top + 4, x + 236, top + 26)))
        controls.append(Control("Button", button, (x, top + 32, x + 236, top + 64),
                                f"dialog:{dialog}"))
        controls += _list_items(items[index], x, top + 72, x + 236, bottom - 4)
    return controls


CALC_KEYS = ("7", "8", "9", "/", "4", "5", "6", "*", "1", "2", "3", "-", "0", ".", "=", "+")
CALC_NAMES = {"/": "Divide", "*": "Multiply", "-": "Minus", "+": "Plus", "=": "Equals",
              ".": "Decimal separator"}
"""Calculator keys' accessible names (digits are named by themselves, as on Windows)."""


def _calc(window: Window, left: int, top: int, right: int) -> list[Control]:
    date_mode = window.page == "date"
    controls = [
        Control("Button", "Standard" if date_mode else "Date calculation",
                (left + 12, top, left + 200, top + 30), "calc:mode"),
    ]
    if date_mode:
        controls.append(Control("Text", "From:", (left + 12, top + 50, left + 80, top + 74)))
        controls.append(_field(window, "From", (left + 90, top + 44, left + 400, top + 76),
                               window.fields.get("From", "")))
        controls.append(Control("Text", "To:", (left + 12, top + 94, left + 80, top + 118)))
        controls.append(_field(window, "To", (left + 90, top + 88, left + 400, top + 120),
                               window.fields.get("To", "")))
        days = window.display
        shown = f"{days} day{'' if days == '1' else 's'}" if days else ""
        controls.append(Control("Text", "Difference", (left + 12, top + 140, left + 400,
                                                       top + 176), value=shown))
        return controls
    controls.append(Control("Text", "Display", (left + 12, top + 40, right - 12, top + 90),
                            value=window.display))
    for index, key in enumerate(CALC_KEYS):
        col, row = index % 4, index // 4
        x, y = left + 12 + col * 110, top + 100 + row * 64
        controls.append(Control("Button", CALC_NAMES.get(key, key), (x, y, x + 100, y + 56),
                                f"calc:{key}"))
    x = left + 12 + 4 * 110
    controls.append(Control("Button", "Clear", (x, top + 100, x + 100, top + 156), "calc:C"))
    # The History pane fills the space under Clear, beside the keys.
    return controls + _calc_history(window, x, top + 168, right - 12, top + 356)


def _calc_history(window: Window, left: int, top: int, right: int,
                  bottom: int) -> list[Control]:
    """The History pane: newest calculation first, as many as fit, as Windows lists them."""
    controls = [Control("Text", "History", (left, top, right, top + ROW_H))]
    if not window.history:
        controls.append(Control("Text", "There's no history yet",
                                (left, top + ROW_H, right, top + 2 * ROW_H)))
        return controls
    return controls + _list_items(window.history[::-1], left, top + ROW_H, right, bottom)


# below the tallest form (the calendar's two rows of fields and its submit button) and its heading
OPENAPPS_LIST_TOP = OPENAPPS_RECT[1] + TITLE_H + 6 + 220
OPENAPPS_ROWS = (OPENAPPS_RECT[3] - 4 - OPENAPPS_LIST_TOP) // ROW_H
"""How many entries of a page's list the OpenApps window shows at once (the wheel scrolls)."""


def _openapps(desktop: Desktop, window: Window, left: int, top: int,
              right: int) -> list[Control]:
    """The launcher's app as OpenApps draws it: the apps' buttons, the page's heading, its
    form with the submit button and any refusal, and its list (a row an entry)."""
    app = desktop.apps.planner.app
    controls = []
    x = left
    for key in APP_PATHS:
        name = "Return to List of Apps" if key == "start_page" else APP_TITLES[key]
        width = 190 if key == "start_page" else 150
        controls.append(Control("Button", name, (x, top, x + width, top + 30),
                                f"openapps:goto:{key}"))
        x += width + 8
    heading = "Welcome to OpenApps!" if app == "start_page" else APP_TITLES[app]
    controls.append(Control("Text", heading, (left, top + 44, right, top + 66)))
    # the one-line fields in a grid of three; a page's text area has a place of its own
    fields = [name for name in launcher.form(desktop) if not launcher.multiline(desktop, name)]
    for index, name in enumerate(fields):
        col, row = index % 3, index // 3
        x, y = left + col * 352, top + 76 + row * 40
        controls.append(Control("Text", f"{name}:", (x, y + 6, x + 92, y + 28)))
        controls.append(_openapps_field(window, name, (x + 96, y, x + 340, y + 30)))
    if fields:
        y = top + 76 + 40 * ((len(fields) + 2) // 3)
        controls.append(Control("Button", launcher.SUBMIT[app], (left, y, left + 150, y + 30),
                                "openapps:submit"))
        if window.notice:
            controls.append(Control("Text", "Error", (left + 166, y + 4, right, y + 28),
                                    value=window.notice))
    if app in LIST_HEADINGS:
        list_right = left + 300 if app == "codeeditor" else right
        controls.append(Control("Text", LIST_HEADINGS[app], (left, OPENAPPS_LIST_TOP - 28,
                                                             list_right, OPENAPPS_LIST_TOP - 6)))
        controls += _rows(window, _entries(desktop, window), left, list_right, EMPTY_LISTS[app])
    if app in launcher.MULTILINE:
        name = launcher.MULTILINE[app]
        controls.append(_openapps_field(window, name, (left + 320, OPENAPPS_LIST_TOP - 28,
                                                       right, OPENAPPS_RECT[3] - 8)))
    return controls


LIST_HEADINGS = {"calendar": "Events", "map": "Saved Locations", "todo": "Todos",
                 "messages": "Messages", "codeeditor": "Files"}
"""Each OpenApps page's list, by its heading."""
EMPTY_LISTS = {"calendar": "No events.", "map": "No saved places.", "todo": "No to-do items.",
               "messages": "No messages yet.", "codeeditor": "No files."}
"""What each page's list says when it holds nothing."""


@dataclass(frozen=True)
class _Row:
    """One entry of an OpenApps page's list, as its row shows it."""

    name: str
    """The list item's text (an event's title, a to-do's, a message's, a file's name)."""
    lead: str = ""
    """A column before it (an event's date, a message's recipient)."""
    details: str | None = None
    """A column after it (``None``: the item runs up to the buttons)."""
    check: tuple[str, str, bool] | None = None
    """A check box before everything: its name, its key, whether it is ticked."""
    buttons: tuple[tuple[str, str], ...] = ()
    """Buttons at the row's end: (name, key)."""
    key: str = ""
    """What a click on the list item does (the code editor opens the file)."""
    selected: bool = False


def _entries(desktop: Desktop, window: Window) -> list[_Row]:
    """The page's list as rows, in the order it shows them (a row's key names the entry's
    index in the app's own list, which is what the control acts on)."""
    apps = desktop.apps
    app = apps.planner.app
    if app == "calendar":
        return [_Row(e.title, e.date, launcher.event_details(e),
                     buttons=((f"Delete {e.title}", f"openapps:event:{i}"),))
                for i, e in launcher.agenda(desktop)]
    if app == "map":
        return [_Row(p.name, details=f"{p.latitude}, {p.longitude}",
                     buttons=((f"Delete {p.name}", f"openapps:place:{i}"),))
                for i, p in enumerate(apps.planner.places)]
    if app == "todo":
        return [_Row(t.title, check=(f"Done {t.title}", f"openapps:done:{i}", t.done),
                     buttons=((f"Delete {t.title}", f"openapps:todo:{i}"),))
                for i, t in enumerate(apps.todos)]
    if app == "messages":
        return [_Row(m.text, f"to {m.to}") for m in apps.messages]
    if app == "codeeditor":
        open_file = window.fields.get("File", "")
        return [_Row(name, key=f"openapps:file:{i}", selected=name == open_file)
                for i, name in enumerate(launcher.files(desktop))]
    return []


def _openapps_field(window: Window, name: str, rect: Rect) -> Control:
    key = f"field:{name}"
    return Control("Edit", name, rect, key, window.fields.get(name, ""),
                   focused=window.focus == key)


def _rows(window: Window, rows: list[_Row], left: int, right: int,
          empty: str) -> list[Control]:
    """A list, a row an entry from the window's scroll position: a check box (to-do items),
    a lead column (an event's date, a message's recipient), the entry as the list item, its
    details, and its buttons (a Delete button named after the entry)."""
    controls: list[Control] = []
    shown = rows[window.scroll:window.scroll + OPENAPPS_ROWS]
    lead_width = 100 if any(row.lead for row in rows) else 0
    buttons_left = right - 140 * max((len(row.buttons) for row in rows), default=0) + 10
    for place, row in enumerate(shown):
        y = OPENAPPS_LIST_TOP + place * ROW_H
        x = left
        if row.check is not None:
            name, key, ticked = row.check
            controls.append(Control("CheckBox", name, (x, y + 2, x + 20, y + ROW_H - 2), key,
                                    "On" if ticked else "Off"))
            x += 28
        if lead_width:
            controls.append(Control("Text", row.lead, (x, y + 2, x + lead_width - 4,
                                                       y + ROW_H)))
            x += lead_width
        item_right = x + 290 if row.details is not None else min(right, buttons_left - 10)
        controls.append(Control("ListItem", row.name, (x, y, item_right, y + ROW_H), row.key,
                                selected=row.selected))
        if row.details is not None:
            controls.append(Control("Text", row.details, (x + 296, y + 2, buttons_left - 10,
                                                           y + ROW_H)))
        for index, (name, key) in enumerate(row.buttons):
            bx = buttons_left + 140 * index
            controls.append(Control("Button", name, (bx, y, bx + 130, y + ROW_H - 2), key))
    if not rows:
        controls.append(Control("Text", empty, (left, OPENAPPS_LIST_TOP, right,
                                                OPENAPPS_LIST_TOP + ROW_H)))
    return controls


def _list_items(texts: list[str], left: int, top: int, right: int,
                bottom: int) -> list[Control]:
    """One list item a row from ``top``, as many as fit above ``bottom``."""
    rows = range(top, bottom - ROW_H + 1, ROW_H)
    return [Control("ListItem", text, (left, row, right, row + ROW_H))
            for text, row in zip(texts, rows, strict=False)]


__all__ = [
    "HEIGHT",
    "OPENAPPS_ROWS",
    "TASKBAR",
    "WIDTH",
    "Control",
    "WindowLayout",
    "hit",
    "layout",
    "taskbar",
    "window_rect",
]
