"""Rules a mutation audit found unguarded: partial credit is not success, ``check_list``'s
``unexpect`` holds on every line, and every metric that reads host paths is confined."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest

from infra.local import checker
from infra.local.checker import METRICS, check_list, confined_metric
from infra.local.desktop import Desktop
from infra.scoring_rules import Unscorable, evaluate


def _verdict(func: Any, scores: dict[str, float], conj: str = "and") -> Any:
    names = func if isinstance(func, list) else [func]
    results = [{"type": "r", "name": n} for n in names]
    evaluator: dict[str, Any] = {"func": func, "conj": conj,
                                 "result": results if isinstance(func, list) else results[0]}
    if isinstance(func, list):
        evaluator["expected"] = [{"type": "r", "name": n} for n in names]
    return evaluate(evaluator, "DONE", get_value=lambda cfg: cfg.get("name"),
                    metric=lambda name: (lambda result, *_, **__: scores[name]))


@pytest.mark.parametrize("score", [0.5, 0.01, 0.999])
def test_one_partial_metric_scores_but_does_not_succeed(score: float) -> None:
    verdict = _verdict("m", {"m": score})
    assert verdict.score == score and verdict.success is False
    assert _verdict("m", {"m": 1.0}).success is True


def test_several_partial_metrics_are_no_success_either() -> None:
    both = _verdict(["a", "b"], {"a": 0.5, "b": 1.0})
    assert both.score == pytest.approx(0.75) and not both.success
    either = _verdict(["a", "b"], {"a": 0.5, "b": 0.4}, conj="or")
    assert either.score == 0.5 and not either.success


def test_check_list_unexpect_is_checked_on_every_line(tmp_path: Path) -> None:
    rules = {"expect": ["alice"], "unexpect": ["\\w+ \\w+"]}
    clean = tmp_path / "clean.txt"
    clean.write_text("alice\nbob\n", encoding="utf-8")
    assert check_list(str(clean), rules) == 1.0
    for text in ("alice bob\ncarol\n", "carol\nalice bob\ndave\n", "alice\ncarol dave"):
        dirty = tmp_path / "dirty.txt"
        dirty.write_text(text, encoding="utf-8")
        assert check_list(str(dirty), rules) == 0.0, text


def _path_arguments(name: str, outside: str) -> list[Any]:
    """Arguments to metric ``name`` with every path argument the host file ``outside``."""
    return {"compare_text_file": [outside, outside], "compare_files": [outside, outside],
            "file_exists": [outside], "check_list": [outside, {"expect": [], "unexpect": []}]
            }[name]


@pytest.mark.parametrize("name", sorted(checker.FILE_METRICS))
def test_every_file_metric_refuses_a_host_path(name: str, tmp_path: Path) -> None:
    outside = tmp_path / "host.txt"
    outside.write_text("secret", encoding="utf-8")
    fn = confined_metric(Desktop(tmp_path / "root"), name)
    with pytest.raises(Unscorable, match="outside the worker's sandbox"):
        fn(*_path_arguments(name, str(outside)))


def test_every_metric_that_opens_a_path_is_a_file_metric(tmp_path: Path) -> None:
    """A metric left out of FILE_METRICS would read host files: call each one with a host path
    and see whether it opens it."""
    outside = tmp_path / "host.txt"
    outside.write_text("secret", encoding="utf-8")
    opened: list[str] = []
    real_open = Path.open

    def watching_open(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self.resolve() == outside.resolve():
            opened.append(str(self))
        return real_open(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Path, "open", watching_open)
        mp.setattr(Path, "is_file", lambda self: (opened.append(str(self))
                                                  if self.resolve() == outside.resolve()
                                                  else None) or real_is_file(self))
        for name, fn in METRICS.items():
            before = len(opened)
            for args in ([str(outside)], [str(outside), str(outside)],
                         [str(outside), {"expect": [], "unexpect": []}]):
                with contextlib.suppress(Exception):  # a metric refusing its arguments is fine
                    fn(*args)
            if len(opened) > before:
                assert name in checker.FILE_METRICS, f"{name} reads host paths unconfined"


real_is_file = Path.is_file
