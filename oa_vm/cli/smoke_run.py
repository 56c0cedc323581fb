"""``oa-vm smoke``'s run: plan, image, create, wait, task, cleanup, each timed and priced.

Everything goes through the public functions the single commands use (:mod:`oa_vm.api`,
:mod:`oa_vm.images`), so the smoke proves what ``pool-create``, ``pool-wait``,
``openadapt-evals run`` and ``pool-cleanup`` do. What it made is removed whatever happens once
something exists: a failed phase, Ctrl-C (SIGINT) or SIGTERM; a second Ctrl-C or SIGTERM during
the cleanup is ignored so the cleanup finishes.

**The task phase runs ``openadapt-evals run`` as a child process** (``python -m evals``), not
through ``evals``' Python API: imports point ``evals -> oa_vm`` only (``docs/architecture.md``),
and the child is the very command a user runs after ``pool-wait``. The run's ``--json`` summary
and the task's ``execution.json`` in the run folder (``docs/results.md``) say how it went.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oa_vm import api
from oa_vm.cli.smoke_plan import (
    AGENT,
    CLOUDS,
    DEFAULT_MAX_COST_USD,
    TASK_DEADLINE_S,
    TASK_SELECTION,
    TASK_TIMEOUT_S,
    PhaseResult,
    SmokePlan,
    Timeline,
    budgets,
    ttl_hours_for,
    wait_deadline_s,
)
from oa_vm.errors import InvalidInputError, OaVmError, PoolExistsError
from oa_vm.kit import safe_fs
from oa_vm.kit.signals import signals_ignored, sigterm_as_interrupt
from oa_vm.model import state

Say = Callable[[str], None]


@dataclass
class SmokeOptions:
    """What the user asked for (``oa-vm smoke``'s options).

    Attributes:
        cloud: ``aws`` or ``azure``.
        region: the region (the cloud's default when None).
        size: the worker's size (the cloud's default when None).
        name: the pool's name (``smoke-<time>`` when None).
        max_cost_usd: refuse when the most it can spend is above this.
        keep: keep the pool at the end.
        allow_cidrs: who may reach SSH (the caller's address when empty).
        image: a named image instead of the region's newest.
        delete_image: remove an image the smoke built, at the end.
        wait_timeout_s: the wait phase's deadline (``pool-wait``'s default when None).
        egress: ``--egress`` as given (the cloud's default, ``web``, when None).
    """

    cloud: str
    region: str | None = None
    size: str | None = None
    name: str | None = None
    max_cost_usd: float = DEFAULT_MAX_COST_USD
    keep: bool = False
    allow_cidrs: list[str] = field(default_factory=list)
    egress: str | None = None
    image: str | None = None
    delete_image: bool = False
    wait_timeout_s: float | None = None


def default_name() -> str:
    """``smoke-<mmdd-hhmmss>`` (UTC): unique enough for one person's account."""
    return "smoke-" + state.utcnow().strftime("%m%d-%H%M%S")


def make_plan(opts: SmokeOptions) -> SmokePlan:
    """The plan, offline: the programs under Pulumi's mocks, prices from the catalog; no engine,
    credentials, network or files.

    Raises:
        InvalidInputError: a cloud other than aws/azure, a bad region, size, name, limit or
            image (one line, nothing created).
    """
    from oa_vm import images

    if opts.cloud not in CLOUDS:
        raise InvalidInputError(
            f"--cloud {opts.cloud}: the smoke proves a cloud account; use aws or azure "
            "(the local pool needs none: 'openadapt-evals sweep --cloud local')"
        )
    if not opts.max_cost_usd > 0:
        raise InvalidInputError(f"--max-cost-usd must be above 0, not {opts.max_cost_usd:g}")
    if opts.wait_timeout_s is not None and opts.wait_timeout_s <= 0:
        raise InvalidInputError("--wait-timeout must be above 0")
    provider = images.cloud_provider(opts.cloud)
    provider.check_sdk()
    region = opts.region or provider.info.default_region
    wait_s = opts.wait_timeout_s or wait_deadline_s()
    deadlines = budgets(worker_price=None, builder_price=None, build_s=0.0, wait_s=wait_s)
    ttl = ttl_hours_for(deadlines)
    spec = api.build_spec(
        name=opts.name or default_name(), cloud=opts.cloud, workers=1, size=opts.size,
        regions=[region], ttl_hours=ttl, allow_cidrs=list(opts.allow_cidrs),
        egress=opts.egress,
    )
    spec.image = opts.image
    chosen = provider.choose_image(spec, region)
    image_plan = None
    if chosen is None:
        image_plan = images.plan_image(
            provider, region, size=opts.size, allow_cidrs=list(opts.allow_cidrs),
            owner=spec.owner,
        )
    pool_plan = api.plan_pool(spec)
    builder_ttl_s = images.BUILDER_TTL.total_seconds()
    phases = budgets(
        worker_price=pool_plan.price_per_hour,
        builder_price=image_plan.price_per_hour if image_plan else None,
        build_s=builder_ttl_s if image_plan else 0.0,
        wait_s=wait_s,
    )
    from oa_vm.clouds import quota

    size = str(pool_plan.size or spec.size or provider.info.default_size)
    found = quota.read_vcpu_quota(opts.cloud, region, size)
    problem = quota.refusal(found, size, 1)
    if problem:
        raise InvalidInputError(problem)
    return SmokePlan(
        cloud=opts.cloud, region=region, pool=spec.name, size=pool_plan.size,
        image=chosen.describe() if chosen else None, image_plan=image_plan,
        pool_plan=pool_plan, phases=phases, ttl_hours=ttl, limit_usd=opts.max_cost_usd,
        keep=opts.keep, not_priced=list(pool_plan.not_priced), quota=found,
        delete_image=opts.delete_image,
    )


class _PhaseFailed(Exception):
    """A phase ended badly; the timeline holds why."""


@dataclass
class _TaskOutcome:
    ok: bool
    detail: str
    logs: str = ""


def _ssh_logs_command(pool: str) -> str:
    """How to read the worker's bootstrap log by hand (from the pool's record)."""
    try:
        record = state.load(pool)
    except OaVmError:
        return f"oa-vm pool-status --pool {pool}"
    worker = next((w for w in record.workers if w.ssh is not None), None)
    if worker is None or worker.ssh is None:
        return f"oa-vm pool-status --pool {pool}"
    ssh = worker.ssh
    port = f" -p {ssh.port}" if ssh.port != 22 else ""
    return (f"oa-vm pool-status --pool {pool}; ssh -i {ssh.key_path}{port} {ssh.user}@{ssh.host} "
            "'sudo journalctl -u oa-vm-bootstrap --no-pager | tail -50'")


class SmokeRun:
    """One smoke run; :meth:`run` fills :attr:`timeline`.

    Args:
        opts: the options.
        plan: the plan shown to the user (from :func:`make_plan`).
        say: progress lines.
        results_dir: where the task's run folder goes (default ``$OA_VM_HOME/smoke``).
        plan_s: how long planning (and the question) took.
    """

    def __init__(
        self,
        opts: SmokeOptions,
        plan: SmokePlan,
        say: Say,
        results_dir: Path | None = None,
        plan_s: float = 0.0,
    ) -> None:
        self.opts = opts
        self.plan = plan
        self.say = say
        self.results_dir = results_dir or state.home() / "smoke"
        self.timeline = Timeline()
        self.timeline.add(PhaseResult(
            "plan", "ok", plan_s, 0.0,
            f"at most ${plan.max_cost_usd or 0:.2f} (limit ${plan.limit_usd:g})",
        ))
        self.created = False
        self.built_image: str | None = None
        self.interrupted = False

    # -- one phase -------------------------------------------------------------------------------

    def _phase(self, name: str, body: Callable[[], str], logs: Callable[[], str]) -> None:
        """Run ``body`` (it returns the phase's detail line), timed and priced; a failure is
        recorded with ``logs()`` and raised as :class:`_PhaseFailed`; Ctrl-C as interrupted."""
        self.say(f"smoke: {name} ...")
        started = time.monotonic()
        price = next(p.price_per_hour for p in self.plan.phases if p.name == name)

        def done(status: str, detail: str, logs_line: str = "") -> PhaseResult:
            took = time.monotonic() - started
            cost = None if price is None else price * took / 3600
            result = self.timeline.add(PhaseResult(name, status, took, cost, detail, logs_line))
            self.say(f"smoke: {name} {status} ({detail})" if detail else f"smoke: {name} {status}")
            return result

        try:
            detail = body()
        except KeyboardInterrupt:
            self.interrupted = True
            done("interrupted", "Ctrl-C or SIGTERM", logs())
            raise _PhaseFailed(name) from None
        except _TaskFailed as exc:
            done("failed", exc.outcome.detail, exc.outcome.logs or logs())
            raise _PhaseFailed(name) from None
        except OaVmError as exc:
            done("failed", str(exc), logs())
            raise _PhaseFailed(name) from exc
        done("ok", detail)

    # -- the phases ------------------------------------------------------------------------------

    def run(self) -> Timeline:
        """Image, create, wait, task, then cleanup (always, unless ``--keep``)."""
        with sigterm_as_interrupt():
            try:
                self._phase("image", self._image, lambda: "oa-vm image-list")
                self._phase("create", self._create,
                            lambda: f"oa-vm pool-status --pool {self.plan.pool}")
                self._phase("wait", self._wait, lambda: _ssh_logs_command(self.plan.pool))
                self._phase("task", self._task, lambda: f"oa-vm pool-status --pool "
                                                        f"{self.plan.pool}")
            except _PhaseFailed:
                pass
            finally:
                with signals_ignored():  # a second Ctrl-C must not stop the cleanup half-way
                    self._finish()
        return self.timeline

    def _image(self) -> str:
        if self.plan.image is not None:
            return f"uses {self.plan.image.get('id')}"
        from oa_vm import images

        record = images.create_image(
            images.cloud_provider(self.opts.cloud), self.plan.region, size=self.opts.size,
            allow_cidrs=list(self.opts.allow_cidrs), owner=api.owner(), progress=self.say,
        )
        self.built_image = record.id
        return f"built {record.id} ({record.cloud_id})"

    def _create(self) -> str:
        spec = api.build_spec(  # now, so the expiry counts from the create, not the plan
            name=self.plan.pool, cloud=self.opts.cloud, workers=1, size=self.opts.size,
            regions=[self.plan.region], ttl_hours=self.plan.ttl_hours,
            allow_cidrs=list(self.opts.allow_cidrs), egress=self.opts.egress,
        )
        spec.image = self.built_image or self.opts.image
        try:
            record = api.create_pool(spec, progress=self.say)
        except PoolExistsError:
            raise  # someone else's pool: not ours to remove
        except BaseException:
            self.created = True  # a partial pool of ours may be left: cleanup removes it
            raise
        self.created = True
        worker = record.workers[0] if record.workers else None
        where = f"{worker.name} at {worker.host}" if worker else "no worker recorded"
        return f"pool {record.name}: {where}, expires {state.show_time(record.expires_at)}"

    def _wait(self) -> str:
        from oa_vm.cli.pool_options import Heartbeat

        timeout = self.opts.wait_timeout_s or wait_deadline_s()
        record = api.wait_pool(self.plan.pool, timeout_s=timeout, on_update=Heartbeat(self.say))
        return f"{len(record.workers)} worker(s) ready"

    def _task(self) -> str:
        outcome = run_task(self.plan.pool, self.results_dir, say=self.say)
        if not outcome.ok:
            raise _TaskFailed(outcome)
        return outcome.detail

    def _finish(self) -> None:
        pool = self.plan.pool
        if self.opts.keep and self.created:
            from oa_vm.kit.durations import format_duration

            ttl = format_duration(self.plan.ttl_hours * 3600)
            self.timeline.add(PhaseResult(
                "cleanup", "kept", 0.0, 0.0,
                f"pool {pool} kept (--keep); it expires {ttl} after its "
                f"creation; remove it with 'oa-vm pool-cleanup --pool {pool} -y'",
            ))
            return
        if not self.created or not state.exists(pool):
            self.timeline.add(PhaseResult("cleanup", "skipped", 0.0, 0.0, "no pool was made"
                                          + self._image_note()))
            return
        with suppress(_PhaseFailed):
            self._phase("cleanup", self._cleanup, lambda: f"oa-vm pool-cleanup --pool {pool} -y")

    def _cleanup(self) -> str:
        pool = self.plan.pool
        report = api.cleanup_pool(pool, progress=self.say)
        if report.left:
            raise OaVmError(f"still present: {'; '.join(report.left)}")
        return f"pool {pool} removed" + self._image_note()

    def _image_note(self) -> str:
        if self.built_image is None:
            return ""
        if self.opts.delete_image:
            from oa_vm import images

            report = images.delete_image(self.built_image, progress=self.say)
            if report.left:
                return (f"; image {self.built_image} not fully removed: "
                        f"run 'oa-vm image-delete {self.built_image}'")
            return f"; image {self.built_image} deleted (--delete-image)"
        return (f"; image {self.built_image} stays for later pools (see 'oa-vm image-list'; "
                f"'oa-vm image-delete {self.built_image}' removes it)")


class _TaskFailed(Exception):
    def __init__(self, outcome: _TaskOutcome) -> None:
        super().__init__(outcome.detail)
        self.outcome = outcome


# --- the task phase ------------------------------------------------------------------------


def pick_task(pool: str) -> str:
    """The first ``test_small`` task the pool's worker serves (its own catalog, WAA's IDs).

    Raises:
        OaVmError: the worker cannot be reached or lists no such task.
    """
    from waa_client.catalog import Catalog
    from waa_client.errors import WaaError

    try:
        with api.connect(pool, connect_timeout=10, read_timeout=60) as workers:
            refs = Catalog.from_scoring(workers[0].scoring).select(TASK_SELECTION, live=True)
    except WaaError as exc:
        raise OaVmError(f"the worker's task catalog could not be read: {exc}") from exc
    if not refs:
        raise OaVmError(f"the worker's catalog lists no {TASK_SELECTION} task")
    return refs[0].task_id


def run_command(pool: str, task_id: str, results_dir: Path, run_name: str) -> list[str]:
    """``openadapt-evals run`` for one task with the noop agent, one attempt."""
    return [
        sys.executable, "-m", "evals", "run", "--pool", pool, "--tasks", task_id,
        "--agent", AGENT, "--max-attempts", "1", "--task-timeout", f"{TASK_TIMEOUT_S:g}s",
        "--results-dir", str(results_dir), "--run-name", run_name,
    ]


def _stop(proc: subprocess.Popen[str], *, grace_s: float = 0.0) -> None:
    """Ask the run to stop as Ctrl-C does (it marks itself interrupted), then kill it.

    ``grace_s``: first let it end on its own: a Ctrl-C on the terminal reached it too, and a
    second one could cut its own wrap-up short.
    """
    with suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


def run_task(pool: str, results_dir: Path, *, say: Say) -> _TaskOutcome:
    """Pick the task, run it through ``openadapt-evals run``, and read how it ended.

    A task scored by the checker (``success`` or ``failure``) is a working task phase: the
    noop agent is not expected to solve it. An ``error`` (setup, scoring, infrastructure) or a
    run that did not finish is a failed one.
    """
    task_id = pick_task(pool)
    say(f"smoke: task {task_id} ({TASK_SELECTION}) with the {AGENT} agent")
    run_name = f"{pool}-{state.utcnow().strftime('%H%M%S')}"
    view = f"openadapt-evals view {run_name} --results-dir {results_dir}"
    proc = subprocess.Popen(
        run_command(pool, task_id, results_dir, run_name),
        # its summary (stdout) is not needed: the task's record is read from the run folder
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
    )
    tail: deque[str] = deque(maxlen=3)

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            tail.append(line.rstrip())
            say(f"  {line.rstrip()}")

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        proc.wait(timeout=TASK_DEADLINE_S)
    except subprocess.TimeoutExpired:
        _stop(proc)
        return _TaskOutcome(False, f"task {task_id} did not finish in "
                                   f"{TASK_DEADLINE_S / 60:g} min", view)
    except KeyboardInterrupt:
        _stop(proc, grace_s=10.0)
        raise
    reader.join(timeout=10)
    execution = _read_execution(results_dir / run_name, task_id)
    if execution is None:
        last = tail[-1] if tail else f"exit code {proc.returncode}"
        return _TaskOutcome(False, f"openadapt-evals run ended without a task record: {last}",
                            view)
    status = execution.get("status")
    if status in ("success", "failure"):
        return _TaskOutcome(
            True, f"task {task_id}: {status}, score {execution.get('score')} "
                  f"({execution.get('reason') or 'no reason given'}), scored by the checker"
        )
    return _TaskOutcome(
        False, f"task {task_id}: {execution.get('error_type') or status} error: "
               f"{execution.get('error_message') or execution.get('reason') or '?'}",
        view,
    )


def _read_execution(run_dir: Path, task_id: str) -> dict[str, Any] | None:
    return safe_fs.read_json_object(run_dir / "tasks" / task_id / "execution.json")
