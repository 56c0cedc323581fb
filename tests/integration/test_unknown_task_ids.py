"""A task ID that is not a task is refused by every entry point that takes task IDs, before
anything is made: one line naming it (with the known ID it is closest to), exit 2, no pool, no
worker process, no run folder, and not a byte or a modification time changed under the oa-vm home
or the results folder (no lease taken on an existing pool: :func:`tests.support.file_state.
unchanged`). Where the catalog is on workers that do not exist yet (WAA's, on
a cloud), the one the pool's prepared image recorded is used (:func:`oa_vm.pool_catalog`); without
it the rule known without it holds (no synthetic IDs) and the plan says the rest is not checked
(:func:`waa_client.catalog.check_known`, :func:`check_not_synthetic`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest

from infra.local import tasks_dir
from tests.support.cli import run_cli
from tests.support.file_state import unchanged

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
OPENAPPS = ROOT / "evals" / "tasks" / "openapps" / "examples" / "all_tasks.yaml"
CUA_EXAMPLES = ROOT / "docs" / "examples" / "cua_bench"


def _local_id() -> str:
    index = json.loads((tasks_dir() / "local_small.json").read_text(encoding="utf-8"))
    return next(t for ids in index.values() for t in ids if not t.startswith("INF-"))


REAL = _local_id()
TYPO = REAL[:-1] + ("X" if REAL[-1] != "X" else "Y")  # one letter off


def _ids_file(tmp_path: Path, *ids: str) -> str:
    path = tmp_path / "ids.txt"
    path.write_text("".join(f"{i}\n" for i in ids), encoding="utf-8")
    return f"@{path}"


# (script, args): {ids} is an @file of [TYPO, "bogus-id"]; sweep and mock get --results-dir too
KNOWN_CATALOG = {
    "sweep local": ("openadapt-evals", ["sweep", "--cloud", "local", "--workers", "1",
                                        "--agent", "noop", "--tasks", TYPO]),
    "sweep local @file": ("openadapt-evals", ["sweep", "--cloud", "local", "--agent", "noop",
                                              "--tasks", "{ids}"]),
    "sweep local --plan": ("openadapt-evals", ["sweep", "--cloud", "local", "--agent", "noop",
                                               "--tasks", f"{REAL},{TYPO}", "--plan"]),
    "mock": ("openadapt-evals", ["mock", "--tasks", TYPO]),
    "tasks": ("openadapt-evals", ["tasks", "--tasks", "{ids}"]),
    "audit-verifier": ("openadapt-evals", ["audit-verifier", "--benchmark", "local",
                                           "--tasks", TYPO]),
}


def _offline(tmp_path: Path) -> dict[str, str]:
    """No cloud CLI on PATH and caller-IP detection at a closed loopback port: a cloud plan
    asks no network (as test_sweep_plan runs them)."""
    empty = tmp_path / "empty-path"
    empty.mkdir(exist_ok=True)
    return {"PATH": str(empty), "OA_VM_IP_ECHO_URL": "http://127.0.0.1:9/"}


def _made_nothing(home: Path, results: Path) -> None:
    for kept in (home / "pools", home / "removed"):  # a pool made and removed is kept there
        assert not kept.exists() or not any(kept.iterdir()), list(kept.iterdir())
    assert not results.exists() or not any(results.iterdir()), list(results.iterdir())
    assert [p.pid for p in psutil.process_iter(["cmdline"])
            if any(str(home) in part for part in p.info["cmdline"] or [])] == []


@pytest.mark.parametrize("case", sorted(KNOWN_CATALOG))
def test_a_misspelt_id_is_refused_with_its_match_before_anything_is_made(
    case: str, oa_home: Path, tmp_path: Path
) -> None:
    script, args = KNOWN_CATALOG[case]
    results = tmp_path / "results"
    argv = [a.format(ids=_ids_file(tmp_path, TYPO, "bogus-id")) for a in args]
    if argv[0] in ("sweep", "mock"):
        argv += ["--results-dir", str(results)]
    with unchanged(oa_home, results):
        done = run_cli(script, *argv, home=oa_home, timeout=240)
    line = done.assert_one_line_error()
    assert done.returncode == 2, line
    assert "unknown task ID(s) in " in line and f"'{TYPO}' (did you mean '{REAL}'?)" in line
    if "{ids}" in args:
        assert line.split(": error: ")[1].startswith("2 unknown") and "'bogus-id'" in line
    _made_nothing(oa_home, results)


def test_an_openapps_entry_name_misspelt_is_refused_with_its_match(
    oa_home: Path, tmp_path: Path
) -> None:
    with unchanged(oa_home, tmp_path / "results"):
        done = run_cli("openadapt-evals", "sweep", "--cloud", "local", "--agent", "noop",
                       "--tasks", f"openapps:{OPENAPPS}#mark_water_plants_as_dune",
                       "--results-dir", str(tmp_path / "results"), home=oa_home, timeout=240)
    line = done.assert_one_line_error()
    assert done.returncode == 2
    assert "'mark_water_plants_as_dune' (did you mean 'mark_water_plants_as_done'?)" in line
    _made_nothing(oa_home, tmp_path / "results")


@pytest.mark.parametrize("args", [
    ["openadapt-eval-flow", "--dry-run", "--tasks", "{ids}"],
    ["openadapt-eval-flow", "--dry-run", "--task-ids", "{ids}", "--json"],
    ["openadapt-evals", "sweep", "--cloud", "aws", "--agent", "noop", "--tasks", "{ids}",
     "--plan"],
    # without -y: were the check lost, the sweep would stop at its question, never create
    ["openadapt-evals", "sweep", "--cloud", "aws", "--agent", "noop", "--tasks", "{ids}"],
], ids=["flow dry run", "flow dry run --json", "cloud sweep --plan", "cloud sweep"])
def test_where_waa_catalog_is_on_the_workers_synthetic_ids_are_still_refused(
    args: list[str], oa_home: Path, tmp_path: Path
) -> None:
    ids = _ids_file(tmp_path, "notepad_123", "bogus-id")
    with unchanged(oa_home, tmp_path / "results"):
        done = run_cli(args[0], *[a.format(ids=ids) for a in args[1:]], home=oa_home,
                       env=_offline(tmp_path))
    line = done.assert_one_line_error()
    assert done.returncode == 2
    assert "1 synthetic task ID(s) cannot run on a live pool: notepad_123" in line
    _made_nothing(oa_home, tmp_path / "results")


WAA_REFUSED = {
    "155": "--tasks '155': a number N selects the first N tasks, and WAA's suite has 154; "
           "give 1 to 154, or all",
    "domain:chrom": "--tasks 'domain:chrom': no domain 'chrom' (did you mean 'chrome'?) in "
                    "WAA's suite; known domains: chrome, clock,",
    "test_smal": "no index or task named 'test_smal' (did you mean 'test_small'?) in WAA's "
                 "suite; indexes: test_all, test_small, test_custom",
}


@pytest.mark.parametrize("plan", [True, False], ids=["--plan", "no plan"])
@pytest.mark.parametrize("selection", sorted(WAA_REFUSED))
def test_what_waas_catalog_refuses_is_refused_before_a_cloud_pool_is_made(
    selection: str, plan: bool, oa_home: Path, tmp_path: Path
) -> None:
    # A WAA worker's catalog is WAA's suite: it would refuse these once the pool was paid for.
    args = ["sweep", "--cloud", "aws", "--agent", "noop", "--tasks", selection,
            "--results-dir", str(tmp_path / "results"), *(["--plan"] if plan else [])]
    with unchanged(oa_home, tmp_path / "results"):
        done = run_cli("openadapt-evals", *args, home=oa_home, env=_offline(tmp_path))
    line = done.assert_one_line_error()
    assert done.returncode == 2, line
    assert WAA_REFUSED[selection] in line, line
    _made_nothing(oa_home, tmp_path / "results")


@pytest.mark.long
def test_what_waas_catalog_holds_is_planned(oa_home: Path, tmp_path: Path,
                                             waa_data: Path) -> None:
    a_waa_id = json.loads((waa_data / "test_all.json").read_text())["chrome"][0]
    for selection in ("154", "all", "domain:chrome", "test_small", "test_custom", a_waa_id):
        done = run_cli("openadapt-evals", "sweep", "--cloud", "aws", "--agent", "noop",
                       "--tasks", selection, "--plan", home=oa_home, env=_offline(tmp_path))
        assert done.returncode == 0, (selection, done.stderr)


# what needs the simulated desktop: (selection, the refusal's start once {cloud} is filled in)
SIMULATED_ONLY = {
    "openapps": (f"openapps:{OPENAPPS}", "OpenApps-style tasks run on a local pool only, not on "
                 "a pool of {cloud} workers: their rewards read the simulated desktop's app state"),
    "cua-bench": (f"cua-bench:{CUA_EXAMPLES / 'submit'}",
                  "Cua-Bench modules that use the worker's browser run on a local pool only, not "
                  f"on a pool of {{cloud}} workers: {CUA_EXAMPLES / 'submit' / 'main.py'} calls "
                  "session.launch_window, and only a local pool's workers have a browser"),
}


@pytest.mark.parametrize("cloud", ["aws", "azure"])
@pytest.mark.parametrize("plan", [True, False], ids=["--plan", "no plan"])
@pytest.mark.parametrize("kind", sorted(SIMULATED_ONLY))
def test_tasks_needing_the_simulated_desktop_on_waa_workers_are_refused_before_anything_is_made(
    kind: str, cloud: str, plan: bool, oa_home: Path, tmp_path: Path
) -> None:
    # OpenApps' rewards read the simulated desktop's app state, a module calling a browser
    # operation needs the local worker's browser: on WAA workers every task would end in error,
    # after the pool was made and paid for.
    selection, said = SIMULATED_ONLY[kind]
    args = ["sweep", "--cloud", cloud, "--agent", "oracle", "--tasks", selection,
            "--results-dir", str(tmp_path / "results"), *(["--plan"] if plan else [])]
    with unchanged(oa_home, tmp_path / "results"):
        done = run_cli("openadapt-evals", *args, home=oa_home, env=_offline(tmp_path))
    line = done.assert_one_line_error()
    assert done.returncode == 2, line
    assert said.format(cloud=cloud) in line and line.endswith(
        "; run them on a local pool (--cloud local)"), line
    _made_nothing(oa_home, tmp_path / "results")


SHELL_MODULE = """
import cua_bench as cb

