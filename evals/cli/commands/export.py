"""``openadapt-evals export``: a run in another tool's format (Inspect AI, datasets, JSON lines)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Annotated

import typer

from evals.cli.commands.view import RESULTS_HELP
from evals.errors import InvalidRunInputError
from oa_vm.kit import safe_fs

FORMATS = ("inspect", "hf", "jsonl")
FORMAT_HELP = ("inspect: an Inspect AI eval log, one sample per attempt (needs oa-vm[inspect]); "
               "hf: a Hugging Face datasets folder, one row per step (needs oa-vm[datasets]); "
               "jsonl: steps.jsonl with the screenshots beside it.")
OUT_HELP = ("Where to write (default: <run>/export/<run>.eval for inspect, <run>/export/hf/ "
            "or <run>/export/jsonl/).")


def export(
    run: Annotated[str, typer.Argument(metavar="RUN", help="The run folder's name.")],
    fmt: Annotated[str, typer.Option("--format", metavar="FORMAT", help=FORMAT_HELP)] = "inspect",
    out: Annotated[Path | None, typer.Option("--out", help=OUT_HELP)] = None,
    results_dir: Annotated[Path | None, typer.Option("--results-dir", help=RESULTS_HELP)] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace what --out holds.")] = False,
) -> None:
    """Write the run in FORMAT and print where it went."""
    from evals.results.run_reader import find_run

    if fmt not in FORMATS:
        raise InvalidRunInputError(
            f"--format {fmt!r} is not a format openadapt-evals exports; give one of "
            f"{', '.join(FORMATS)}")
    run_dir = find_run(run, results_dir)
    if out is None:
        out = run_dir / "export" / (f"{run_dir.name}.eval" if fmt == "inspect" else fmt)
    if out.is_symlink() or (out.exists() and not force):
        raise InvalidRunInputError(f"{out} exists; pass --force to replace it, or another --out")
    if out.exists():
        if out.is_dir():
            shutil.rmtree(out)
        else:
            out.unlink()
    safe_fs.ensure_dir(out.parent)
    if fmt == "inspect":
        from evals.report.export.inspect_log import write_inspect_log

        write_inspect_log(run_dir, out)
        typer.echo(f"{out}  (Inspect AI eval log; open it with: inspect view --log-dir "
                   f"{out.parent})")
        return
    from evals.report.export.dataset import write_hf_dataset, write_jsonl

    rows = write_hf_dataset(run_dir, out) if fmt == "hf" else write_jsonl(run_dir, out)
    typer.echo(f"{out}  ({rows} step row(s))")
