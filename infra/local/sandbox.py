"""Map Windows paths of the simulated guest onto a folder of the host, and refuse escapes.

The simulated worker has one drive, ``C:``, stored under ``ROOT/drive_c``. Every path that a
client sends (to ``/file``, ``/list_directory``, the command language, setup steps) goes through
:meth:`Sandbox.to_host`, which is the only place where a guest path becomes a host path.

Windows is case-insensitive and the host usually is not, so each component is matched against the
existing entries case-insensitively (``c:\\users\\docker`` finds ``Users/Docker``). Symbolic links
are resolved before the containment check, so a link placed inside the drive cannot lead out.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PureWindowsPath

DRIVE = "C:"
HOME = "C:\\Users\\Docker"
USER_FOLDERS = ("Desktop", "Documents", "Downloads", "Pictures", "Music", "Videos")

_DRIVE_PREFIX = re.compile(r"^([A-Za-z]):(.*)$", re.DOTALL)
# Characters Windows forbids in a file name; ':' would also open an NTFS alternate stream.
_FORBIDDEN = set('<>:"|?*') | {chr(c) for c in range(32)}


class SandboxError(ValueError):
    """A guest path that is malformed (HTTP 400) or leaves the simulated drive (HTTP 403)."""

    def __init__(self, message: str, status: int = 403) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def _escape(path: str, why: str) -> SandboxError:
    return SandboxError(
        f"path {path!r} is outside the simulated C: drive ({why}); "
        f"use a path under C:\\, e.g. {HOME}\\Desktop\\a.txt",
        403,
    )


def split_guest_path(path: str) -> list[str]:
    """Normalise a guest path into its components below ``C:\\``.

    Accepts ``C:\\a\\b``, ``c:/a/b`` and mixed separators; ``.`` is dropped and ``..`` climbs,
    but never above the drive.

    Raises:
        SandboxError: the path is empty, relative, on another drive, a UNC or device path,
            an absolute POSIX path, climbs above ``C:\\`` or holds a forbidden character.
    """
    if not isinstance(path, str) or not path.strip():
        raise SandboxError("path is empty; give a Windows path such as C:\\Users\\Docker", 400)
    raw = path.strip()
    if raw.startswith(("\\\\", "//")):
        raise _escape(path, "UNC and device paths are not allowed")
    if raw.startswith(("/", "\\")):
        raise _escape(path, "absolute POSIX or drive-relative paths are not allowed")
    match = _DRIVE_PREFIX.match(raw)
    if match is None:
        raise SandboxError(
            f"path {path!r} is relative; give an absolute Windows path such as {HOME}\\Desktop",
            400,
        )
    if match.group(1).upper() != "C":
        raise _escape(path, f"drive {match.group(1).upper()}: does not exist here")
    rest = match.group(2)
    if rest and rest[0] not in "\\/":
        raise SandboxError(f"path {path!r} is drive-relative; write C:\\{rest}", 400)
    parts: list[str] = []
    for part in re.split(r"[\\/]+", rest):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                raise _escape(path, "'..' climbs above C:\\")
            parts.pop()
            continue
        bad = sorted(c for c in set(part) if c in _FORBIDDEN)
        if bad:
            raise SandboxError(f"path {path!r} holds a character Windows forbids: {bad[0]!r}", 400)
        parts.append(part)
    return parts


def join_guest(parts: list[str]) -> str:
    """The canonical guest path (``C:\\a\\b``) of a list of components."""
    return str(PureWindowsPath(DRIVE + "\\", *parts))


class Sandbox:
    """The simulated ``C:`` drive of one worker, stored under ``root/drive_c``."""

    def __init__(self, root: Path) -> None:
        self.drive = (root / "drive_c").resolve()

    def create_layout(self) -> None:
        """Create the folders a fresh Windows user profile has (idempotent)."""
        for folder in self.protected():
            folder.mkdir(parents=True, exist_ok=True)

    def protected(self) -> set[Path]:
        """Folders an action may never move, rename or delete: the drive, ``C:\\Users``, the
        profile and its user folders, ``C:\\Windows`` (and Temp), ``C:\\Program Files``.

        Without them every later reset fails and the worker is broken for good.
        """
        drive = self.drive
        home = drive / "Users" / "Docker"
        return {
            drive, drive / "Users", home, *(home / f for f in USER_FOLDERS),
            drive / "Windows", drive / "Windows" / "Temp", drive / "Program Files",
        }

    def is_protected(self, host: Path) -> bool:
        """Whether ``host`` (a path inside the drive) is one of :meth:`protected` (any case)."""
        try:
            resolved = Path(os.path.realpath(host))
        except OSError:
            return False
        lowered = {str(p).lower() for p in self.protected()}
        return str(resolved).lower() in lowered

    def to_host(self, path: str) -> Path:
        """The host path for a guest path, matched case-insensitively, checked to stay inside.

        Raises:
            SandboxError: see :func:`split_guest_path`; also when the path resolves (through
                a symbolic link) outside the drive.
        """
        current = self.drive
        for part in split_guest_path(path):
            exact = current / part
            if not exact.exists() and current.is_dir():
                lowered = part.lower()
                for entry in os.listdir(current):
                    if entry.lower() == lowered:
                        exact = current / entry
                        break
            current = exact
        resolved = Path(os.path.realpath(current))
        if resolved != self.drive and not resolved.is_relative_to(self.drive):
            raise _escape(path, "it resolves through a link to a place outside the drive")
        return current

    def to_guest(self, host: Path) -> str:
        """The guest path (``C:\\...``) of a host path inside the drive."""
        return join_guest(list(host.relative_to(self.drive).parts))