NOTE = "C:\\\\Users\\\\Docker\\\\Documents\\\\note.txt"

@cb.tasks_config
def load():
    return [cb.Task(description="Leave a note.",
                    computer={"setup_config": {"os_type": "windows"}})]

@cb.solve_task
async def solve(task_cfg, session):
    await session.write_file(NOTE, "hi")

@cb.evaluate_task
async def evaluate(task_cfg, session):
    await session.screenshot()
    said = await session.run_command('echo "ok"')
    return [1.0 if await session.file_exists(NOTE) and "ok" in said.stdout else 0.0]
"""


@pytest.mark.parametrize("plan", [True, False], ids=["--plan", "no plan"])
def test_a_cua_bench_module_without_the_browser_is_taken_onto_waa_workers(
    plan: bool, oa_home: Path, tmp_path: Path
) -> None:
    # commands, files and screenshots go through WAA's own endpoints: no refusal. The cloud is
    # not reachable here, so the sweep without --plan stops later (no engine on PATH).
    module = tmp_path / "note" / "main.py"
    module.parent.mkdir()
    module.write_text(SHELL_MODULE, encoding="utf-8")
    args = ["sweep", "--cloud", "aws", "--agent", "oracle", "--tasks",
            f"cua-bench:{module.parent}", "--results-dir", str(tmp_path / "results"),
            *(["--plan"] if plan else [])]
    done = run_cli("openadapt-evals", *args, home=oa_home, env=_offline(tmp_path))
    assert "local pool only" not in done.stdout + done.stderr
    if plan:
        assert done.returncode == 0, done.stderr
    else:
        assert done.returncode != 0 and "pulumi" in done.stderr, done.stderr
    _made_nothing(oa_home, tmp_path / "results")


def test_ids_that_cannot_be_checked_yet_are_said_to_be_unchecked(
    oa_home: Path, tmp_path: Path
) -> None:
    ids = _ids_file(tmp_path, "bogus-id", "x-2")
    flow = run_cli("openadapt-eval-flow", "--dry-run", "--tasks", ids, home=oa_home)
    assert flow.returncode == 0, flow.stderr
    assert "tasks:               2 (IDs not checked: WAA's task catalog is on the workers" \
        in flow.stdout
    as_json = run_cli("openadapt-eval-flow", "--dry-run", "--tasks", ids, "--json",
                      home=oa_home)
    assert json.loads(as_json.stdout)["plan"]["task_ids_checked"] is False
    plan = run_cli("openadapt-evals", "sweep", "--cloud", "aws", "--agent", "noop", "--tasks",
                   "bogus-id,x-2", "--plan", home=oa_home, env=_offline(tmp_path))
    assert plan.returncode == 0, plan.stderr
    assert "2 (the IDs given, checked by the workers' task catalog when the run starts" \
        in plan.stdout
    _made_nothing(oa_home, tmp_path / "results")


@pytest.mark.parametrize("case", ["run", "run --rerun-errors", "flow --live", "tasks",
                                  "audit-verifier"])
def test_on_an_existing_pool_its_catalog_refuses_before_its_lease_or_a_run_folder(
    case: str, pooled: Path, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    script, args = "openadapt-evals", [case, "--pool", "p", "--tasks", TYPO]
    env: dict[str, str] = {}
    if case == "run":
        args += ["--agent", "noop", "--results-dir", str(results)]
    elif case == "run --rerun-errors":
        # an agent slower than the task's time: a timeout error to rerun (a run with nothing
        # to rerun needs no pool, and reads no catalog)
        module = tmp_path / "agentmod"
        module.mkdir()
        (module / "slow_agent.py").write_text(
            "import time\n"
            "from evals.agents.base import DONE, BenchmarkAction, BenchmarkAgent\n"
            "class Slow(BenchmarkAgent):\n"
            "    def act(self, *args, **kwargs):\n"
            "        time.sleep(3)\n"
            "        return BenchmarkAction(DONE)\n")
        env = {"PYTHONPATH": str(module)}
        done = run_cli("openadapt-evals", "run", "--pool", "p", "--agent", "slow_agent:Slow",
                       "--tasks", _ids_file(tmp_path, REAL), "--run-name", "earlier",
                       "--results-dir", str(results), "--task-timeout", "1s",
                       "--max-attempts", "1", home=pooled, timeout=240, env=env)
        assert done.returncode == 4, done.stdout  # its one task in error
        assert json.loads((results / "earlier" / "summary.json").read_text())["errors"] == 1
        _ids_file(tmp_path, TYPO)  # the run's @file, edited since: read again by the rerun
        args = ["run", "--pool", "p", "--rerun-errors", "earlier", "--results-dir", str(results)]
    elif case == "flow --live":
        bundles = tmp_path / "bundles"
        (bundles / TYPO).mkdir(parents=True)
        (bundles / TYPO / "workflow.json").write_text("{}", encoding="utf-8")
        script, args = "openadapt-eval-flow", ["--live", "--pool", "p", "--bundles", str(bundles),
                                               "--task-ids", TYPO, "--results-dir", str(results)]
    with unchanged(pooled, results):  # the lease's files too: no lease was taken
        done = run_cli(script, *args, home=pooled, timeout=240, env=env)
    line = done.assert_one_line_error()
    assert done.returncode == 2, line
    # named by the pool's name, not its first worker's masked address
    assert f"1 unknown task ID(s) in pool 'p': '{TYPO}' (did you mean '{REAL}'?)" in line


def test_the_python_api_refuses_before_making_a_pool(oa_home: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    code = (
        "import sys\n"
        "from evals import WAASimulatedAdapter, evaluate_agent_on_benchmark\n"
        "from evals.compat.flow import plan_dry_run\n"
        "from waa_client.errors import CatalogError\n"
        "from evals.agents.builtin import RandomAgent\n"
        "try:\n    evaluate_agent_on_benchmark(RandomAgent(), WAASimulatedAdapter(), "
        f"[{TYPO!r}], run_dir={str(out / 'run')!r})\n"
        "except CatalogError as exc:\n    print(exc)\n"
        f"try:\n    WAASimulatedAdapter().load_task({TYPO!r})\n"
        "except KeyError as exc:\n    print(exc.args[0])\n"
        "try:\n    plan_dry_run(n_tasks=None, task_ids=['notepad_123'], bundles_dir=None,"
        " inputs=None, price=None)\n"
        "except CatalogError as exc:\n    print(exc)\n"
    )
    env = {**os.environ, "OA_VM_HOME": str(oa_home)}
    with unchanged(oa_home, out):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=120, env=env, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr
    first, loaded, second = done.stdout.splitlines()
    assert f"'{TYPO}' (did you mean '{REAL}'?)" in first
    assert f"the local suite: '{TYPO}' (did you mean '{REAL}'?)" in loaded
    assert "synthetic task ID(s) cannot run on a live pool: notepad_123" in second
    _made_nothing(oa_home, out)


CUA = ROOT / "docs" / "examples" / "cua_bench"


@pytest.mark.parametrize("kind", ["cua-bench", "openapps"])
@pytest.mark.parametrize("command", [
    ("openadapt-evals", "mock"), ("openadapt-evals", "audit-verifier"),
    ("openadapt-eval-flow", "--dry-run"), ("openadapt-eval-flow", "--live"),
])
def test_task_modules_given_where_only_waa_tasks_run_are_named_as_such(
    kind: str, command: tuple[str, str], oa_home: Path, tmp_path: Path
) -> None:
    # These commands take WAA's kind of task only: a module or config selection was read as
    # a task ID and refused as a malformed or unknown one.
    selection = f"cua-bench:{CUA}" if kind == "cua-bench" else f"openapps:{OPENAPPS}"
    script, first = command
    with unchanged(oa_home, tmp_path / "results"):
        done = run_cli(script, first, "--tasks", selection, home=oa_home,
                       env=_offline(tmp_path))
    line = done.assert_one_line_error()
    assert done.returncode == 2, line
    what = "Cua-Bench task modules" if kind == "cua-bench" else "OpenApps-style task configs"
    assert f"--tasks {kind}:...:" in line and f"not {what}; 'openadapt-evals sweep' and " \
        f"'run' take them (openadapt-evals sweep --tasks {selection})" in line, line
    _made_nothing(oa_home, tmp_path / "results")


# -- a cloud pool whose prepared image recorded WAA's catalog -------------------------------------

IMAGE = "waa-us-east-1-20261201-0900"


def _image_with(home: Path, indexes: dict[str, Any] | None) -> None:
    """A ready image of aws us-east-1 (the default region) as image-create records it, with
    WAA's index files (``indexes``) or, as a build that could not read them, without."""
    from datetime import timedelta

    from oa_vm.model import image_records, state

    created = state.utcnow() - timedelta(days=1)
    record = image_records.ImageRecord(
        id=IMAGE, cloud="aws", region="us-east-1", state=image_records.READY, size_gb=96,
        created_at=created, licence_expires=created + timedelta(days=90),
        waa_image="windowsarena/winarena@sha256:0123", builder_size="m8i.2xlarge",
        project="oa-vm-aws-images", stack=IMAGE, cloud_id="snap-0fedcba9876543210",
        task_indexes=indexes,
    )
    path = home / "images" / f"{IMAGE}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record.to_json()), encoding="utf-8")


