"""The one place folders and files are made: modes, symlinks, owners, failures named."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from oa_vm.kit import safe_fs
from oa_vm.kit.safe_fs import UnsafePathError, WriteFailedError
from tests.support.devices import device_node, fifo


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_folders_and_files_get_their_mode_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        made = safe_fs.ensure_dir(tmp_path / "a" / "b" / "c", root=tmp_path / "a")
        safe_fs.write_atomic(made / "f.json", "{}\n")
        safe_fs.write_file(made / "s.png", b"png")
        os.close(safe_fs.open_private(made / "log"))
    finally:
        os.umask(old)
    for folder in ("a", "a/b", "a/b/c"):
        assert _mode(tmp_path / folder) == 0o700, folder
    for name in ("f.json", "s.png", "log"):
        assert _mode(made / name) == 0o600, name


def test_a_symlinked_folder_between_the_root_and_the_target_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "tasks").symlink_to(elsewhere)
    with pytest.raises(UnsafePathError, match="symlink"):
        safe_fs.ensure_dir(tmp_path / "root" / "tasks" / "t1", root=tmp_path / "root")
    with pytest.raises(UnsafePathError, match="symlink"):
        safe_fs.write_atomic(tmp_path / "root" / "tasks" / "x.json", "{}",
                             root=tmp_path / "root")
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("writer", ["atomic", "file", "open"])
def test_a_symlink_or_a_device_as_the_file_is_refused(tmp_path: Path, writer: str) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    link = tmp_path / "link"
    link.symlink_to(victim)
    write = {
        "atomic": lambda p: safe_fs.write_atomic(p, "x"),
        "file": lambda p: safe_fs.write_file(p, b"x"),
        "open": lambda p: os.close(safe_fs.open_private(p, append=False)),
    }[writer]
    with pytest.raises(UnsafePathError, match="symlink"):
        write(link)
    # a device and a pipe of the test's own folder, never the machine's /dev (a regression
    # would write to it, and the atomic rename would replace the node with a plain file)
    for special in (device_node(tmp_path), fifo(tmp_path)):
        with pytest.raises(UnsafePathError, match="not a regular file"):
            write(special)
    assert stat.S_ISCHR((tmp_path / "device").lstat().st_mode)
    assert stat.S_ISFIFO((tmp_path / "pipe").lstat().st_mode)
    assert victim.read_text() == "precious\n"


def test_a_missing_folder_is_refused_when_parents_are_not_to_be_made(tmp_path: Path) -> None:
    with pytest.raises(UnsafePathError, match="does not exist"):
        safe_fs.write_atomic(tmp_path / "no" / "page.html", "x", make_parents=False)
    assert not (tmp_path / "no").exists()


def test_a_failed_write_names_the_file_and_leaves_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    target = tmp_path / "record.json"
    with pytest.raises(WriteFailedError) as caught:
        safe_fs.write_atomic(target, "{}")
    assert str(target) in str(caught.value) and "free some space" in str(caught.value)
    assert ".tmp" not in str(caught.value)
    assert list(tmp_path.iterdir()) == []


def test_an_existing_folder_keeps_its_mode(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    safe_fs.ensure_dir(folder)
    assert _mode(folder) == 0o755  # oa-vm doctor reports it; nothing changes it behind one's back


def test_the_root_may_be_our_own_symlink_to_our_own_folder(tmp_path: Path) -> None:
    disk = tmp_path / "bigdisk"
    disk.mkdir()
    (tmp_path / "results").symlink_to(disk)  # benchmark_results kept on another disk
    safe_fs.ensure_dir(tmp_path / "results" / "run1", root=tmp_path / "results")
    assert (disk / "run1").is_dir()


def test_a_root_symlink_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a symlink to another user needs root")
    import pwd

    disk = tmp_path / "bigdisk"
    disk.mkdir()
    link = tmp_path / "results"
    link.symlink_to(disk)
    nobody = pwd.getpwnam("nobody")
    os.lchown(link, nobody.pw_uid, nobody.pw_gid)
    with pytest.raises(UnsafePathError, match="symlink"):
        safe_fs.ensure_dir(link / "run1", root=link)
    assert list(disk.iterdir()) == []


def test_write_problem_finds_folders_that_cannot_be_made_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    (tmp_path / "f").write_text("")
    assert safe_fs.write_problem(tmp_path / "new" / "deeper") is None
    assert safe_fs.write_problem(tmp_path) is None
    assert list(tmp_path.iterdir()) == [tmp_path / "f"]  # the probe folder was removed
    assert safe_fs.write_problem(tmp_path / "f") == f"{tmp_path / 'f'} is a file, not a folder"
    under = safe_fs.write_problem(tmp_path / "f" / "a" / "b")
    assert under == f"{tmp_path / 'f' / 'a' / 'b'} is under {tmp_path / 'f'}, which is not a folder"
    # /proc takes no new folder, even from root (whom permission bits do not stop)
    problem = safe_fs.write_problem(Path("/proc/oa-vm-nope/x"))
    assert problem is not None and problem.startswith("/proc/oa-vm-nope/x cannot be made: /proc ")


def test_a_page_under_a_file_is_refused_naming_the_page(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    assert not safe_fs.exists_as_file(tmp_path / "f" / "x.html")
    with pytest.raises(UnsafePathError, match=r"x\.html: .*/f is not a folder"):
        safe_fs.write_atomic(tmp_path / "f" / "x.html", "page", make_parents=False)


def _folder_writer(text: str) -> Callable[[Path], None]:
    def write(made: Path) -> None:
        made.mkdir()
        (made / "MINE").write_text(text)
    return write


def _ours(path: Path) -> bool:
    return (path / "MINE").is_file()


def test_an_out_folder_replaces_only_its_own_and_never_deletes_someone_elses(
    tmp_path: Path,
) -> None:
    out = tmp_path / "export"
    safe_fs.write_out_made(out, _folder_writer("one"), ours=_ours)
    safe_fs.write_out_made(out, _folder_writer("two"), ours=_ours)
    assert (out / "MINE").read_text() == "two" and sorted(os.listdir(tmp_path)) == ["export"]
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("keep")
    with pytest.raises(UnsafePathError, match="folder of files this tool did not write"):
        safe_fs.write_out_made(theirs, _folder_writer("x"), ours=_ours,
                               force=True)
    assert os.listdir(theirs) == ["notes.txt"]
    a_file = tmp_path / "a-file"
    a_file.write_text("someone's")
    with pytest.raises(safe_fs.ForeignFileError):
        safe_fs.write_out_made(a_file, _folder_writer("x"), ours=_ours)
    safe_fs.write_out_made(a_file, _folder_writer("x"), ours=_ours,
                           force=True)
    assert (a_file / "MINE").read_text() == "x"


def test_a_failed_out_write_leaves_the_earlier_output_and_no_partial(tmp_path: Path) -> None:
    out = tmp_path / "export"
    safe_fs.write_out_made(out, _folder_writer("one"), ours=_ours)

    def half(made: Path) -> None:
        made.mkdir()
        (made / "MINE").write_text("half")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(WriteFailedError, match="export: No space left"):
        safe_fs.write_out_made(out, half, ours=_ours)
    assert (out / "MINE").read_text() == "one" and sorted(os.listdir(tmp_path)) == ["export"]


def test_an_out_the_writer_refuses_is_bad_input_and_a_path_on_disk_is_not(tmp_path: Path) -> None:
    # the path of an --out is what the user typed: refused as any other value (exit 2), by
    # every check of both writers; the same refusal of a path oa-vm lays out stays exit 1
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere")
    foreign = tmp_path / "foreign"
    foreign.write_text("someone's")
    refusals = [
        lambda: safe_fs.write_out(link, "MARK", marker=b"MARK"),
        lambda: safe_fs.write_out(Path("/dev/null"), "MARK", marker=b"MARK"),
        lambda: safe_fs.write_out(tmp_path / "no" / "such", "MARK", marker=b"MARK"),
        lambda: safe_fs.write_out(foreign, "MARK", marker=b"MARK"),
        lambda: safe_fs.write_out_made(link, _folder_writer("x"), ours=_ours),
        lambda: safe_fs.write_out_made(tmp_path, _folder_writer("x"), ours=_ours, folder=False),
    ]
    for refuse in refusals:
        with pytest.raises(safe_fs.OutRefusedError) as refused:
            refuse()
        assert refused.value.exit_code == 2 and "refusing to write" in str(refused.value)
    with pytest.raises(UnsafePathError) as on_disk:
        safe_fs.ensure_dir(link / "pools", root=tmp_path)
    assert not isinstance(on_disk.value, safe_fs.OutRefusedError)
    assert on_disk.value.exit_code == 1
    assert foreign.read_text() == "someone's" and not (tmp_path / "elsewhere").exists()
