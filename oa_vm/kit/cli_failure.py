"""Why a command-line tool the code ran (``aws``, ``az``) failed, in the tool's own words.

A ``CalledProcessError`` reads ``Command '['aws', 'ec2', ...]' returned non-zero exit status
255.``: the argv and a number, never the reason, which the tool printed on stderr (``Unable to
locate credentials. You can configure credentials by running "aws configure".``). Every message
that reports such a failure takes its reason from :func:`why_it_failed` (an exception) or
:func:`tool_said` (a finished process's stderr), so none quotes the argv instead.
"""

from __future__ import annotations

import re
import subprocess

LONGEST = 200
"""Characters of the tool's line kept (the rest of a message stays readable)."""
_ERROR_LINE = re.compile(r"^(ERROR\b|An error occurred\b|error:)", re.IGNORECASE)


def tool_said(stderr: str | bytes | None, default: str) -> str:
    """The line of ``stderr`` that says what went wrong: the first that starts as an error line
    (``ERROR: ...`` as ``az`` prints it, ``An error occurred (...)`` as ``aws`` does), else the
    last non-blank one; ``default`` when there is none. At most :data:`LONGEST` characters."""
    if isinstance(stderr, bytes):
        stderr = stderr.decode("utf-8", errors="replace")
    lines = [line.strip() for line in (stderr or "").splitlines() if line.strip()]
    if not lines:
        return default
    flagged = [line for line in lines if _ERROR_LINE.match(line)]
    return (flagged[0] if flagged else lines[-1])[:LONGEST]


def why_it_failed(exc: BaseException) -> str:
    """One phrase for a tool that failed to run or to answer: what it said on stderr (or its
    exit code when it said nothing), that it did not answer in time, or the error's own text."""
    if isinstance(exc, subprocess.CalledProcessError):
        return tool_said(exc.stderr, f"exit code {exc.returncode}, nothing on stderr")
    if isinstance(exc, subprocess.TimeoutExpired):
        return f"no answer within {exc.timeout:g} s"
    text = tool_said(str(exc), "")
    if isinstance(exc, OSError) and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


__all__ = ["LONGEST", "tool_said", "why_it_failed"]
