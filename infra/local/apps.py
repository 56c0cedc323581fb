"""State of the simulated applications: windows, settings, clock and calculator.

Pure data plus validation; nothing here touches the file system (see :mod:`desktop`).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from functools import reduce
from typing import Any

APPS = ("notepad", "explorer", "settings", "clock", "calc", "openapps")
"""Applications the simulated desktop can open (``openapps``: the window of the launcher and
its apps, :mod:`infra.local.launcher`)."""

DIALOGS = {
    "run": ("Run", ("Open",)),
    "save_as": ("Save As", ("File name",)),
    "timer_dialog": ("Add new timer", ("Duration", "Name")),
    "alarm_dialog": ("Add new alarm", ("Time", "Name")),
    "worldclock_dialog": ("Add new city", ("City",)),
}
"""Dialog windows: ``kind -> (title, edit fields in tab order)``."""


class AppError(ValueError):
    """An action that the simulated applications refuse (bad value, no such window...)."""


@dataclass
class Window:
    """One open window. ``path`` is the notepad document or the explorer folder (guest path)."""

    app: str
    wid: int
    path: str | None = None
    text: str = ""
    saved_text: str = ""
    page: str = ""
    display: str = "0"
    slot: int = 0
    """Where the window sits (cascade position, fixed while it is open)."""
    focus: str = ""
    """The focused control's key (``field:Name``, ``doc``...), empty for none."""
    fields: dict[str, str] = field(default_factory=dict)
    """Edit boxes' text being typed (dialogs, settings fields, explorer address/rename,
    OpenApps' forms)."""
    select_all: bool = False
    """The focused text is selected: the next key typed replaces it."""
    selection: list[str] = field(default_factory=list)
    """Explorer: the selected item names."""
    renaming: str | None = None
    """Explorer: the item whose name is being edited."""
    owner: int | None = None
    """A dialog's owner window (its ``wid``)."""
    fresh: bool = True
    """Calculator: the display shows a result; the next digit starts a new entry."""
    history: list[str] = field(default_factory=list)
    """Calculator: the calculations performed, oldest first (``1234*5678 = 7006652``), as the
    History pane lists them; a number typed onto the display adds none, and closing the
    calculator forgets them, as Windows does."""
    notice: str = ""
    """OpenApps: why the page's form was refused (shown under it until the next submit)."""
    scroll: int = 0
    """OpenApps: how many entries of the page's list are scrolled out above it."""

    def record(self, line: str | None) -> None:
        """Add a calculation to the calculator's history (``None``: nothing was computed)."""
        if line is not None:
            self.history.append(line)

    def record_dates(self, line: str) -> None:
        """Show a date difference in the history: it replaces a date entry just before it, as
        the date page recomputes live while a date is typed (one entry per difference)."""
        if self.history and self.history[-1].endswith(" days"):
            self.history[-1] = line
        else:
            self.history.append(line)

    @property
    def is_dialog(self) -> bool:
        """Run, Save As and the clock's add dialogs."""
        return self.app in DIALOGS

    @property
    def title(self) -> str:
        """The title Windows would show (``draft.txt - Notepad``, ``Documents``, ``Clock``...)."""
        if self.app in DIALOGS:
            return DIALOGS[self.app][0]
        if self.app == "notepad":
            name = self.path.replace("/", "\\").rsplit("\\", 1)[-1] if self.path else "Untitled"
            return f"{name} - Notepad"
        if self.app == "explorer":
            if not self.path or self.path.rstrip("\\/").upper() == "C:":
                return "Local Disk (C:)"
            return self.path.replace("/", "\\").rstrip("\\").rsplit("\\", 1)[-1]
        return {"settings": "Settings", "clock": "Clock", "calc": "Calculator",
                "openapps": "OpenApps"}[self.app]

    @property
    def dirty(self) -> bool:
        """A notepad document with unsaved changes."""
        return self.app == "notepad" and self.text != self.saved_text


def parse_bool(value: str) -> bool:
    """``on/off``, ``true/false``, ``yes/no``, ``1/0`` (any case)."""
    lowered = str(value).strip().lower()
    if lowered in ("on", "true", "yes", "1", "enabled"):
        return True
    if lowered in ("off", "false", "no", "0", "disabled"):
        return False
    raise AppError(f"{value!r} is not on/off")