def _waa_indexes(waa_data: Path) -> dict[str, Any]:
    return {name: json.loads((waa_data / f"{name}.json").read_text(encoding="utf-8"))
            for name in ("test_all", "test_small", "test_custom")}


def _cloud_sweep(home: Path, tmp_path: Path, tasks: str, *more: str) -> Any:
    return run_cli("openadapt-evals", "sweep", "--cloud", "aws", "--agent", "noop", "--tasks",
                   tasks, "--results-dir", str(tmp_path / "results"), *more, home=home,
                   env=_offline(tmp_path))


@pytest.mark.parametrize("plan", [True, False], ids=["--plan", "no plan"])
def test_a_misspelt_waa_id_is_refused_by_the_images_catalog_before_a_cloud_pool_is_made(
    plan: bool, oa_home: Path, tmp_path: Path, waa_data: Path
) -> None:
    real = _waa_indexes(waa_data)["test_all"]["chrome"][0]
    typo = real[:-1] + ("X" if real[-1] != "X" else "Y")
    _image_with(oa_home, _waa_indexes(waa_data))
    with unchanged(oa_home, tmp_path / "results"):
        done = _cloud_sweep(oa_home, tmp_path, typo, *(["--plan"] if plan else []))
    line = done.assert_one_line_error()
    assert done.returncode == 2, line
    assert (f"1 unknown task ID(s) in the task catalog of image {IMAGE}: '{typo}' (did you "
            f"mean '{real}'?)") in line, line
    _made_nothing(oa_home, tmp_path / "results")


