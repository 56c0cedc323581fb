"""The simulated Windows desktop of one worker: its drive, its windows and its apps' state.

Every mutation goes through :class:`Desktop` under one lock, because both HTTP servers of a
worker (the guest's and the scoring server) act on the same desktop from many threads.
``version`` grows on every change so the screenshot can be cached between changes.
"""

from __future__ import annotations

import itertools
import shutil
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from infra.local.apps import APPS, DIALOGS, AppError, Clock, Settings, Window
from infra.local.sandbox import HOME, Sandbox, SandboxError
from infra.local.workapps import WorkApps, seeded

if TYPE_CHECKING:
    from infra.local.browser import BrowserScreen

SINGLE_INSTANCE = ("settings", "clock", "calc", "openapps")
"""Apps that open one window at most: opening one again brings that window to the front."""
TEXT_SUFFIXES = (".txt", ".md", ".log", ".csv", ".json", ".ini", ".xml", ".py", ".html", ".bat")
"""Files that open in Notepad."""

_APP_ALIASES = {
    alias: app
    for app, aliases in (
        ("notepad", ("notepad", "notepad.exe")),
        ("explorer", ("explorer", "explorer.exe", "file_explorer")),
        ("settings", ("settings", "ms-settings")),
        ("clock", ("clock", "ms-clock")),
        ("calc", ("calc", "calc.exe", "calculator")),
        ("openapps", ("openapps",)),
    )
    for alias in aliases
}


def app_name(word: str) -> str | None:
    """The app a launch word names (``notepad.exe``, ``ms-settings:nightlight``...), if any."""
    lowered = word.strip().lower()
    if lowered.startswith(("ms-settings:", "ms-clock:")):
        lowered = lowered.split(":", 1)[0]
    return _APP_ALIASES.get(lowered)


