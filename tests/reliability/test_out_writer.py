"""One writer for every file an option names: every command of every console script that takes
``--out`` or ``--dest`` (found in Typer's command tree, groups included, so a new one is covered or
this test fails) refuses a file it did not write (without ``--force``), a symlink, a device, a pipe
and a missing folder, in one line, before any work and without changing anything; and replaces its
own output without ``--force``. A command whose output is a folder (``export --format jsonl``) never
deletes a folder of someone else's files, even with ``--force``. Real CLI as subprocesses
(:func:`oa_vm.kit.safe_fs.write_out`, :func:`oa_vm.kit.safe_fs.write_out_made`).
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import click
import pytest
import typer

from tests.support.cli import run_cli
from tests.unit.cost.conftest import PriceServer
from tests.unit.cost.conftest import price_server as price_server  # the loopback price list

FIXTURE = Path(__file__).parent.parent / "fixtures" / "run_folders" / "two-pools"
SCRIPTS = {"openadapt-evals": "evals.cli.app", "oa-vm": "oa_vm.cli.app",
           "openadapt-eval-flow": "evals.compat.flow.cli"}
WRITE_OPTIONS = ("--out", "--dest")
BASES: dict[str, tuple[str, ...]] = {
    # how each command that names a file to write is run to its writer ({res}: a folder of two
    # runs); a second form of one command is "<command> (<form>)"
    "openadapt-evals view": ("view", "a", "--results-dir", "{res}"),
    "openadapt-evals compare": ("compare", "a", "b", "--results-dir", "{res}"),
    "openadapt-evals audit-verifier": ("audit-verifier", "--benchmark", "toy", "--limit", "1",
                                       "--exit-zero"),
    "openadapt-evals export": ("export", "a", "--format", "inspect", "--results-dir", "{res}"),
    "openadapt-evals export (folder)": ("export", "a", "--format", "jsonl",
                                        "--results-dir", "{res}"),
    "oa-vm prices refresh": ("prices", "refresh", "--cloud", "azure"),
}
OPTION = {"oa-vm prices refresh": "--dest"}
"""The option that names the output, where it is not ``--out``."""


def _walk(command: click.Command, path: str) -> Iterator[tuple[str, click.Command]]:
    yield path, command
    for name, sub in (getattr(command, "commands", None) or {}).items():
        yield from _walk(sub, f"{path} {name}")


def _out_commands() -> set[str]:
    import importlib

    found = set()
    for script, module in SCRIPTS.items():
        root = typer.main.get_command(importlib.import_module(module).app)
        for path, command in _walk(root, script):
            if any(set(WRITE_OPTIONS) & set(getattr(p, "opts", ())) for p in command.params):
                found.add(path)
    return found


@pytest.mark.integration
def test_every_out_option_is_covered() -> None:
    assert _out_commands() == {name.split(" (")[0] for name in BASES}


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


@pytest.fixture
def prices_env(price_server: PriceServer) -> dict[str, str]:
    """``prices refresh`` asks the loopback price list, never the network."""
    from oa_vm.cost import pricing

    return {pricing.AZURE_URL_ENV: price_server.azure_url,
            pricing.AWS_URL_ENV: price_server.aws_url}


def _run(command: str, res: Path, home: Path, env: dict[str, str], *extra: str) -> object:
    script = command.split()[0]
    args = [a.replace("{res}", str(res)) for a in BASES[command]]
    return run_cli(script, *args, *extra, home=home, timeout=240, env=env)


@pytest.mark.parametrize("bad", sorted(BAD))
@pytest.mark.parametrize("command", sorted(BASES))
@pytest.mark.slow
@pytest.mark.integration
def test_out_refuses_what_it_must_not_write(
    command: str, bad: str, res: Path, tmp_path: Path, prices_env: dict[str, str]
) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    target = folder / "report.out"
    make, always = BAD[bad]
    make(target)
    before = _state(folder)
    option = OPTION.get(command, "--out")
    forms = [(option, str(target))] + ([(option, str(target), "--force")] if always else [])
    for extra in forms:
        result = _run(command, res, tmp_path / "home", prices_env, *extra)
        line = result.assert_one_line_error()  # type: ignore[attr-defined]
        assert str(target) in line and "unexpected error" not in line, line
        assert result.returncode == 2, line  # type: ignore[attr-defined]  # bad input
        assert _state(folder) == before


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.timeout(900)  # five runs of the command, each a cold start on a busy machine
@pytest.mark.parametrize("command", sorted(BASES))
def test_out_makes_no_folder_and_replaces_only_its_own_file(
    command: str, res: Path, tmp_path: Path, prices_env: dict[str, str]
) -> None:
    home, option = tmp_path / "home", OPTION.get(command, "--out")
    suffix = ".eval" if "--format" in BASES[command] and "inspect" in BASES[command] else ".out"

    def run(target: Path, *extra: str) -> object:
        return _run(command, res, home, prices_env, option, str(target), *extra)

    typo = tmp_path / "typo" / f"report{suffix}"
    line = run(typo).assert_one_line_error()  # type: ignore[attr-defined]
    assert "does not exist" in line and not typo.parent.exists()
    mine = tmp_path / f"report{suffix}"
    for _ in range(2):  # written, then its own output replaced without --force
        result = run(mine)
        assert result.returncode == 0, result.stderr  # type: ignore[attr-defined]
    notes = tmp_path / f"notes{suffix}"
    _foreign(notes)
    forced = run(notes, "--force")
    assert forced.returncode == 0, forced.stderr  # type: ignore[attr-defined]
    assert not notes.is_file() or notes.read_bytes() != b"my own notes\n"
    theirs = tmp_path / f"theirs{suffix}"  # a folder of someone's files: never deleted
    theirs.mkdir()
    _foreign(theirs / "keep.txt")
    refused = run(theirs, "--force")
    assert refused.returncode != 0 and (theirs / "keep.txt").read_text() == "my own notes\n"  # type: ignore[attr-defined]


@pytest.mark.integration
@pytest.mark.parametrize("command", sorted(c for c in BASES if "(folder)" not in c))
def test_a_folder_at_a_file_out_is_refused_and_kept(
    command: str, res: Path, tmp_path: Path, prices_env: dict[str, str]
) -> None:
    """Every command writing one file refuses an empty folder at its ``--out`` in one line and
    leaves it as it was (``export --format inspect`` replaced it with its log)."""
    target = tmp_path / ("report.eval" if "inspect" in BASES[command] else "report.out")
    target.mkdir()
    line = _run(command, res, tmp_path / "home", prices_env, OPTION.get(command, "--out"),
                str(target)).assert_one_line_error()  # type: ignore[attr-defined]
    assert str(target) in line and "folder" in line and "unexpected error" not in line, line
    assert target.is_dir() and list(target.iterdir()) == []


@pytest.mark.integration
@pytest.mark.parametrize("name", ["report.txt", "report", "folder"])
def test_an_inspect_out_is_a_file_named_as_inspect_writes(res: Path, tmp_path: Path,
                                                          name: str) -> None:
    """Inspect AI writes ``.eval`` or ``.json`` logs only, by the name: another name (or a
    folder) is bad input, refused in one line with exit 2 naming a name that works, before the
    log is built; it was an "unexpected error: ValueError" after it."""
    target = tmp_path / name
    if name == "folder":
        target.mkdir()
    result = run_cli("openadapt-evals", "export", "a", "--format", "inspect", "--results-dir",
                     str(res), "--out", str(target), home=tmp_path / "home")
    line = result.assert_one_line_error()
    assert result.returncode == 2 and ".eval or .json" in line, line
    example = target / "a.eval" if name == "folder" else target.with_name(f"{name}.eval")
    assert f"--out {example}" in line, line
    made = {"folder"} if name == "folder" else set()  # the test's own, still empty
    assert {p.name for p in tmp_path.iterdir()} == {"results", *made}
    assert not made or list(target.iterdir()) == []
