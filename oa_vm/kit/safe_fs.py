"""The one place oa-vm and the eval tools make folders and write files (and read back a JSON
object file that may be missing or damaged, :func:`read_json_object`).

Every folder and file is created with an explicit mode whatever the umask (0700 folders, 0600
files: the oa-vm home, ``pools/``, each pool's folder, its SSH key, run folders and everything in
them), so another local user can neither read a pool's key nor plant anything in our folders.
Nothing is written through a symlink or into a folder another user owns: such a path is refused
with one line naming it (:class:`UnsafePathError`), since it was not made by us and following it
would let whoever planted it choose which file we overwrite. A write that fails (a full disk, a
read-only file system) is reported naming the file, never the temp file beside it
(:class:`WriteFailedError`).

Trust stops at a *root*: the folder a caller owns the layout of (the home, a run folder). Folders
from the root down to the target are checked (a real folder, owned by us or by root, as OpenSSH's
``StrictModes`` accepts); the root's own parents are not (``/tmp`` belongs to root and
``~`` may be a symlink on some systems), only made when missing.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from oa_vm.errors import OaVmError

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
_SYMLINK = "it is a symlink oa-vm did not make; remove it and run the command again"


class UnsafePathError(OaVmError):
    """A path oa-vm would write is a symlink, not a plain file or folder, or someone else's."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"refusing to write {path}: {reason}")


class WriteFailedError(OaVmError):
    """Writing a file or making a folder failed (no space left, read-only, permission).

    ``then`` is what to do once the disk is fixed: run the command again, unless the caller
    knows better (a run stopped half-way is continued with ``--resume``, :meth:`then_do`).
    """

    def __init__(self, path: Path, exc: OSError, then: str = "run the command again") -> None:
        self.path = path
        self.errno = exc.errno
        self.cause = exc
        reason = exc.strerror or str(exc)
        fix = "free some space" if exc.errno in (errno.ENOSPC, errno.EDQUOT) else (
            "check the folder's permissions and free space")
        super().__init__(f"could not write {path}: {reason}; {fix}, then {then}")

    def then_do(self, then: str) -> WriteFailedError:
        """The same failure with another next step (``then``), for a caller that knows it."""
        return WriteFailedError(self.path, self.cause, then)


LOCAL_FILE_ERRORS = (UnsafePathError, WriteFailedError)
"""What writing one of our own files can raise: this machine's disk or folders at fault (full,
read-only, a planted symlink), never a remote party. A run stops on it, naming the file, instead
of charging it to the task or the worker whose attempt was writing (:mod:`evals.run.dispatcher`).
"""


