"""The reference tool's public names, used as code written against it uses them."""

from __future__ import annotations

import json

import pytest

from evals import (
    BenchmarkAction,
    BenchmarkObservation,
    BenchmarkResult,
    BenchmarkTask,
    EvaluationConfig,
    RandomAgent,
    ScriptedAgent,
    SmartMockAgent,
    action_to_string,
    compute_domain_metrics,
    compute_metrics,
    format_accessibility_tree,
    parse_action_response,
)
from evals.agents.base import parse_action
from evals.agents.pyautogui_code import element_center, to_pyautogui
from evals.compat.flow import CostGuardConfig, SpendLedger, estimate_flow_waa_cost
from evals.compat.flow.cli import main as flow_main
from infra.local.pysource import parse_source

TREE = ('<Desktop name="Desktop"><Window name="Settings" rect="60,30,820,490">'
        '<Text name="Dark mode" rect="80,272,360,294"/>'
        '<Button name="Dark mode" rect="380,272,620,304" value="Off"/></Window></Desktop>')
TASK = BenchmarkTask(task_id="t1", domain="settings", instruction="x", infeasible=False)


def test_benchmark_result_built_like_the_reference() -> None:
    ok = BenchmarkResult(task_id="a", success=True, score=1.0, num_steps=3)
    bad = BenchmarkResult(task_id="b", success=False, score=0.0, num_steps=2,
                          error="worker gone", error_type="infrastructure")
    assert (ok.status, bad.status) == ("success", "error")
    metrics = compute_metrics([ok, bad])
    assert metrics["num_tasks"] == 2 and metrics["avg_steps"] == 2.5
    # errors are not zeros: the rate counts scored outcomes only
    assert metrics["success_rate"] == 1.0 and metrics["num_infrastructure_failures"] == 1
    tasks = [BenchmarkTask(task_id="a", domain="notepad", instruction="", infeasible=False),
             BenchmarkTask(task_id="b", domain="clock", instruction="", infeasible=False)]
    by_domain = compute_domain_metrics([ok, bad], tasks)
    assert set(by_domain) == {"notepad", "clock"} and by_domain["notepad"]["num_tasks"] == 1


def test_evaluation_config_defaults() -> None:
    config = EvaluationConfig(max_steps=7, parallel=2, run_name="r")
    assert (config.max_steps, config.parallel, config.save_trajectories) == (7, 2, True)


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        (BenchmarkAction(type="click", x=0.5, y=0.5), "pyautogui.click(640, 360)"),
        (BenchmarkAction(type="click", x=100, y=200), "pyautogui.click(100, 200)"),
        (BenchmarkAction(type="double_click", x=10, y=20), "pyautogui.doubleClick(10, 20)"),
        (BenchmarkAction(type="right_click", x=10, y=20), "pyautogui.rightClick(10, 20)"),
        (BenchmarkAction(type="type", text="hi\n"), "pyautogui.typewrite('hi\\n')"),
        (BenchmarkAction(type="key", key="Enter"), "pyautogui.press('enter')"),
        (BenchmarkAction(type="key", key="s", modifiers=["ctrl"]),
         "pyautogui.hotkey('ctrl', 's')"),
        (BenchmarkAction(type="hotkey", key="ctrl+shift+n"),
         "pyautogui.hotkey('ctrl', 'shift', 'n')"),
        (BenchmarkAction(type="scroll", scroll_direction="down", scroll_amount=3),
         "pyautogui.scroll(-3)"),
        (BenchmarkAction(type="drag", x=1, y=2, end_x=3, end_y=4),
         "pyautogui.dragTo(3, 4, duration=0.5)"),
        (BenchmarkAction(type="move", x=5, y=6), "pyautogui.moveTo(5, 6)"),
        (BenchmarkAction(type="click", target_name="Dark mode"), "pyautogui.click(500, 288)"),
        (BenchmarkAction(type="click", target_bbox=(0.0, 0.0, 0.5, 0.5)),
         "pyautogui.click(320, 180)"),
    ],
)
def test_gui_actions_become_pyautogui_the_worker_accepts(action: BenchmarkAction,
                                                         expected: str) -> None:
    code = to_pyautogui(action, TREE)
    assert code.startswith("import pyautogui\n") and code.endswith(expected)
    assert parse_source(code).calls  # the local worker's whitelist takes it
    again = parse_action(action.to_json())
    assert again.type == action.type and to_pyautogui(again, TREE) == code


def test_an_unknown_target_is_an_error_not_a_click() -> None:
    with pytest.raises(ValueError, match="not in the accessibility tree"):
        to_pyautogui(BenchmarkAction(type="click", target_name="Nope"), TREE)
    assert element_center(TREE, "dark mode") == (500, 288)


