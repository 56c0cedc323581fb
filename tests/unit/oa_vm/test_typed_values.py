"""Every value a command line gave to one option, in each of Click's spellings
(:func:`oa_vm.kit.clikit.typed_values`, which ``target_option`` refuses two different of)."""

from __future__ import annotations

from oa_vm.kit.clikit import typed_values

NAMES = ("--pool", "-n", "--name")


def test_every_spelling_of_every_alias_is_read_in_order() -> None:
    args = ["pool-pause", "--pool", "a", "-n", "b", "--name=c", "-nd", "--json"]
    assert typed_values(NAMES, args) == ["a", "b", "c", "d"]


def test_other_options_and_what_follows_a_double_dash_are_not_read() -> None:
    assert typed_values(NAMES, ["x", "--pools", "a", "--pool"]) == []
    assert typed_values(NAMES, ["x", "--nam", "a", "--", "-n", "b"]) == []
    assert typed_values(NAMES, ["x", "-y", "--pool=", "-n", "b"]) == ["", "b"]
