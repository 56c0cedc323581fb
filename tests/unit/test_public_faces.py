"""The lazy public faces (``oa_vm``, ``evals``) answer with what their modules hold now.

A face that kept a name at its first use went on answering with a test's stand-in after the
test ended (a sweep test's ``wait_pool`` then failed every later sweep in that process).
"""

from __future__ import annotations

import pytest

import evals
import oa_vm
from evals.run import runner
from oa_vm import api


def test_oa_vm_face_follows_its_module(monkeypatch: pytest.MonkeyPatch) -> None:
    original = api.wait_pool

    def stand_in(name: str, **_: object) -> None:
        raise AssertionError("the stand-in")

    with monkeypatch.context() as patch:
        patch.setattr(api, "wait_pool", stand_in)
        assert oa_vm.wait_pool is stand_in
    assert oa_vm.wait_pool is original


def test_evals_face_follows_its_module(monkeypatch: pytest.MonkeyPatch) -> None:
    original = runner.run_evaluation
    with monkeypatch.context() as patch:
        patch.setattr(runner, "run_evaluation", lambda *a, **k: None)
        assert evals.run_evaluation is not original
    assert evals.run_evaluation is original


def test_a_stubbed_library_class_matches_nothing() -> None:
    # WAA's evaluators' stand-ins stay in sys.modules for the rest of a test process
    from tests.support.waa_stubs import _Inert

    stand_in = _Inert("pdfplumber.pdf.PDF")
    assert not isinstance(object(), stand_in)  # type: ignore[arg-type]
    assert not issubclass(int, stand_in)  # type: ignore[arg-type]