def test_pyautogui_strings_parse_as_execute_windows() -> None:
    action = parse_action("import pyautogui\npyautogui.click(1, 2)")
    assert action.type == "execute_windows" and action.code
    assert parse_action("open notepad").type == "execute"
    assert parse_action("DONE").type == "done"


def test_helpers() -> None:
    assert action_to_string(BenchmarkAction(type="click", x=1, y=2)) == "CLICK(1, 2)"
    assert action_to_string(BenchmarkAction(type="type", text="a")) == "TYPE('a')"
    assert parse_action_response("Thought: ...\nAction: CLICK(12, 34)").x == 12
    assert parse_action_response('TYPE("hello")').text == "hello"
    key = parse_action_response("KEY(ctrl+s)")
    assert (key.key, key.modifiers) == ("s", ["ctrl"])
    assert parse_action_response("DONE").type == "done"
    # no action in the reply: done (the checker scores the screen), never a claim of infeasible
    unparsed = parse_action_response("no idea")
    assert unparsed.type == "done" and unparsed.raw_action
    assert "parse_error" in unparsed.raw_action
    assert "[Button] Dark mode = 'Off' @ 380,272,620,304" in format_accessibility_tree(TREE)


def test_builtin_agents() -> None:
    obs = BenchmarkObservation(accessibility_tree=TREE, viewport=(1280, 720))
    scripted = ScriptedAgent([BenchmarkAction(type="click", x=0.5, y=0.5)])
    assert scripted.act(obs, TASK, []).type == "click"
    assert scripted.act(obs, TASK, [BenchmarkAction(type="click")]).type == "done"
    smart = SmartMockAgent().act(obs, TASK, [])
    assert smart.type == "click" and smart.target_name == "Dark mode"
    random_agent = RandomAgent(seed=1, max_actions=2)
    first = random_agent.act(obs, TASK, [])
    assert first.type in ("click", "type", "scroll", "done")
    assert random_agent.act(obs, TASK, [first, first]).type == "done"


def test_flow_cost_api_matches_the_reference_figures() -> None:
    replay = estimate_flow_waa_cost(154).as_dict()
    assert replay["vm_hours"] == 2.817 and replay["baseline_pure_agent_cost_usd"] == 39.0603
    assert replay["model"] == "Claude Sonnet 4" and replay["total_cost_usd"] == 0.5352
    hybrid = estimate_flow_waa_cost(10, mode="hybrid", fallback_rate=0.5)
    assert hybrid.paid_tasks == 5 and hybrid.agent_steps_per_paid_task == 10
    with pytest.raises(ValueError, match="unknown mode"):
        estimate_flow_waa_cost(1, mode="magic")
    ledger = SpendLedger(CostGuardConfig(per_run_usd=1.0, total_usd=1.5))
    assert ledger.can_start()
    ledger.record(1.0, tokens=10, error="HTTP 429 rate limit")
    ledger.record(0.0, error="insufficient_quota")
    assert not ledger.can_start() and "aborted" in ledger.blocked_reason()


def test_eval_flow_main_returns_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert flow_main(["--dry-run", "--tasks", "10", "--mode", "hybrid"]) == 0
    out = capsys.readouterr().out
    for heading in ("openadapt-flow on WAA  --  mode=hybrid",
                    "COST ESTIMATE  (mode=hybrid, model=Claude Sonnet 4)",
                    "HARD GUARDRAILS", "DRY-RUN: no VM provisioned"):
        assert heading in out
    assert flow_main(["--dry-run", "--tasks", "10", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"plan", "estimates", "guardrails"} <= set(data)
    assert [row["num_tasks"] for row in data["estimates"]] == [10, 154]
    assert {"mode", "num_tasks", "tasks_with_bundle", "tasks_missing_bundle"} <= set(data["plan"])
    assert flow_main(["--tasks", "-3"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_reference_style_reset_without_a_task_is_called() -> None:
    from evals import BenchmarkAgent
    from evals.agents.builtin import call_reset

    class OldStyle(BenchmarkAgent):
        resets = 0

        def reset(self) -> None:  # type: ignore[override]  # the reference's signature
            self.resets += 1

        def act(self, observation: BenchmarkObservation, task: BenchmarkTask,
                history: object = None) -> BenchmarkAction:
            return BenchmarkAction(type="done")

    class NewStyle(OldStyle):
        seen: list[str] = []

        def reset(self, task: BenchmarkTask) -> None:  # type: ignore[override]
            self.seen.append(task.task_id)

    old, new = OldStyle(), NewStyle()
    call_reset(old, TASK)
    call_reset(new, TASK)
    assert old.resets == 1 and new.seen == ["t1"]
