"""Every time estimate comes from :mod:`oa_vm.kit.timings`: no module writes its own figure for an
image build or a pool's start, the docs print the module's, and each figure says its basis."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from oa_vm.kit import timings

ROOT = Path(__file__).resolve().parents[3]
# A duration written out as a literal in prose or an f-string: "about 90 min", "140 min",
# "1.5-3 h", "2 h" (the image build was once printed five ways, the start-up two).
LITERAL = re.compile(r"\b(?:about \d+(?:\.\d+)? ?(?:min|minutes|h|hours)\b|\d+(?:\.\d+)?-\d+ ?"
                     r"(?:min|h)\b|\b(?:90|120|140) min\b|0\.25 h start-up)")
SOURCES = ("oa_vm", "evals", "infra")
# where a literal duration is not a time estimate (option examples, durations parsed)
NOT_ESTIMATES = {"oa_vm/kit/timings.py"}


def test_no_module_writes_its_own_time_estimate() -> None:
    found = []
    for package in SOURCES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = str(path.relative_to(ROOT))
            if relative in NOT_ESTIMATES:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if LITERAL.search(line):
                    found.append(f"{relative}:{number}: {line.strip()}")
    assert found == [], "time estimates written outside oa_vm.kit.timings:\n" + "\n".join(found)


def test_every_figure_is_marked_and_sourced() -> None:
    for timing in timings.ALL:
        assert timing.basis in (timings.ESTIMATED, timings.MEASURED)
        assert timing.low_s <= timing.typical_s <= timing.high_s, timing
        assert timing.text().endswith(f"{timing.basis})")
        assert timing.source


def test_the_docs_print_the_modules_figures() -> None:
    table = (ROOT / "docs" / "cost.md").read_text(encoding="utf-8")
    for timing in timings.ALL:
        assert f"| {timing.what} | {timing.text()} |" in table, timing.what


@pytest.mark.parametrize(("seconds", "text"), [
    (20 * 60, "about 20 min"), (2 * 3600, "about 2 h"), (140 * 60, "about 2 h 20 min"),
    (35 * 60, "about 35 min"), (90 * 60, "about 1 h 30 min"),
])
def test_about(seconds: float, text: str) -> None:
    assert timings.about(seconds) == text


def test_deadlines_cover_the_slow_end() -> None:
    # a pool's wait covers the first pool from a new AWS image; a build's wait its slow end
    assert timings.deadline_s(timings.WARM_READY) >= timings.FIRST_POOL_READY.high_s
    assert timings.deadline_s(timings.IMAGE_BUILD) >= timings.IMAGE_BUILD.high_s
