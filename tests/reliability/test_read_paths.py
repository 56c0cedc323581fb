"""Every option that names a file or folder to read, given one that is not there or not of the
kind it wants: refused in one line that names the path and says what is wrong, exit 2.

The one rule is :func:`oa_vm.kit.validate.read_problem` (``does not exist``, ``is a file, not a
folder``, ``is a folder, not a file``, then what to give), with the results folder of the run
readers under :func:`oa_vm.kit.results_dir.results_read_problem`; ``waa_client.inputs`` (the
reader of ``@file`` lists, variations and task files) and ``python -m infra.local`` word their
refusals the same, as the layers keep them from importing ``oa_vm``. Before it, ``runs
--results-dir`` of a typo answered "no runs" with exit 0; ``view``, ``compare``, ``export`` and
``--rerun-errors`` said a missing folder "holds no runs"; a folder given as ``--ssh-key`` was
"no such file"; an openapps config that is a folder "does not exist"; ``--bundles``,
``--tasks-dir``, ``--source`` and allow-lists called a missing path "not a folder" or "not a
file"; a folder as ``python -m infra.local --secret-file`` was a traceback, and a missing
``--tasks`` exit 1.

An empty results folder is an answer, not an error: ``runs`` says "no runs" and exits 0
(:func:`test_an_empty_results_folder_is_an_answer`).

Every case runs the real script as a subprocess through :func:`tests.reliability.
test_abuse_options._refused` (one line, exit 2, nothing created or changed). Root reads past a
``chmod 000``, so "unreadable" is not among the cases: the rule opens the path instead of
judging its mode bits, and reports what the system refuses (``cannot be read (...)``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.reliability.test_abuse import DONE, POOL, TASK, World
from tests.reliability.test_abuse_options import _refused, cwd, world
from tests.support.cli import BIN, run_cli
from tests.support.pools import READY_TIMEOUT

pytestmark = pytest.mark.integration

__all__ = ["cwd", "world"]  # the shared pool and finished run, and an empty current folder

MISSING, FILE, FOLDER = "does not exist", "is a file, not a folder", "is a folder, not a file"
LOOP = "cannot be read"
"""A symbolic link loop: every option (``--tasks-dir`` resolved the path first, and the loop
raised an unexpected error)."""

# how each case's path is made: {missing} under the test's folder, {file} a file holding one
# line, {folder} an empty folder, {loop} a link to a link to it
PATHS = {MISSING: "{missing}", FILE: "{file}", FOLDER: "{folder}", LOOP: "{loop}"}

_EVALS, _OA_VM, _FLOW = "openadapt-evals", "oa-vm", "openadapt-eval-flow"
_RUN = ("run", "--pool", POOL, "--agent", "oracle", "--tasks", TASK, "--results-dir", "{res}")
_SWEEP = ("sweep", "--cloud", "local", "--workers", "1", "--agent", "replay", "--tasks", TASK,
          "--results-dir", "{res}", "--plan")
_WORKER = ("-m", "infra.local", "--name", "w", "--root", "wroot", "--ready-file", "ready.json")

# option: (script, arguments with {path} where the path goes, the cases it is given)
OPTIONS: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "runs --results-dir": (_EVALS, ("runs", "--results-dir", "{path}"), (MISSING, FILE)),
    "view --results-dir": (_EVALS, ("view", DONE, "--results-dir", "{path}"), (MISSING, FILE)),
    "compare --results-dir": (_EVALS, ("compare", DONE, DONE, "--results-dir", "{path}"),
                              (MISSING, FILE)),
    "export --results-dir": (_EVALS, ("export", DONE, "--format", "jsonl", "--results-dir",
                                      "{path}"), (MISSING, FILE)),
    "run --rerun-errors --results-dir": (_EVALS, ("run", "--pool", POOL, "--rerun-errors", DONE,
                                                  "--results-dir", "{path}"), (MISSING, FILE)),
    "tasks --source": (_EVALS, ("tasks", "--source", "{path}"), (MISSING, FILE)),
    "tasks --tasks @file": (_EVALS, ("tasks", "--tasks", "@{path}"), (MISSING, FOLDER)),
    "tasks --tasks cua-bench:PATH": (_EVALS, ("tasks", "--tasks", "cua-bench:{path}"),
                                     (MISSING,)),
    "tasks --tasks openapps:FILE": (_EVALS, ("tasks", "--tasks", "openapps:{path}"),
                                    (MISSING, FOLDER)),
    "run --tasks @file": (_EVALS, ("run", "--pool", POOL, "--agent", "oracle", "--tasks",
                                   "@{path}", "--results-dir", "{res}"), (MISSING, FOLDER)),
    "run --variations": (_EVALS, (*_RUN, "--variations", "{path}"), (MISSING, FOLDER)),
    "run --bundles": (_EVALS, ("run", "--pool", POOL, "--agent", "replay", "--tasks", TASK,
                               "--results-dir", "{res}", "--bundles", "{path}"), (MISSING, FILE)),
    "sweep --bundles": (_EVALS, (*_SWEEP, "--bundles", "{path}"), (MISSING, FILE)),
    "flow --bundles": (_FLOW, ("--task-ids", TASK, "--bundles", "{path}"), (MISSING, FILE)),
    "flow --task-ids @file": (_FLOW, ("--task-ids", "@{path}"), (MISSING, FOLDER)),
    "pool-create --ssh-key": (_OA_VM, ("pool-create", "--cloud", "ssh", "--host",
                                       "root@127.0.0.1", "--ssh-key", "{path}", "--name", "k1",
                                       "--plan"), (MISSING, FOLDER)),
    "pool-create --tasks-dir": (_OA_VM, ("pool-create", "--cloud", "local", "--name", "t1",
                                         "--tasks-dir", "{path}", "--plan"), (MISSING, FILE)),
    "pool-create --egress allowlist:FILE": (_OA_VM, ("pool-create", "--cloud", "local",
                                                     "--name", "e1", "--egress",
                                                     "allowlist:{path}", "--plan"),
                                            (MISSING, FOLDER)),
    "smoke --egress allowlist:FILE": (_OA_VM, ("smoke", "--cloud", "aws", "--plan", "--egress",
                                               "allowlist:{path}"), (MISSING, FOLDER)),
    "image-create --iso": (_OA_VM, ("image-create", "--cloud", "aws", "--region", "us-east-1",
                                    "--plan", "--iso", "{path}"), (MISSING, FOLDER)),
    "python -m infra.local --tasks": ("python", (*_WORKER, "--tasks", "{path}"),
                                      (MISSING, FILE)),
    "python -m infra.local --secret-file": ("python", (*_WORKER, "--secret-file", "{path}"),
                                            (MISSING, FOLDER)),
}

CASES = {f"{option}: {case}": (option, case) for option, (_, _, cases) in OPTIONS.items()
         for case in (*cases, LOOP)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_path_to_read_that_is_not_there_is_one_line_naming_it(
    world: World, cwd: Path, tmp_path: Path, name: str
) -> None:
    option, case = CASES[name]
    script, args, _ = OPTIONS[option]
    given = tmp_path / "given"
    given.mkdir()
    (given / "afile").write_text("x\n", encoding="utf-8")
    (given / "empty").mkdir()
    (given / "loop").symlink_to(given / "loop2")
    (given / "loop2").symlink_to(given / "loop")
    path = PATHS[case].format(missing=given / "nope", file=given / "afile",
                              folder=given / "empty", loop=given / "loop")
    line = _refused(world, cwd, script, tuple(a.replace("{path}", path) for a in args), 2, {})
    if case == LOOP:  # worded by each reader, the system's reason given
        assert path in line and "Too many levels of symbolic links" in line, line
    else:
        assert f"{path} {case}" in line, line


# option: what its refusal of an existing but empty folder says (an empty results folder is an
# answer instead: test_an_empty_results_folder_is_an_answer)
EMPTY = {
    "tasks --source": "is not a WAA task folder (no examples/ inside)",
    "pool-create --tasks-dir": "no WAA index files (*.json) in it",
    "run --bundles": "have no {path}/<task_id>/workflow.json",
    "sweep --bundles": "have no {path}/<task_id>/workflow.json",
    "tasks --tasks cua-bench:PATH": "no main.py in it nor in any folder of it",
    "python -m infra.local --tasks": "no local_all.json or test_all.json in task folder {path}",
}


@pytest.mark.parametrize("option", sorted(EMPTY))
def test_an_empty_folder_where_content_is_wanted_is_one_line_saying_so(
    world: World, cwd: Path, tmp_path: Path, option: str
) -> None:
    """An empty folder given for tasks or bundles: what is missing in it, exit 2 (the local
    worker's was exit 1, as if it had failed to start)."""
    script, args, _ = OPTIONS[option]
    empty = tmp_path / "empty"
    empty.mkdir()
    line = _refused(world, cwd, script, tuple(a.replace("{path}", str(empty)) for a in args), 2,
                    {})
    assert EMPTY[option].replace("{path}", str(empty)) in line, line


# an empty file where a document is wanted (the one reader, waa_client.inputs), and a bundle
# with nothing to replay: (script, arguments with {path} the file, {bundles} its folder, the
# file's path under tmp_path, its content, what the line says)
EMPTY_FILES: dict[str, tuple[str, tuple[str, ...], str, str, str]] = {
    "run --variations": (_EVALS, (*_RUN, "--variations", "{path}"), "v.json", "",
                         "the variations file {path} is empty; fill it in"),
    "run --bundles, an empty workflow": (
        _EVALS, ("run", "--pool", POOL, "--agent", "replay", "--tasks", TASK, "--results-dir",
                 "{res}", "--bundles", "{bundles}"), f"b/{TASK}/workflow.json", " \n",
        "the bundle {path} is empty; fill it in"),
    "run --bundles, no actions": (
        _EVALS, ("run", "--pool", POOL, "--agent", "replay", "--tasks", TASK, "--results-dir",
                 "{res}", "--bundles", "{bundles}"), f"b/{TASK}/workflow.json",
        '{"actions": []}', "{path} has an empty 'actions' list; give it the actions"),
    "tasks --source, an empty index": (_EVALS, ("tasks", "--source", "{bundles}", "local_x"),
                                       "s/local_x.json", "", "task file {path} is empty"),
}


@pytest.mark.parametrize("case", sorted(EMPTY_FILES))
def test_an_empty_file_is_said_empty_once(world: World, cwd: Path, tmp_path: Path,
                                          case: str) -> None:
    """Said "is empty", where the reader said "not valid JSON (Expecting value)" or "not a
    mapping", and a bundle's refusal said what to do twice ("fix the file; fix or remove it")
    or called an empty actions list "no 'actions' list"."""
    script, args, where, content, said = EMPTY_FILES[case]
    path = tmp_path / where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    if path.name == "local_x.json":
        (path.parent / "examples").mkdir()  # a task folder, whose index is the empty file
    folder = str(tmp_path / where.split("/")[0])
    line = _refused(world, cwd, script, tuple(
        a.replace("{path}", str(path)).replace("{bundles}", folder) for a in args), 2, {})
    assert said.replace("{path}", str(path)) in line, line
    assert line.count("fix") <= 1, line


# every option that takes a file read line by line (an @file of task IDs, an allow-list):
# (script, arguments with {path} the file)
LINE_FILES: dict[str, tuple[str, tuple[str, ...]]] = {
    "tasks --tasks": (_EVALS, ("tasks", "--tasks", "@{path}")),
    "run --tasks": (_EVALS, ("run", "--pool", POOL, "--agent", "oracle", "--tasks", "@{path}",
                             "--results-dir", "{res}")),
    "sweep --tasks": (_EVALS, ("sweep", "--cloud", "local", "--workers", "1", "--agent", "noop",
                               "--tasks", "@{path}", "--results-dir", "{res}", "--plan")),
    "mock --tasks": (_EVALS, ("mock", "--tasks", "@{path}", "--results-dir", "{res}")),
    "flow --task-ids": (_FLOW, ("--task-ids", "@{path}")),
    "pool-create --egress allowlist:FILE": (_OA_VM, ("pool-create", "--cloud", "local",
                                                     "--name", "e1", "--egress",
                                                     "allowlist:{path}", "--plan")),
    "smoke --egress allowlist:FILE": (_OA_VM, ("smoke", "--cloud", "aws", "--plan", "--egress",
                                               "allowlist:{path}")),
}
SECRET = "root:$y$j9T$Q3cr3tHa5h:19000:0:99999:7:::"


@pytest.mark.parametrize("option", sorted(LINE_FILES))
def test_a_line_of_a_file_that_is_refused_is_named_by_its_number_not_printed(
    world: World, cwd: Path, tmp_path: Path, option: str
) -> None:
    """``@/etc/shadow`` given by mistake: the refusal names the line (and, for task IDs, where
    it breaks the rule), and prints none of the file (it quoted the line, a password hash on
    the terminal)."""
    script, args = LINE_FILES[option]
    ids = tmp_path / "ids.txt"
    ids.write_text(f"{TASK}  # a comment\n\n{SECRET}\n", encoding="utf-8")
    line = _refused(world, cwd, script, tuple(a.replace("{path}", str(ids)) for a in args), 2,
                    {})
    if "allowlist" in option:
        assert f"{ids} line 3 is not a host name" in line, line
    else:
        assert "line 3 of the task" in line, line
        assert f"{ids} cannot name a folder (':' at character 5)" in line, line
    assert "Q3cr3t" not in line and "99999" not in line, line


# every option that takes a document of named entries (YAML or JSON): (script, arguments)
DOCUMENTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "run --variations": (_EVALS, (*_RUN, "--variations", "{path}")),
    "tasks --tasks openapps:FILE": (_EVALS, ("tasks", "--tasks", "openapps:{path}")),
}


