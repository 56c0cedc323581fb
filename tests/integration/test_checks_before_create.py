"""Inputs that can be checked before anything exists are refused before anything exists: one
line, exit 2, no pool, no process, no folder (on a cloud each would be minutes and money)."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest

from tests.support.cli import Result, run_cli
from tests.support.http_servers import RefusingPort

pytestmark = pytest.mark.integration


def _worker_processes(home: Path) -> list[int]:
    return [p.pid for p in psutil.process_iter(["cmdline"])
            if any(str(home) in part for part in p.info["cmdline"] or [])]


def test_audit_verifier_refuses_an_unknown_id_before_making_a_pool(oa_home: Path) -> None:
    done = run_cli("openadapt-evals", "audit-verifier", "--benchmark", "local", "--tasks",
                   "nope", home=oa_home)
    assert "1 unknown task ID(s) in the local suite: 'nope'" in done.assert_one_line_error()
    assert done.returncode == 2
    assert not (oa_home / "pools").exists() or not any((oa_home / "pools").iterdir())
    assert _worker_processes(oa_home) == []


def test_pool_create_of_an_existing_name_refuses_before_the_plan(oa_home: Path) -> None:
    first = run_cli("oa-vm", "pool-create", "--cloud", "local", "--workers", "1", "--pool", "dup",
                    "-y", home=oa_home)
    assert first.returncode == 0, first.stderr
    try:
        again = run_cli("oa-vm", "pool-create", "--cloud", "local", "--workers", "1", "--pool",
                        "dup", "-y", home=oa_home)
        line = again.assert_one_line_error()
        assert "already exists" in line and "--pool" in line and "--name" not in line
        assert again.stdout == ""  # no plan, no expiry printed
    finally:
        run_cli("oa-vm", "pool-cleanup", "--pool", "dup", "-y", home=oa_home)


# --- a sweep, a run and a page refuse in one line what they would have refused later -------


def _digest(folder: Path) -> dict[str, str]:
    """Relative path -> content of every file and folder (to show nothing was added)."""
    return {str(p.relative_to(folder)): p.read_text("latin-1") if p.is_file() else "/"
            for p in sorted(folder.rglob("*"))}


def _nothing_created(home: Path, results: Path, before: dict[str, str] | None = None) -> None:
    """No pool record, no worker process, and the results folder absent (or as it was)."""
    pools = home / "pools"
    assert not pools.exists() or not any(pools.iterdir()), list(pools.iterdir())
    assert _worker_processes(home) == []
    if before is None:
        assert not results.exists(), list(results.rglob("*"))
    else:
        assert _digest(results) == before


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(oa-vm home, results folder) holding run ``r``: a real local sweep of noop over the
    clock tasks (its pool removed again)."""
    root = tmp_path_factory.mktemp("finished")
    home, results = root / "home", root / "results"
    done = run_cli("openadapt-evals", "sweep", "--workers", "1", "--agent", "noop", "--tasks",
                   "domain:clock", "--run-name", "r", "--results-dir", str(results), home=home,
                   timeout=240)
    assert done.returncode == 0, done.stderr
    return home, results


@pytest.mark.parametrize(("changed", "recorded"), [
    (("--agent", "oracle"), "'noop'"),
    (("--tasks", "domain:settings"), "'domain:clock'"),
    (("--trials", "2"), "'1'"),
])
def test_a_sweep_resumed_with_other_options_is_refused_before_its_pool(
    finished_run: tuple[Path, Path], changed: tuple[str, str], recorded: str
) -> None:
    home, results = finished_run
    before = _digest(results)
    options = {"--agent": "noop", "--tasks": "domain:clock", **dict([changed])}
    argv = [part for item in options.items() for part in item]
    done = run_cli("openadapt-evals", "sweep", "--workers", "1", *argv, "--run-name", "r",
                   "--resume", "--results-dir", str(results), home=home)
    line = done.assert_one_line_error()  # no "creating pool ...", no "worker logs kept in ..."
    assert done.returncode == 2
    assert f"started with {changed[0]} {recorded}, not '{changed[1]}'" in line
    _nothing_created(home, results, before)