_TIME = re.compile(r"^(\d{1,2}):(\d{2})\s*([AaPp][Mm])?$")


def parse_clock_time(value: str) -> tuple[int, int]:
    """``19:00``, ``7:00 PM`` -> ``(19, 0)``."""
    match = _TIME.match(str(value).strip())
    if match is None:
        raise AppError(f"{value!r} is not a time like 19:00 or 7:00 PM")
    hour, minute, half = int(match.group(1)), int(match.group(2)), match.group(3)
    if half:
        if not 1 <= hour <= 12:
            raise AppError(f"{value!r}: hour must be 1-12 with AM/PM")
        hour = hour % 12 + (12 if half.upper() == "PM" else 0)
    if hour > 23 or minute > 59:
        raise AppError(f"{value!r} is not a valid time of day")
    return hour, minute


def format_12h(hour: int, minute: int) -> str:
    """``(19, 0)`` -> ``07:00 PM`` (the format Windows settings display)."""
    return f"{(hour % 12) or 12:02d}:{minute:02d} {'PM' if hour >= 12 else 'AM'}"


_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


def parse_duration(value: str) -> int:
    """``5m``, ``1h30m``, ``90s``, ``90`` (seconds) or ``1:30:00`` -> seconds (1 s to 99 h)."""
    text = str(value).strip().lower()
    seconds: int | None = None
    if text.isdigit():
        seconds = int(text)
    elif ":" in text:
        pieces = text.split(":")  # [h:]m:s
        if len(pieces) in (2, 3) and all(p.isdigit() for p in pieces):
            seconds = reduce(lambda total, piece: total * 60 + int(piece), pieces, 0)
    else:
        match = _DURATION.match(text)
        if match and any(match.groups()):
            h, m, s = (int(g) if g else 0 for g in match.groups())
            seconds = h * 3600 + m * 60 + s
    if seconds is None or not 1 <= seconds <= 99 * 3600:
        raise AppError(f"{value!r} is not a duration like 5m, 1h30m, 90s or 1:30:00")
    return seconds


def format_duration(seconds: int) -> str:
    """``5400`` -> ``01:30:00``."""
    return f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


@dataclass
class Settings:
    """The Windows settings the local tasks read and write."""

    night_light: bool = False
    night_light_start: str = "09:00 PM"
    night_light_end: str = "07:00 AM"
    notifications: bool = True
    do_not_disturb: bool = False
    dark_mode: bool = False
    time_zone: str = "UTC"

    def set(self, key: str, value: str) -> str:
        """Set one setting from its text form; returns the stored value as text.

        Raises:
            AppError: unknown key or a value of the wrong kind.
        """
        name = _setting_name(key)
        if name in ("night_light_start", "night_light_end"):
            setattr(self, name, format_12h(*parse_clock_time(value)))
        elif name == "time_zone":
            if not value.strip():
                raise AppError("time_zone needs a name, e.g. \"Pacific Standard Time\"")
            self.time_zone = value.strip()
        else:
            setattr(self, name, parse_bool(value))
        return self.get(name)

    def get(self, key: str) -> str:
        """One setting as text (``on``/``off`` for switches)."""
        value = getattr(self, _setting_name(key))
        if isinstance(value, bool):
            return "on" if value else "off"
        return str(value)

    def as_dict(self) -> dict[str, Any]:
        """All settings with their native types."""
        return asdict(self)


SETTING_KEYS = tuple(Settings.__dataclass_fields__)


def _setting_name(key: str) -> str:
    name = key.strip().lower().replace("-", "_")
    if name not in SETTING_KEYS:
        raise AppError(f"unknown setting {key!r}; known: {', '.join(SETTING_KEYS)}")
    return name


@dataclass
class Timer:
    """A clock timer; added timers start at once, as the Clock app does."""

    label: str
    seconds: int
    running: bool = True


@dataclass
class Alarm:
    """A clock alarm at ``HH:MM`` (24 h)."""

    time: str
    label: str
    enabled: bool = True


@dataclass
class Clock:
    """The Clock app: timers, alarms and world clocks."""

    timers: list[Timer] = field(default_factory=list)
    alarms: list[Alarm] = field(default_factory=list)
    world_clocks: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """Timers, alarms and world clocks as JSON-ready data."""
        return asdict(self)
