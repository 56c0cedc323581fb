"""What the simulated desktop looks like: a PNG screenshot and an accessibility tree.

The picture is drawn with Pillow: a wallpaper, one window per open app (cascaded, the active one
last with a blue title bar) and a taskbar with a clock. It is cached per desktop version and
minute, because agents ask for a screenshot after every action and most actions change nothing
on screen.
"""

from __future__ import annotations

import datetime as dt
import io
import os
import struct
import threading
import zlib
from functools import lru_cache
from typing import TYPE_CHECKING
from xml.etree import ElementTree as ET

from infra.local.apps import Window, format_duration
from infra.local.desktop import Desktop

if TYPE_CHECKING:  # Pillow is imported on the first screenshot, so a worker starts fast
    from PIL import Image, ImageFont

WIDTH, HEIGHT = 1280, 720
TASKBAR = 40
_WIN_W, _WIN_H = 760, 460


@lru_cache(maxsize=1)
def _font() -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    from PIL import ImageFont

    return ImageFont.load_default(size=14)


def window_rect(index: int) -> tuple[int, int, int, int]:
    """``(left, top, right, bottom)`` of the index-th window (cascaded from the top left)."""
    left, top = 60 + 36 * (index % 8), 30 + 30 * (index % 8)
    return left, top, left + _WIN_W, top + _WIN_H


def window_lines(desktop: Desktop, window: Window) -> list[str]:
    """The text a window shows, line by line."""
    if window.app == "notepad":
        return window.text.split("\n") or [""]
    if window.app == "explorer":
        try:
            names = desktop.list_names(window.path or "C:\\")
        except (ValueError, OSError):
            return ["(this folder is no longer available)"]
        return [window.path or "C:\\", ""] + (names or ["This folder is empty."])
    if window.app == "settings":
        s = desktop.settings
        return [
            f"Night light: {'On' if s.night_light else 'Off'}"
            f"  (schedule {s.night_light_start} - {s.night_light_end})",
            f"Notifications: {'On' if s.notifications else 'Off'}",
            f"Do not disturb: {'On' if s.do_not_disturb else 'Off'}",
            f"Dark mode: {'On' if s.dark_mode else 'Off'}",
            f"Time zone: {s.time_zone}",
        ]
    if window.app == "clock":
        c = desktop.clock
        lines = ["Timers:"] + [
            f"  {t.label}  {format_duration(t.seconds)}  {'running' if t.running else 'paused'}"
            for t in c.timers
        ]
        lines += ["Alarms:"] + [
            f"  {a.time}  {a.label}  {'on' if a.enabled else 'off'}" for a in c.alarms
        ]
        return lines + ["World clock:"] + [f"  {city}" for city in c.world_clocks]
    return [window.display]


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def draw(desktop: Desktop, now: dt.datetime | None = None) -> Image.Image:
    """Draw the desktop as it is now."""
    from PIL import Image, ImageDraw

    font = _font()
    image = Image.new("RGB", (WIDTH, HEIGHT), (32, 84, 140))
    pen = ImageDraw.Draw(image)
    with desktop.lock:
        windows = list(desktop.windows)
        contents = [window_lines(desktop, w) for w in windows]
    for index, (window, lines) in enumerate(zip(windows, contents, strict=True)):
        left, top, right, bottom = window_rect(index)
        active = index == len(windows) - 1
        pen.rectangle((left, top, right, bottom), fill=(250, 250, 250), outline=(90, 90, 90))
        bar = (0, 95, 184) if active else (200, 200, 200)
        pen.rectangle((left, top, right, top + 28), fill=bar)
        title_color = (255, 255, 255) if active else (30, 30, 30)
        pen.text((left + 10, top + 6), window.title, fill=title_color, font=font)
        pen.text((right - 24, top + 6), "X", fill=title_color, font=font)
        for row, line in enumerate(lines[: (_WIN_H - 40) // 18]):
            pen.text((left + 12, top + 38 + 18 * row), line[:100], fill=(20, 20, 20), font=font)
    pen.rectangle((0, HEIGHT - TASKBAR, WIDTH, HEIGHT), fill=(235, 235, 240))
    pen.text((14, HEIGHT - 28), "Start", fill=(0, 0, 0), font=font)
    for index, window in enumerate(windows):
        pen.text((90 + 150 * index, HEIGHT - 28), window.title[:18], fill=(0, 0, 0), font=font)
    clock = (now or _now()).strftime("%H:%M  %Y-%m-%d")
    pen.text((WIDTH - 150, HEIGHT - 28), clock, fill=(0, 0, 0), font=font)
    return image


def _pad_png(png: bytes, min_bytes: int) -> bytes:
    """Insert a private ancillary chunk of noise so the file has at least ``min_bytes``.

    Decoders skip unknown ancillary chunks, so the picture is unchanged; the noise keeps the
    payload incompressible, like a real screenshot's.
    """
    missing = min_bytes - len(png)
    if missing <= 0:
        return png
    data = _noise(max(0, missing - 12))
    kind = b"oaPd"  # ancillary, private, safe to copy
    chunk = struct.pack(">I", len(data)) + kind + data + struct.pack(
        ">I", zlib.crc32(kind + data) & 0xFFFFFFFF
    )
    header_end = 8 + 25  # signature + IHDR chunk
    return png[:header_end] + chunk + png[header_end:]


@lru_cache(maxsize=8)
def _noise(size: int) -> bytes:
    return os.urandom(size)


class Screen:
    """Renders and caches one desktop's screenshot."""

    def __init__(self, desktop: Desktop, min_bytes: int = 0) -> None:
        self.desktop = desktop
        self.min_bytes = min_bytes
        self._lock = threading.Lock()
        self._key: tuple[int, str] | None = None
        self._png = b""

    def png(self) -> bytes:
        """The screenshot as PNG bytes (padded to ``min_bytes``)."""
        now = _now()
        key = (self.desktop.version, now.strftime("%Y%m%d%H%M"))
        with self._lock:
            if key != self._key:
                buffer = io.BytesIO()
                draw(self.desktop, now).save(buffer, format="PNG", compress_level=1)
                self._png = _pad_png(buffer.getvalue(), self.min_bytes)
                self._key = key
            return self._png


def accessibility_xml(desktop: Desktop, backend: str = "uia") -> str:
    """The desktop's accessibility tree as XML (the same desktop the screenshot shows)."""
    root = ET.Element("Desktop", {"name": "Desktop", "backend": backend})
    with desktop.lock:
        windows = list(desktop.windows)
        for index, window in enumerate(windows):
            left, top, right, bottom = window_rect(index)
            node = ET.SubElement(
                root,
                "Window",
                {
                    "name": window.title,
                    "class": window.app,
                    "active": str(index == len(windows) - 1).lower(),
                    "rect": f"{left},{top},{right},{bottom}",
                },
            )
            if window.app == "notepad":
                ET.SubElement(node, "Document", {"name": "Text editor", "value": window.text})
            else:
                for line in window_lines(desktop, window):
                    if line.strip():
                        ET.SubElement(node, "Text", {"name": line.strip()})
        bar = ET.SubElement(root, "Pane", {"name": "Taskbar"})
        for window in windows:
            ET.SubElement(bar, "Button", {"name": window.title})
        ET.SubElement(bar, "Text", {"name": "Clock", "value": _now().strftime("%H:%M")})
    return ET.tostring(root, encoding="unicode")
