"""Power state of a pool's AWS instances, declared beside the pool program (pause and resume).

``oa-vm pool-pause`` on AWS runs the pool's own program again with every instance's power
state declared ``stopped`` (``aws.ec2transitgateway.InstanceState``, the provider's instance
state resource, despite its module): the instances stop, their volumes stay and bill as
storage only. ``pool-resume`` declares them ``running``. The program itself is unchanged, so
nothing is replaced: same settings, same resources, one more resource per worker.

Azure has no such resource in its native provider: Azure pools are deallocated by the driver
(:mod:`oa_vm.clouds.pulumi.fleet`).
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_aws as aws

from infra.settings import PoolSettings

STOPPED = "stopped"
RUNNING = "running"


def declare_power_states(pool: Any, settings: PoolSettings, *, paused: bool) -> list[Any]:
    """One instance state resource per worker of ``pool`` (an ``AwsWorkerPool``).

    The worker's instance ID comes from the pool's ``workers`` output (``instance_id``), in
    worker order; the resources are the pool's children, so they use its region's provider.
    """
    states = []
    for index, worker in enumerate(settings.worker_names()):
        instance_id = pool.workers.apply(lambda ws, i=index: ws[i]["instance_id"])
        states.append(
            aws.ec2transitgateway.InstanceState(
                f"{worker}-power",
                instance_id=instance_id,
                state=STOPPED if paused else RUNNING,
                opts=pulumi.ResourceOptions(parent=pool),
            )
        )
    return states
