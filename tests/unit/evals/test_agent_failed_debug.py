"""``--debug`` on a run the agent spoiled shows the agent's traceback once, not the harness's."""

from __future__ import annotations

import sys

import pytest
import typer

from evals.errors import AgentFailed, RunUnhealthy
from oa_vm.kit.clikit import run_main


def _app(error: Exception) -> typer.Typer:
    app = typer.Typer()

    @app.command()
    def go() -> None:
        raise error

    return app


@pytest.mark.parametrize(("error", "traceback_shown"), [
    (AgentFailed("results/r", "the agent raised in 3 of 3 tasks"), False),
    (RunUnhealthy("results/r", "every worker was lost"), True),  # the harness's own: shown
])
def test_debug_shows_the_harness_traceback_only_when_it_is_the_evidence(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], error: Exception,
    traceback_shown: bool,
) -> None:
    monkeypatch.setattr(sys, "argv", ["openadapt-evals", "--debug"])
    with pytest.raises(SystemExit) as ended:
        run_main(_app(error), "openadapt-evals", known=(AgentFailed, RunUnhealthy))
    assert ended.value.code == 4
    err = capsys.readouterr().err
    assert ("Traceback (most recent call last)" in err) == traceback_shown
    assert "openadapt-evals: error: run results/r" in err
