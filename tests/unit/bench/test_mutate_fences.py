"""The fences' mutation bench stays runnable: its mutants are well formed and every area runs
tests that exist. (Whether a snippet is still in its module is the bench's own ``--list``
question: a module that changed marks its mutants stale, it does not break the suite.)"""

from __future__ import annotations

from bench.mutate_fences import AREA_TESTS, MUTANTS, ROOT


def test_mutants_are_well_formed() -> None:
    ids = [m.id for m in MUTANTS]
    assert len(ids) == len(set(ids))
    for mutant in MUTANTS:
        assert mutant.area in AREA_TESTS, mutant.id
        assert mutant.old and mutant.old != mutant.new, mutant.id
        assert (ROOT / mutant.path).is_file(), mutant.id


def test_every_area_runs_tests_that_exist() -> None:
    for area, tests in AREA_TESTS.items():
        assert any((ROOT / t).is_file() for t in tests), area
        missing = [t for t in tests if not (ROOT / t).is_file()]
        assert missing in ([], ["tests/unit/oa_vm/test_redact.py"]), (area, missing)
