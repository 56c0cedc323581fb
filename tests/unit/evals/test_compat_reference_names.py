"""Module paths, names, defaults and helper formats that code written against the reference
tool (``openadapt_evals``) reaches for, with only its import line changed to ``evals``."""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path

import pytest

from evals import (
    BenchmarkAction,
    BenchmarkObservation,
    BenchmarkTask,
    EvaluationConfig,
    RandomAgent,
    ScriptedAgent,
    SmartMockAgent,
    WAAMockAdapter,
    WAASimulatedAdapter,
    action_to_string,
    format_accessibility_tree,
    parse_action_response,
)

# A tree in the reference tool's dict form (what its mock adapter and prompts use).
DICT_TREE = {
    "role": "window", "name": "Form", "id": "root",
    "children": [
        {"role": "button", "name": "OK", "id": "b1"},
        {"role": "textfield", "name": "Name", "id": "t2"},
        {"role": "button", "name": "Submit", "id": "b9"},
    ],
}
XML_TREE = ('<Desktop name="Desktop"><Window name="Form" rect="0,0,400,300">'
            '<Button name="Cancel" rect="10,10,60,40"/><Button name="OK" rect="70,10,120,40"/>'
            '</Window></Desktop>')
TASK = BenchmarkTask(task_id="t", domain="notepad", instruction="do it")


@pytest.mark.parametrize(
    ("module", "names"),
    [
        ("evals.adapters", ["BenchmarkAction", "BenchmarkObservation", "BenchmarkResult",
                            "BenchmarkTask", "UIElement", "WAAMockAdapter", "WAA_DOMAINS",
                            "WAASimulatedAdapter"]),
        ("evals.adapters.base", ["BenchmarkAction", "BenchmarkAdapter", "UIElement"]),
        ("evals.adapters.waa", ["WAA_DOMAINS", "WAALiveAdapter", "WAALiveConfig",
                                "WAAMockAdapter", "SyntheticTaskError", "is_synthetic_task_id"]),
        ("evals.adapters.waa.live", ["WAALiveAdapter", "WAALiveConfig"]),
        ("evals.adapters.waa.mock", ["WAAMockAdapter", "WAA_DOMAINS"]),
        ("evals.benchmarks.runner", ["EvaluationConfig", "compute_metrics",
                                     "compute_domain_metrics", "evaluate_agent_on_benchmark",
                                     "_run_single_task"]),
        ("evals.evaluation.metrics", ["exact_match", "fuzzy_match", "contains", "boolean",
                                      "get_metric"]),
        # what the reference re-exports there (its own docstring's example imports them)
        ("evals.benchmarks", ["BenchmarkAdapter", "BenchmarkAgent", "BenchmarkTask",
                              "BenchmarkObservation", "BenchmarkAction", "BenchmarkResult",
                              "ScriptedAgent", "RandomAgent", "SmartMockAgent", "ApiAgent",
                              "WAALiveConfig", "UIElement", "action_to_string",
                              "format_accessibility_tree", "parse_action_response",
                              "EvaluationConfig", "evaluate_agent_on_benchmark"]),
        ("evals.agents.api_agent", ["ApiAgent"]),
        ("evals.agents.scripted_agent", ["ScriptedAgent", "RandomAgent", "SmartMockAgent"]),
    ],
)
def test_reference_module_paths_import(module: str, names: list[str]) -> None:
    loaded = importlib.import_module(module)
    missing = [n for n in names if not hasattr(loaded, n)]
    assert not missing, f"{module} lacks {missing}"


def test_the_same_class_behind_every_path() -> None:
    from evals.adapters.base import BenchmarkAction as FromBase
    from evals.adapters.waa.mock import WAAMockAdapter as FromMock

    assert FromBase is BenchmarkAction and FromMock is WAAMockAdapter


def test_waa_domains_are_the_folders_of_waa_task_data(waa_data: Path) -> None:
    from evals.adapters.waa import WAA_DOMAINS

    folders = sorted(p.name for p in (waa_data / "examples").iterdir() if p.is_dir())
    assert folders == WAA_DOMAINS


def test_task_built_with_the_reference_keywords() -> None:
    task = BenchmarkTask(task_id="x", instruction="Click OK", domain="notepad",
                         time_limit_steps=7, raw_config={"id": "x"})
    assert (task.domain, task.instruction, task.time_limit_steps) == ("notepad", "Click OK", 7)
    assert task.raw == task.raw_config == {"id": "x"}
    assert task.infeasible is None  # not told, as agents are not


