"""Fault knobs of local pools (``--fault KEY=VALUE``), checked before any process starts.

The rule is the simulated worker's own (:func:`infra.local.faults.parse_faults`), which reads
them again at its start: a value it would refuse (``latency=3601``, ``hang-after=1.5``) fails
here in one line, before a pool record or a process exists, rather than as a worker that
exited during start-up.
"""

from __future__ import annotations

from infra.local.faults import FaultError, parse_faults
from oa_vm.errors import InvalidInputError


def validate_faults(faults: dict[str, str]) -> dict[str, str]:
    """``faults`` as given, once the simulated worker's rule accepts them.

    Raises:
        InvalidInputError: an unknown knob or a value out of its range (the message names it).
    """
    try:
        parse_faults(faults)
    except FaultError as exc:
        raise InvalidInputError(str(exc)) from None
    return faults
