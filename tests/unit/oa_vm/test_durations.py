"""Human durations on the command line."""

from __future__ import annotations

import pytest

from oa_vm.durations import format_duration, parse_duration
from oa_vm.errors import InvalidInputError


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30m", 1800), ("90s", 90), ("1h", 3600), ("45", 2700), ("1.5m", 90), ("1d", 86400)],
)
def test_parse(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "abc", "-5", "0", "5w", "m"])
def test_parse_rejects(text: str) -> None:
    with pytest.raises(InvalidInputError):
        parse_duration(text)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(5, "5s"), (0, "0s"), (185, "3m05s"), (600, "10m"), (7800, "2h10m"), (4 * 3600, "4h"),
     (3 * 86400, "3d"), (3 * 86400 + 7200, "3d02h"), (365 * 86400, "365d")],
)
def test_format(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


@pytest.mark.parametrize("seconds", [1, 59, 60, 185, 600, 3600, 7800, 86400 * 3 + 7200])
def test_the_parser_reads_back_what_the_formatter_prints(seconds: float) -> None:
    assert parse_duration(format_duration(seconds)) == seconds
