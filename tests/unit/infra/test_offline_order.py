"""An offline run records what a program declared in the program's own order, whatever order
Pulumi registers it in. A resource whose inputs wait on another registers after resources
declared later; the record, the stand-in addresses and the order of input keys must not
follow that timing (a plan made from them is read, diffed and approved)."""

from __future__ import annotations

from typing import Any

import pulumi

from infra.offline import OfflineRun, run_offline

MACHINE = "aws:ec2/instance:Instance"
CHAIN = [f"chain-{i}" for i in range(6)]
FREE = [f"free-{i}" for i in range(6)]
DECLARED = CHAIN + FREE
# Keys given in reverse: the wire's maps carry no order, and a process reads them back in an
# order of its own (its hash seed), as a plan's --json showed.
KEYS = [f"key{i:02d}" for i in range(16)][::-1]


def _no_lookups(token: str, args: Any) -> dict[str, Any]:
    raise AssertionError(f"no data-source call expected: {token}")


def _program() -> dict[str, Any]:
    """A chain of machines, each waiting on the one before's ID (so each registers a round
    trip after it), then free machines that wait on nothing: Pulumi registers the free ones
    while the chain is still resolving. Returns each machine's stand-in public address."""
    addresses: dict[str, Any] = {}
    previous: pulumi.Output[str] | None = None
    for name in DECLARED:
        # keys given out of order, the nested ones too; publicIp is read back (an output)
        inputs: dict[str, Any] = {key: name for key in KEYS}
        inputs.update(nested={key: 1 for key in KEYS}, publicIp=None)
        if previous is not None and name in CHAIN:
            inputs["after"] = previous
        machine = pulumi.CustomResource(MACHINE, name, inputs)
        previous = machine.id
        addresses[name] = machine.publicIp  # type: ignore[attr-defined]
    return addresses


def _run() -> OfflineRun:
    return run_offline(_program, _no_lookups, project="order", stack="test")


def test_the_record_the_stand_ins_and_the_keys_are_the_same_on_every_run() -> None:
    runs = [_run() for _ in range(5)]
    for run in runs:
        assert [r.name for r in run.resources if r.custom] == DECLARED
        for resource in run.resources:
            if resource.custom:
                assert list(resource.inputs) == sorted(resource.inputs), resource.inputs
                assert list(resource.inputs["nested"]) == sorted(KEYS), resource.inputs
    # one stand-in address per machine, its own, and the same on every run
    assert all(run.result == runs[0].result for run in runs), [run.result for run in runs]
    assert len(set(runs[0].result.values())) == len(DECLARED), runs[0].result
