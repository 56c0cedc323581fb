"""The one reader of what a user hands over, and the one rule for the IDs it names.

Everything a user gives as a file or a long argument comes through here: ``--tasks @file`` and
``--task-ids @file``, a ``--variations`` file (JSON or YAML), the task files of a ``--source``
or ``--tasks-dir`` folder, a comma-separated ``--tasks`` list. It is refused in one line
(:class:`~waa_client.errors.InputError`, exit 2) when it is:

- not a regular file: a FIFO would block the read forever, ``/dev/zero`` would never end, a
  folder is a mistake (opened with ``O_NONBLOCK`` and checked with ``fstat`` *before* a byte is
  read, so neither a writer-less pipe nor a device is waited on);
- larger than :data:`MAX_INPUT_BYTES` (read with a bound, so a file that grows meanwhile cannot
  slip through either);
- not UTF-8, or holding a lone surrogate (``"\\ud800"`` in JSON decodes to one, and the first
  write of it as UTF-8 fails far from here);
- a JSON/YAML document with a duplicate key (the last one would silently win), nested deeper
  than :data:`MAX_DEPTH`, or (YAML) using an alias (``*name``): a "billion laughs" document
  of a few hundred bytes expands to billions of values, and no input of ours needs one.

Task IDs become folder names, queue keys and trial keys (``<id>#<n>``), so :func:`id_problem`
is the one rule they pass, before anything is created: letters, digits, ``.``, ``_`` and
``-``, at most :data:`MAX_ID_LENGTH` characters, starting with a letter or digit; a
Cua-Bench task's ``<folder>/<variant>`` is the only form with a ``/``.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from waa_client.errors import InputError

__all__ = ["InputError", "MAX_DEPTH", "MAX_ID_LENGTH", "MAX_INPUT_BYTES", "check_argument",
           "check_id", "id_problem", "kind_of", "parse_json", "parse_yaml", "read_id_file",
           "read_json", "read_text", "read_yaml", "split_ids"]

MAX_INPUT_BYTES = 4 * 1024 * 1024
"""The largest file (or argument) accepted: WAA's largest task file is a few KB, and the
bundled variations file of every local task 60 KB; 4 MB leaves room and still bounds the
memory and time a mistaken or hostile input costs."""

BOM = "\ufeff"
"""The byte-order mark some editors put first in a UTF-8 file; :func:`read_text` drops it."""

MAX_DEPTH = 64
"""The deepest nesting of lists and objects accepted in a JSON or YAML input."""

MAX_ID_LENGTH = 200
"""Task IDs become folder names (255 bytes at most on Linux) with a suffix (``#<trial>``,
``trial-<n>``): 200 leaves room."""

_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_CUA_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[0-9]{1,6}")


def id_problem(kind: str, value: object, *, quoted: bool = True) -> str | None:
    """Why ``value`` cannot be a task ID (``None`` when it can), as one sentence naming
    ``kind`` (``task ID``, ``variation key``...), and quoting ``value`` unless ``quoted`` is
    False (a line of a file, which :func:`read_id_file` names by its number instead)."""
    if not isinstance(value, str):
        return f"{kind} {value!r} must be text, not {type(value).__name__}"
    named = f"{kind} {_shown(value)!r}" if quoted else kind
    if len(value) > MAX_ID_LENGTH:
        return f"{named} ({len(value)} characters) is longer than {MAX_ID_LENGTH} characters"
    if not (_ID_RE.fullmatch(value) or _CUA_ID_RE.fullmatch(value)):
        return (f"{named} cannot name a folder{_first_bad(value)}: use "
                "letters, digits, '.', '_' and '-', starting with a letter or digit (no '#', "
                "spaces or path parts)")
    return None


def _not_empty(text: str, what: str) -> None:
    """No input of ours is an empty document: said so, where JSON said "Expecting value" and
    YAML read nothing, which each reader then called "not a mapping"."""
    if not text.strip():
        raise InputError(f"{what} is empty; fill it in, or give another file")


def _first_bad(value: str) -> str:
    """`` ('/' at character 3)``: where an ID breaks the rule, which a long ID cut short in
    the message would hide (a comma after 40 characters of a valid one)."""
    for index, char in enumerate(value):
        if not (char.isascii() and (char.isalnum() or (index and char in "._-"))):
            return f" ({char!r} at character {index + 1})"
    return ""


def check_id(kind: str, value: object) -> str:
    """``value`` when :func:`id_problem` finds nothing; else raises :class:`InputError`."""
    problem = id_problem(kind, value)
    if problem:
        raise InputError(problem)
    assert isinstance(value, str)
    return value


_KINDS: dict[type, str] = {bool: "a boolean", int: "a number", float: "a number",
                          str: "a string", list: "a list", dict: "a mapping",
                          type(None): "nothing"}


def kind_of(value: object) -> str:
    """What a parsed JSON/YAML value is, in a refusal's words (``a mapping``, ``nothing``)."""
    return _KINDS.get(type(value), type(value).__name__)


