"""The one task-ID rule names where an ID breaks it, which a long ID cut short would hide."""

from __future__ import annotations

import pytest

from waa_client.inputs import id_problem

WAA_ID = "c499b229-110c-5fc8-9895-f2f879ac1512-WOS"  # 40 characters: longer ones are cut short


@pytest.mark.parametrize(("value", "said"), [
    # an @file of IDs separated by commas: the comma came after the 40 characters shown
    (f"{WAA_ID}, 1ea6a9af-3a80-521e-a6ba-f392a618d1b0-WOS", "(',' at character 41)"),
    ("notepad 1", "(' ' at character 8)"),
    ("t1#2", "('#' at character 3)"),
    ("-x", "('-' at character 1)"),
    ("résumé", "('é' at character 2)"),
])
def test_a_refused_id_names_its_first_wrong_character(value: str, said: str) -> None:
    problem = id_problem("task ID", value)
    assert problem is not None and said in problem, problem


def test_a_good_id_has_no_problem() -> None:
    assert id_problem("task ID", WAA_ID) is None
    assert id_problem("task ID", "folder/3") is None  # a Cua-Bench variant
