"""``safe_fs`` when the path changes between its check and its write: the race forced by
construction (the check itself swaps the path once it has looked), and folders owned by another
user made by root in the test's folder. Never a path outside ``tmp_path``, never a real device.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from oa_vm.kit import safe_fs
from oa_vm.kit.safe_fs import UnsafePathError
from tests.support.devices import device_node, fifo


def _swap_after_check(
    monkeypatch: pytest.MonkeyPatch, path: Path, swap: Callable[[Path], None]
) -> None:
    """``_check_target`` looks at ``path``, then ``swap`` replaces it: what the writer opens
    next is not what was checked."""
    real = safe_fs._check_target

    def check_then_swap(target: Path) -> bool:
        seen = real(target)
        if target == path:
            swap(target)
        return seen

    monkeypatch.setattr(safe_fs, "_check_target", check_then_swap)


@pytest.fixture
def victim(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "victim"
    path.write_text("precious\n")
    yield path
    assert path.read_text() == "precious\n"


def test_a_symlink_swapped_in_after_the_check_is_not_followed(
    tmp_path: Path, victim: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "run.log"
    _swap_after_check(monkeypatch, log, lambda p: p.symlink_to(victim))
    with pytest.raises(UnsafePathError, match="symlink"):
        safe_fs.open_private(log)
    with pytest.raises(UnsafePathError, match="symlink"):
        safe_fs.write_file(log, b"overwritten")


def _open_after_swap(monkeypatch: pytest.MonkeyPatch, path: Path, special: Path) -> None:
    _swap_after_check(monkeypatch, path, lambda p: os.rename(special, p))
    os.close(safe_fs.open_private(path))


def test_a_pipe_swapped_in_after_the_check_is_refused_without_blocking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # nobody reads the pipe: a blocking open would hang here
    with pytest.raises(UnsafePathError, match="not a regular file"):
        _open_after_swap(monkeypatch, tmp_path / "run.log", fifo(tmp_path))


def test_a_read_pipe_swapped_in_after_the_check_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # someone reads the pipe, so the open succeeds: only the check of what was opened refuses
    pipe = fifo(tmp_path)
    reader = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with pytest.raises(UnsafePathError, match="not a regular file"):
            _open_after_swap(monkeypatch, tmp_path / "run.log", pipe)
    finally:
        os.close(reader)


def test_a_device_swapped_in_after_the_check_is_refused_and_not_truncated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    device = device_node(tmp_path)
    with pytest.raises(UnsafePathError, match="not a regular file"):
        _open_after_swap(monkeypatch, tmp_path / "shot.png", device)


def test_write_file_replaces_the_whole_content(tmp_path: Path) -> None:
    target = tmp_path / "shot.png"
    target.write_bytes(b"a much longer old picture")
    safe_fs.write_file(target, b"new")
    assert target.read_bytes() == b"new"
    fd = safe_fs.open_private(target)  # append (a log): nothing cut
    os.write(fd, b"+")
    os.close(fd)
    assert target.read_bytes() == b"new+"


# --- folders another user owns ---------------------------------------------------------------


@pytest.fixture
def nobody() -> int:
    if os.geteuid() != 0:
        pytest.skip("giving a folder to another user needs root")
    return pwd.getpwnam("nobody").pw_uid


def test_an_existing_folder_of_another_user_is_refused_as_a_page_folder(
    tmp_path: Path, nobody: int
) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, nobody, -1)
    with pytest.raises(UnsafePathError, match="owned by"):
        safe_fs.write_atomic(theirs / "page.html", "x", make_parents=False)
    with pytest.raises(UnsafePathError, match="owned by"):
        safe_fs.ensure_dir(theirs / "run1", root=theirs)
    assert list(theirs.iterdir()) == []


def test_our_own_root_link_to_another_users_folder_is_refused(
    tmp_path: Path, nobody: int
) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, nobody, -1)
    (tmp_path / "results").symlink_to(theirs)  # ours, but pointing at their folder
    with pytest.raises(UnsafePathError, match="owned by"):
        safe_fs.ensure_dir(tmp_path / "results" / "run1", root=tmp_path / "results")
    assert list(theirs.iterdir()) == []
