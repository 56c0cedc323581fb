"""``openadapt-evals export``: a run in another tool's format (Inspect AI, datasets, JSON lines)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evals.cli.commands.view import RESULTS_HELP
from evals.errors import InvalidRunInputError
from oa_vm.kit import safe_fs

FORMATS = ("inspect", "hf", "jsonl")
INSPECT_SUFFIXES = (".eval", ".json")
"""The names Inspect AI writes a log under (it chooses the format by the suffix)."""
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
    force: Annotated[bool, typer.Option(
        "--force", help="Replace a file at --out that this command did not write.")] = False,
) -> None:
    """Write the run in FORMAT and print where it went."""
    from evals.results.run_reader import find_run

    if fmt not in FORMATS:
        raise InvalidRunInputError(
            f"--format {fmt!r} is not a format openadapt-evals exports; give one of "
            f"{', '.join(FORMATS)}")
    if fmt == "inspect" and out is not None and out.suffix not in INSPECT_SUFFIXES:
        # Inspect picks its format by the name, and had no writer for any other: one
        # "unexpected error" line, after the log was built
        example = out / f"{run}.eval" if out.is_dir() else out.with_name(f"{out.name}.eval")
        raise InvalidRunInputError(
            f"--out {out}: an Inspect AI log is one file named .eval or .json (Inspect's two "
            f"formats); give e.g. --out {example}")
    run_dir = find_run(run, results_dir)
    if out is None:
        out = run_dir / "export" / (f"{run_dir.name}.eval" if fmt == "inspect" else fmt)
        safe_fs.ensure_dir(out.parent, root=run_dir)  # a given --out's folder is never made
    if fmt == "inspect":
        from evals.report.export.inspect_log import exported_log, write_inspect_log

        safe_fs.write_out_made(out, lambda made: write_inspect_log(run_dir, made),
                               ours=exported_log, force=force, folder=False)
        typer.echo(f"{out}  (Inspect AI eval log; open it with: inspect view --log-dir "
                   f"{out.parent})")
        return
    from evals.report.export.dataset import exported_folder, write_hf_dataset, write_jsonl

    rows: list[int] = []
    writer = write_hf_dataset if fmt == "hf" else write_jsonl
    safe_fs.write_out_made(out, lambda made: rows.append(writer(run_dir, made)),
                           ours=exported_folder, force=force)
    typer.echo(f"{out}  ({rows[0]} step row(s))")
