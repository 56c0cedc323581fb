"""The verifier audit's operators and effect comparison, on hand-made runs."""

from __future__ import annotations

import pytest

from evals.verifier_audit import CallPolicy, apply_operator, compare, repeat_at, repeat_candidates
from evals.verifier_audit.effects import ADDS, CHANGES, REMOVES, SAME

SIGN_IN = {"method": "post", "url": "/app/auth/token", "data": {"username": "u"}}
READ = {"method": "get", "url": "/app/items", "data": {}}
CLAIM = {"method": "post", "url": "/supervisor/complete_task", "data": {}}


def _write(url: str, **data: object) -> dict[str, object]:
    return {"method": "post", "url": url, "data": {"access_token": "t", **data}}


RUN = [SIGN_IN, READ, _write("/app/items/1", name="first", n=1),
       _write("/app/items/2", name="second", n=2), _write("/app/notes", text="hello there"), CLAIM]


def test_claim_only_keeps_sign_in_and_claim() -> None:
    assert apply_operator(RUN, "claim-only").calls == [SIGN_IN, CLAIM]
    assert apply_operator(RUN[:-1], "claim-only").refusal == "NO_CLAIM_CALL"


def test_omit_and_extra_act_on_the_last_write() -> None:
    omitted = apply_operator(RUN, "omit").calls
    assert omitted == [c for c in RUN if c is not RUN[4]]
    extra = apply_operator(RUN, "extra").calls
    assert extra is not None and extra[4] == extra[5] == RUN[4] and len(extra) == len(RUN) + 1


def test_partial_keeps_the_first_of_the_most_repeated_endpoint() -> None:
    edit = apply_operator(RUN, "partial")
    assert edit.calls == [c for c in RUN if c is not RUN[3]]  # /app/items/{id} written twice
    assert edit.detail["endpoint"] == "/app/items/{id}"
    assert apply_operator([SIGN_IN, _write("/a"), CLAIM], "partial").refusal == "NO_REPEATED_WRITE"


def test_wrong_value_changes_one_unprotected_value() -> None:
    edit = apply_operator(RUN, "wrong-value")
    assert edit.calls is not None
    assert edit.calls[4]["data"] == {"access_token": "t", "text": "hello therex"}
    assert RUN[4]["data"]["text"] == "hello there"  # the reference is not touched
    numbers = apply_operator([_write("/a", access_token="long-token", n=4)], "wrong-value")
    assert numbers.calls is not None and numbers.calls[0]["data"]["n"] == 5
    flag = apply_operator([_write("/a", on=True, n=1)], "wrong-value")
    assert flag.calls is not None and flag.calls[0]["data"]["on"] is False
    assert apply_operator([_write("/a", x="ab")], "wrong-value").refusal == "NO_CHANGEABLE_VALUE"


def test_no_write_refuses_every_operator() -> None:
    for op in ("claim-only", "omit", "partial", "wrong-value", "extra"):
        assert apply_operator([SIGN_IN, READ, CLAIM], op).refusal == "NO_WRITE"
    with pytest.raises(ValueError):
        apply_operator(RUN, "extra-ni")


def test_repeat_candidates_newest_first_one_per_endpoint() -> None:
    assert repeat_candidates(RUN) == [4, 3]
    assert repeat_at(RUN, 2)[2:4] == [RUN[2], RUN[2]]


def test_a_custom_policy_reads_other_calls() -> None:
    policy = CallPolicy(is_auth=lambda c: c["url"] == "/login",
                        is_claim=lambda c: c["url"] == "/done",
                        protected_fields=frozenset({"text"}))
    run = [{"method": "post", "url": "/login"}, _write("/w", text="abcdef", n=3),
           {"method": "post", "url": "/done"}]
    assert apply_operator(run, "claim-only", policy).calls == [run[0], run[2]]
    changed = apply_operator(run, "wrong-value", policy).calls
    assert changed is not None and changed[1]["data"]["n"] == 4


Effect = dict[str, dict[str, list[object]]]


def _effect(*records: dict[str, object], table: str = "t.Item") -> Effect:
    return {table: {"added": list(records), "removed": [], "updated": []}}


def test_compare_counts_duplicates_and_ignores_fields() -> None:
    ref = _effect({"id": 1, "v": "a"})
    assert compare(ref, _effect({"id": 7, "v": "a"}), ignore=["id"]).same
    assert compare(ref, _effect({"id": 7, "v": "a"})).shape == CHANGES  # the ID counts then
    dup = compare(ref, _effect({"id": 1, "v": "a"}, {"id": 2, "v": "a"}), ignore=["id"])
    assert dup.shape == ADDS and dup.tables["t.Item"]["+"] == 1
    assert dup.summary() == "t.Item +1"
    gone = compare(ref, {}, ignore=["id"])
    assert gone.shape == REMOVES and gone.tables["t.Item"]["-"] == 1
    wrong = compare(ref, _effect({"id": 1, "v": "b"}), ignore=["t.Item.id"])
    assert wrong.shape == CHANGES and wrong.tables["t.Item"]["fields"] == ["v"]
    assert wrong.summary() == "t.Item: v changed"
    assert compare({}, {}).shape == SAME


def test_an_update_of_ignored_fields_only_is_no_change() -> None:
    touched = {"t.P": {"added": [], "removed": [], "updated": [
        {"before": {"id": 1, "at": 1}, "after": {"id": 1, "at": 2}}]}}
    assert compare({}, touched, ignore=["at"]).same
    assert not compare({}, touched).same
