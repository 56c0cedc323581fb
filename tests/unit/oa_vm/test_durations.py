"""Human durations on the command line."""

from __future__ import annotations

import math

import pytest

from oa_vm.errors import InvalidInputError
from oa_vm.kit.durations import format_duration, parse_duration, to_seconds


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


@pytest.mark.parametrize(("text", "seconds"), [("1h30m", 5400), ("3m05s", 185), ("2d03h", 183600),
                                               ("1m 30s", 90)])
def test_compound_durations(text: str, seconds: float) -> None:
    from oa_vm.kit.durations import to_seconds

    assert to_seconds(text, None) == seconds


def test_a_bare_number_is_refused_where_no_unit_is_taken() -> None:
    from oa_vm.kit.durations import to_seconds

    with pytest.raises(ValueError, match="has no unit"):
        to_seconds("8", None)
    assert to_seconds("8", "h") == 8 * 3600


def test_the_typed_alias_is_the_last_one_on_the_command_line() -> None:
    from oa_vm.kit.clikit import typed_name

    names = ("--ttl", "--ttl-hours")
    assert typed_name(names, ["--ttl-hours", "2", "--ttl=3h"]) == "--ttl"
    assert typed_name(names, ["--ttl", "2h", "--ttl-hours", "3"]) == "--ttl-hours"
    assert typed_name(names, ["--ttlx", "1", "--", "--ttl", "2h"]) is None


def test_a_duration_parser_keeps_bare_numbers_when_it_cannot_tell_the_spelling() -> None:
    import typer

    from oa_vm.kit.duration_options import duration

    parse = duration("h", names=("--ttl", "--ttl-hours"), bare=("--ttl-hours",), most=8760)
    assert parse("8") == 8.0 and parse("90m") == 1.5 and parse(4.0) == 4.0
    with pytest.raises(typer.BadParameter, match="must be at most 365d, not 400d"):
        parse("400d")


@pytest.mark.parametrize("text", ["3651d", "1e30", "1" + "0" * 40, "87601h"])
def test_no_duration_is_longer_than_ten_years(text: str) -> None:
    with pytest.raises(InvalidInputError, match="longer than 3650d"):
        parse_duration(text, default_unit="s")
    assert parse_duration("3650d") == 3650 * 86400


@pytest.mark.parametrize("text", ["1e308", "1e308h", "1e400s", "1e307d1e307d"])
def test_a_number_too_large_for_a_float_is_too_long_not_too_short(text: str) -> None:
    # It overflows to infinity, which the check of "more than zero" caught first: "'1e308'
    # must be more than zero".
    with pytest.raises(ValueError, match="is longer than 3650d"):
        to_seconds(text, "h")
    with pytest.raises(ValueError, match="is longer than 3650d"):
        to_seconds(text, "h", longest_s=math.inf)