def _owner_name(uid: int) -> str:
    import pwd  # only on the refusal path

    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def check_dir(path: Path, own_link: bool = False) -> None:
    """Refuse ``path`` unless it is a real folder (not a symlink) owned by us or by root.

    ``own_link`` (for the root of a layout only): a symlink that we (or root) own, to a folder
    that passes this check, is accepted, so ``~/.oa-vm`` or ``benchmark_results`` may point at
    another disk; one planted by another user (in ``/tmp``, say) is still refused.

    Raises:
        UnsafePathError: it is a symlink, not a folder, or owned by another user.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise UnsafePathError(path, "the folder vanished while it was being made") from None
    if stat.S_ISLNK(info.st_mode) and own_link and info.st_uid in (os.geteuid(), 0):
        check_dir(Path(os.path.realpath(path)))
        return
    if stat.S_ISLNK(info.st_mode):
        raise UnsafePathError(path, _SYMLINK)
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafePathError(path, "it is not a folder; move it away and run the command again")
    if info.st_uid not in (os.geteuid(), 0):
        raise UnsafePathError(
            path,
            f"the folder is owned by {_owner_name(info.st_uid)}, not by you; "
            "remove it (or fix its owner) and run the command again",
        )


def ensure_dir(path: Path, root: Path | None = None, mode: int = PRIVATE_DIR) -> Path:
    """Make ``path`` (and its missing parents) with ``mode``, then check it down from ``root``.

    ``root`` (default: ``path`` itself) is where the caller's own layout starts; every folder
    from ``root`` to ``path`` must pass :func:`check_dir`. Folders that already exist keep their
    mode (``oa-vm doctor`` reports loose ones); new ones get ``mode`` whatever the umask.

    Raises:
        UnsafePathError: a folder on the way is a symlink, not a folder, or someone else's.
        WriteFailedError: a folder could not be made.
    """
    top = path if root is None else root
    chain = [path, *path.parents]
    if top not in chain:
        raise ValueError(f"{path} is not inside {top}")
    checked = chain[: chain.index(top) + 1]
    missing = []
    for folder in chain:
        if os.path.lexists(folder):
            break
        missing.append(folder)
    # what exists is checked first: nothing is made through a planted symlink
    for folder in reversed(checked):
        if folder not in missing:
            check_dir(folder, own_link=folder == top)
    for folder in reversed(missing):
        try:
            os.mkdir(folder, mode)
        except FileExistsError:
            pass  # made a moment ago by another command: checked below like any other
        except OSError as exc:
            raise WriteFailedError(folder, exc) from exc
        else:
            os.chmod(folder, mode)  # mkdir's mode is filtered by the umask
        if folder in checked:
            check_dir(folder, own_link=folder == top)
    return path


_NOT_REGULAR = "it is not a regular file (a device, a folder, a pipe)"


def _check_target(path: Path) -> bool:
    """Whether ``path`` exists; refuses a symlink or anything but a regular file."""
    info = _lstat(path)
    if info is None:
        return False  # under a file: no file here (what writes it says why it cannot)
    if stat.S_ISLNK(info.st_mode):
        raise UnsafePathError(path, _SYMLINK)
    if not stat.S_ISREG(info.st_mode):
        raise UnsafePathError(path, _NOT_REGULAR)
    return True


def exists_as_file(path: Path) -> bool:
    """Whether ``path`` is an existing regular file; refuses a symlink, device or folder.

    Raises:
        UnsafePathError: ``path`` is a symlink or not a regular file.
    """
    return _check_target(path)


_PARTIAL = ".tmp"


def partial_write(name: str, of: str) -> bool:
    """Whether ``name`` is what :func:`write_atomic` leaves of a write of ``of`` when its
    process is killed between making the temporary file and renaming it (``.of.XXXX.tmp``)."""
    return name.startswith(f".{of[:64]}.") and name.endswith(_PARTIAL)


def write_atomic(
    path: Path,
    data: str | bytes,
    mode: int = PRIVATE_FILE,
    root: Path | None = None,
    make_parents: bool = True,
    durable: bool = True,
) -> None:
    """Write ``data`` to ``path`` so readers see the old or the new content, never a mix.

    The temp file lives in the same folder (the rename stays on one file system, atomic on
    POSIX), is created exclusively with ``mode`` (never through a link), and is fsynced, then the
    folder too, trading a few milliseconds for a file that survives a power cut. ``root`` is
    passed to :func:`ensure_dir` for the folder; ``make_parents=False`` refuses a missing folder
    instead of making it. ``durable=False`` skips both fsyncs: still atomic (a crashed process
    leaves the old file or the new one), but a power cut may leave the old content, or none;
    only for copies that another durable record can rewrite (``execution.json``, rewritten
    from the queue by ``evals.results.records.RunFolder.sync_executions``).

    Raises:
        UnsafePathError: ``path`` is a symlink or not a regular file, or its folder is unsafe.
        WriteFailedError: the write failed (the message names ``path``, not the temp file).
    """
    import tempfile  # here, not at the top: read-only commands never load it (start-up time)

    parent = path.parent
    if make_parents:
        ensure_dir(parent, root=root if root is not None else parent)
    else:
        _check_out_folder(path)
    _check_target(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:64]}.", suffix=_PARTIAL, dir=parent)
    except OSError as exc:
        raise WriteFailedError(path, exc) from exc
    try:
        try:
            os.fchmod(fd, mode)
            with os.fdopen(fd, "wb") as handle:
                handle.write(payload)
                handle.flush()
                if durable:
                    os.fsync(handle.fileno())
            os.replace(tmp, path)
        except OSError as exc:
            raise WriteFailedError(path, exc) from exc
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if not durable:
        return
    dir_fd = os.open(parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


class OutRefusedError(UnsafePathError):
    """A path the user gave an option that names an output (``--out``, ``--dest``) that the one
    writer will not write: bad input, as any other value refused (exit 2), nothing written."""

    exit_code = 2


@contextlib.contextmanager
def _refusing_out() -> Iterator[None]:
    """Turn the shared path checks' refusals into :class:`OutRefusedError`: for an ``--out``
    the path is what the user typed, where for the home or a run folder it is what is on disk."""
    try:
        yield
    except OutRefusedError:
        raise
    except UnsafePathError as exc:
        raise OutRefusedError(exc.path, exc.reason) from exc


class ForeignFileError(OutRefusedError):
    """An ``--out`` names an existing file this project did not write (and ``--force`` is not
    given)."""

    def __init__(self, path: Path, option: str) -> None:
        super().__init__(path, f"it exists and is not a file this tool wrote; choose another "
                               f"{option}, or pass --force to replace it")


def _written_by_us(path: Path, marker: bytes) -> bool:
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    return marker in head


def _check_out_folder(path: Path) -> None:
    parent = path.parent
    if not os.path.lexists(parent):
        raise UnsafePathError(path, f"the folder {parent} does not exist; make it first")
    if not os.path.isdir(parent):
        raise UnsafePathError(path, f"{parent} is not a folder; give a path in a folder")
    check_dir(parent, own_link=True)
    # tried, not inferred: /proc and a read-only disk refuse even root, and the work an --out
    # comes after (an audit, an export) must not be done first and then lost
    problem = write_problem(parent)
    if problem is not None:
        raise UnsafePathError(path, f"{problem}; give a path in a folder you can write")


def check_out(path: Path, *, marker: bytes, force: bool = False, option: str = "--out") -> None:
    """Refuse, before any work, an ``--out`` that :func:`write_out` would refuse: a symlink,
    anything but a regular file (a device, a pipe, a folder), a missing or foreign folder, or a
    file that does not carry ``marker`` in its first 4 KB (a file we did not write) unless
    ``force``.

    Raises:
        OutRefusedError: the target or its folder is unsafe.
        ForeignFileError: the target is another program's file and ``force`` is not given.
    """
    with _refusing_out():
        _check_out_folder(path)
        if _check_target(path) and not force and not _written_by_us(path, marker):
            raise ForeignFileError(path, option)


def check_out_made(path: Path, *, ours: Callable[[Path], bool], force: bool = False,
                   option: str = "--out", folder: bool = True) -> None:
    """:func:`check_out` for an ``--out`` that a library writes, a file or a folder of files
    (:func:`write_out_made`): ``ours`` says whether what is there is this command's earlier
    output. A folder is taken when it is empty or ours; another program's folder is refused
    even with ``force``, which replaces a file but never deletes a tree of someone's files.
    A writer of one file (``folder=False``) takes no folder at all, as :func:`check_out`: an
    empty folder was replaced by the file, and a folder's own name is seldom the file's.

    Raises:
        OutRefusedError: the target, its folder, or a folder at the target is unsafe.
        ForeignFileError: the target is another program's file and ``force`` is not given.
    """
    with _refusing_out():
        _check_out_folder(path)
        info = _lstat(path)
        if info is not None and stat.S_ISDIR(info.st_mode) and not folder:
            raise OutRefusedError(path, f"it is a folder; give {option} the path of the file "
                                        "to write, in a folder")
        if info is not None and stat.S_ISDIR(info.st_mode):
            if any(path.iterdir()) and not ours(path):
                raise OutRefusedError(path, f"it is a folder of files this tool did not write; "
                                            f"choose a new or empty folder for {option}")
        elif _check_target(path) and not force and not ours(path):
            raise ForeignFileError(path, option)


def write_out_made(path: Path, write: Callable[[Path], object], *, ours: Callable[[Path], bool],
                   force: bool = False, option: str = "--out", folder: bool = True) -> None:
    """The one writer of an ``--out`` that a library writes: :func:`check_out_made`, then
    ``write`` fills a temporary sibling that takes the target's place only once it is whole, so
    a failed write leaves the earlier output as it was. ``folder`` says what ``write`` makes:
    a folder of files (the default) or one file.

    Raises:
        OutRefusedError, ForeignFileError: see :func:`check_out_made`.
        WriteFailedError: the write failed (a full disk); names the target.
    """
    check_out_made(path, ours=ours, force=force, option=option, folder=folder)
    # the target's name kept at the end: libraries choose a format by its suffix
    made = path.with_name(f".partial-{os.getpid()}-{path.name}")
    old = path.with_name(f".old-{os.getpid()}-{path.name}")
    try:
        write(made)
        if os.path.lexists(path):
            os.rename(path, old)  # a file or a folder, never followed
        os.rename(made, path)
    except OSError as exc:
        raise WriteFailedError(path, exc) from exc
    finally:
        for leftover in (made, old):
            if os.path.isdir(leftover) and not os.path.islink(leftover):
                shutil.rmtree(leftover, ignore_errors=True)
            elif os.path.lexists(leftover):
                os.unlink(leftover)


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def write_out(path: Path, data: str | bytes, *, marker: bytes, force: bool = False,
              option: str = "--out") -> None:
    """The one writer of every ``--out`` of every command: :func:`check_out`, then an atomic
    write (0600) with no folder made. ``data`` must carry ``marker`` in its first 4 KB, so the
    next run of the command may replace it without ``--force``.

    Raises:
        OutRefusedError, ForeignFileError: see :func:`check_out`.
        WriteFailedError: the write failed (a full disk); names the target.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    assert marker in payload[:4096], "an --out file carries its marker at its start"
    check_out(path, marker=marker, force=force, option=option)
    write_atomic(path, payload, make_parents=False)


