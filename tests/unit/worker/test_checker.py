"""Metrics, getters and WAA's scoring rules as the simulated worker applies them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from infra.local import checker
from infra.local.checker import GetterError, PostconfigError, evaluate_task, get_value
from infra.local.commands import run
from infra.local.desktop import Desktop
from infra.scoring_rules import EvaluatorConfigError, Unscorable

DOCS = "C:\\Users\\Docker\\Documents"


def rule(value: Any) -> dict[str, Any]:
    return {"type": "rule", "rules": {"expected": value}}


def setting(key: str) -> dict[str, Any]:
    return {"type": "settings_value", "key": key}


def task(**evaluator: Any) -> dict[str, Any]:
    return {"id": "t", "evaluator": evaluator}


# -- metrics -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "args", "kwargs", "score"),
    [
        ("exact_match", ("a", {"expected": "a"}), {}, 1.0),
        ("exact_match", ("a", {"expected": "b"}), {}, 0.0),
        ("exact_match", ([True, "07:00 PM"], {"expected": [True, "07:00 PM"]}), {}, 1.0),
        ("is_in_list", (["a", "b"], {"expected": "b"}), {}, 1.0),
        ("is_in_list", (["a"], {"expected": "b"}), {}, 0.0),
        ("is_in_list", (None, {"expected": "b"}), {}, 0.0),
        ("match_in_list", ("b", {"expected": ["a", "b"]}), {}, 1.0),
        ("match_in_list", ("c", {"expected": ["a", "b"]}), {}, 0.0),
        ("check_include_exclude", ("final", {"include": ["final"], "exclude": ["draft"]}), {}, 1.0),
        ("check_include_exclude", ("final draft", {"include": ["final"], "exclude": ["draft"]}), {},
         0.0),
        ("check_include_exclude", ("draft", {"include": ["final"]}), {}, 0.0),
        ("check_include_exclude", (None, {"include": []}), {}, 0.0),
        ("literal_match", ("Tokyo", "tokyo"), {"ignore_case": True}, 1.0),
        ("literal_match", ("Tokyo", "tokyo"), {}, 0.0),
        ("file_exists", (None,), {}, 0.0),
    ],
)
def test_metrics(name: str, args: tuple[Any, ...], kwargs: dict[str, Any], score: float) -> None:
    assert checker.metric(name)(*args, **kwargs) == score


def test_compare_text_file(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    a.write_text("Hello  World\n")
    b.write_text("hello world")
    c.write_text("Hello  World\n")
    compare = checker.compare_text_file
    assert compare(str(a), str(c)) == 1.0
    assert compare(str(a), str(b)) == 0.0
    assert compare(str(a), str(b), ignore_blanks=True) == 0.0
    assert compare(str(a), str(b), ignore_blanks=True, ignore_case=True) == 1.0
    assert compare(None, str(b)) == 0.0
    assert checker.file_exists(str(a)) == 1.0
    assert checker.file_exists(str(tmp_path / "none")) == 0.0


def test_metric_misuse_is_a_task_bug() -> None:
    with pytest.raises(EvaluatorConfigError):
        checker.metric("exact_match")("a", {"no": "expected"})
    with pytest.raises(EvaluatorConfigError):
        checker.metric("compare_text_file")("a", "b", colour=True)
    with pytest.raises(KeyError):
        checker.metric("no_such_metric")


# -- getters -----------------------------------------------------------------------------


def test_getters_read_the_desktop(desktop: Desktop) -> None:
    run(desktop, f'write "{DOCS}\\a.txt" "body"')
    run(desktop, "timer add 30m")
    run(desktop, "set dark_mode on")
    path = get_value(desktop, {"type": "vm_file", "path": f"{DOCS}\\a.txt"})
    assert Path(path).read_text() == "body"
    assert get_value(desktop, {"type": "vm_file", "path": f"{DOCS}\\none.txt"}) is None
    assert get_value(desktop, {"type": "vm_file_text", "path": f"{DOCS}\\a.txt"}) == "body"
    assert get_value(desktop, {"type": "list_directory", "path": DOCS}) == ["a.txt"]
    assert get_value(desktop, setting("dark_mode")) is True
    assert get_value(desktop, {"type": "vm_command_line", "command": "get dark_mode"}) == "on"
    assert get_value(desktop, {"type": "check_if_timer_started", "minutes": 30}) == "True"
    assert get_value(desktop, {"type": "check_if_timer_started", "minutes": 20}) == "False"
    exists = {"type": "vm_file_exists_in_vm_folder", "folder_name": DOCS, "file_name": "a.txt"}
    assert get_value(desktop, exists) == 1.0
    assert get_value(desktop, {"type": "rule", "rules": {"expected": 3}}) == {"expected": 3}
    inline = get_value(desktop, {"type": "inline_file", "content": "gold"})
    assert Path(inline).read_text() == "gold"
    assert not Path(inline).is_relative_to(desktop.sandbox.drive)


@pytest.mark.parametrize(
    "cfg",
    [
        {"type": "vm_file_text", "path": f"{DOCS}\\missing.txt"},
        {"type": "vm_file", "path": "C:\\..\\..\\etc\\passwd"},
        {"type": "vm_command_line", "command": "bogus verb"},
        {"type": "settings_value", "key": "volume"},
        {"type": "vm_file"},
    ],
)
def test_getter_errors(desktop: Desktop, cfg: dict[str, Any]) -> None:
    with pytest.raises(GetterError):
        get_value(desktop, cfg)


def test_a_closed_calculator_shows_nothing(desktop: Desktop) -> None:
    assert get_value(desktop, {"type": "calc_display"}) is None


def test_a_failed_command_gives_its_empty_output_as_waa_getter_does(desktop: Desktop) -> None:
    assert get_value(desktop, {"type": "vm_command_line", "command": "read C:\\missing.txt"}) == ""


def test_an_unknown_getter_type_is_unscorable_not_a_getter_failure(desktop: Desktop) -> None:
    with pytest.raises(Unscorable):
        get_value(desktop, {"type": "nope"})


# -- WAA's rules through evaluate_task -----------------------------------------------------


def test_infeasible(desktop: Desktop) -> None:
    infeasible = task(func="infeasible")
    assert evaluate_task(desktop, infeasible, "FAIL").score == 1.0
    # WAA compares its last action with "FAIL" exactly.
    assert evaluate_task(desktop, infeasible, "fail").score == 0.0
    assert evaluate_task(desktop, infeasible, "DONE").score == 0.0
    assert evaluate_task(desktop, infeasible, None).score == 0.0


def test_fail_on_a_feasible_task_scores_0_without_checking(desktop: Desktop) -> None:
    # The getter would raise if it ran: FAIL must short-circuit before any getter.
    broken = task(func="exact_match", result={"type": "vm_file_text", "path": "C:\\x"},
                  expected=rule(1))
    verdict = evaluate_task(desktop, broken, "FAIL")
    assert (verdict.score, verdict.success) == (0.0, False)


def test_one_metric_getter_error_scores_0(desktop: Desktop) -> None:
    missing = task(func="exact_match", result={"type": "vm_file_text", "path": f"{DOCS}\\x"},
                   expected=rule("x"))
    verdict = evaluate_task(desktop, missing, "DONE")
    assert verdict.score == 0.0 and "getter failed" in verdict.reason


def _two(conj: str) -> dict[str, Any]:
    return task(
        func=["exact_match", "exact_match"],
        conj=conj,
        result=[setting("dark_mode"), setting("do_not_disturb")],
        expected=[rule(True), rule(True)],
    )


@pytest.mark.parametrize(
    ("dark", "dnd", "conj", "score"),
    [
        ("on", "on", "and", 1.0),
        ("on", "off", "and", 0.0),
        ("off", "off", "and", 0.0),
        ("on", "off", "or", 1.0),
        ("off", "on", "or", 1.0),
        ("off", "off", "or", 0.0),
    ],
)
def test_and_or(desktop: Desktop, dark: str, dnd: str, conj: str, score: float) -> None:
    run(desktop, f"set dark_mode {dark}")
    run(desktop, f"set do_not_disturb {dnd}")
    assert evaluate_task(desktop, _two(conj), "DONE").score == score


def test_options_align_with_the_metric_list(desktop: Desktop) -> None:
    run(desktop, f'write "{DOCS}\\n.txt" "  230   DAYS "')
    graded = task(
        func=["compare_text_file", "exact_match"],
        result=[{"type": "vm_file", "path": f"{DOCS}\\n.txt"}, setting("dark_mode")],
        expected=[{"type": "inline_file", "content": "230 days"}, rule(False)],
        options=[{"ignore_blanks": True, "ignore_case": True}, {}],
    )
    assert evaluate_task(desktop, graded, "DONE").score == 1.0
    graded["evaluator"]["options"] = [{}, {}]
    assert evaluate_task(desktop, graded, "DONE").score == 0.0
    graded["evaluator"]["options"] = [{}]
    with pytest.raises(EvaluatorConfigError):
        evaluate_task(desktop, graded, "DONE")


def test_postconfig_runs_first(desktop: Desktop) -> None:
    seeded = task(
        postconfig=[{"type": "command", "parameters": {"command": "set dark_mode on"}}],
        func="exact_match",
        result=setting("dark_mode"),
        expected=rule(True),
    )
    assert evaluate_task(desktop, seeded, "DONE").score == 1.0


def test_postconfig_failure_is_an_evaluation_error(desktop: Desktop) -> None:
    broken = task(
        postconfig=[{"type": "activate_window", "parameters": {"window_name": "Nothing"}}],
        func="exact_match",
        result=setting("dark_mode"),
        expected=rule(True),
    )
    with pytest.raises(PostconfigError, match="postconfig step 0"):
        evaluate_task(desktop, broken, "DONE")
    with pytest.raises(EvaluatorConfigError):
        evaluate_task(desktop, {"id": "x"}, "DONE")


# -- what the adversarial audit added: WAA's check_list, every setting at once -------------------

CHECK_LIST_CASES = [
    ("a.png\nb.png\n", {"unexpect": [r"\S\s+\S"]}),
    ("a.png b.png", {"unexpect": [r"\S\s+\S"]}),
    ("a.png\tb.png\n", {"unexpect": [r"\S\s+\S"]}),
    ("a.png\n\nb.png", {"expect": [r"^a\.png\s*$", r"^b\.png\s*$"]}),
    ("a.png\n", {"expect": [r"^a\.png\s*$", r"^b\.png\s*$"]}),
    ("a.png\nreadme.txt\n", {"expect": [r"\.png"], "unexpect": [r"readme"]}),
    ("", {"expect": [r"x"]}),
    ("", {}),
]


@pytest.mark.parametrize(("text", "rules"), CHECK_LIST_CASES)
def test_check_list_scores_as_waa_s_own(tmp_path: Path, text: str, rules: dict[str, Any]) -> None:
    from tests.support.waa_upstream import load_desktop_env

    load_desktop_env()  # puts WAA's client on the path (skips when it is absent)
    from desktop_env.evaluators.metrics.general import check_list as waa_check_list

    path = tmp_path / "list.txt"
    path.write_bytes(text.encode("utf-8"))
    ours = checker.check_list(str(path), rules)
    assert ours == float(waa_check_list(str(path), rules))
    assert checker.check_list(None, rules) == 0.0


def test_check_list_without_rules_is_a_task_bug(tmp_path: Path) -> None:
    path = tmp_path / "list.txt"
    path.write_text("a")
    with pytest.raises(EvaluatorConfigError):
        checker.metric("check_list")(str(path), "not rules")


def test_the_settings_getter_returns_every_setting(desktop: Desktop) -> None:
    run(desktop, "set dark_mode on")
    values = get_value(desktop, {"type": "settings"})
    assert values["dark_mode"] is True and values["notifications"] is True
    assert set(values) == {"night_light", "night_light_start", "night_light_end",
                           "notifications", "do_not_disturb", "dark_mode", "time_zone"}
    assert evaluate_task(desktop, task(func="exact_match", result={"type": "settings"},
                                       expected=rule(values)), "DONE").score == 1.0
    run(desktop, "set night_light on")
    assert evaluate_task(desktop, task(func="exact_match", result={"type": "settings"},
                                       expected=rule(values)), "DONE").score == 0.0


def test_a_recursive_listing_sees_a_file_moved_instead_of_deleted(desktop: Desktop) -> None:
    run(desktop, f'write "{DOCS}\\keep.txt" "k"')
    run(desktop, f'mkdir "{DOCS}\\Old"')
    run(desktop, f'write "{DOCS}\\Old\\a.tmp" "x"')
    home = {"type": "list_directory", "path": "C:\\Users\\Docker", "recursive": True}
    assert get_value(desktop, home) == ["Documents\\keep.txt", "Documents\\Old\\a.tmp"]
    assert get_value(desktop, {"type": "list_directory", "path": DOCS}) == ["Old", "keep.txt"]
    with pytest.raises(GetterError, match="folder not found"):
        get_value(desktop, {**home, "path": f"{DOCS}\\keep.txt"})
