"""Every time figure oa-vm plans with, in one place, each saying whether it was measured.

A plan, a deadline, a progress line and the docs all read their figures here, so an image build
is "about 2 h (1.5-3 h)" everywhere instead of five different numbers. Each :class:`Timing`
carries its range, its basis (:data:`ESTIMATED` or :data:`MEASURED`) and where it comes from;
:meth:`Timing.text` prints the three together. No figure below has been timed on a cloud yet:
they follow a review of what each step does (``docs/providers.md``, "The first run, phase by
phase") and are to be replaced by measured ones (``oa-vm smoke`` prints each phase's
duration); a replaced figure changes its basis to :data:`MEASURED` and its source to the run.

Pure data and formatting: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

ESTIMATED = "estimated"
MEASURED = "measured"


@dataclass(frozen=True)
class Timing:
    """One duration: its typical value, its range, its basis and its source.

    Attributes:
        what: what takes this long (``an image build``).
        typical_s: the figure plans add up, in seconds.
        low_s, high_s: the range it is expected in (the slow end sizes deadlines).
        basis: :data:`ESTIMATED` or :data:`MEASURED`.
        source: where the figure comes from, in a few words.
    """

    what: str
    typical_s: float
    low_s: float
    high_s: float
    basis: str
    source: str

    def text(self) -> str:
        """``about 2 h (1.5-3 h, estimated)``: the figure, its range and its basis."""
        span = "" if self.low_s == self.high_s else f"{span_text(self.low_s, self.high_s)}, "
        return f"{about(self.typical_s)} ({span}{self.basis})"


def about(seconds: float) -> str:
    """``about 20 min``, ``about 2 h``, ``about 2 h 20 min``."""
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"about {minutes} min"
    hours, rest = divmod(minutes, 60)
    return f"about {hours} h" + (f" {rest} min" if rest else "")


def span_text(low_s: float, high_s: float) -> str:
    """``15-35 min`` or ``1.5-3 h`` (hours once both ends are at least an hour)."""
    if low_s >= 3600 and high_s >= 3600:
        return f"{low_s / 3600:g}-{high_s / 3600:g} h"
    return f"{round(low_s / 60)}-{round(high_s / 60)} min"


_REVIEW = "a review of each step, docs/providers.md; not yet timed on a cloud"

IMAGE_BUILD = Timing(
    "an image build", 2 * 3600, 1.5 * 3600, 3 * 3600, ESTIMATED,
    "pull the WAA and dockur images, download the Windows ISO, install Windows and WAA's apps "
    "under nested virtualization, shut down; " + _REVIEW,
)
"""Building a region's prepared image, from the builder's boot to its shutdown."""

WARM_READY = Timing(
    "a pool from a prepared image", 20 * 60, 10 * 60, 20 * 60, ESTIMATED,
    "boot, load the worker image, start Windows from the prepared disk; " + _REVIEW,
)
"""A worker from a prepared image whose blocks are warm in the region."""

FIRST_POOL_READY = Timing(
    "the first pool from a new AWS image", 25 * 60, 15 * 60, 35 * 60, ESTIMATED,
    "an EBS volume from a new snapshot reads each block from S3 when first touched; "
    + _REVIEW,
)
"""The first pool of a region from a new AWS snapshot (its blocks fetched lazily)."""

SNAPSHOT_STAGE = Timing(
    "the snapshot stage of an image build", 3600, 3600, 3 * 3600, ESTIMATED,
    "a first full snapshot of a 40-60 GB volume, the builder still running; the slow end is "
    "the snapshot resource's own timeout (SNAPSHOT_TIMEOUTS, infra/image_aws.py and "
    "infra/image_azure.py)",
)
"""From the builder's shutdown to a ready snapshot (the builder bills meanwhile)."""

FIRST_POOL_WAIT_S = 70 * 60
"""``pool-wait``'s deadline for a pool from an image (and smoke's, sweep's, a repair's): the host's
own budget for a first pool from a new AWS snapshot (``bootstrap.sh``: up to 5 min for the volume,
loading the worker image from it, 35 min for Windows, 5 for the scorer), with room for the boot,
cloud-init and that load. A deadline, not an estimate: a shorter wait gives up on a worker that
its own bootstrap still expects to come up."""

WAIT_MARGIN = 2.0
"""Deadlines are the typical figure times this margin: twice covers the slow end of each range
(a 3 h build within 4 h, a 35 min first pool within 40 min)."""

REPLAY_TASK = Timing(
    "one replayed task", 60, 60, 60, ESTIMATED,
    "the reference dry run's 1.0 VM-minute per replayed task",
)
"""VM time of one task replayed from its compiled workflow (no model calls)."""

AGENT_TASK = Timing(
    "one agent task", 3 * 60, 3 * 60, 3 * 60, ESTIMATED,
    "the reference dry run's 3.0 VM-minutes per agent task",
)
"""VM time of one task played by an agent (model calls, actions, screenshots, the checker)."""

REFERENCE_STARTUP = Timing(
    "the reference dry run's start-up", 15 * 60, 15 * 60, 15 * 60, ESTIMATED,
    "the reference dry run's 0.25 h per worker, kept so its figures reproduce exactly",
)
"""The start-up the reference's cost formula charges each worker (``openadapt-eval-flow``); a
cloud pool's own is :data:`WARM_READY` (or :data:`FIRST_POOL_READY`), which sweep plans use."""

ALL = (IMAGE_BUILD, SNAPSHOT_STAGE, WARM_READY, FIRST_POOL_READY, REPLAY_TASK, AGENT_TASK,
       REFERENCE_STARTUP)
"""Every figure, for the docs' table and its test."""


def deadline_s(timing: Timing) -> float:
    """How long a wait on ``timing`` may take: its typical figure times :data:`WAIT_MARGIN`."""
    return timing.typical_s * WAIT_MARGIN