def open_private(path: Path, append: bool = True, mode: int = PRIVATE_FILE) -> int:
    """Open ``path`` for writing (created with ``mode`` if missing), never through a symlink.

    Returns a raw file descriptor the caller owns (``os.fdopen`` it, or hand it to a process
    as its log). ``append=False`` truncates.

    Raises:
        UnsafePathError: ``path`` is a symlink or not a regular file.
        WriteFailedError: it could not be opened.
    """
    existed = _check_target(path)
    # The check above and the open below are two steps: what was swapped in between is refused
    # by the open itself (O_NOFOLLOW: a symlink) or by what it opened (fstat: a pipe or a
    # device; O_NONBLOCK so a pipe without a reader cannot block the open; O_TRUNC only after
    # the check, so a device is never truncated).
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    flags |= os.O_APPEND if append else 0
    try:
        fd = os.open(path, flags, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePathError(path, "it is a symlink oa-vm did not make") from exc
        if exc.errno == errno.ENXIO:  # a pipe nobody reads
            raise UnsafePathError(path, _NOT_REGULAR) from exc
        raise WriteFailedError(path, exc) from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafePathError(path, _NOT_REGULAR)
        os.set_blocking(fd, True)
        if not append:
            os.ftruncate(fd, 0)
        if not existed:
            os.fchmod(fd, mode)  # os.open's mode is filtered by the umask
    except OSError as exc:
        os.close(fd)
        raise WriteFailedError(path, exc) from exc
    except BaseException:
        os.close(fd)
        raise
    return fd


def create_once(path: Path, data: bytes, mode: int = PRIVATE_FILE) -> bool:
    """Write ``data`` into a new file at ``path`` (``mode`` exact whatever the umask, fsynced,
    never through a link); False, leaving it as it is, when the file exists already (made a
    moment ago by another command: theirs is used). For secrets made once (keys, passphrases).

    Raises:
        WriteFailedError: it could not be made or written (half a secret is removed).
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    except FileExistsError:
        return False
    except OSError as exc:
        raise WriteFailedError(path, exc) from exc
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        path.unlink(missing_ok=True)
        raise WriteFailedError(path, exc) from exc
    return True


def write_file(path: Path, data: bytes, mode: int = PRIVATE_FILE) -> None:
    """Write ``data`` to ``path`` in place (no fsync, no rename): for bulky files a crash may
    leave half of, such as screenshots, whose record points at them only once they are whole.

    Raises:
        UnsafePathError: ``path`` is a symlink or not a regular file.
        WriteFailedError: the write failed.
    """
    fd = open_private(path, append=False, mode=mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
    except OSError as exc:
        raise WriteFailedError(path, exc) from exc


def write_problem(path: Path) -> str | None:
    """Why a folder (or file) could not be made at ``path``, found without leaving anything
    behind; ``None`` when it can be, as far as a test can tell.

    The nearest existing folder on the way must be a folder and must accept a new entry. The
    second is tried, not inferred from permission bits: root passes every permission check, yet
    ``/proc`` and a read-only mount refuse it. The try is an empty folder made and removed at
    once, so a command refused later leaves nothing.
    """
    import tempfile

    existing = path
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    if not os.path.isdir(existing):
        if existing == path:
            return f"{path} is a file, not a folder"
        return f"{path} is under {existing}, which is not a folder"
    try:
        probe = tempfile.mkdtemp(prefix=".oa-write-check-", dir=existing)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        if existing == path:
            return f"{path} cannot be written to ({reason})"
        return f"{path} cannot be made: {existing} accepts no new folder ({reason})"
    os.rmdir(probe)
    return None


def read_json_object(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``; ``None`` when the file is missing or unreadable, or holds
    something else (for files a caller treats as absent when they cannot be used)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