def test_a_run_resumed_with_another_agent_is_refused_before_the_pool_is_used(
    finished_run: tuple[Path, Path],
) -> None:
    home, results = finished_run
    before = _digest(results)
    # the pool named does not even exist: the run is refused before the pool is looked at
    done = run_cli("openadapt-evals", "run", "--pool", "absent", "--agent", "oracle", "--tasks",
                   "domain:clock", "--run-name", "r", "--resume", "--results-dir", str(results),
                   home=home)
    assert "started with --agent 'noop', not 'oracle'" in done.assert_one_line_error()
    assert done.returncode == 2
    _nothing_created(home, results, before)


@pytest.mark.parametrize("given", [(), ("--tasks", "domain:clock", "--agent", "noop")])
def test_resuming_a_folder_that_is_no_run_says_so(oa_home: Path, tmp_path: Path,
                                                  given: tuple[str, ...]) -> None:
    # A folder of the user's own under the results folder: "give --tasks and --agent" (or,
    # with them, "there is no run to resume") said nothing of why.
    (tmp_path / "results" / "notes").mkdir(parents=True)
    (tmp_path / "results" / "notes" / "readme.txt").write_text("mine", encoding="utf-8")
    done = run_cli("openadapt-evals", "run", "--pool", "absent", "--run-name", "notes",
                   "--resume", "--results-dir", str(tmp_path / "results"), *given, home=oa_home)
    assert "notes is not a run (no metadata.json" in done.assert_one_line_error()
    assert done.returncode == 2
    assert sorted(p.name for p in (tmp_path / "results" / "notes").iterdir()) == ["readme.txt"]


@pytest.mark.parametrize("left", ["nothing", "a lock and a queue"])
def test_resuming_a_run_that_recorded_nothing_says_so(oa_home: Path, tmp_path: Path,
                                                      left: str) -> None:
    # The folder a default-named run reserves, left by a kill before the run wrote anything:
    # --resume said only "give --tasks and --agent (or --rerun-errors RUN ...)", as if the run
    # had forgotten them, not that it never started.
    results = tmp_path / "results"
    folder = results / "noop-2026-01-02T030405"
    folder.mkdir(parents=True)
    if left != "nothing":
        (folder / ".lock").write_text("somehost pid 1\n", encoding="utf-8")
        (folder / "queue.sqlite").write_bytes(b"")
    before = _digest(results)
    done = run_cli("openadapt-evals", "run", "--pool", "absent", "--run-name", folder.name,
                   "--resume", "--results-dir", str(results), home=oa_home)
    held = "is empty" if left == "nothing" else "has no metadata.json"
    assert done.assert_one_line_error() == (
        f"openadapt-evals: error: run {folder.name!r} recorded nothing, so there is nothing to "
        f"resume (its folder {held}: the run never started); start it again with --tasks and "
        "--agent")
    assert done.returncode == 2
    _nothing_created(oa_home, results, before)
    # with them it starts afresh in that folder, as before: here it gets as far as the pool
    done = run_cli("openadapt-evals", "run", "--pool", "absent", "--run-name", folder.name,
                   "--resume", "--tasks", "domain:clock", "--agent", "noop", "--results-dir",
                   str(results), home=oa_home)
    assert "no pool named 'absent'" in done.assert_one_line_error()


def _sweep(*extra: str, home: Path, results: Path | None = None,
           env: dict[str, str] | None = None) -> Result:
    given = ("--results-dir", str(results)) if results is not None else ()
    return run_cli("openadapt-evals", "sweep", "--workers", "1", "--agent", "noop", "--tasks",
                   "domain:clock", *given, *extra, home=home, env=env)


def test_a_resumed_sweep_whose_pool_record_is_unreadable_makes_no_second_pool(
    oa_home: Path, tmp_path: Path,
) -> None:
    # sweep-pool.json cut in half: read as none, the resume made a second pool and left the
    # first one (which a killed sweep had made) running
    results = tmp_path / "results"
    (results / "s").mkdir(parents=True)
    (results / "s" / "sweep-pool.json").write_text('{"pool": "waa-po', encoding="utf-8")
    before = _digest(results)
    done = _sweep("--cloud", "local", "--run-name", "s", "--resume", home=oa_home,
                  results=results)
    line = done.assert_one_line_error()
    assert "sweep-pool.json cannot be read" in line and "oa-vm pool-list" in line, line
    _nothing_created(oa_home, results, before)


