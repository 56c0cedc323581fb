"""The audit's edit operators and classes, on both action syntaxes (command language, pyautogui)."""

from __future__ import annotations

from evals.verifier_audit.local import (
    OPERATORS,
    AuditReport,
    AuditRow,
    RunResult,
    classify,
    format_table,
    mutants,
    mutate_literal,
)

COMMANDS = ['open notepad', 'type "Buy eggs"', 'save "C:\\Users\\Docker\\a.txt"', "DONE"]
PYAUTOGUI = [
    "pyautogui.hotkey('ctrl', 'a')",
    "pyautogui.write('final', interval=0.05)",
    "pyautogui.hotkey('ctrl', 's')",
    "DONE",
]


def test_every_operator_applies_to_both_syntaxes() -> None:
    for actions in (COMMANDS, PYAUTOGUI):
        edits = mutants(actions)
        assert set(edits) == set(OPERATORS)
        assert all(edits[op] for op in OPERATORS), {op: len(e) for op, e in edits.items()}
        assert edits["claim-only"][0].actions == ["DONE"]
        assert len(edits["omit"]) == 3
        assert all(m.actions[-1] == "DONE" for ms in edits.values() for m in ms)


def test_wrong_value_changes_one_literal_inside_one_step() -> None:
    edits = mutants(PYAUTOGUI)["wrong-value"]
    changed = {m.detail: m.actions for m in edits}
    assert changed["step 1: 'final'"][1] == "pyautogui.write('final_wrong', interval=0.05)"
    assert changed["step 1: 0.05"][1] == "pyautogui.write('final', interval=1.05)"
    commands = {m.detail: m.actions for m in mutants(COMMANDS)["wrong-value"]}
    assert commands['step 1: "Buy eggs"'][1] == 'type "Buy eggs_wrong"'
    for edit in edits:  # every other step untouched
        assert sum(a != b for a, b in zip(edit.actions, PYAUTOGUI, strict=True)) == 1


def test_literals_keep_their_kind() -> None:
    assert mutate_literal('"7"') == '"8"'
    assert mutate_literal("30") == "31"
    assert mutate_literal("'2.5'") == "'3.5'"
    assert mutate_literal('""') == '"wrong"'


def test_an_infeasible_reference_has_only_the_non_interfering_extra() -> None:
    edits = mutants(["FAIL"])
    assert [op for op in OPERATORS if edits[op]] == ["extra-ni"]
    assert edits["extra-ni"][0].actions == ["WAIT", "FAIL"]


def test_extra_plays_the_last_step_twice_and_partial_keeps_half() -> None:
    edits = mutants(COMMANDS)
    assert edits["extra"][0].actions == [*COMMANDS[:3], COMMANDS[2], "DONE"]
    assert edits["partial"][0].actions == [*COMMANDS[:2], "DONE"]


STATE = {"files": {"C:\\a.txt": "1"}, "settings": {}, "windows": [{"app": "notepad"}]}
OTHER = {"files": {"C:\\a.txt": "2"}, "settings": {}, "windows": []}
REFERENCE = RunResult("DONE", state=STATE, accepted=True, score=1.0)


def test_classes() -> None:
    def run(state: dict[str, object], accepted: bool, last: str = "DONE") -> RunResult:
        return RunResult(last, state=state, accepted=accepted, score=float(accepted))

    assert classify("omit", REFERENCE, run(OTHER, False)) == "killed"
    assert classify("omit", REFERENCE, run(OTHER, True)) == "false accept"
    # Only the windows differ: the same outcome.
    assert classify("omit", REFERENCE, run({**STATE, "windows": []}, True)) == "equivalent"
    assert classify("omit", REFERENCE, run(STATE, False)) == "refused"
    assert classify("claim-only", REFERENCE, run(STATE, True, "FAIL")) == "false accept"
    assert classify("extra-ni", REFERENCE, run(STATE, True)) == "equivalent"
    assert classify("extra-ni", REFERENCE, run(STATE, False)) == "refused"
    assert classify("omit", REFERENCE, RunResult("", error="boom")) == "error"
    refused_reference = RunResult("DONE", state=STATE, accepted=False, score=0.0)
    assert classify("omit", refused_reference, run(OTHER, True)) == "unconfirmed"


def test_the_table_counts_every_class_per_operator() -> None:
    report = AuditReport(rows=[AuditRow("t", "omit", "d", "killed"),
                               AuditRow("t", "omit", "d", "false accept"),
                               AuditRow("t", "extra", "d", "invalid")])
    lines = format_table(report).splitlines()
    assert lines[0].split()[:3] == ["operator", "killed", "false"]
    omit = next(line for line in lines if line.startswith("omit")).split()
    assert omit == ["omit", "1", "1", "0", "0", "0", "0", "0", "2"]
    assert lines[-1].split()[0] == "all" and lines[-1].split()[-1] == "3"
    assert len(report.false_accepts) == 1