def test_the_images_catalog_counts_a_domain_in_the_plan(
    oa_home: Path, tmp_path: Path, waa_data: Path
) -> None:
    indexes = _waa_indexes(waa_data)
    chrome = {t for index in indexes.values() for t in index.get("chrome", [])}
    _image_with(oa_home, indexes)
    done = _cloud_sweep(oa_home, tmp_path, "domain:chrome", "--plan")
    assert done.returncode == 0, done.stderr
    assert (f"{len(chrome)} (checked against the task catalog of image {IMAGE})"
            in done.stdout), done.stdout
    as_json = _cloud_sweep(oa_home, tmp_path, "domain:chrome", "--plan", "--json")
    assert json.loads(as_json.stdout)["sweep"]["estimate"]["tasks"] == len(chrome)


@pytest.mark.parametrize("recorded", [True, False], ids=["a real ID", "no indexes recorded"])
def test_what_the_images_catalog_cannot_refuse_goes_on_to_the_cloud(
    recorded: bool, oa_home: Path, tmp_path: Path, waa_data: Path
) -> None:
    # A real ID passes the image's catalog; an image recorded without indexes (built before
    # they were read, or they could not be) checks what it did before: a typo is then the
    # workers' to refuse. Either way the sweep stops later here, without the Pulumi engine.
    real = _waa_indexes(waa_data)["test_all"]["chrome"][0]
    selection = real if recorded else real[:-1] + "X"
    _image_with(oa_home, _waa_indexes(waa_data) if recorded else None)
    plan = _cloud_sweep(oa_home, tmp_path, selection, "--plan")
    assert plan.returncode == 0, plan.stderr
    said = (f"1 (checked against the task catalog of image {IMAGE})" if recorded
            else "1 (the IDs given, checked by the workers' task catalog when the run starts")
    assert said in plan.stdout, plan.stdout
    done = _cloud_sweep(oa_home, tmp_path, selection)
    assert done.returncode != 0 and "pulumi" in done.stderr, done.stderr
    assert "unknown task" not in done.stderr
    _made_nothing(oa_home, tmp_path / "results")
