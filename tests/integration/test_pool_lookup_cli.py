"""A pool that is not there reads the same in every command: a ``--pool`` naming no pool, and
no ``--pool`` while no pool exists, are bad input (exit 2) in one line with one hint, whichever
console script was run. The commands are read from the Typer apps, so a new one is covered."""

from __future__ import annotations

from pathlib import Path

import pytest

from oa_vm.errors import NO_POOLS_MESSAGE, InvalidInputError, PoolNotFoundError
from tests.support.cli import run_cli
from tests.support.cli_commands import commands_with

pytestmark = pytest.mark.integration

Command = tuple[str, tuple[str, ...]]

MAKES_ITS_POOL = {("oa-vm", ("pool-create",)), ("oa-vm", ("smoke",)),
                  ("openadapt-evals", ("sweep",))}
"""Commands whose --pool names the pool they create: no lookup."""
NO_POOL_MEANS_OTHER = {("openadapt-evals", ("tasks",)), ("openadapt-evals", ("audit-verifier",)),
                       ("openadapt-evals", ("study", "ui-change")), ("openadapt-eval-flow", ())}
"""Commands that, without --pool, read no pool (the bundled suite, a pool of their own...)."""
ARGS = {
    ("oa-vm", ("pool-cleanup",)): ["-y"],
    ("openadapt-evals", ("run",)): ["--tasks", "all", "--agent", "noop"],
    ("openadapt-eval-flow", ()): ["--live", "--task-ids", "t1", "--bundles", "{bundles}"],
}
"""What each command needs besides --pool to reach the pool's lookup."""

LOOKUPS = [c for c in commands_with("--pool") if c not in MAKES_ITS_POOL]


def test_the_exceptions_are_listed_commands() -> None:
    found = set(commands_with("--pool"))
    assert found >= MAKES_ITS_POOL | NO_POOL_MEANS_OTHER


def _args(command: Command, tmp_path: Path) -> list[str]:
    bundles = tmp_path / "bundles"
    (bundles / "t1").mkdir(parents=True, exist_ok=True)
    (bundles / "t1" / "workflow.json").write_text("{}", encoding="utf-8")
    return [a.replace("{bundles}", str(bundles)) for a in ARGS.get(command, [])]


def _keep_a_pool(home: Path) -> None:
    """A pool record of a name the lookups do not ask for (no worker: nothing to refresh)."""
    from oa_vm.model import state

    state.save(state.PoolRecord(name="kept", cloud="local", state=state.PoolState.READY,
                                created_at=state.utcnow()))


@pytest.mark.parametrize("hint", [f"({NO_POOLS_MESSAGE})", "(known pools: kept)"])
@pytest.mark.parametrize("command", LOOKUPS, ids=lambda c: " ".join((c[0], *c[1])))
def test_an_unknown_pool_is_bad_input_with_one_hint(
    command: Command, hint: str, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script, words = command
    monkeypatch.chdir(tmp_path)  # a command that writes a results folder writes it here
    if "kept" in hint:
        _keep_a_pool(home)
    result = run_cli(script, *words, "--pool", "nope", *_args(command, tmp_path), home=home)
    line = result.assert_one_line_error()
    assert line == f"{script}: error: no pool named 'nope' {hint}"
    assert result.returncode == 2
    assert sorted(p.name for p in (home / "pools").glob("*")) == (["kept"] if "kept" in hint
                                                                  else [])


@pytest.mark.parametrize("command", [c for c in LOOKUPS if c not in NO_POOL_MEANS_OTHER],
                         ids=lambda c: " ".join((c[0], *c[1])))
def test_no_pool_at_all_is_bad_input_with_the_same_hint(
    command: Command, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script, words = command
    monkeypatch.chdir(tmp_path)
    result = run_cli(script, *words, *_args(command, tmp_path), home=home)
    assert result.assert_one_line_error() == f"{script}: error: {NO_POOLS_MESSAGE}"
    assert result.returncode == 2


def test_the_python_api_raises_the_same_error(home: Path) -> None:
    import oa_vm

    for name in ("nope", None):
        with pytest.raises(PoolNotFoundError) as caught:
            oa_vm.pool_status(name)
        assert isinstance(caught.value, InvalidInputError) and caught.value.exit_code == 2
        assert str(caught.value).endswith(NO_POOLS_MESSAGE if name is None
                                          else f"({NO_POOLS_MESSAGE})")