def test_ui_element_is_a_plain_record() -> None:
    from evals import UIElement

    element = UIElement(node_id="3", role="button", name="Save", bbox=(0, 0, 10, 10))
    assert dataclasses.asdict(element)["name"] == "Save" and element.children is None


def test_evaluation_config_defaults_are_the_reference_ones() -> None:
    config = EvaluationConfig()
    assert (config.max_steps, config.save_execution_traces, config.save_trajectories) == (
        50, True, True)
    assert (config.model_id, config.output_dir, config.parallel) == (
        "unknown", "benchmark_results", 1)


def test_mock_adapter_defaults_and_simulated_adapter_domains() -> None:
    # The synthetic mock, as the reference's: 20 invented tasks, any domain name.
    assert WAAMockAdapter().num_tasks == 20
    assert {t.domain for t in WAAMockAdapter(domains=["browser"]).list_tasks()} == {"browser"}
    # Real tasks have WAA's domains only: an invented one would silently select nothing.
    assert WAASimulatedAdapter().num_tasks == 20
    with pytest.raises(ValueError, match=r"unknown WAA domain\(s\) 'browser'.*notepad"):
        WAASimulatedAdapter(domains=["notepad", "browser"])


@pytest.mark.parametrize(
    ("action", "text"),
    [
        (BenchmarkAction(type="click", target_node_id="7"), "CLICK([7])"),
        (BenchmarkAction(type="click", x=0.25, y=0.5), "CLICK(0.250, 0.500)"),
        (BenchmarkAction(type="click", x=640, y=360), "CLICK(640, 360)"),
        (BenchmarkAction(type="type", text="a'b"), 'TYPE("a\'b")'),
        (BenchmarkAction(type="key", key="v", modifiers=["ctrl"]), "KEY(ctrl+v)"),
        (BenchmarkAction(type="scroll", scroll_direction="up"), "SCROLL(up)"),
        (BenchmarkAction(type="done"), "DONE()"),
        (BenchmarkAction(type="wait"), "WAIT()"),
    ],
)
def test_action_to_string_writes_the_reference_forms(action: BenchmarkAction,
                                                      text: str) -> None:
    assert action_to_string(action) == text


def test_parse_action_response_reads_the_reference_forms() -> None:
    node = parse_action_response("ACTION: CLICK([12])")
    assert (node.type, node.target_node_id) == ("click", "12")
    inline = parse_action_response("The form is ready, so I will RIGHT_CLICK([b9]) now.")
    assert (inline.type, inline.target_node_id) == ("right_click", "b9")
    keys = parse_action_response("Action: KEY(ctrl+shift+Esc)")
    assert (keys.key, keys.modifiers) == ("Esc", ["ctrl", "shift"])
    scroll = parse_action_response("SCROLL(UP)")
    assert scroll.scroll_direction == "up"


def test_pixel_replies_become_fractions_of_the_viewport_when_observed() -> None:
    obs = BenchmarkObservation(viewport=(1000, 500))
    click = parse_action_response("CLICK(250, 125)", obs)
    assert (click.x, click.y) == (0.25, 0.25) and click.raw_action
    assert click.raw_action["normalized"] is True
    drag = parse_action_response("DRAG(100, 50, 900, 450)", obs)
    assert (drag.x, drag.y, drag.end_x, drag.end_y) == (0.1, 0.1, 0.9, 0.9)
    # already fractions, or no observation: kept as given
    assert parse_action_response("CLICK(0.5, 0.5)", obs).x == 0.5
    assert parse_action_response("CLICK(250, 125)").x == 250


def test_a_reply_without_an_action_is_done_not_fail() -> None:
    action = parse_action_response("I am not sure what to do here.")
    assert action.type == "done" and action.raw_action is not None
    assert action.raw_action["parse_error"]


def test_dict_trees_are_formatted_like_the_reference() -> None:
    text = format_accessibility_tree(DICT_TREE)
    assert text.splitlines() == ["[root] window: Form", "  [b1] button: OK",
                                 "  [t2] textfield: Name", "  [b9] button: Submit"]
    # WAA's XML keeps its own form
    assert "[Button] OK @ 70,10,120,40" in format_accessibility_tree(XML_TREE)


def test_scripted_agent_counts_its_own_steps_and_restarts_on_reset() -> None:
    obs = BenchmarkObservation()
    agent = ScriptedAgent([BenchmarkAction(type="type", text="a"),
                           BenchmarkAction(type="key", key="enter")])
    # no history passed, as the reference's callers do
    assert [agent.act(obs, TASK).type for _ in range(3)] == ["type", "key", "done"]
    agent.reset()
    assert agent.act(obs, TASK).type == "type"