def split_ids(line: str) -> list[str]:
    """The IDs of one line of a task list: separated by commas, ``#`` starting a comment."""
    return [part.strip() for part in line.split("#", 1)[0].split(",") if part.strip()]


def read_id_file(path: Path | str, *, what: str = "the task list") -> list[str]:
    """The task IDs of the file ``path`` (one a line or comma-separated; ``#`` comments and
    blank lines ignored), each passing :func:`check_id`, in order, duplicates kept.

    A line that is not a task ID is named by its number and where it breaks the rule, never
    quoted: the file may be the wrong one (``@/etc/shadow``), and a refusal must not print it.

    Raises:
        InputError: the file cannot be read (:func:`read_text`), or a line is not a task ID.
    """
    ids: list[str] = []
    for number, line in enumerate(read_text(path, what=what).splitlines(), start=1):
        for task_id in split_ids(line):
            problem = id_problem(f"line {number} of {what} {path}", task_id, quoted=False)
            if problem:
                raise InputError(problem)
            ids.append(task_id)
    return ids


def check_argument(what: str, text: str) -> str:
    """A long argument (a ``--tasks`` list) under the same size bound as a file."""
    if len(text) > MAX_INPUT_BYTES:
        raise InputError(f"{what} is {len(text)} characters, more than the "
                         f"{MAX_INPUT_BYTES // (1024 * 1024)} MB accepted; give fewer IDs "
                         "or a selection (all, domain:<name>, an index)")
    _no_surrogates(what, text)
    return text


