"""The reference cost formula, its figures, and its extension to W workers and hybrid runs."""

from __future__ import annotations

import math

import pytest

from evals.results.cost import (
    EstimateInput,
    Mode,
    claude_image_tokens,
    estimate,
    format_estimate,
    format_rate,
    known_models,
    minutes_per_task,
    money,
    openai_image_tokens,
    step_cost,
    token_cost,
    vm_hours,
    wall_hours,
)
from oa_vm.errors import InvalidInputError

REFERENCE_LINE = (
    "154 tasks, replay mode, $0.19/h, claude-sonnet-4, W=1: 2.82 VM-hours, $0.54 total, "
    "$0.0035/task, baseline $39.06 (22 steps/task), savings $38.53"
)


def test_reference_figures_exactly() -> None:
    est = estimate(EstimateInput(n_tasks=154, mode=Mode.REPLAY, vm_hourly=0.19))
    assert est.summary_line() == REFERENCE_LINE
    block = format_estimate(est)
    assert "2.82 VM-hours @ $0.19/h = $0.54" in block
    assert "-> TOTAL:              $0.54 ($0.0035/task)" in block
    assert "Pure-agent baseline:   $39.06 (22 steps/task, all paid)" in block
    assert "Savings vs baseline:   $38.53" in block


def test_reference_components() -> None:
    est = estimate(EstimateInput(n_tasks=154))
    assert est.vm_hours == pytest.approx(154 / 60 + 0.25)
    assert est.token_cost == 0.0
    assert est.paid_tasks == 0.0
    # 1843 image tokens + 500 text in, 300 out, at $3/$15 per million
    assert est.step_cost == pytest.approx((2343 * 3 + 300 * 15) / 1e6)
    assert est.baseline == pytest.approx(154 * 22 * est.step_cost)


def test_claude_image_tokens_scale_long_edge_to_1568() -> None:
    assert claude_image_tokens(1920, 1080) == int(1568 * 882 / 750) == 1843
    assert claude_image_tokens(1080, 1920) == 1843
    assert claude_image_tokens(1000, 750) == 1000  # small images are not scaled


def test_openai_image_tokens_tile_the_image_as_sent() -> None:
    # 1920x1080 is sent as 1365x768: 3 x 2 tiles of 512 px
    assert openai_image_tokens(1920, 1080) == 85 + 170 * 6
    assert openai_image_tokens(512, 512) == 85 + 170
    assert openai_image_tokens(4096, 1024) == 85 + 170 * 4  # sent as 2048x512: 4 x 1 tiles


@pytest.mark.parametrize("workers", [2, 8, 40])
def test_more_workers_shorten_wall_time_and_add_startup(workers: int) -> None:
    one = estimate(EstimateInput(n_tasks=154, workers=1))
    many = estimate(EstimateInput(n_tasks=154, workers=workers))
    assert many.wall_hours == pytest.approx(154 / 60 / workers + 0.25)
    assert many.vm_hours == pytest.approx((154 / 60 / workers + 0.25) * workers)
    # the task work is the same; each extra worker adds its own 0.25 h of start-up
    assert many.vm_hours - one.vm_hours == pytest.approx(0.25 * (workers - 1))
    assert many.wall_hours < one.wall_hours
    assert many.baseline == one.baseline


def test_eight_workers_figures() -> None:
    est = estimate(EstimateInput(n_tasks=154, workers=8, vm_hourly=0.19))
    assert f"{est.vm_hours:.2f}" == "4.57"
    assert f"{est.wall_hours:.2f}" == "0.57"
    assert money(est.total) == "$0.87"


def test_hybrid_pays_fallback_steps_and_slower_minutes() -> None:
    est = estimate(EstimateInput(n_tasks=100, mode=Mode.HYBRID, fallback_rate=0.3))
    assert est.minutes_per_task == pytest.approx(0.7 * 1.0 + 0.3 * 3.0)
    assert est.paid_tasks == pytest.approx(30.0)
    assert est.steps_per_paid_task == 10
    assert est.token_cost == pytest.approx(30 * 10 * step_cost("claude-sonnet-4"))
    assert est.total == pytest.approx(est.vm_cost + est.token_cost)
    assert est.savings == pytest.approx(est.baseline - est.total)


def test_hybrid_with_zero_fallback_costs_like_replay() -> None:
    hybrid = estimate(EstimateInput(n_tasks=50, mode=Mode.HYBRID, fallback_rate=0.0))
    replay = estimate(EstimateInput(n_tasks=50, mode=Mode.REPLAY))
    assert hybrid.total == pytest.approx(replay.total)


def test_replay_ignores_the_fallback_rate() -> None:
    assert minutes_per_task(Mode.REPLAY, 0.9) == 1.0
    est = estimate(EstimateInput(n_tasks=10, mode=Mode.REPLAY, fallback_rate=0.9))
    assert est.token_cost == 0.0 and est.fallback_rate == 0.0


def test_wall_and_vm_hours_helpers() -> None:
    assert wall_hours(120, 1.0, 2) == pytest.approx(1.25)
    assert vm_hours(120, 1.0, 2) == pytest.approx(2.5)


@pytest.mark.parametrize(
    ("model", "tokens_in", "tokens_out", "expected"),
    [
        ("gpt-4o", 1_000_000, 1_000_000, 12.50),
        ("gpt-4o-mini", 1_000_000, 0, 0.15),
        ("claude-sonnet-4", 0, 1_000_000, 15.0),
        ("claude-opus-4.5", 2_000_000, 1_000_000, 105.0),
        ("claude-haiku-4.5", 500_000, 200_000, 1.5),
    ],
)
def test_token_cost(model: str, tokens_in: int, tokens_out: int, expected: float) -> None:
    assert token_cost(model, tokens_in, tokens_out) == pytest.approx(expected)


def test_known_models() -> None:
    assert known_models() == [
        "gpt-4o", "gpt-4o-mini", "claude-sonnet-4", "claude-opus-4.5", "claude-haiku-4.5",
        "computer-use-preview",
    ]


def test_unknown_model_lists_the_known_ones() -> None:
    with pytest.raises(InvalidInputError) as info:
        token_cost("gpt-5", 1, 1)
    message = str(info.value)
    assert "unknown model 'gpt-5'" in message
    for name in known_models():
        assert name in message


@pytest.mark.parametrize(
    ("inputs", "fragment"),
    [
        (EstimateInput(n_tasks=0), "at least 1"),
        (EstimateInput(n_tasks=5, workers=0), "--workers"),
        (EstimateInput(n_tasks=5, vm_hourly=-0.1), "non-negative"),
        (EstimateInput(n_tasks=5, vm_hourly=math.nan), "non-negative"),
        (EstimateInput(n_tasks=5, fallback_rate=1.5), "between 0 and 1"),
        (EstimateInput(n_tasks=5, model="nope"), "known models"),
    ],
)
def test_bad_inputs_are_refused(inputs: EstimateInput, fragment: str) -> None:
    with pytest.raises(InvalidInputError, match=fragment):
        estimate(inputs)


def test_negative_token_counts_are_refused() -> None:
    with pytest.raises(InvalidInputError, match="negative"):
        token_cost("gpt-4o", -1, 0)


@pytest.mark.parametrize(
    ("value", "text"), [(0.19, "0.19"), (0.42336, "0.42336"), (0.5, "0.50"), (4.608, "4.608")]
)
def test_format_rate(value: float, text: str) -> None:
    assert format_rate(value) == text


def test_money_signs() -> None:
    assert money(-1.234) == "-$1.23"
    assert money(0.0035, 4) == "$0.0035"
    assert money(-0.001) == "$0.00"