@pytest.mark.parametrize("where", ["under-a-file", "under-proc"])
@pytest.mark.parametrize("command", ["sweep", "run"])
def test_a_results_folder_that_cannot_be_written_is_refused_before_the_pool(
    oa_home: Path, tmp_path: Path, where: str, command: str
) -> None:
    # root passes every permission check, so the folders are ones no one can make: one under
    # a regular file, one under /proc
    (tmp_path / "a-file").write_text("not a folder")
    results = tmp_path / "a-file" / "results" if where == "under-a-file" else Path(
        f"/proc/oa-vm-test-{tmp_path.name}/results")
    if command == "sweep":
        done = _sweep(home=oa_home, results=results)
    else:
        done = run_cli("openadapt-evals", "run", "--pool", "absent", "--agent", "noop",
                       "--tasks", "domain:clock", "--results-dir", str(results), home=oa_home)
    line = done.assert_one_line_error()
    assert done.returncode == 2
    assert line.startswith(f"openadapt-evals: error: --results-dir: {results} ")
    assert "pass --results-dir a folder you can write" in line
    assert "unexpected" not in line
    _nothing_created(oa_home, results)


def test_a_results_folder_from_the_environment_is_named_as_such(
    oa_home: Path, tmp_path: Path
) -> None:
    (tmp_path / "a-file").write_text("")
    results = tmp_path / "a-file" / "results"
    done = _sweep(home=oa_home, env={"OA_EVALS_RESULTS": str(results)})
    line = done.assert_one_line_error()
    assert f"OA_EVALS_RESULTS: {results} is under {tmp_path / 'a-file'}" in line
    _nothing_created(oa_home, results)


@pytest.mark.parametrize("where", ["under-a-file", "under-proc"])
def test_an_oa_vm_home_that_cannot_be_written_is_refused_before_the_pool(
    tmp_path: Path, where: str
) -> None:
    (tmp_path / "a-file").write_text("")
    home = tmp_path / "a-file" / "home" if where == "under-a-file" else Path(
        f"/proc/oa-vm-test-{tmp_path.name}/home")
    results = tmp_path / "results"
    done = _sweep(home=home, results=results)
    line = done.assert_one_line_error()
    assert done.returncode == 2
    assert line.startswith(f"openadapt-evals: error: OA_VM_HOME: {home} ")
    assert line.endswith("point OA_VM_HOME at a folder you can write")
    _nothing_created(home, results)
    created = run_cli("oa-vm", "pool-create", "--cloud", "local", "--workers", "1", "-y",
                      home=home)
    assert created.returncode == 2
    assert created.assert_one_line_error().startswith(f"oa-vm: error: OA_VM_HOME: {home} ")
    assert created.stdout == ""  # no plan, no expiry printed


@pytest.mark.parametrize("out", ["under-a-file", "under-proc"])
def test_view_names_the_page_it_could_not_write_never_a_temp_file(
    finished_run: tuple[Path, Path], tmp_path: Path, out: str
) -> None:
    home, results = finished_run
    (tmp_path / "a-file").write_text("")
    target = tmp_path / "a-file" / "x.html" if out == "under-a-file" else Path("/proc/x.html")
    done = run_cli("openadapt-evals", "view", "r", "--results-dir", str(results), "--out",
                   str(target), home=home)
    line = done.assert_one_line_error()
    assert f" {target}: " in line and "unexpected" not in line
    assert ".tmp" not in line and ".x.html." not in line  # the temp file beside it
    assert (tmp_path / "a-file").read_text() == ""


