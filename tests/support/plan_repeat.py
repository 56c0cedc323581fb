"""Run one plan command several times at once through the real CLI and compare what it printed.

A plan is read, diffed and approved before anything is billed, so two runs of one command must
print the same bytes. What a run prints that truly depends on the clock is named here, once,
with the reason (:data:`CLOCK_DERIVED`), and stands as a marker in both runs' output before
they are compared: nothing else may differ, and nothing is reordered to make it so.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import gzip
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.support.cli import BIN, Result

SECRETS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")

CLOCK_DERIVED: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?"
                r"(?: UTC|Z|[+-]\d{2}:\d{2})?"), "<time>",
     "the pool's expiry (now + its lifetime), an image's licence end (now + 90 days)"),
    (re.compile(r"\d{4}-\d{2}-\d{2}T\d{6}\b"), "<run-stamp>",
     "a sweep's run name is stamped with the second it is planned (AGENT-YYYY-MM-DDTHHMMSS)"),
    (re.compile(r'(?<="time": ")\d{4}(?=")'), "<hhmm>",
     "an Azure worker's daily shutdown schedule is set to the expiry's time of day (HHMM)"),
    (re.compile(r"\bsmoke-\d{4}-\d{6}\b"), "<smoke-pool>",
     "a smoke pool's default name is stamped with the time it is planned"),
    (re.compile(r"(?<=-)\d{8}-\d{4}\b"), "<image-stamp>",
     "an image's name is stamped with the minute it is planned (waa-REGION-YYYYMMDD-HHMM)"),
)
"""``(pattern, marker, why it depends on the clock)``: every part of a plan that may differ
between two runs of one command."""

GZIP_BASE64 = re.compile(r"H4sI[A-Za-z0-9+/=]+")
"""A gzip stream in base64 (a worker's user data): compared by its text, which holds the
expiry, not by its bytes."""


def clock_free(text: str) -> str:
    """``text`` with every :data:`CLOCK_DERIVED` part replaced by its marker (inside gzipped
    user data too)."""
    def unzipped(match: re.Match[str]) -> str:
        try:
            inner = gzip.decompress(base64.b64decode(match.group())).decode()
        except (binascii.Error, OSError, EOFError, UnicodeDecodeError):
            return match.group()
        return f"<gzip:{clock_free(inner)}>"

    text = GZIP_BASE64.sub(unzipped, text)
    for pattern, marker, _why in CLOCK_DERIVED:
        text = pattern.sub(marker, text)
    return text


TIMES = 3
"""How many runs of one command are compared. Each run has a hash seed of its own (string
hashes, so set and dict orders that follow them, differ between any two runs by construction,
not by chance), and they run at once, so three find what five found."""


def run_at_once(tmp_path: Path, script: str, args: list[str], times: int = TIMES,
                env: dict[str, str] | None = None) -> list[Result]:
    """Run ``script args`` ``times`` times concurrently (each with a fresh home and a hash seed
    of its own, no pulumi or cloud CLI on PATH, no model API key, caller-IP detection pointed at
    a closed loopback port), as a busy machine runs them: the threads Pulumi registers from then
    race most."""
    empty = tmp_path / "empty-path"
    empty.mkdir(parents=True, exist_ok=True)

    def one(index: int) -> Result:
        full = {k: v for k, v in os.environ.items() if k not in SECRETS}
        full.update(PATH=str(empty), OA_VM_HOME=str(tmp_path / f"home-{index}"),
                    OA_VM_IP_ECHO_URL="http://127.0.0.1:9/", PYTHONHASHSEED=str(index + 1),
                    **(env or {}))
        proc = subprocess.run(  # fixed argv, no shell
            [str(BIN / script), *args], capture_output=True, text=True, timeout=600, env=full,
            stdin=subprocess.DEVNULL, check=False,
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)

    with ThreadPoolExecutor(max_workers=times) as pool:
        return list(pool.map(one, range(times)))


def assert_same_plan(results: list[Result]) -> None:
    """Every run succeeded and printed the same plan, clock-derived parts aside (the first
    difference is shown as a diff)."""
    for result in results:
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr, result.stderr
    first = clock_free(results[0].stdout)
    for index, result in enumerate(results[1:], 2):
        other = clock_free(result.stdout)
        if other != first:
            diff = "\n".join(difflib.unified_diff(first.splitlines(), other.splitlines(),
                                                  "run 1", f"run {index}", lineterm="", n=1))
            raise AssertionError(f"run {index} printed another plan than run 1:\n{diff}")