class Desktop:
    """Windows, apps and files of one simulated guest."""

    def __init__(self, root: Path) -> None:
        self.sandbox = Sandbox(root)
        self.sandbox.create_layout()
        self.lock = threading.RLock()
        self.windows: list[Window] = []  # z-order: the last one is the active window
        self.settings = Settings()
        self.clock = Clock()
        self.apps: WorkApps = seeded()  # to-do list, code editor, messenger, calendar, map
        self.clipboard = ""
        self.file_clipboard: tuple[str, list[str]] | None = None  # ("copy"|"cut", guest paths)
        self.pointer = (640, 360)  # the mouse, in screen pixels
        self.held: set[str] = set()  # keys held down (keyDown without keyUp yet)
        self.version = 0
        self._wids = itertools.count(1)
        # the worker's real browser windows (infra.local.browser), in front of the rest
        self.browser: BrowserScreen | None = None

    # -- windows -------------------------------------------------------------------------

    @property
    def active(self) -> Window | None:
        """The window in front, if any."""
        return self.windows[-1] if self.windows else None

    def open_app(self, app: str, path: str | None = None) -> Window:
        """Open an app (a new window; settings, clock, calc and openapps are single-instance).

        Args:
            app: one of :data:`infra.local.apps.APPS`.
            path: a document for notepad (need not exist yet, as Notepad offers to create it)
                or a folder for explorer (default ``C:\\Users\\Docker``).

        Raises:
            AppError: unknown app, a folder for notepad, a missing folder for explorer.
            SandboxError: the path leaves the drive.
        """
        if app not in APPS:
            raise AppError(f"unknown app {app!r}; known: {', '.join(APPS)}")
        with self.lock:
            if app in SINGLE_INSTANCE:
                for window in self.windows:
                    if window.app == app:
                        self._raise(window)
                        if path:
                            window.page = path
                        return window
            window = Window(app=app, wid=next(self._wids), slot=self._free_slot())
            if app == "notepad" and path:
                host = self.sandbox.to_host(path)
                if host.is_dir():
                    raise AppError(f"{path} is a folder; notepad opens files")
                window.path = self.sandbox.to_guest(host)
                if host.is_file():
                    window.text = window.saved_text = _read_text(host)
            elif app == "explorer":
                host = self.sandbox.to_host(path or HOME)
                if not host.is_dir():
                    raise AppError(f"folder not found: {path}")
                window.path = self.sandbox.to_guest(host)
            elif path:
                window.page = path
            self.windows.append(window)
            self.touch()
            return window

    def _free_slot(self) -> int:
        """The first cascade position no open window holds (so layouts repeat task to task)."""
        taken = {w.slot for w in self.windows if not w.is_dialog}
        return next(slot for slot in itertools.count() if slot not in taken)

    def open_dialog(self, kind: str, owner: Window | None = None) -> Window:
        """Open a dialog (``run``, ``save_as``...) in front, its first field focused.

        An open dialog of the same kind is brought back instead of a second one.
        """
        fields = DIALOGS[kind][1]
        with self.lock:
            for window in self.windows:
                if window.app == kind:
                    self._raise(window)
                    return window
            window = Window(
                app=kind, wid=next(self._wids), owner=owner.wid if owner else None,
                focus=f"field:{fields[0]}", fields=dict.fromkeys(fields, ""),
            )
            self.windows.append(window)
            self.touch()
            return window

    def window_by_id(self, wid: int | None) -> Window | None:
        """The open window with this id, if any."""
        return next((w for w in self.windows if w.wid == wid), None)

    def raise_window(self, window: Window) -> None:
        """Bring an open window to the front."""
        with self.lock:
            if window in self.windows:
                self._raise(window)

    def touch(self) -> None:
        """Record a change made directly on a window's state (for the screenshot cache)."""
        with self.lock:
            self.version += 1

    def open_path(self, path: str) -> Window:
        """Open a file or folder with its default app (folders in explorer, text in notepad).

        Raises:
            AppError: no app opens this kind of file here.
            SandboxError: the path leaves the drive.
        """
        host = self.sandbox.to_host(path)
        if host.is_dir():
            return self.open_app("explorer", path)
        if host.suffix.lower() in TEXT_SUFFIXES or not host.exists():
            return self.open_app("notepad", path)
        raise AppError(f"no app here opens {host.suffix or 'this kind of'} files: {path}")

    def _raise(self, window: Window) -> None:
        self.windows.remove(window)
        self.windows.append(window)
        self.touch()

    def find_window(self, name: str, *, strict: bool = False) -> Window | None:
        """The topmost window whose title is ``name`` (strict) or contains it (any case)."""
        with self.lock:
            lowered = name.lower()
            for window in reversed(self.windows):
                loose = lowered in window.title.lower() or window.app == lowered
                if (window.title == name) if strict else loose:
                    return window
            return None

    def activate(self, name: str, *, strict: bool = False) -> Window:
        """Bring a window to the front.

        Raises:
            AppError: no window matches.
        """
        with self.lock:
            window = self.find_window(name, strict=strict)
            if window is None:
                raise AppError(f"no window titled {name!r}; open: {self.titles() or 'none'}")
            self._raise(window)
            return window

    def close(self, name: str | None = None, *, strict: bool = False) -> Window:
        """Close the active window, or the one matching ``name``; unsaved text is discarded.

        Raises:
            AppError: no window to close.
        """
        with self.lock:
            window = self.active if name is None else self.find_window(name, strict=strict)
            if window is None:
                raise AppError(
                    "no window is open" if name is None else f"no window titled {name!r}"
                )
            self.windows.remove(window)
            self.touch()
            return window

    def close_all(self) -> int:
        """Close every window; returns how many were open."""
        with self.lock:
            count = len(self.windows)
            self.windows.clear()
            self.held.clear()  # a key left down by the last task must not stick
            if self.browser is not None:
                count += self.browser.close_all()  # WAA's stock reset closes them too
            self.touch()
            return count

    def titles(self) -> list[str]:
        """Titles of the open windows, front first."""
        with self.lock:
            return [w.title for w in reversed(self.windows)]

    def require_active(self, app: str) -> Window:
        """The active window, which must belong to ``app``.

        Raises:
            AppError: the active window is another app, or none is open.
        """
        window = self.active
        if window is None or window.app != app:
            current = window.title if window else "no window"
            raise AppError(f"the active window is {current}, not {app}; open or activate {app}")
        return window

    # -- notepad -------------------------------------------------------------------------

    def type_text(self, text: str) -> Window:
        """Type at the end of the active notepad document (or into the calculator)."""
        with self.lock:
            window = self.active
            if window is not None and window.app == "calc":
                window.display = (window.display.lstrip("0") or "") + text
            else:
                window = self.require_active("notepad")
                window.text += text
            self.touch()
            return window

    def clear_text(self) -> Window:
        """Select all and delete in the active notepad."""
        with self.lock:
            return self.backspace(len(self.active.text) if self.active else 0)

    def backspace(self, count: int = 1) -> Window:
        """Delete characters before the caret (the end of the document)."""
        with self.lock:
            window = self.require_active("notepad")
            window.text = window.text[: max(0, len(window.text) - count)]
            self.touch()
            return window

    def save(self, path: str | None = None) -> str:
        """Save the active notepad document (``path``: save as). Returns the guest path.

        Raises:
            AppError: untitled document and no path, or the folder does not exist.
        """
        return self.save_window(self.require_active("notepad"), path)

    def save_window(self, window: Window, path: str | None = None) -> str:
        """Save a notepad window's document (``path``: save as). Returns the guest path.

        Raises:
            AppError: untitled document and no path, or the folder does not exist.
        """
        with self.lock:
            target = path or window.path
            if not target:
                raise AppError('the document has no file name yet; use save "C:\\...\\name.txt"')
            host = self.sandbox.to_host(target)
            if host.is_dir():
                raise AppError(f"{target} is a folder; give a file name")
            if not host.parent.is_dir():
                raise AppError(f"folder not found: {self.sandbox.to_guest(host.parent)}")
            host.write_text(window.text, encoding="utf-8")
            window.path = self.sandbox.to_guest(host)
            window.saved_text = window.text
            self.touch()
            return window.path

    # -- files ---------------------------------------------------------------------------

    def host(self, path: str) -> Path:
        """Sandbox mapping (see :meth:`Sandbox.to_host`)."""
        return self.sandbox.to_host(path)

    def make_folder(self, path: str) -> Path:
        """Create a folder and its parents (no error when it exists)."""
        with self.lock:
            host = self.host(path)
            if host.exists() and not host.is_dir():
                raise AppError(f"a file already exists at {path}")
            host.mkdir(parents=True, exist_ok=True)
            self.touch()
            return host

    def write_file(self, path: str, content: str | bytes, *, append: bool = False) -> Path:
        """Write (or append to) a file; its folder must exist.

        Raises:
            AppError: the folder is missing or the path is a folder.
        """
        with self.lock:
            host = self.host(path)
            if host.is_dir():
                raise AppError(f"{path} is a folder")
            if not host.parent.is_dir():
                raise AppError(f"folder not found: {self.sandbox.to_guest(host.parent)}")
            data = content.encode("utf-8") if isinstance(content, str) else content
            with host.open("ab" if append else "wb") as handle:
                handle.write(data)
            self.touch()
            return host

    def read_file(self, path: str) -> bytes:
        """A file's bytes.

        Raises:
            FileNotFoundError: no such file.
        """
        host = self.host(path)
        if not host.is_file():
            raise FileNotFoundError(f"file not found: {path}")
        return host.read_bytes()

    def move(self, source: str, destination: str) -> Path:
        """Move a file or folder; a destination folder that exists receives it.

        Raises:
            AppError: the source is missing, the target exists, or its folder is missing.
        """
        with self.lock:
            src, dst = self._transfer(source, destination, "move")
            shutil.move(str(src), str(dst))
            self.touch()
            return dst

    def copy(self, source: str, destination: str) -> Path:
        """Copy a file or folder (same rules as :meth:`move`)."""
        with self.lock:
            src, dst = self._transfer(source, destination, "copy")
            if src.is_dir():
                shutil.copytree(src, dst, symlinks=True)
            else:
                shutil.copy2(src, dst, follow_symlinks=False)
            self.touch()
            return dst

    def _transfer(self, source: str, destination: str, verb: str) -> tuple[Path, Path]:
        """The host paths of a move or copy, once the rules both keep are checked."""
        src, dst = self.host(source), self.host(destination)
        if not src.exists():
            raise AppError(f"not found: {source}")
        if verb == "move" and self.sandbox.is_protected(src):
            raise AppError(f"{source} is a system folder and cannot be moved or renamed")
        if dst.is_dir():
            dst = dst / src.name
        if dst.exists():
            raise AppError(f"already exists: {self.sandbox.to_guest(dst)}")
        if not dst.parent.is_dir():
            raise AppError(f"folder not found: {self.sandbox.to_guest(dst.parent)}")
        if src.is_dir() and dst.resolve().is_relative_to(src.resolve()):
            raise AppError(f"cannot {verb} {source} into itself")
        return src, dst

    def rename(self, path: str, new_name: str) -> Path:
        """Rename a file or folder in place (``new_name`` is a bare name)."""
        if not new_name or any(c in new_name for c in "\\/") or new_name in (".", ".."):
            raise AppError(f"{new_name!r} is not a file name (no slashes)")
        host = self.host(path)
        if not host.exists():
            raise AppError(f"not found: {path}")
        return self.move(path, self.sandbox.to_guest(host.parent) + "\\" + new_name)

    def delete(self, path: str) -> None:
        """Delete a file or a folder with its contents; the drive's own folders are kept.

        Raises:
            AppError: missing, or a protected folder (the drive, a user folder).
        """
        with self.lock:
            host = self.host(path)
            if not host.exists() and not host.is_symlink():
                raise AppError(f"not found: {path}")
            if self.sandbox.is_protected(host):
                raise AppError(f"{path} is a system folder and cannot be deleted")
            if host.is_dir() and not host.is_symlink():
                shutil.rmtree(host)
            else:
                host.unlink()
            self.touch()

    def list_names(self, path: str) -> list[str]:
        """Names in a folder, sorted case-insensitively (folders first, as explorer does).

        Raises:
            AppError: not a folder.
        """
        host = self.host(path)
        if not host.is_dir():
            raise AppError(f"folder not found: {path}")
        entries = sorted(host.iterdir(), key=lambda p: (not p.is_dir(), p.name.lower()))
        return [p.name for p in entries]

    def tree(self, path: str, *, depth: int = 8) -> dict[str, Any]:
        """WAA's ``/list_directory`` tree: ``{"type", "name", "children"}`` (folders only).

        Raises:
            FileNotFoundError: not a folder.
        """
        host = self.host(path)
        if not host.is_dir():
            raise FileNotFoundError(f"folder not found: {path}")
        return _tree(host, depth)

    def clear_task_files(self) -> None:
        """Bring the drive back to a fresh profile's layout, as between WAA tasks: the user
        folders (Desktop, Documents, Downloads...) emptied, and anything else a run left on the
        drive (``C:\\Windows\\Temp``, the drive's root...) removed, so a task that checks the
        whole drive sees only what its own setup and run put there."""
        with self.lock:
            # Rebuild the layout first: a reset must work even if the profile went missing.
            self.sandbox.create_layout()
            keep = self.sandbox.protected()
            pending = [self.sandbox.drive]
            while pending:
                for entry in pending.pop().iterdir():
                    if entry in keep and entry.is_dir() and not entry.is_symlink():
                        pending.append(entry)
                    elif entry.is_dir() and not entry.is_symlink():
                        shutil.rmtree(entry, ignore_errors=True)
                    else:
                        entry.unlink(missing_ok=True)
            self.sandbox.create_layout()
            # the apps' stores are the profile's too: a fresh profile has their seed
            self.apps = seeded()
            self.touch()

    def app_state(self) -> dict[str, Any]:
        """One JSON document per app (``todo``, ``codeeditor``, ``messenger``, ``calendar``,
        ``map``, ``settings``, ``clock``) and ``_url``, the path of the app on screen: what
        OpenApps-style tasks compare before and after an episode."""
        with self.lock:
            return {**self.apps.state(), "settings": self.settings.as_dict(),
                    "clock": self.clock.as_dict()}

    def snapshot(self) -> dict[str, Any]:
        """The whole app state as JSON-ready data (the ``desktop_state`` getter)."""
        with self.lock:
            return {
                "windows": [
                    {"title": w.title, "app": w.app, "path": w.path, "dirty": w.dirty}
                    for w in reversed(self.windows)
                ],
                "active_window": self.active.title if self.active else None,
                "settings": self.settings.as_dict(),
                "clock": self.clock.as_dict(),
                "clipboard": self.clipboard,
            }


def _read_text(host: Path) -> str:
    return host.read_bytes().decode("utf-8", errors="replace")


def _tree(host: Path, depth: int) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "directory", "name": host.name or "C:\\", "children": []}
    for child in sorted(host.iterdir(), key=lambda p: p.name.lower()):
        if child.is_dir() and not child.is_symlink():
            if depth > 0:
                node["children"].append(_tree(child, depth - 1))
        else:
            node["children"].append({"type": "file", "name": child.name})
    return node


__all__ = ["AppError", "Desktop", "SandboxError", "app_name"]
