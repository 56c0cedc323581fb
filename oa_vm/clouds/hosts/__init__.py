"""The ``ssh`` provider: pools on Linux hosts the user names and owns (KVM over SSH).

Everything about these hosts lives in this folder: :mod:`.facts` (a host's address, what its
probe found, and how many of WAA's workers fit on it: pure functions), :mod:`.probe` (the
read-only probe over SSH, ``infra/worker/host_probe.sh``) and :mod:`.provider` (the provider the
registry names). Several workers share a host through the slots of
:mod:`infra.worker.slots`.
"""

from __future__ import annotations

from oa_vm.clouds.declared import ProviderFacts

FACTS = ProviderFacts(options=frozenset({"--price-per-hour", "--host", "--purge", "--iso",
                                         "--egress"}))
"""What the ``ssh`` provider declares (:class:`~oa_vm.clouds.declared.ProviderFacts`)."""