@pytest.mark.parametrize("option", sorted(DOCUMENTS))
def test_a_document_that_holds_no_entry_is_refused_without_printing_it(
    world: World, cwd: Path, tmp_path: Path, option: str
) -> None:
    """A line of ``/etc/shadow`` reads as YAML (a key with no value): the refusal names the
    entry by its place, where it quoted the key, the line itself."""
    script, args = DOCUMENTS[option]
    given = tmp_path / "given.yaml"
    given.write_text(f"{SECRET}\n", encoding="utf-8")
    line = _refused(world, cwd, script, tuple(a.replace("{path}", str(given)) for a in args),
                    2, {})
    assert "entry 1 holds nothing, not" in line, line
    assert "Q3cr3t" not in line and "99999" not in line, line


def test_id_files_are_read_alike_by_every_reader(tmp_path: Path) -> None:
    """One ID a line or several separated by commas, ``#`` comments, blank lines: the
    catalog's selection and the flow's ``--task-ids`` read the same IDs from one file."""
    from evals.compat.flow import read_task_ids
    from waa_client.catalog import named_ids

    ids = tmp_path / "ids.txt"
    ids.write_text("a-1, b-2 # two\n\n# none\nc-3\na-1\n", encoding="utf-8")
    named = named_ids(f"@{ids}")
    assert named is not None and list(dict.fromkeys(named)) == read_task_ids(f"@{ids}") == [
        "a-1", "b-2", "c-3"]


