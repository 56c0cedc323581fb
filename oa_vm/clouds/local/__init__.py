"""The local pool: simulated workers as processes on this machine, the default for the quick start
and the tests."""

from __future__ import annotations

from oa_vm.clouds.declared import ProviderFacts

FACTS = ProviderFacts(
    max_workers=1000,  # several per process (--per-process), for scale tests
    options=frozenset({"--per-process", "--price-per-hour", "--fault", "--ssh-via",
                       "--tasks-dir", "--egress"}),
    simulated=True,
)
"""What the local provider declares (:class:`~oa_vm.clouds.declared.ProviderFacts`)."""