def test_an_http_agent_whose_server_does_not_answer_is_refused_before_the_pool(
    oa_home: Path, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    with RefusingPort() as dead:
        url = f"http://alice:hunter2@127.0.0.1:{dead.port}/act"
        swept = run_cli("openadapt-evals", "sweep", "--workers", "1", "--agent", "http",
                        "--agent-url", url, "--tasks", "domain:clock", "--results-dir",
                        str(results), home=oa_home)
        ran = run_cli("openadapt-evals", "run", "--pool", "absent", "--agent", "http",
                      "--tasks", "domain:clock", "--results-dir", str(results), home=oa_home,
                      env={"OA_EVALS_AGENT_URL": f"http://127.0.0.1:{dead.port}/act"})
    line = swept.assert_one_line_error()
    assert swept.returncode == 2
    assert f"--agent-url http://***@127.0.0.1:{dead.port}/act: the agent server does not " \
           "answer (Connection refused)" in line
    assert "hunter2" not in swept.stderr + swept.stdout
    line = ran.assert_one_line_error()
    assert ran.returncode == 2
    assert line.startswith(f"openadapt-evals: error: $OA_EVALS_AGENT_URL http://127.0.0.1:"
                           f"{dead.port}/act: the agent server does not answer")
    _nothing_created(oa_home, results)


def test_the_python_api_refuses_an_http_agent_whose_server_does_not_answer(
    oa_home: Path, tmp_path: Path
) -> None:
    from evals.agents import AgentOptions
    from evals.errors import InvalidRunInputError
    from evals.run.runner import RunConfig, run_evaluation

    made = run_cli("oa-vm", "pool-create", "--cloud", "local", "--workers", "1", "--pool", "api",
                   "-y", home=oa_home)
    assert made.returncode == 0, made.stderr
    results = tmp_path / "results"
    try:
        assert run_cli("oa-vm", "pool-wait", "--pool", "api", home=oa_home).returncode == 0
        with RefusingPort() as dead:
            config = RunConfig(pool="api", selection="domain:clock", agent="http",
                               agent_options=AgentOptions(
                                   agent_url=f"http://127.0.0.1:{dead.port}/act"),
                               results_dir=results)
            with pytest.raises(InvalidRunInputError,
                               match=r"^agent_options\.agent_url http://127\.0\.0\.1:\d+/act: "
                                     "the agent server does not answer"):
                run_evaluation(config)
        # refused before a run folder, a lease or a task (they used to end in error, one by one)
        assert not results.exists() or list(results.iterdir()) == [], list(results.rglob("*"))
    finally:
        run_cli("oa-vm", "pool-cleanup", "--pool", "api", "-y", home=oa_home)


def test_an_agent_whose_constructor_raises_is_refused_in_one_line(
    oa_home: Path, tmp_path: Path
) -> None:
    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "boom_agent.py").write_text(
        "from evals.agents import BenchmarkAgent\n\n\n"
        "class Boom(BenchmarkAgent):\n"
        "    def __init__(self) -> None:\n"
        "        raise RuntimeError('no weights in ./model')\n\n"
        "    def act(self, observation, task, history=None):\n"
        "        raise AssertionError('never built')\n"
    )
    results = tmp_path / "results"
    done = run_cli("openadapt-evals", "sweep", "--workers", "1", "--agent", "boom_agent:Boom",
                   "--tasks", "domain:clock", "--results-dir", str(results), home=oa_home,
                   env={"PYTHONPATH": str(tmp_path / "mods")})
    line = done.assert_one_line_error()
    assert done.returncode == 2
    assert "agent 'boom_agent:Boom' could not be created: RuntimeError: no weights" in line
    _nothing_created(oa_home, results)


@pytest.mark.parametrize(("extra", "needle"), [
    # each was an 'unexpected error', or a refusal after the pool was made
    (("--agent", "http", "--agent-url", "http://[::1/act"), "is not a valid URL (Invalid IPv6"),
    (("--agent", "http", "--agent-url", "http://127.0.0.1:99999/act"), "Port out of range"),
    (("--agent", "replay", "--bundles", "{empty}"), "4 selected task(s) have no"),
])
def test_bad_agent_options_of_a_local_sweep_are_refused_before_its_pool(
    oa_home: Path, tmp_path: Path, extra: tuple[str, ...], needle: str
) -> None:
    (tmp_path / "empty").mkdir()
    results = tmp_path / "results"
    argv = [part.replace("{empty}", str(tmp_path / "empty")) for part in extra]
    done = run_cli("openadapt-evals", "sweep", "--workers", "1", *argv, "--tasks",
                   "domain:clock", "--results-dir", str(results), home=oa_home)
    line = done.assert_one_line_error()
    assert done.returncode == 2
    assert needle in line and "unexpected" not in line
    _nothing_created(oa_home, results)