def test_every_script_and_every_case_is_tried() -> None:
    assert {script for script, _, _ in OPTIONS.values()} == {_EVALS, _OA_VM, _FLOW, "python"}
    assert {case for _, case in CASES.values()} == {MISSING, FILE, FOLDER, LOOP}


def test_an_empty_results_folder_is_an_answer(world: World, cwd: Path, tmp_path: Path) -> None:
    """``runs`` over an empty folder answers "no runs", exit 0: there is nothing in it yet."""
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = subprocess.run(  # fixed argv, no shell
        [str(BIN / _EVALS), "runs", "--results-dir", str(empty)], capture_output=True,
        text=True, timeout=120, cwd=cwd, env={**os.environ, "OA_VM_HOME": str(world.home)},
        stdin=subprocess.DEVNULL, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"Runs in {empty}:\nno runs\n"
    assert proc.stderr == ""


def test_files_a_windows_editor_saved_are_read_as_their_text(home: Path, tmp_path: Path) -> None:
    """A byte-order mark first and CRLF line ends, as Notepad saves UTF-8: an ``@file`` list
    (``tasks``, ``run``'s selection, the flow's ``--task-ids``), a ``--source`` folder's index
    and task file, and the same folder served by a local pool's worker (``--tasks-dir``) read
    as the text they hold; the mark made the first ID "cannot name a folder" and a task file
    "not valid JSON (Unexpected UTF-8 BOM)"."""
    bom = b"\xef\xbb\xbf"
    ids = tmp_path / "ids.txt"
    ids.write_bytes(bom + TASK.encode() + b"\r\n")
    source = tmp_path / "source"
    shutil.copytree(Path(__file__).resolve().parents[2] / "infra" / "local" / "tasks" /
                    "examples" / "notepad", source / "examples" / "notepad",
                    ignore=lambda _, names: [n for n in names if n != f"{TASK}.json"])
    task = source / "examples" / "notepad" / f"{TASK}.json"
    task.write_bytes(bom + task.read_bytes().replace(b"\n", b"\r\n"))
    (source / "local_x.json").write_bytes(bom + json.dumps({"notepad": [TASK]}).encode())

    def listed(*args: str) -> list[str]:
        result = run_cli(*args, home=home)
        assert result.returncode == 0, result.stderr
        return [t["task_id"] for t in json.loads(result.stdout)["tasks"]]

    assert listed("openadapt-evals", "tasks", f"@{ids}", "--json") == [TASK]
    assert listed("openadapt-evals", "tasks", "--source", str(source), "local_x",
                  "--json") == [TASK]
    flow = run_cli("openadapt-eval-flow", "--task-ids", f"@{ids}", "--json", home=home)
    assert flow.returncode == 0, flow.stderr
    assert json.loads(flow.stdout)["plan"]["task_ids"] == [TASK]
    created = run_cli("oa-vm", "pool-create", "--cloud", "local", "--workers", "1", "--name",
                      "notepad", "--tasks-dir", str(source), "-y", home=home)
    assert created.returncode == 0, created.stderr
    waited = run_cli("oa-vm", "pool-wait", "--name", "notepad", "--timeout", READY_TIMEOUT,
                     home=home)
    assert waited.returncode == 0, waited.stderr
    assert listed("openadapt-evals", "tasks", "--pool", "notepad", "local_x", "--json") == [TASK]
    ran = run_cli("openadapt-evals", "run", "--pool", "notepad", "--agent", "oracle", "--tasks",
                  f"@{ids}", "--results-dir", str(tmp_path / "results"), "--json", home=home,
                  timeout=300)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["successes"] == 1
