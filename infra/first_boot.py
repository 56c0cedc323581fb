"""What a host reads only when it is created, and why an update never replaces a host for it.

A worker host's user data (AWS ``user_data_base64``, Azure ``osProfile.customData``: the
cloud-init :mod:`infra.worker.cloud_init` renders) is read once, at its first boot. Neither cloud
can change it on a running host without replacing it (AWS's instances are replaced for it;
Azure refuses to change a VM's custom data), yet it changes whenever oa-vm's shipped worker files
or the pool's expiry change. So each program declares it with ``ignore_changes``: an existing
host keeps what it was created with on every later update (``pool-extend``, a pause, a resume, a
repair, an upgrade of oa-vm), and only a new host (a repair's, a replacement for a draining one)
gets the current rendering. What a running host must learn later reaches it otherwise: its
expiry through its tags at boot and over SSH (:mod:`oa_vm.clouds.pulumi.timers`), the files that
change with oa-vm through ``pool-wait``'s delivery.
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi

AWS_INSTANCE: tuple[str, ...] = ("userDataBase64",)
"""An ``aws.ec2.Instance``'s inputs read only at its first boot (Pulumi's wire names)."""

AZURE_VM: tuple[str, ...] = ("osProfile.customData",)
"""An Azure ``VirtualMachine``'s inputs read only at its first boot (Pulumi's wire names)."""


def created_with(opts: pulumi.ResourceOptions, inputs: Sequence[str]) -> pulumi.ResourceOptions:
    """``opts`` with ``inputs`` (:data:`AWS_INSTANCE`, :data:`AZURE_VM`) kept as the host was
    created with: an update neither replaces nor changes a host for them."""
    return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(ignore_changes=list(inputs)))
