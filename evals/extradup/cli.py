"""``openadapt-evals extradup kill-scan`` (also ``python -m evals.extradup kill-scan``).

Exit status: 0 when no scored reward paid a wrong write, 1 when one did, 2 on bad input.
"""

from __future__ import annotations

from typing import Annotated

import typer

from evals.extradup import ASKS, FAMILIES, load_reward, scan, table
from oa_vm.kit.clikit import plain_typer, print_json, run_main

app = plain_typer("Check whether a reward pays for wrong writes (offline, a second).",
                  name="extradup", no_args_is_help=True)


@app.callback()
def extradup() -> None:
    """Check whether a reward pays for wrong writes (offline, a second)."""


@app.command("kill-scan")
def kill_scan(
    reward: Annotated[
        list[str] | None,
        typer.Option("--reward", help="A reward to scan: screen, store (the two built-in "
                                      "references), or package.module:function for your own "
                                      "(it gets a Case: screen, store, expected). Repeat it "
                                      "for several; default: screen and store."),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")
                        ] = False,
) -> None:
    """Apply five wrong-write families to a records-app encounter (a duplicate record, an
    extra field, a missing field, a form never submitted, a "Saved" banner with nothing
    saved), ask each reward three times per family and about three correct runs, and print
    what each paid. Exits 1 when a reward paid a wrong write."""
    specs = reward or ["screen", "store"]
    rewards = [(spec, load_reward(spec)) for spec in specs]  # all refused before any is asked
    scans = [scan(name, function) for name, function in rewards]
    if json_out:
        print_json({"asks": ASKS, "families": list(FAMILIES), "rewards": [
            {"reward": s.name, "paid": s.paid, "wrong_paid": s.wrong_paid,
             "wrong_total": len(FAMILIES) * ASKS, "correct_paid": s.correct_paid,
             "correct_total": ASKS, "errors": s.errors} for s in scans]})
    else:
        typer.echo(table(scans))
        for s in scans:
            for error in s.errors[:5]:
                typer.echo(f"{s.name}: raised on {error}", err=True)
            verdict = ("pays wrong writes" if s.wrong_paid else
                       "paid no wrong write" + ("" if s.correct_paid == ASKS
                                                else ", but missed correct runs"))
            typer.echo(f"{s.name}: {verdict} ({s.wrong_paid}/{len(FAMILIES) * ASKS} wrong, "
                       f"{s.correct_paid}/{ASKS} correct)")
    if any(s.wrong_paid for s in scans):
        raise typer.Exit(1)


def main() -> None:
    """``python -m evals.extradup``."""
    run_main(app, "python -m evals.extradup")
