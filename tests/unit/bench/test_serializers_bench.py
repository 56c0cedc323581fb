"""The serializer benchmark times every serializer installed on the same record, and only
after each has written a record ours reads back as the same."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from typing import Any

import pytest

from bench import serializers


def test_round_trips_are_measured_against_ours_in_one_run() -> None:
    figures = serializers.round_trips(workers=3, rounds=1, calls=2)
    assert figures["ours"]["parse_ratio_to_ours"] == 1.0
    assert figures["ours"]["dump_ratio_to_ours"] == 1.0
    for name in ("msgspec", "pydantic"):
        installed = importlib.util.find_spec(name) is not None
        assert (figures[name] is not None) == installed
        if installed:
            assert figures[name]["parse_us"] > 0 and figures[name]["dump_us"] > 0


def test_a_serializer_that_loses_a_field_is_not_timed(monkeypatch: pytest.MonkeyPatch) -> None:
    def lossy() -> tuple[Callable[[str], Any], Callable[[Any], str]]:
        parse, dump = serializers._ours()

        def dump_without_owner(record: Any) -> str:
            data = json.loads(dump(record))
            data["owner"] = ""
            return json.dumps(data)

        return parse, dump_without_owner

    monkeypatch.setattr(serializers, "MAKERS", {"ours": serializers._ours, "lossy": lossy})
    with pytest.raises(RuntimeError, match="lossy does not write the record ours reads back"):
        serializers.round_trips(workers=2, rounds=1, calls=1)


def test_import_costs_are_read_from_fresh_interpreters() -> None:
    figures = serializers.import_costs(runs=1)
    assert figures["oa_vm.model.state"] > 0 and figures["python -c pass (wall)"] > 0
    for name in serializers.LIBRARIES:
        if importlib.util.find_spec(name) is not None:
            assert figures[name] > 0 and figures[f"{name} / oa_vm.model.state"] > 0
