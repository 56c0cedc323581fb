"""Guest path mapping and every way out of the simulated drive."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from infra.local.sandbox import Sandbox, SandboxError, join_guest, split_guest_path


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    box = Sandbox(tmp_path / "root")
    box.create_layout()
    return box


@pytest.mark.parametrize(
    ("path", "parts"),
    [
        ("C:\\Users\\Docker\\Desktop\\a.txt", ["Users", "Docker", "Desktop", "a.txt"]),
        ("c:/Users/Docker", ["Users", "Docker"]),
        ("C:\\Users/Docker\\\\Desktop\\", ["Users", "Docker", "Desktop"]),
        ("C:\\Users\\.\\Docker\\..\\Public", ["Users", "Public"]),
        ("C:\\", []),
        ("C:", []),
        ("  C:\\a b\\c.txt  ", ["a b", "c.txt"]),
    ],
)
def test_split_accepts_windows_paths(path: str, parts: list[str]) -> None:
    assert split_guest_path(path) == parts


@pytest.mark.parametrize(
    ("path", "status", "needle"),
    [
        ("C:\\..\\etc", 403, "climbs above"),
        ("C:\\Users\\..\\..\\etc\\passwd", 403, "climbs above"),
        ("D:\\data.txt", 403, "drive D:"),
        ("\\\\server\\share\\a.txt", 403, "UNC"),
        ("//server/share", 403, "UNC"),
        ("\\\\?\\C:\\x", 403, "UNC"),
        ("/etc/passwd", 403, "POSIX"),
        ("\\Windows", 403, "drive-relative"),
        ("a.txt", 400, "relative"),
        ("..\\a.txt", 400, "relative"),
        ("", 400, "empty"),
        ("C:Users", 400, "drive-relative"),
        ("C:\\a:stream", 400, "forbids"),
        ("C:\\a\x00b", 400, "forbids"),
        ("C:\\what?.txt", 400, "forbids"),
    ],
)
def test_split_refuses(path: str, status: int, needle: str) -> None:
    with pytest.raises(SandboxError) as info:
        split_guest_path(path)
    assert info.value.status == status
    assert needle in info.value.message


def test_to_host_maps_inside_the_drive_case_insensitively(sandbox: Sandbox) -> None:
    host = sandbox.to_host("c:\\USERS\\docker\\desktop\\New.txt")
    assert host == sandbox.drive / "Users" / "Docker" / "Desktop" / "New.txt"
    assert sandbox.to_guest(host) == "C:\\Users\\Docker\\Desktop\\New.txt"
    assert sandbox.to_host("C:\\") == sandbox.drive


def test_symlink_leading_out_is_refused(sandbox: Sandbox, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    os.symlink(outside, sandbox.drive / "Users" / "Docker" / "Desktop" / "link")
    with pytest.raises(SandboxError) as info:
        sandbox.to_host("C:\\Users\\Docker\\Desktop\\link\\secret.txt")
    assert info.value.status == 403
    with pytest.raises(SandboxError):
        sandbox.to_host("C:\\Users\\Docker\\Desktop\\link")


def test_symlink_staying_inside_is_allowed(sandbox: Sandbox) -> None:
    docs = sandbox.drive / "Users" / "Docker" / "Documents"
    os.symlink(docs, sandbox.drive / "Users" / "Docker" / "Desktop" / "docs")
    host = sandbox.to_host("C:\\Users\\Docker\\Desktop\\docs")
    assert Path(os.path.realpath(host)) == docs


def test_join_guest_is_canonical() -> None:
    assert join_guest(["Users", "Docker"]) == "C:\\Users\\Docker"
    assert join_guest([]) == "C:\\"
