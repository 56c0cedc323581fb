"""One writer for every ``--out``: every command of every console script that takes ``--out``
(found in Typer's command tree, so a new one is covered or this test fails) refuses a file it
did not write (without ``--force``), a symlink, a device, a pipe and a missing folder, in one
line, before any work and without changing anything; and replaces its own file without
``--force``. Real CLI as subprocesses (:func:`oa_vm.kit.safe_fs.write_out`).
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
import typer

from tests.support.cli import run_cli

pytestmark = [pytest.mark.slow, pytest.mark.integration]

FIXTURE = Path(__file__).parent.parent / "fixtures" / "run_folders" / "two-pools"
SCRIPTS = {"openadapt-evals": "evals.cli.app", "oa-vm": "oa_vm.cli.app",
           "openadapt-eval-flow": "evals.compat.flow.cli"}
BASES: dict[str, tuple[str, ...]] = {
    # how each command that has --out is run to its writer ({res}: a folder of two runs)
    "openadapt-evals view": ("view", "a", "--results-dir", "{res}"),
    "openadapt-evals compare": ("compare", "a", "b", "--results-dir", "{res}"),
    "openadapt-evals audit-verifier": ("audit-verifier", "--benchmark", "toy", "--limit", "1",
                                       "--exit-zero"),
}


def _out_commands() -> set[str]:
    import importlib

    found = set()
    for script, module in SCRIPTS.items():
        app = importlib.import_module(module).app
        root = typer.main.get_command(app)
        commands = getattr(root, "commands", {}) or {"": root}
        for name, command in commands.items():
            if any("--out" in getattr(p, "opts", ()) for p in command.params):
                found.add(f"{script} {name}".strip())
    return found


def test_every_out_option_is_covered() -> None:
    assert _out_commands() == set(BASES)


def _foreign(path: Path) -> None:
    path.write_text("my own notes\n")


def _symlink(path: Path) -> None:
    target = path.parent / "elsewhere.txt"
    target.write_text("not yours\n")
    path.symlink_to(target)


def _fifo(path: Path) -> None:
    os.mkfifo(path)  # a reader that never comes: a writer would block for ever


def _device(path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 7))  # /dev/full's numbers, in tmp_path


BAD: dict[str, tuple[Callable[[Path], None], bool]] = {
    # what is at the target -> (made how, refused with --force too)
    "foreign file": (_foreign, False),
    "symlink": (_symlink, True),
    "fifo": (_fifo, True),
    "device": (_device, True),
}


def _state(folder: Path) -> dict[str, tuple[int, bytes]]:
    seen = {}
    for path in sorted(folder.iterdir()):
        info = os.lstat(path)
        body = path.read_bytes() if stat.S_ISREG(info.st_mode) else b""
        seen[path.name] = (info.st_mode, body)
    return seen


@pytest.fixture
def res(tmp_path: Path) -> Path:
    results = tmp_path / "results"
    for name in ("a", "b"):
        shutil.copytree(FIXTURE, results / name)
    return results


def _run(command: str, res: Path, home: Path, *extra: str) -> object:
    script = command.split()[0]
    args = [a.replace("{res}", str(res)) for a in BASES[command]]
    return run_cli(script, *args, *extra, home=home, timeout=240)


@pytest.mark.parametrize("bad", sorted(BAD))
@pytest.mark.parametrize("command", sorted(BASES))
def test_out_refuses_what_it_must_not_write(
    command: str, bad: str, res: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    target = folder / "report.out"
    make, always = BAD[bad]
    make(target)
    before = _state(folder)
    forms = [("--out", str(target))] + ([("--out", str(target), "--force")] if always else [])
    for extra in forms:
        result = _run(command, res, tmp_path / "home", *extra)
        line = result.assert_one_line_error()  # type: ignore[attr-defined]
        assert str(target) in line and "unexpected error" not in line, line
        assert _state(folder) == before


@pytest.mark.timeout(900)  # five runs of the command, each a cold start on a busy machine
@pytest.mark.parametrize("command", sorted(BASES))
def test_out_makes_no_folder_and_replaces_only_its_own_file(
    command: str, res: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    typo = tmp_path / "typo" / "report.out"
    line = _run(command, res, home, "--out", str(typo)).assert_one_line_error()  # type: ignore[attr-defined]
    assert "does not exist" in line and not typo.parent.exists()
    mine = tmp_path / "report.out"
    first = _run(command, res, home, "--out", str(mine))
    assert first.returncode == 0, first.stderr  # type: ignore[attr-defined]
    again = _run(command, res, home, "--out", str(mine))
    assert again.returncode == 0, again.stderr  # type: ignore[attr-defined]
    notes = tmp_path / "notes.out"
    _foreign(notes)
    forced = _run(command, res, home, "--out", str(notes), "--force")
    assert forced.returncode == 0 and notes.read_text() != "my own notes\n"  # type: ignore[attr-defined]