def test_smart_mock_agent_prefers_submit_then_ok() -> None:
    agent = SmartMockAgent()
    first = agent.act(BenchmarkObservation(accessibility_tree=DICT_TREE), TASK)  # type: ignore[arg-type]
    assert (first.type, first.target_node_id) == ("click", "b9")
    assert agent.act(BenchmarkObservation(), TASK).type == "done"
    agent.reset()
    xml = agent.act(BenchmarkObservation(accessibility_tree=XML_TREE), TASK)
    assert (xml.type, xml.target_name) == ("click", "OK")


def test_random_agent_uses_the_reference_defaults() -> None:
    obs = BenchmarkObservation(viewport=(1280, 720))
    agent = RandomAgent(seed=3)
    kinds = {agent.act(obs, TASK, []).type for _ in range(60)}
    assert kinds == {"click", "type", "scroll", "done"}
    assert agent.act(obs, TASK, [BenchmarkAction(type="wait")] * 20).type == "done"
    assert agent.act(obs, TASK, [BenchmarkAction(type="wait")] * 19).type in kinds


def test_value_metrics() -> None:
    from evals.evaluation.metrics import (
        boolean,
        contains,
        exact_match,
        file_exists,
        fuzzy_match,
        get_metric,
    )

    assert exact_match(" 42", 42) == 1.0 and exact_match("a", "b") == 0.0
    assert fuzzy_match("kitten", "kitten") == 1.0
    assert 0.0 < fuzzy_match("hello world", "world") < 0.8
    assert fuzzy_match("hello world", "hello world!") == 1.0  # above the 0.8 threshold
    # the reference's measure (rapidfuzz's Indel ratio): difflib's heuristic blocks gave 0.565
    # for this note with a few words changed, which the reference passes
    note = ("Meeting notes for the quarterly planning session. Attendees reviewed the budget, "
            "the hiring plan and the product roadmap. Action items: finalize the budget by "
            "Friday, post two job descriptions, and schedule a roadmap review with the design "
            "team next week.")
    edited = ("Meeting notes for the review session. Attendees reviewed the budget, the hiring "
              "plan and the product roadmap. Action items: notes budget final Friday, post two "
              "job descriptions, and a roadmap review with the design team next week.")
    assert fuzzy_match(edited, note) == 1.0
    assert fuzzy_match("kitten", "sitting", threshold=1.0) == pytest.approx(8 / 13)
    assert contains("Dark Mode: On", "mode: on") == 1.0 and contains("x", "y") == 0.0
    assert boolean([], None) == 1.0 and boolean(1, 0) == 0.0
    assert file_exists(__file__, None) == 1.0 and file_exists("/no/such/file", None) == 0.0
    assert get_metric("contains") is contains and get_metric("nope") is None


def test_done_gate_is_accepted_off_and_refused_on() -> None:
    config = EvaluationConfig(done_gate=False, done_gate_max_overrides=2,
                              done_gate_threshold=0.5, enable_live_tracking=True)
    assert config.done_gate is False and config.done_gate_threshold == 0.5
    with pytest.raises(ValueError, match="checker's score"):
        EvaluationConfig(done_gate=True)


def test_accessibility_xml_becomes_the_reference_dict_tree() -> None:
    from evals import parse_accessibility_tree
    from evals.adapters.waa.live import _parse_xml_a11y_tree

    assert _parse_xml_a11y_tree is parse_accessibility_tree
    local = parse_accessibility_tree(XML_TREE)
    assert local is not None
    window = local["children"][0]
    assert (window["role"], window["id"], window["BoundingRectangle"]) == (
        "Window", "Form", "0,0,400,300")
    assert [c["name"] for c in window["children"]] == ["Cancel", "OK"]
    uia = parse_accessibility_tree(
        '<Pane Name="Bar" RuntimeId="7"><Button Name="Go" AutomationId="go"'
        ' BoundingRectangle="1,2,3,4"/></Pane>')
    assert uia is not None and uia["id"] == "7"
    assert uia["children"][0] == {"role": "Button", "name": "Go", "id": "go",
                                  "BoundingRectangle": "1,2,3,4", "children": []}
    atspi = parse_accessibility_tree(
        '<desktop xmlns:cp="uri:c"><push name="Start" cp:screencoord="(10, 20)"'
        ' cp:size="(30, 40)"/></desktop>')
    assert atspi is not None and atspi["children"][0]["BoundingRectangle"] == "10,20,40,60"
    assert "[Start] push: Start" in format_accessibility_tree(atspi)
    assert parse_accessibility_tree("") is None and parse_accessibility_tree("<a><b>") is None


