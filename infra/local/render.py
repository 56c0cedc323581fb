"""What the simulated desktop looks like: a PNG screenshot and an accessibility tree.

The picture is drawn with Pillow from the layout of :mod:`infra.local.gui` (the same one the
accessibility tree lists and clicks land on): a wallpaper, the windows (the active one with a
blue title bar) with their controls, and a taskbar with a button per window and a clock. It is
cached per desktop version and minute, because agents ask for a screenshot after every action
and most actions change nothing on screen.
"""

from __future__ import annotations

import datetime as dt
import io
import os
import struct
import threading
import zlib
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from xml.etree import ElementTree as ET

from infra.local import gui
from infra.local.desktop import Desktop
from infra.local.gui import HEIGHT, TASKBAR, WIDTH

if TYPE_CHECKING:  # Pillow is imported on the first screenshot, so a worker starts fast
    from PIL import Image, ImageFont



@lru_cache(maxsize=1)
def screen_font() -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    """The screen's one font (every text on the screenshot is drawn with it)."""
    from PIL import ImageFont

    return ImageFont.load_default(size=14)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


_SELECTED = (204, 228, 247)


def draw(desktop: Desktop, now: dt.datetime | None = None) -> Image.Image:
    """Draw the desktop as it is now: every control where :mod:`infra.local.gui` puts it."""
    from PIL import Image, ImageDraw

    font = screen_font()
    image = Image.new("RGB", (WIDTH, HEIGHT), (32, 84, 140))
    pen = ImageDraw.Draw(image)
    with desktop.lock:
        placed = gui.layout(desktop)
        bar = gui.taskbar(desktop)
    for item in placed:
        left, top, right, bottom = item.rect
        pen.rectangle((left, top, right - 1, bottom - 1), fill=(250, 250, 250),
                      outline=(90, 90, 90))
        title_fill = (0, 95, 184) if item.active else (200, 200, 200)
        pen.rectangle((left, top, right - 1, top + gui.TITLE_H), fill=title_fill)
        ink = (255, 255, 255) if item.active else (30, 30, 30)
        pen.text((left + 10, top + 6), item.window.title, fill=ink, font=font)
        for control in item.controls:
            _draw_control(pen, control, font, ink)
    pen.rectangle((0, HEIGHT - TASKBAR, WIDTH, HEIGHT), fill=(235, 235, 240))
    pen.text((14, HEIGHT - 28), "Start", fill=(0, 0, 0), font=font)
    for control in bar:
        pen.rectangle(control.rect, outline=(160, 160, 170))
        pen.text((control.rect[0] + 6, control.rect[1] + 8), control.name[:18], fill=(0, 0, 0),
                 font=font)
    clock = (now or _now()).strftime("%H:%M  %Y-%m-%d")
    pen.text((WIDTH - 150, HEIGHT - 28), clock, fill=(0, 0, 0), font=font)
    _paste_browser(desktop, image)
    return image


def _paste_browser(desktop: Desktop, image: Image.Image) -> None:
    """Paste each browser window's own picture at its place, back to front (they stand in
    front of the desktop's windows, as the input player sends them clicks first)."""
    browser = desktop.browser
    if browser is None or not browser.windows:
        return
    from PIL import Image

    from infra.local.browser import BrowserError

    with browser.lock:
        for window in list(browser.windows):
            try:
                shot = Image.open(io.BytesIO(browser.capture(window))).convert("RGB")
            except BrowserError:
                continue  # a window closing meanwhile: the rest of the screen is still right
            image.paste(shot.crop((0, 0, window.width, window.height)), (window.x, window.y))