def read_text(path: Path | str, *, what: str) -> str:
    """The UTF-8 text of the regular file ``path``, read with a bound, without a leading
    byte-order mark (:data:`BOM`).

    ``what`` names the input in messages (``--variations``, ``the task list``).

    Raises:
        InputError: missing or unreadable, not a regular file, too large, not UTF-8.
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        # worded as oa_vm.kit.validate.read_problem, the rule of every other path to read
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            raise InputError(f"{what} {path} does not exist; check the path") from exc
        raise InputError(f"cannot read {what} {path}: {exc.strerror or exc}; "
                         "give a regular file") from exc
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise InputError(f"{what} {path} is a folder, not a file; give a regular file")
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"{what}: {path} is not a regular file (a device or a pipe); "
                             "give a regular file")
        if info.st_size > MAX_INPUT_BYTES:
            raise _too_large(what, path)
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:
        raise InputError(f"cannot read {what} {path}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)
    if len(data) > MAX_INPUT_BYTES:
        raise _too_large(what, path)
    return decode_text(data, what=what, path=path)


def decode_text(data: bytes, *, what: str, path: Path | str) -> str:
    """``data`` read from ``path`` as UTF-8 text, without a leading byte-order mark.

    Raises:
        InputError: not UTF-8 (the byte named, never the content).
    """
    try:
        # a byte-order mark is no content: Windows editors (Notepad) start UTF-8 files with one
        return data.decode("utf-8").removeprefix(BOM)
    except UnicodeDecodeError as exc:
        raise InputError(f"{what}: {path} is not UTF-8 text (byte {exc.start}); "
                         "save it as UTF-8") from exc


def _too_large(what: str, path: Path) -> InputError:
    return InputError(f"{what}: {path} is larger than the "
                      f"{MAX_INPUT_BYTES // (1024 * 1024)} MB accepted; split it or trim it")


def parse_json(text: str, *, what: str) -> Any:
    """``text`` as JSON, refusing duplicate keys, deep nesting and lone surrogates.

    Raises:
        InputError: empty, not JSON, or one of the above (the message names ``what``).
    """
    _not_empty(text, what)
    try:
        data = json.loads(text, object_pairs_hook=lambda pairs: _unique(what, pairs))
    except json.JSONDecodeError as exc:
        raise InputError(f"{what} is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                         f"{exc.msg}); fix the file") from exc
    except RecursionError as exc:
        raise _too_deep(what) from exc
    except ValueError as exc:  # a number of more than 4300 digits
        raise InputError(f"{what}: {exc}".splitlines()[0]) from exc
    _check_tree(what, data, 0)
    return data


def parse_yaml(text: str, *, what: str) -> Any:
    """``text`` as YAML (JSON included), refusing aliases, duplicate keys, deep nesting and
    lone surrogates.

    Raises:
        InputError: empty, not YAML, or one of the above.
    """
    _not_empty(text, what)
    import yaml  # only the commands that take YAML load it

    loader = _BoundedLoader(text)
    try:
        loader.what = what
        data = loader.get_single_data()
    except yaml.YAMLError as exc:
        raise InputError(f"{what} is not JSON or YAML: {exc}".splitlines()[0]) from exc
    except RecursionError as exc:
        raise _too_deep(what) from exc
    finally:
        loader.dispose()
    _check_tree(what, data, 0)
    return data


def read_json(path: Path | str, *, what: str) -> Any:
    """:func:`read_text` then :func:`parse_json`; messages name ``what`` and the file."""
    return parse_json(read_text(path, what=what), what=f"{what} {path}")


def read_yaml(path: Path | str, *, what: str) -> Any:
    """:func:`read_text` then :func:`parse_yaml`; messages name ``what`` and the file."""
    return parse_yaml(read_text(path, what=what), what=f"{what} {path}")


def _unique(what: str, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise InputError(f"{what}: the key {_shown(key)!r} appears twice; keep one")
        out[key] = value
    return out


def _too_deep(what: str) -> InputError:
    return InputError(f"{what} is nested deeper than {MAX_DEPTH} levels; flatten it")


def _shown(text: str) -> str:
    short = text if len(text) <= 60 else f"{text[:40]}..."
    return short.encode("utf-8", "backslashreplace").decode("utf-8")


def _no_surrogates(what: str, text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(f"{what}: {_shown(text)!r} holds a lone surrogate "
                         f"({text[exc.start]!a}), which is not text; fix it") from exc


def _check_tree(what: str, value: Any, depth: int) -> None:
    """Depth and lone surrogates, over the whole parsed value (iterative: no recursion)."""
    stack = [(value, depth)]
    while stack:
        item, level = stack.pop()
        if level > MAX_DEPTH:
            raise _too_deep(what)
        if isinstance(item, str):
            _no_surrogates(what, item)
        elif isinstance(item, dict):
            for key, child in item.items():
                stack.append((key, level + 1))
                stack.append((child, level + 1))
        elif isinstance(item, list):
            stack.extend((child, level + 1) for child in item)


def _make_loader() -> type:
    import yaml

    class Loader(yaml.SafeLoader):
        """SafeLoader that refuses aliases, duplicate keys and deep nesting while composing,
        before anything is built (a bomb never expands)."""

        what = "input"
        _depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()  # type: ignore[no-untyped-call]
                raise InputError(f"{self.what}: line {event.start_mark.line + 1}: aliases "
                                 f"(*{event.anchor}) are not accepted; write the value out")
            self._depth += 1
            try:
                if self._depth > MAX_DEPTH:
                    raise _too_deep(self.what)
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                try:
                    duplicate = key in seen
                    seen.add(key)
                except TypeError:
                    continue  # an unhashable key: SafeLoader's own error follows
                if duplicate:
                    raise InputError(f"{self.what}: line {key_node.start_mark.line + 1}: the "
                                     f"key {_shown(str(key))!r} appears twice; keep one")
            return super().construct_mapping(node, deep=deep)

    return Loader


class _LazyLoader:
    """Builds the loader class on first use (PyYAML is imported only by commands reading
    YAML)."""

    cls: type | None = None

    def __call__(self, text: str) -> Any:
        if _LazyLoader.cls is None:
            _LazyLoader.cls = _make_loader()
        return _LazyLoader.cls(text)


_BoundedLoader = _LazyLoader()
