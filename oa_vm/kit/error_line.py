"""The one rule that keeps an error message on one readable line.

Messages quote what the user typed back to them (``--egress 'a\\nb': unknown egress mode``), and
what they typed may hold a newline, another control character, or thousands of characters: a
message printed as is would then be two lines, move the cursor, or fill the screen. Every error
line the console scripts print passes :func:`one_line` (:mod:`oa_vm.kit.clikit` and the fast
path :mod:`oa_vm.cli.quick`), so no message has to take care of it on its own. A message that
lists names that grow with the user's data (the runs of a folder, the pools of a home) lists
them with :func:`oa_vm.errors.listing`.

How a command says it failed is one rule too, :func:`say_failure`: the line on stderr and,
under ``--json``, the same error as the JSON document on stdout.

Kept free of imports beyond ``re``, ``json`` and ``sys``: ``pool-status``'s fast path loads it.
"""

from __future__ import annotations

import json
import re
import sys

LONGEST_WORD = 160
"""A run of more characters than this without a space is cut in its middle (a path of a few
folders, a URL or a region list stays whole)."""
_KEEP_HEAD, _KEEP_TAIL = 100, 40
# what str.splitlines() breaks a line at, and the other C0/C1 control characters; a tab is a
# space here
_CONTROL = "[\x00-\x1f\x7f-\x9f\u2028\u2029]"
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": " "}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"


def _shorten(match: re.Match[str]) -> str:
    word = match.group()
    return f"{word[:_KEEP_HEAD]}...({len(word)} characters)...{word[-_KEEP_TAIL:]}"


def one_line(text: str) -> str:
    """``text`` as one line of bounded length: control characters shown escaped (``\\n``,
    ``\\x1b``), each run of over :data:`LONGEST_WORD` characters without a space cut to its
    start and end, saying how long it was."""
    text = re.sub(_CONTROL, _escape, text)
    return re.sub(rf"\S{{{LONGEST_WORD + 1},}}", _shorten, text)


def host_words(output: str, most: int | None = 300) -> str:
    """What a command printed on a host (its stdout and stderr, a refusal of the login shell
    such as nologin's, a script's last words), as one line to put in a message: its lines
    stripped, blank ones dropped, joined by ``; ``; of a longer one, its last ``most``
    characters (where a failure says why), after ``...``. Every message quoting a host's
    output passes here, so none of them breaks the one-line rule."""
    joined = "; ".join(line.strip() for line in output.splitlines() if line.strip())
    if most is not None and len(joined) > most:
        return "..." + joined[-most:].lstrip()
    return joined


def say_failure(line: str, message: str, code: int, *, json_out: bool) -> int:
    """Say that a command failed and return its exit ``code``: ``line`` (the error as the
    console scripts word it, ``<prog>: error: <message>``) on stderr; with ``json_out`` (the
    command was given ``--json`` and printed no document yet), stdout also carries one JSON
    object, ``{"error": message, "exit_code": code}``, so what a ``--json`` command prints is
    one document whether it succeeded or not (``docs/cli.md``)."""
    print(line, file=sys.stderr)
    if json_out:
        sys.stdout.write(json.dumps({"error": message, "exit_code": code}, indent=2) + "\n")
    return code


__all__ = ["LONGEST_WORD", "host_words", "one_line", "say_failure"]
