"""Bad option values, kind by kind, to every console script: each refused in one short line.

The cases of :mod:`tests.reliability.test_abuse` are per command; these are per kind of value,
each kind refused by one shared rule wherever it is typed:

- a value holding a newline or another control character (``oa_vm.kit.error_line``: the line
  that quotes it back shows it escaped, so it stays one line and moves no cursor);
- a value thousands of characters long (the same rule cuts it in its middle);
- an empty or blank value (``--name ""``, ``--results-dir=``, a blank argument:
  ``oa_vm.kit.clikit`` refuses it before the command runs, where several commands took it for
  "not given" and used a default: a pool named ``waa-pool``, runs in the current folder);
- ``inf``/``nan`` for any number option (``oa_vm.kit.clikit``, on the parsed value);
- a duration past ten years (``oa_vm.kit.durations``: ``1e30`` seconds overflowed the clock's
  arithmetic, or was taken as a wait that never ends);
- an option the chosen cloud does not take (``oa_vm.api.build_spec`` against the cloud's
  declared options: a local pool took ``--size`` or a garbage ``--allow-cidr`` and ignored it);
- a timing knob of the environment that is not a number of seconds (``oa_vm.kit.env_knobs``,
  checked before any command: it was ignored and the default used);
- a value checked only after the work it ends: ``mock``'s run name and results folder (now
  the run's own checks, before its temporary pool is made), an ``--out`` in a folder that
  refuses new files such as ``/proc`` (``oa_vm.kit.safe_fs.check_out`` now tries the folder,
  before the audit or export it would hold);
- a results folder of hundreds of runs, which a refusal listed in full (``oa_vm.errors.listing``:
  eight names and how many more, for runs, pools, images, workers and task IDs alike);
- a standard stream closed at start (``<&-``, ``>&-``: ``oa_vm.kit.stdio``, where a question
  or any output raised an ``AttributeError`` on ``None``).

Every case runs the real script as a subprocess, in a folder of its own as the current folder,
and checks the exit code, exactly one line on stderr with no control character and no
traceback, and that nothing was created or changed: the pool's record, the finished run, the
current folder, the pool list.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from oa_vm import api
from oa_vm.model import state
from tests.reliability.test_abuse import DONE, POOL, TASK, World, snapshot, world
from tests.support.cli import BIN

pytestmark = pytest.mark.integration

__all__ = ["world"]  # the module's pool and finished run, shared with test_abuse's cases

LONG = "x" * 5000
USAGE = 2

_RUN = ("run", "--pool", POOL, "--agent", "oracle", "--tasks", TASK, "--results-dir", "{res}")
_SWEEP = ("sweep", "--cloud", "local", "--workers", "1", "--agent", "oracle", "--tasks", TASK,
          "--results-dir", "{res}", "--plan")
_CREATE = ("pool-create", "--cloud", "local", "--workers", "1", "-y")
_SMOKE = ("smoke", "--cloud", "aws", "--plan")  # offline: the plan makes no cloud call
_IMAGE = ("image-create", "--cloud", "aws", "--region", "us-east-1", "--plan")
_LIVE = ("--live", "--pool", POOL, "--task-ids", TASK, "--bundles", "{res}", "--results-dir",
         "{res}")

# name: (script, arguments, the exit code, or None for any non-zero one)
CASES: dict[str, tuple[str, tuple[str, ...], int | None]] = {
    # --- a newline or an escape sequence in a value quoted back
    "pool-create --egress with a newline": ("oa-vm", (*_CREATE, "--name", "t1", "--egress",
                                                      "a\nb"), None),
    "smoke --cloud with a newline": ("oa-vm", ("smoke", "--plan", "--cloud", "a\nb"), None),
    "smoke --egress with a newline": ("oa-vm", (*_SMOKE, "--egress", "web\nopen"), None),
    "image-create --iso with a newline": ("oa-vm", (*_IMAGE, "--iso", "a\nb.iso"), None),
    "pool-repair --worker with a newline": ("oa-vm", ("pool-repair", "--name", POOL,
                                                      "--no-wait", "--worker", "a\nb"), None),
    "pool-repair --worker with an escape sequence": (
        "oa-vm", ("pool-repair", "--name", POOL, "--no-wait", "--worker", "\x1b[2Jw"), None),
    # --- a value thousands of characters long, quoted back
    "pool-create --workers 5000 characters": ("oa-vm", (*_CREATE, "--name", "t1", "--workers",
                                                        LONG), USAGE),
    "pool-create --name 5000 characters": ("oa-vm", (*_CREATE, "--name", LONG), None),
    "pool-create --fault 5000 characters": ("oa-vm", (*_CREATE, "--name", "t1", "--fault",
                                                      LONG), None),
    "pool-wait --timeout 5000 characters": ("oa-vm", ("pool-wait", "--name", POOL, "--timeout",
                                                      LONG), USAGE),
    "pool-tunnel --worker 5000 characters": ("oa-vm", ("pool-tunnel", "--name", POOL,
                                                       "--worker", LONG), None),
    "config set disk-gb 5000 characters": ("oa-vm", ("config", "set", "disk-gb", LONG), None),
    "prices --region 5000 characters": ("oa-vm", ("prices", "--region", LONG), None),
    "run --agent 5000 characters": ("openadapt-evals", ("run", "--pool", POOL, "--tasks", TASK,
                                                        "--results-dir", "{res}", "--agent",
                                                        LONG), None),
    "run --reset 5000 characters": ("openadapt-evals", (*_RUN, "--reset", LONG), None),
    "run --max-steps 5000 characters": ("openadapt-evals", (*_RUN, "--max-steps", LONG), USAGE),
    "flow --mode 5000 characters": ("openadapt-eval-flow", ("--mode", LONG), None),
    # --- an empty or blank value, which some commands took for "not given"
    "pool-create --name empty (made a pool named waa-pool)": ("oa-vm", (*_CREATE, "--name", ""),
                                                              USAGE),
    "pool-create --name= empty": ("oa-vm", (*_CREATE, "--name="), USAGE),
    "image-create --size empty": ("oa-vm", (*_IMAGE, "--size", ""), USAGE),
    "image-create --iso empty": ("oa-vm", (*_IMAGE, "--iso", ""), USAGE),
    "smoke --region empty": ("oa-vm", (*_SMOKE, "--region", ""), USAGE),
    "smoke --name empty": ("oa-vm", (*_SMOKE, "--name", ""), USAGE),
    "smoke --image empty": ("oa-vm", (*_SMOKE, "--image", ""), USAGE),
    "run --results-dir empty (ran in the current folder)": (
        "openadapt-evals", ("run", "--pool", POOL, "--agent", "oracle", "--tasks", TASK,
                            "--results-dir", ""), USAGE),
    "run --agent-url blank": ("openadapt-evals", (*_RUN, "--agent-url", " "), USAGE),
    "sweep --name empty": ("openadapt-evals", (*_SWEEP, "--name", ""), USAGE),
    "view a blank run name": ("openadapt-evals", ("view", " ", "--results-dir", "{res}"),
                              USAGE),
    # --- inf or nan for a number option
    "smoke --max-cost-usd inf": ("oa-vm", (*_SMOKE, "--max-cost-usd", "inf"), USAGE),
    "sweep --price-per-hour -inf": ("openadapt-evals", (*_SWEEP, "--price-per-hour", "-inf"),
                                    USAGE),
    "sweep --price-per-hour 1e308 (a price of $inf, Infinity in --json)": (
        "openadapt-evals", (*_SWEEP, "--price-per-hour", "1e308"), USAGE),
    "pool-create --price-per-hour 1e308": ("oa-vm", ("pool-create", "--cloud", "local",
                                                      "--price-per-hour", "1e308", "--plan"),
                                           USAGE),
    "config set disk-gb -1 (said 'No such option: -1')": (
        "oa-vm", ("config", "set", "disk-gb", "-1"), USAGE),
    "run --agent-arg k twice (the last one won, silently)": (
        "openadapt-evals", (*_RUN, "--agent-arg", "k=1", "--agent-arg", "k=2"), USAGE),
    "sweep --agent-arg max-tokens and max_tokens": (
        "openadapt-evals", (*_SWEEP, "--agent-arg", "max-tokens=1", "--agent-arg",
                            "max_tokens=2"), USAGE),
    "pool-create --region ',,' (planned in the default region)": (
        "oa-vm", ("pool-create", "--cloud", "aws", "--region", ",,", "--plan"), USAGE),
    "sweep --region 'us-east-1,'": ("openadapt-evals", (*_SWEEP, "--cloud", "aws", "--region",
                                                         "us-east-1,"), USAGE),
    "pool-create --fault latency=3601 (refused once its worker had started)": (
        "oa-vm", (*_CREATE, "--fault", "latency=3601"), USAGE),
    "pool-create --fault hang-after=1.5": ("oa-vm", (*_CREATE, "--fault", "hang-after=1.5"),
                                           USAGE),
    "sweep --fault screenshot-min-bytes=1e12": (
        "openadapt-evals", (*_SWEEP, "--fault", "screenshot-min-bytes=999999999999"), USAGE),
    "eval-flow --price-per-hour 1e308": ("openadapt-eval-flow", ("--price-per-hour", "1e308"),
                                         USAGE),
    "pool-extend --by 1e308 (said 'must be more than zero')": (
        "oa-vm", ("pool-extend", "--name", POOL, "--by", "1e308"), USAGE),
    # --- a duration past ten years
    "pool-extend --by 1e30 (overflowed the expiry)": ("oa-vm", ("pool-extend", "--name", POOL,
                                                                "--by", "1e30"), USAGE),
    "pool-wait --timeout 1e30": ("oa-vm", ("pool-wait", "--name", POOL, "--timeout", "1e30"),
                                 USAGE),
    "pool-repair --timeout 10**40": ("oa-vm", ("pool-repair", "--name", POOL, "--timeout",
                                               "1" + "0" * 40), USAGE),
    "pool-pause --keep 99999d": ("oa-vm", ("pool-pause", "--name", POOL, "--keep", "99999d"),
                                 USAGE),
    "run --read-timeout 1e30 (overflowed the clock)": ("openadapt-evals",
                                                       (*_RUN, "--read-timeout", "1e30"), USAGE),
    "run --step-pause 1e30": ("openadapt-evals", (*_RUN, "--step-pause", "1e30"), USAGE),
    "run --task-timeout 1e30": ("openadapt-evals", (*_RUN, "--task-timeout", "1e30"), USAGE),
    "sweep --wait-timeout 1e30": ("openadapt-evals", (*_SWEEP, "--wait-timeout", "1e30"), USAGE),
    "smoke --wait-timeout 1e30": ("oa-vm", (*_SMOKE, "--wait-timeout", "1e30"), USAGE),
    # --- an option the chosen cloud does not take (was accepted, then ignored)
    "pool-create --cloud local --size": ("oa-vm", (*_CREATE, "--name", "t1", "--size", "abc"),
                                         None),
    "pool-create --cloud local --allow-cidr": ("oa-vm", (*_CREATE, "--name", "t1",
                                                         "--allow-cidr", "abc"), None),
    "pool-create --cloud local --region": ("oa-vm", (*_CREATE, "--name", "t1", "--region",
                                                     "mars-1"), None),
    "sweep --cloud local --spot": ("openadapt-evals", (*_SWEEP, "--spot"), None),
    "sweep --cloud local --size": ("openadapt-evals", (*_SWEEP, "--size", "huge"), None),
    "sweep --cloud local --image": ("openadapt-evals", (*_SWEEP, "--image", "ami-0"), None),
    "pool-create --cloud local --build-image": ("oa-vm", (*_CREATE, "--name", "t1",
                                                          "--build-image"), None),
    # --- a region named twice (the plan listed it twice among the regions tried), refused as
    # a --host or a run's --pool named twice is (oa_vm.api.build_spec); a worker to repair too
    "pool-create --region named twice": ("oa-vm", ("pool-create", "--cloud", "aws", "--name",
                                                   "t1", "--region", "us-east-1,us-east-1",
                                                   "--plan"), USAGE),
    "pool-repair --worker named twice": ("oa-vm", ("pool-repair", "--name", POOL, "--no-wait",
                                                   "--worker", "worker-0", "--worker",
                                                   "worker-0"), USAGE),
    "sweep --region named twice": ("openadapt-evals", (
        "sweep", "--cloud", "aws", "--workers", "1", "--agent", "oracle", "--tasks", TASK,
        "--results-dir", "{res}", "--plan", "--region", "us-east-1,eu-west-1, us-east-1"),
        USAGE),
    # --- an option of one built-in agent given to another (it was ignored, the run went on)
    "run --bundles with --agent oracle": ("openadapt-evals", (*_RUN, "--bundles", "{res}"),
                                          USAGE),
    "run --agent-url with --agent oracle": ("openadapt-evals", (*_RUN, "--agent-url",
                                                                "http://127.0.0.1:9/act"), USAGE),
    "sweep --bundles with --agent oracle": ("openadapt-evals", (*_SWEEP, "--bundles", "{res}"),
                                            USAGE),
    # --- a value that kept no run, or every run, without a word
    "runs --since abc": ("openadapt-evals", ("runs", "--results-dir", "{res}", "--since", "abc"),
                         None),
    "runs --since 0": ("openadapt-evals", ("runs", "--results-dir", "{res}", "--since", "0"),
                       None),
    "runs --results-dir a file": ("openadapt-evals", ("runs", "--results-dir",
                                                      "{res}/" + DONE + "/metadata.json"), None),
    # --- a value checked only after the work it ends (a temporary pool made, then removed)
    "mock --run-name ../x": ("openadapt-evals", ("mock", "--tasks", "1", "--results-dir",
                                                 "{res}", "--run-name", "../x"), USAGE),
    "mock --run-name of the finished run": ("openadapt-evals", ("mock", "--tasks", "1",
                                                                "--results-dir", "{res}",
                                                                "--run-name", DONE), None),
    "mock --results-dir a file": ("openadapt-evals", ("mock", "--tasks", "1", "--results-dir",
                                                      "{res}/" + DONE + "/metadata.json"),
                                  USAGE),
    "audit-verifier --out under /proc (the audit ran first)": (
        "openadapt-evals", ("audit-verifier", "--benchmark", "toy", "--out", "/proc/audit.json"),
        None),
    "audit-verifier local --out under /proc (a pool made first)": (
        "openadapt-evals", ("audit-verifier", "--tasks", TASK, "--out", "/proc/audit.json"),
        None),
}


# name: (script, arguments, the environment's bad knob); each was ignored (the default used)
ENV_CASES: dict[str, tuple[str, tuple[str, ...], dict[str, str]]] = {
    "run with OA_EVALS_TASK_LEASE_S=5m": ("openadapt-evals", _RUN,
                                          {"OA_EVALS_TASK_LEASE_S": "5m"}),
    "run with OA_EVALS_TASK_LEASE_S=inf": ("openadapt-evals", _RUN,
                                           {"OA_EVALS_TASK_LEASE_S": "inf"}),
    "run with OA_VM_DRAIN_CHECK_S=-1": ("openadapt-evals", _RUN, {"OA_VM_DRAIN_CHECK_S": "-1"}),
    "pool-pause with OA_VM_LEASE_STALE_S=nan": ("oa-vm", ("pool-pause", "--name", POOL),
                                                {"OA_VM_LEASE_STALE_S": "nan"}),
    "pool-list with OA_VM_LEASE_STALE_S=0": ("oa-vm", ("pool-list",),
                                             {"OA_VM_LEASE_STALE_S": "0"}),
    "flow's dry run with OA_EVALS_TASK_LEASE_S blank": ("openadapt-eval-flow", ("--tasks", "3"),
                                                        {"OA_EVALS_TASK_LEASE_S": " "}),
}


@pytest.fixture
def cwd(tmp_path: Path, world: World) -> Iterator[Path]:
    """An empty current folder for the command; any pool a case made (it must not) removed."""
    folder = tmp_path / "cwd"
    folder.mkdir()
    yield folder
    for name in set(state.list_names()) - {POOL}:
        api.cleanup_pool(name)


def _records(world: World) -> dict[str, str]:
    """:func:`snapshot` without lock files (an empty ``fleet.lock`` may be made to read the
    record a value is checked against; it records nothing)."""
    return {k: v for k, v in snapshot(world).items() if not k.endswith(".lock")}


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_bad_value_is_one_short_line_and_changes_nothing(
    world: World, cwd: Path, name: str
) -> None:
    script, args, code = CASES[name]
    _refused(world, cwd, script, args, code, {})


@pytest.mark.parametrize("name", sorted(ENV_CASES))
def test_a_bad_timing_knob_is_refused_before_the_command(
    world: World, cwd: Path, name: str
) -> None:
    script, args, env = ENV_CASES[name]
    _refused(world, cwd, script, args, USAGE, env)


def _refused(world: World, cwd: Path, script: str, args: tuple[str, ...], code: int | None,
             env: dict[str, str]) -> str:
    """Run ``script`` with ``args`` and ``env``; check it refused in one line, changing
    nothing; the line."""
    args = tuple(a.replace("{res}", str(world.results)) for a in args)
    before, pools = _records(world), sorted(state.list_names())
    proc = subprocess.run(  # fixed argv, no shell
        [str(BIN / script), *args], capture_output=True, text=True, timeout=120, cwd=cwd,
        env={**os.environ, "OA_VM_HOME": str(world.home), **env}, stdin=subprocess.DEVNULL,
        check=False,
    )
    assert proc.returncode != 0, proc.stdout
    if code is not None:
        assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr and "unexpected error" not in proc.stderr, proc.stderr
    body = proc.stderr.removesuffix("\n")
    assert body and "\n" not in body, f"not one line: {proc.stderr!r}"
    assert body.isprintable(), f"a control character on the terminal: {body!r}"
    assert len(body) < 600, f"not a short line: {len(body)} characters"
    assert _listing(cwd) == [], "created in the current folder"
    assert sorted(state.list_names()) == pools
    assert _records(world) == before
    assert api.pool_status(POOL).state.value == "ready"
    return body


# the options that name what a command acts on, wherever they are declared
TARGETS = {"--pool": POOL, "--image": "tb", "--worker": "tb", "--run-name": DONE,
           "--rerun-errors": DONE}


def _target_options() -> list[tuple[str, tuple[str, ...], list[str]]]:
    """``(script, command path, the option's names)`` for every single-valued option of the
    three console scripts named in :data:`TARGETS`, found by walking their Click commands (a
    command added later is covered as it is)."""
    import typer

    from evals.cli.app import app as evals_app
    from evals.compat.flow.cli import app as flow_app
    from oa_vm.cli.app import app as oa_vm_app

    found: list[tuple[str, tuple[str, ...], list[str]]] = []

    def walk(script: str, command: Any, path: tuple[str, ...]) -> None:
        for name, sub in sorted((getattr(command, "commands", None) or {}).items()):
            walk(script, sub, (*path, name))
        for param in command.params:
            names = [*param.opts, *param.secondary_opts]
            if set(names) & set(TARGETS) and not param.multiple and not param.is_flag:
                found.append((script, path, names))

    for script, app in (("oa-vm", oa_vm_app), ("openadapt-evals", evals_app),
                        ("openadapt-eval-flow", flow_app)):
        walk(script, typer.main.get_command(app), ())
    return found


TARGET_OPTIONS = _target_options()


@pytest.mark.parametrize(("script", "path", "names"), TARGET_OPTIONS,
                         ids=[" ".join((s, *p, n[0])) for s, p, n in TARGET_OPTIONS])
def test_two_values_of_what_a_command_acts_on_are_refused(
    world: World, cwd: Path, script: str, path: tuple[str, ...], names: list[str]
) -> None:
    """``pool-pause -n ta -n abuse`` paused only the second pool and said nothing of the first
    (Click keeps the last value): refused in one line naming both, nothing done to either."""
    second = next(TARGETS[name] for name in names if name in TARGETS)
    body = _refused(world, cwd, script, (*path, names[0], "ta", names[-1], second), USAGE, {})
    assert "ta" in body and second in body and "more than once" in body, body


def test_the_walk_finds_the_commands_acting_on_one_thing() -> None:
    found = {(script, *path, names[0]) for script, path, names in TARGET_OPTIONS}
    assert {("oa-vm", "pool-pause", "--pool"), ("oa-vm", "pool-status", "--pool"),
            ("oa-vm", "pool-create", "--image"), ("oa-vm", "pool-tunnel", "--worker"),
            ("openadapt-evals", "view", "--run-name"), ("openadapt-evals", "tasks", "--pool"),
            ("openadapt-evals", "study", "ui-change", "--pool"),
            ("openadapt-eval-flow", "--pool")} <= found, found


def test_every_kind_is_tried_on_every_script() -> None:
    scripts = {script for script, _, _ in CASES.values()}
    assert scripts == {"oa-vm", "openadapt-evals", "openadapt-eval-flow"}
    assert DONE  # the finished run the snapshot covers


@pytest.mark.parametrize("command", ["view", "compare", "export"])
def test_an_unknown_run_among_many_is_named_in_one_short_line(
    world: World, cwd: Path, tmp_path: Path, command: str
) -> None:
    """The refusal lists the folder's runs: eight of them and how many more, not all 300."""
    many = tmp_path / "many"
    for n in range(300):
        (many / f"a-run-with-a-long-name-{n:04d}").mkdir(parents=True)
        (many / f"a-run-with-a-long-name-{n:04d}" / "metadata.json").write_text("{}")
    args = {"view": ("view", "nosuch"), "compare": ("compare", "a-run-with-a-long-name-0000",
                                                    "nosuch"),
            "export": ("export", "nosuch", "--format", "jsonl")}[command]
    _refused(world, cwd, "openadapt-evals", (*args, "--results-dir", str(many)), None, {})


# name: (the stream closed, script, arguments, the exit code); the shell closes the descriptor
# and execs the script, so the script starts without it
CLOSED: dict[str, tuple[str, str, tuple[str, ...], int]] = {
    "pool-cleanup without stdin asks no one and refuses": (
        "<&-", "oa-vm", ("pool-cleanup", "--name", POOL), 2),
    "pool-pause -h without stdout": (">&-", "oa-vm", ("pool-pause", "-h"), 0),
    "pool-list without stdout": (">&-", "oa-vm", ("pool-list",), 0),
    "pool-status without stdout": (">&-", "oa-vm", ("pool-status", "--name", POOL), 0),
    "runs without stdout": (">&-", "openadapt-evals", ("runs", "--results-dir", "{res}"), 0),
    "flow's dry run without stdout": (">&-", "openadapt-eval-flow", ("--tasks", "3"), 0),
}


@pytest.mark.parametrize("name", sorted(CLOSED))
def test_a_closed_standard_stream_is_no_traceback(world: World, cwd: Path, name: str) -> None:
    """Started with stdin or stdout closed (``<&-``, ``>&-``): a question is refused as without
    a terminal, output goes nowhere; never an AttributeError on ``None``."""
    closed, script, args, code = CLOSED[name]
    args = tuple(a.replace("{res}", str(world.results)) for a in args)
    before = _records(world)
    proc = subprocess.run(  # fixed argv: sh only closes the descriptor, then execs the script
        ["sh", "-c", f'exec "$@" {closed}', "sh", str(BIN / script), *args],
        capture_output=True, text=True, timeout=120, cwd=cwd,
        env={**os.environ, "OA_VM_HOME": str(world.home)}, check=False,
    )
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr and "unexpected error" not in proc.stderr, proc.stderr
    if code:
        assert "not asked (no terminal); pass -y" in proc.stderr, proc.stderr
    else:
        assert proc.stderr == "", proc.stderr
    assert _records(world) == before
    assert api.pool_status(POOL).state.value == "ready"


def test_the_agent_url_of_the_environment_is_no_option_typed(world: World, tmp_path: Path) -> None:
    """``$OA_EVALS_AGENT_URL`` set in a profile does not stop a run of another agent, as an
    ``--agent-url`` typed for it does."""
    proc = subprocess.run(  # fixed argv, no shell
        [str(BIN / "openadapt-evals"), "run", "--pool", POOL, "--agent", "noop", "--tasks", TASK,
         "--results-dir", str(tmp_path)], capture_output=True, text=True, timeout=300,
        env={**os.environ, "OA_VM_HOME": str(world.home),
             "OA_EVALS_AGENT_URL": "http://127.0.0.1:9/act"}, stdin=subprocess.DEVNULL,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