def test_version_is_the_distributions() -> None:
    from importlib.metadata import version

    import evals

    assert evals.__version__ == version("oa-vm")


def test_format_accessibility_tree_takes_the_references_indent_and_writes_every_node() -> None:
    tree = {"role": "list", "id": "l", "children": [
        {"role": "listitem", "id": str(i), "name": f"f{i}"} for i in range(300)]}
    assert len(format_accessibility_tree(tree).splitlines()) == 301  # was cut at 200
    assert format_accessibility_tree(DICT_TREE, 1).startswith("  [root] window: Form\n    [b1]")
    assert format_accessibility_tree(DICT_TREE, indent=1) == format_accessibility_tree(
        DICT_TREE, 1)


def test_pixels_given_are_kept_by_name_as_the_reference_keeps_them() -> None:
    obs = BenchmarkObservation(viewport=(1920, 1080))
    click = parse_action_response("CLICK(960, 540)", obs)
    assert click.raw_action["original_coords"] == {"x": 960.0, "y": 540.0}
    drag = parse_action_response("DRAG(100, 200, 300, 400)", obs)
    assert drag.raw_action["original_coords"] == {"x": 100.0, "y": 200.0, "end_x": 300.0,
                                                  "end_y": 400.0}


def test_an_observation_given_by_position_reads_as_the_references() -> None:
    obs = BenchmarkObservation(b"png", "/tmp/step0.png", (1920, 1080))  # type: ignore[misc]
    assert (obs.screenshot_path, obs.viewport, obs.accessibility_tree) == (
        "/tmp/step0.png", (1920, 1080), None)
    assert parse_action_response("CLICK(960, 540)", obs).x == pytest.approx(0.5)


def test_synthetic_task_error_is_the_references_too() -> None:
    from evals.adapters.waa import SyntheticTaskError

    error = SyntheticTaskError("notepad_1")
    assert isinstance(error, ValueError) and error.task_id == "notepad_1"
    assert error.task_ids == ["notepad_1"]
    with pytest.raises(ValueError, match="notepad_1"):
        raise error


def test_live_config_takes_every_reference_field_and_scores_on_the_servers_host() -> None:
    from evals.adapters.waa.live import WAALiveConfig

    config = WAALiveConfig(
        server_url="http://vm.example:5000", evaluate_timeout=60.0, evaluate_retries=1,
        evaluate_retry_base_delay=1.0, lightweight=False, clean_desktop=True,
        force_tray_icons=True, reapply_clean_desktop_each_reset=True, waa_image_version="x",
        strict_setup_readiness=True, setup_readiness_retries=1, focus_check_method="a11y")
    # the reference's fallback: the same host on port 5050 (was always 127.0.0.1:5050)
    assert config.evaluate_url == "http://vm.example:5050"
    assert WAALiveConfig(server_url="http://[::1]:5000").evaluate_url == "http://[::1]:5050"
    assert WAALiveConfig(evaluate_url="http://e:1").evaluate_url == "http://e:1"


def test_live_config_reads_back_the_pause_and_timeout_in_force_by_either_name() -> None:
    """The reference's loop reads config.action_delay and config.timeout (were None)."""
    from evals.adapters.waa.live import WAALiveConfig

    default = WAALiveConfig()
    assert (default.action_delay, default.timeout) == (default.step_pause_s, default.read_timeout)
    assert default.action_delay is not None and default.timeout is not None
    named = WAALiveConfig(action_delay=0.5, timeout=90.0)
    assert (named.step_pause_s, named.read_timeout) == (0.5, 90.0)
    assert (named.action_delay, named.timeout) == (0.5, 90.0)
    ours = WAALiveConfig(step_pause_s=1.0, read_timeout=7.0)
    assert (ours.action_delay, ours.timeout) == (1.0, 7.0)


def test_api_agent_takes_the_references_arguments_in_its_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("anthropic")
    from evals.agents.api_agent import ApiAgent

    agent = ApiAgent("anthropic", "sk-ant-given", temperature=0.2, max_tokens=900,
                     use_accessibility_tree=False, use_history=False, demo="open Notepad")
    assert (agent.api_key, agent.demo, agent.temperature, agent.max_tokens) == (
        "sk-ant-given", "open Notepad", 0.2, 900)
    assert agent.model and agent.model != "sk-ant-given"  # the key was taken for the model
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(RuntimeError, match="ANTHROPIC_API_KEY"):  # as the reference raises
        ApiAgent("anthropic")
