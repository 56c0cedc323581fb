"""The reference's flow cost API under its own module path, ``evals.compat.flow.cost``.

Every call below is written as a user of ``openadapt_evals.flow.cost`` writes it; only the import
changed. The expected figures are worked out by hand from the reference formula
(``WAA_PROTOCOL.md`` section 8), not read back from the code under test.
"""

from __future__ import annotations

import pytest

from evals.compat.flow.cost import (
    DEFAULT_MODEL,
    DEFAULT_SCREEN,
    DEFAULT_VM_HOURLY,
    MODELS,
    CostGuardConfig,
    SpendLedger,
    claude_image_tokens,
    cost_per_step_usd,
    estimate_flow_waa_cost,
    looks_like_billing_error,
    openai_image_tokens,
    tokens_per_step,
)

# claude-sonnet-4, 1920x1080: 1843 image tokens + 500 text in at $3/M, 300 out at $15/M.
SONNET_STEP = (1843 + 500) * 3.00 / 1e6 + 300 * 15.00 / 1e6


def test_defaults_are_the_references() -> None:
    assert (DEFAULT_MODEL, DEFAULT_VM_HOURLY, DEFAULT_SCREEN) == (
        "claude-sonnet-4", 0.19, (1920, 1080))


def test_image_tokens_and_step_cost() -> None:
    assert claude_image_tokens(1920, 1080) == 1843  # 1568x882 / 750
    assert openai_image_tokens(1920, 1080) == 85 + 170 * 6  # 1365x768: 3 x 2 tiles
    assert openai_image_tokens(1920, 1080, detail="low") == 85
    sonnet = MODELS["claude-sonnet-4"]
    assert sonnet.name == "Claude Sonnet 4"
    assert sonnet.image_token_calculator(1920, 1080) == 1843
    assert tokens_per_step(sonnet) == (2343, 300)
    assert tokens_per_step(sonnet, screen=(1280, 720), text_tokens=0) == (1228, 300)
    assert cost_per_step_usd(sonnet) == pytest.approx(SONNET_STEP)


def test_replay_estimate_is_the_published_one() -> None:
    est = estimate_flow_waa_cost(154)
    row = est.as_dict()
    assert row["vm_hours"] == pytest.approx(154 / 60 + 0.25, abs=1e-3)  # 2.817
    assert row["total_cost_usd"] == pytest.approx((154 / 60 + 0.25) * 0.19, abs=1e-4)
    assert row["baseline_pure_agent_cost_usd"] == pytest.approx(154 * 22 * SONNET_STEP,
                                                                abs=1e-4)
    assert round(row["baseline_pure_agent_cost_usd"], 2) == 39.06
    assert row["token_cost_usd"] == 0 and row["paid_tasks"] == 0


def test_hybrid_estimate_pays_the_fallback_steps() -> None:
    est = estimate_flow_waa_cost(154, "hybrid", "claude-sonnet-4", fallback_rate=0.3,
                                 vm_hourly=0.19)
    hours = 154 * (0.7 * 1.0 + 0.3 * 3.0) / 60 + 0.25
    assert est.vm_hours == pytest.approx(hours)
    assert est.paid_tasks == pytest.approx(46.2)
    assert est.token_cost_usd == pytest.approx(46.2 * 10 * SONNET_STEP)
    assert est.total_cost_usd == pytest.approx(hours * 0.19 + 46.2 * 10 * SONNET_STEP)
    assert est.as_dict()["savings_vs_baseline_usd"] == pytest.approx(
        154 * 22 * SONNET_STEP - est.total_cost_usd, abs=1e-4)


def test_the_references_keyword_arguments_are_taken() -> None:
    est = estimate_flow_waa_cost(
        100, mode="hybrid", model_name="claude-sonnet-4", fallback_rate=1.5, vm_hourly=0.46,
        screen=(1280, 720), agent_steps_per_task=30, fallback_steps=4,
        replay_minutes_per_task=2.0, agent_minutes_per_task=6.0, overhead_hours=0.5,
        num_workers=4,
    )
    step = (1228 + 500) * 3.00 / 1e6 + 300 * 15.00 / 1e6
    assert est.fallback_rate == 1.0  # clamped, as the reference does
    hours = (100 * 6.0 / 60 / 4 + 0.5) * 4
    assert est.vm_hours == pytest.approx(hours)
    assert est.vm_cost_usd == pytest.approx(hours * 0.46)
    assert est.token_cost_usd == pytest.approx(100 * 4 * step)
    assert est.baseline_agent_cost_usd == pytest.approx(100 * 30 * step)
    assert est.baseline_agent_steps_per_task == 30 and est.agent_steps_per_paid_task == 4


@pytest.mark.parametrize("kwargs", [{"mode": "agent"}, {"model_name": "gpt-5"},
                                    {"vm_hourly": -1.0}, {"screen": (0, 1080)}])
def test_bad_arguments_raise_value_error(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        estimate_flow_waa_cost(10, **kwargs)  # type: ignore[arg-type]


def test_spend_ledger_caps_and_billing_abort() -> None:
    ledger = SpendLedger(CostGuardConfig(per_run_usd=0.5, total_usd=1.0, per_task_tokens=100,
                                         billing_abort_after=2))
    assert ledger.can_start()
    ledger.record(0.6, tokens=50)
    assert not ledger.can_start()  # 0.6 + the next run's 0.5 would pass 1.0
    assert "ceiling" in ledger.blocked_reason()
    assert ledger.token_cap_exceeded(101) and not ledger.token_cap_exceeded(100)
    fresh = SpendLedger(CostGuardConfig(total_usd=100.0))
    fresh.record(0.0, error="Error code: 429 - rate limit reached")
    fresh.record(0.0, error="ok-looking error")  # resets the run of billing errors
    fresh.record(0.0, error="insufficient_quota")
    assert fresh.aborted is None and fresh.can_start()
    fresh.record(0.0, error="401 Unauthorized")
    assert fresh.aborted is not None and not fresh.can_start()
    assert fresh.summary()["aborted"] == fresh.blocked_reason()
    assert looks_like_billing_error("Your credit balance is too low")
    assert not looks_like_billing_error("element not found")
