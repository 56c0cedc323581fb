"""``--json`` output is one JSON document, whether the command succeeds or fails: every command
of the three console scripts that takes ``--json`` (read from the Typer apps, so a new one must
be listed here), failing before it has a result, prints ``{"error": ..., "exit_code": N}`` on
stdout beside its one line on stderr (docs/cli.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import Result, run_cli
from tests.support.cli_commands import commands_with

pytestmark = pytest.mark.integration

Command = tuple[str, tuple[str, ...]]
BAD_KNOB = {"OA_VM_LEASE_STALE_S": "abc"}
FAILS: dict[Command, tuple[list[str], dict[str, str]]] = {
    ("oa-vm", ("image-create",)): (["--cloud", "local", "--region", "x"], {}),
    ("oa-vm", ("image-list",)): (["--cloud", "bogus"], {}),
    ("oa-vm", ("pool-create",)): (["--cloud", "local", "--workers", "0", "-y"], {}),
    ("oa-vm", ("pool-list",)): ([], BAD_KNOB),
    ("oa-vm", ("pool-repair",)): (["--pool", "nope"], {}),
    ("oa-vm", ("pool-resume",)): (["--pool", "nope"], {}),
    ("oa-vm", ("pool-status",)): ([], {}),
    ("oa-vm", ("prices", "refresh")): (["--cloud", "bogus"], {}),
    ("oa-vm", ("smoke",)): (["--cloud", "local", "-y"], {}),
    ("openadapt-evals", ("audit-verifier",)): (["--pool", "nope"], {}),
    ("openadapt-evals", ("compare",)): (["a", "b"], {}),
    ("openadapt-evals", ("extradup", "kill-scan")): (["--reward", "nope:x"], {}),
    ("openadapt-evals", ("run",)): (["--pool", "nope", "--tasks", "all", "--agent", "noop"], {}),
    ("openadapt-evals", ("runs",)): (["--results-dir", "{missing}"], {}),
    ("openadapt-evals", ("study", "ui-change")): (["--pool", "nope"], {}),
    ("openadapt-evals", ("sweep",)): (["--tasks", "all", "--agent", "nobody"], {}),
    ("openadapt-evals", ("tasks",)): (["--pool", "nope"], {}),
    ("openadapt-eval-flow", ()): (["--live"], {}),
}
"""For each ``--json`` command, arguments (and environment) it refuses before any result."""


def _name(command: Command) -> str:
    return " ".join((command[0], *command[1]))


def _one_json_error(result: Result) -> dict[str, object]:
    line = result.assert_one_line_error()
    document = json.loads(result.stdout)  # one document, nothing else on stdout
    assert document == {"error": line.split(": error: ", 1)[1], "exit_code": result.returncode}
    return document


def test_every_json_command_is_listed() -> None:
    assert set(FAILS) == set(commands_with("--json"))


CASES = [(c, "1") for c in sorted(FAILS)] + [
    (c, "0") for c in sorted(FAILS) if c[1] in (("pool-status",), ("pool-list",))]
"""Each command; pool-status and pool-list also through Typer (their fast path skips it)."""


@pytest.mark.parametrize(("command", "fast"), CASES,
                         ids=[f"{_name(c)}{'' if f == '1' else ' (Typer)'}" for c, f in CASES])
def test_a_json_command_that_fails_prints_the_error_as_json(
    command: Command, fast: str, home: Path, tmp_path: Path
) -> None:
    script, words = command
    args, env = FAILS[command]
    args = [a.replace("{missing}", str(tmp_path / "missing")) for a in args]
    env = {**env, "OA_EVALS_RESULTS": str(tmp_path / "results"), "OA_VM_FAST_PATH": fast}
    result = run_cli(script, *words, "--json", *args, home=home, env=env)
    assert _one_json_error(result)["exit_code"] == 2
    plain = run_cli(script, *words, *args, home=home, env=env)  # without --json: stdout empty
    assert plain.stdout == "" and plain.returncode == 2


@pytest.mark.parametrize("command", sorted(FAILS), ids=_name)
def test_a_mistyped_option_under_json_is_a_json_error_too(command: Command, home: Path) -> None:
    script, words = command
    _one_json_error(run_cli(script, *words, "--json", "--no-such-option", home=home))


def test_a_command_that_printed_its_document_adds_no_error_document(home: Path) -> None:
    # the smoke's plan is its result under --plan; over the limit it still exits 2
    result = run_cli("oa-vm", "smoke", "--cloud", "aws", "--region", "us-east-1", "--plan",
                     "--max-cost-usd", "0.01", "--json", home=home)
    assert "more than --max-cost-usd" in result.assert_one_line_error()
    assert result.returncode == 2 and "error" not in json.loads(result.stdout)


def test_a_failure_after_the_lookup_is_a_json_error_with_its_exit_code(home: Path) -> None:
    from oa_vm.model import state

    state.save(state.PoolRecord(name="kept", cloud="local", state=state.PoolState.READY,
                                created_at=state.utcnow()))
    result = run_cli("oa-vm", "pool-resume", "--pool", "kept", "--json", home=home)
    assert _one_json_error(result) == {
        "error": "pool 'kept' is not paused (ready); nothing to resume", "exit_code": 1}


@pytest.mark.parametrize("printed", [False, True])
def test_an_interruption_the_command_returns_is_a_json_error_unless_it_printed_its_document(
    printed: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A run stopped by Ctrl-C ends its command with exit 130 itself (it keeps what finished),
    # rather than raising: the same rule as every other failure.
    import typer

    from oa_vm.kit.clikit import run_main

    app = typer.Typer()

    @app.command()
    def stopped(json_out: bool = typer.Option(False, "--json")) -> None:
        if printed:
            typer.echo(json.dumps({"tasks": 1}))
        raise typer.Exit(130)

    monkeypatch.setattr("sys.argv", ["prog", "--json"])
    with pytest.raises(SystemExit) as ended:
        run_main(app, "prog")
    out, err = capsys.readouterr()
    assert ended.value.code == 130 and err == "prog: interrupted\n"
    document = {"tasks": 1} if printed else {"error": "interrupted", "exit_code": 130}
    assert json.loads(out) == document
