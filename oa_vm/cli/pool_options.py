"""The cloud-pool choices ``pool-create`` and ``pool-wait`` make before calling the API.

- which cloud, when ``--cloud`` is left out: the configured default (``oa-vm config set
  default-cloud``), else the user is asked; without a terminal the command refuses in one line.
  A cloud that bills is never chosen silently.
- the checks a create makes before anything is written (a prepared image, a size that nests);
- ``pool-wait``'s default deadline, which follows what the pool is doing;
- ``pool-wait``'s heartbeat: a line per worker when its phase changes, and at least every 30 s;
- the cloud options themselves (size, region, spot, expiry, SSH CIDRs, image, ``--build-image``,
  ``--plan``), declared once here for ``oa-vm pool-create`` and ``openadapt-evals sweep``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Annotated

import typer

from oa_vm.api import DEFAULT_TTL_HOURS, MAX_TTL_HOURS
from oa_vm.clouds.base import Capability, PoolSpec
from oa_vm.errors import InvalidInputError, ProviderUnavailableError
from oa_vm.kit import timings
from oa_vm.kit.clikit import target_option
from oa_vm.kit.duration_options import Duration, duration_option
from oa_vm.model.state import PoolRecord

DEFAULT_WAIT_S = 30 * 60.0
HEARTBEAT_S = 30.0

# --- the cloud options of a pool, for every command that creates one -------------------------
# Typer names an option after its parameter: declare ``size: SizeOpt = None`` and so on.

SizeOpt = Annotated[str | None, typer.Option(help="Instance size (cloud default).")]
RegionOpt = Annotated[
    str | None, typer.Option(help="Region, or several a,b,c tried in order.")
]
SpotOpt = Annotated[bool, typer.Option(help="Use spot capacity.")]
TtlOpt = Annotated[
    float,
    duration_option("--ttl", "--ttl-hours", unit="h", bare=("--ttl-hours",),
                    most=MAX_TTL_HOURS,
                    help="How long until the cloud ends the pool itself: 90m, 8h, 1d"),
]
TTL_DEFAULT = Duration(DEFAULT_TTL_HOURS, "h")
"""The default of :data:`TtlOpt`, shown in ``--help`` with its unit (``4h``)."""
AllowCidrOpt = Annotated[
    list[str] | None, typer.Option(help="CIDR allowed to reach SSH (repeatable).")
]
ImageOpt = Annotated[
    str | None, target_option("--image", what="image",
                                help="Cloud pools: the prepared image (see image-list).")
]
BuildImageOpt = Annotated[
    bool, typer.Option(help="Cloud pools: build the region's image first if it has none "
                            f"({timings.about(timings.IMAGE_BUILD.typical_s)}, estimated; once "
                            "per region; its plan and price come first).")
]
EgressOpt = Annotated[
    str | None,
    typer.Option(help="What the guest may reach: none, web, open, allowlist:FILE or "
                      "allowlist:waa (the hosts WAA's tasks download from); never the metadata "
                      "service, the host or another worker. Default: web on clouds, none on "
                      "local pools (docs/security.md)."),
]
PlanOpt = Annotated[
    bool, typer.Option("--plan", help="Show the plan and price; create nothing.")
]


def parse_regions(region: str | None) -> list[str]:
    """``--region a,b,c`` -> ``["a", "b", "c"]`` (tried in that order); None -> ``[]``.

    Raises:
        InvalidInputError: a region left empty (``--region ,,`` or ``a,,b``): the plan went on
            in the default region, which the user did not choose.
    """
    if not region:
        return []
    regions = [r.strip() for r in region.split(",")]
    if not all(regions):
        raise InvalidInputError(f"--region {region!r}: a region between its commas is empty; "
                                "give region names, e.g. --region us-east-1,us-west-2")
    return regions


OPEN_TO_ALL = "warning: --allow-cidr 0.0.0.0/0 opens SSH (22) to the whole internet"


def warn_if_open_to_all(allow_cidrs: list[str]) -> None:
    """Say :data:`OPEN_TO_ALL` on stderr when ``allow_cidrs`` holds ``0.0.0.0/0``: the one
    place every command that opens a host's SSH (``pool-create``, ``sweep``, ``smoke``,
    ``image-create``) warns, with
    its plan (``--plan``) or once its question may be asked (inside
    :func:`oa_vm.cli.common.asking`, so a command refused for want of a terminal says only that).
    """
    if "0.0.0.0/0" in allow_cidrs:
        typer.echo(OPEN_TO_ALL, err=True)


def choose_cloud(cloud: str | None, ask: Callable[[], str] | None = None) -> str:
    """``cloud``, or the configured default, or what the user answers.

    Raises:
        InvalidInputError: no cloud given, none configured, and no terminal to ask on.
    """
    if cloud:
        return cloud
    from oa_vm.model import config

    configured = config.default_cloud()
    if configured:
        return configured
    if ask is None and not sys.stdin.isatty():
        raise InvalidInputError(
            "no cloud chosen: pass --cloud local|aws|azure, or set a default with "
            "'oa-vm config set default-cloud local' (aws and azure bill by the hour)"
        )
    if ask is None:
        def ask() -> str:
            # On stderr: stdout may be carrying --json.
            return str(typer.prompt(
                "Which cloud? local (free, simulated workers), aws or azure (billed by the hour)",
                err=True,
            ))

    answer = ask().strip().lower()
    if answer not in config.CLOUDS:
        raise InvalidInputError(f"unknown cloud {answer!r}: choose local, aws or azure")
    return answer


def ensure_engine(cloud: str) -> None:
    """The provider can run here; a missing Pulumi CLI is installed after asking (on a terminal
    only: elsewhere the one-line error stands, naming ``oa-vm doctor --fix``).

    Raises:
        ProviderUnavailableError: a missing extra, or a missing engine not installed.
    """
    from oa_vm import api
    from oa_vm.clouds import get_provider

    try:
        api.check_available(cloud)
    except ProviderUnavailableError as exc:
        from oa_vm.cli.doctor import check_pulumi, install_pulumi

        # Only the Pulumi-driven clouds (those that build images) need the engine offered.
        pulumi_cloud = Capability.IMAGES in get_provider(cloud).capabilities
        if not pulumi_cloud or check_pulumi().ok or not sys.stdin.isatty():
            raise
        if not typer.confirm(f"{exc}.\nInstall the Pulumi CLI into the oa-vm home now?",
                             default=False, err=True):
            raise
        install_pulumi(progress=typer.echo)
        api.check_available(cloud)


def preflight(spec: PoolSpec) -> None:
    """The checks before anything is shown, asked, created or recorded: the name is free, then
    the provider's own (cloud pools: the size and a prepared image; local pools have none).

    Raises:
        PoolExistsError: a pool of that name exists (before any plan is printed).
        CorruptRecordError: one of that name exists, its record unreadable.
        InvalidInputError: the oa-vm home cannot be written.
    """
    from oa_vm.clouds import check_name_free, get_provider
    from oa_vm.model import state

    check_name_free(spec.name)
    problem = state.home_problem()  # else the plan is shown and the record's write fails
    if problem:
        raise InvalidInputError(problem)

    check = getattr(get_provider(spec.cloud), "preflight", None)
    if check is not None:
        check(spec)


def needs_image_build(spec: PoolSpec) -> bool:
    """True when ``--build-image`` was given and the first region has no usable image."""
    from oa_vm.clouds import get_provider

    provider = get_provider(spec.cloud)
    choose = getattr(provider, "choose_image", None)
    if not spec.build_image or choose is None or spec.image:
        return False
    return choose(spec, first_region(spec)) is None


def first_region(spec: PoolSpec) -> str:
    """The first region a create tries (the provider's default when none was given)."""
    if spec.regions:
        return spec.regions[0]
    from oa_vm.clouds import get_provider

    info = getattr(get_provider(spec.cloud), "info", None)
    return str(getattr(info, "default_region", ""))


def wait_timeout(record: PoolRecord, given: str) -> float:
    """Seconds ``pool-wait`` waits: ``given`` (``30m``, ``90s``...), or with ``auto`` what the
    pool's record says its start takes (from an image: :data:`oa_vm.kit.timings.WARM_READY` times
    :data:`oa_vm.kit.timings.WAIT_MARGIN`, which covers the first pool from a new AWS snapshot,
    :data:`oa_vm.kit.timings.FIRST_POOL_READY`)."""
    from oa_vm.kit.durations import parse_duration

    if given != "auto":
        return parse_duration(given)
    value = record.settings.get("wait_timeout_s")
    return float(value) if isinstance(value, (int, float)) and value > 0 else DEFAULT_WAIT_S


class Heartbeat:
    """Prints one line per worker when its phase changes, and at least every ``every_s``
    otherwise, with the time spent in the phase and the worker's detail (its last log line)."""

    def __init__(
        self,
        echo: Callable[[str], None],
        every_s: float = HEARTBEAT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.echo = echo
        self.every_s = every_s
        self.clock = clock
        self.started = clock()
        self._phase: dict[str, tuple[str, float]] = {}
        self._printed: dict[str, float] = {}

    def __call__(self, record: PoolRecord) -> None:
        """Show ``record``'s workers (called by the wait after every pass)."""
        from oa_vm.kit.durations import format_duration

        now = self.clock()
        for worker in record.workers:
            phase = worker.phase or worker.state.value
            seen = self._phase.get(worker.name)
            changed = seen is None or seen[0] != phase
            if changed:
                self._phase[worker.name] = (phase, now)
            since = self._phase[worker.name][1]
            due = now - self._printed.get(worker.name, -self.every_s) >= self.every_s
            if not (changed or due):
                continue
            self._printed[worker.name] = now
            line = (f"[{format_duration(now - self.started):>6}] {worker.name}: {phase} "
                    f"({format_duration(now - since)} in this phase)")
            if worker.detail:
                detail = worker.detail
                if detail.startswith(phase):  # "failed at kvm: ..." under phase "failed at kvm"
                    detail = detail[len(phase):].lstrip(": ")
                line += f" - {detail}"
            self.echo(line)