def _draw_control(pen: Any, control: gui.Control, font: Any, title_ink: Any) -> None:
    left, top, right, bottom = control.rect
    dark = (20, 20, 20)
    if control.key == "close":
        pen.text((left + 9, top + 4), "X", fill=title_ink, font=font)
        return
    if control.role == "Document":
        for row, line in enumerate(control.value.split("\n")[: (bottom - top - 8) // 18]):
            pen.text((left + 8, top + 6 + 18 * row), line[:100], fill=dark, font=font)
        return
    if control.role == "Edit":
        outline = (0, 95, 184) if control.focused else (120, 120, 120)
        pen.rectangle((left, top, right - 1, bottom - 1), fill=(255, 255, 255), outline=outline)
        # a one-line edit shows its text's first line; a taller one (a text area) as many
        # lines as fit, each cut at its edge, its last ones while it has the caret (which is
        # at the end), as an editor scrolls to the caret
        fit = max(1, (bottom - top - 8) // 18)
        lines = control.value.split("\n")
        shown = lines[-fit:] if control.focused and fit > 1 else lines[:fit]
        for row, line in enumerate(shown):
            pen.text((left + 6, top + 7 + 18 * row), _fit(line, font, right - left - 12),
                     fill=dark, font=font)
        return
    if control.role == "CheckBox":
        pen.rectangle((left, top, right - 1, bottom - 1), fill=(255, 255, 255),
                      outline=(90, 90, 90))
        if control.value == "On":  # a tick: two strokes
            pen.line((left + 4, (top + bottom) // 2, left + 8, bottom - 5), fill=dark, width=2)
            pen.line((left + 8, bottom - 5, right - 4, top + 4), fill=dark, width=2)
        return
    if control.role == "Button":
        on = control.value == "On"
        pen.rectangle((left, top, right - 1, bottom - 1), fill=(0, 120, 212) if on
                      else (230, 230, 230), outline=(120, 120, 120))
        text = _fit(control.value if control.value else control.name, font, right - left - 16)
        middle = top + min(7, (bottom - top - 16) // 2)  # a short row's button centres its label
        pen.text((left + 8, middle), text, fill=(255, 255, 255) if on else dark, font=font)
        return
    if control.role == "ListItem":
        if control.selected:
            pen.rectangle((left, top, right - 1, bottom - 1), fill=_SELECTED)
        text = control.value if control.focused else control.name
        if control.focused:
            pen.rectangle((left + 2, top + 1, left + 300, bottom - 2), fill=(255, 255, 255),
                          outline=(0, 95, 184))
        pen.text((left + 6, top + 4), _fit(text, font, right - left - 12), fill=dark, font=font)
        return
    text = f"{control.name}  {control.value}".strip() if control.value else control.name
    if control.name in ("Display", "Difference"):
        text = control.value
    pen.text((left, top + 2), _fit(text, font, right - left), fill=dark, font=font)


def _fit(text: str, font: Any, width: int) -> str:
    """``text`` cut to ``width`` pixels, ``...`` marking the cut (a label never runs over the
    control beside it)."""
    text = text[:200]
    if font.getlength(text) <= width:
        return text
    while text and font.getlength(text + "...") > width:
        text = text[:-1]
    return text.rstrip() + "..."


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
        browser = self.desktop.browser
        # a page may change on its own (scripts, timers): with windows open, never cached
        fresh = browser is not None and bool(browser.windows)
        key = (self.desktop.version, now.strftime("%Y%m%d%H%M"))
        with self._lock:
            if key != self._key or fresh:
                buffer = io.BytesIO()
                draw(self.desktop, now).save(buffer, format="PNG", compress_level=1)
                self._png = _pad_png(buffer.getvalue(), self.min_bytes)
                self._key = key
            return self._png


def accessibility_xml(desktop: Desktop, backend: str = "uia") -> str:
    """The desktop's accessibility tree as XML: the same windows and controls, at the same
    places (``rect="left,top,right,bottom"``), as the screenshot."""
    root = ET.Element("Desktop", {"name": "Desktop", "backend": backend})
    with desktop.lock:
        placed = gui.layout(desktop)
        bar_controls = gui.taskbar(desktop)
    for item in placed:
        node = ET.SubElement(
            root,
            "Window",
            {
                "name": item.window.title,
                "class": item.window.app,
                "active": str(item.active).lower(),
                "rect": _rect(item.rect),
            },
        )
        for control in item.controls:
            attributes = {"name": control.name, "rect": _rect(control.rect)}
            if control.value or control.role in ("Edit", "Document"):
                attributes["value"] = control.value
            if control.focused:
                attributes["focused"] = "true"
            if control.selected:
                attributes["selected"] = "true"
            ET.SubElement(node, control.role, attributes)
    bar = ET.SubElement(root, "Pane", {"name": "Taskbar",
                                       "rect": _rect((0, HEIGHT - TASKBAR, WIDTH, HEIGHT))})
    for control in bar_controls:
        ET.SubElement(bar, "Button", {"name": control.name, "rect": _rect(control.rect)})
    ET.SubElement(bar, "Text", {"name": "Clock", "value": _now().strftime("%H:%M")})
    _browser_nodes(desktop, root)
    return ET.tostring(root, encoding="unicode")


def _browser_nodes(desktop: Desktop, root: ET.Element) -> None:
    """The browser windows' accessibility trees, as Chromium gives them (role, name, value),
    each node with its place on the screen, like the desktop's own controls."""
    browser = desktop.browser
    if browser is None or not browser.windows:
        return
    from infra.local.browser import BrowserError

    with browser.lock:
        front = browser.windows[-1]
        for window in browser.windows:
            rect = (window.x, window.y, window.x + window.width, window.y + window.height)
            node = ET.SubElement(root, "Window", {
                "name": window.title, "class": "browser",
                "active": str(window is front and browser.focused).lower(), "rect": _rect(rect),
            })
            try:
                items = browser.accessibility(window)
            except BrowserError:
                continue
            for item in items[:400]:
                attributes = {"name": item["name"]}
                if item["value"]:
                    attributes["value"] = item["value"]
                place = browser.node_rect(window, item["node"]) if item["node"] else None
                if place is not None:
                    attributes["rect"] = _rect(place)
                tag = "".join(ch for ch in item["role"].title() if ch.isalnum()) or "Node"
                ET.SubElement(node, tag, attributes)


def _rect(rect: tuple[int, int, int, int]) -> str:
    return ",".join(str(v) for v in rect)

