"""What a cloud declares as data (:class:`ProviderFacts`), in a module cheap enough for start-up.

A plain class, not a dataclass: ``dataclasses`` loads ``inspect``, and ``oa-vm pool-status``
reads a cloud's ``FACTS`` on its fast path (start-up time; ``infra.sizes.SizeSpec`` likewise).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not loaded at run time (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable

    from oa_vm.cost.pool_cost import Billing


class ProviderFacts:
    """What a provider declares as data beside its :class:`~oa_vm.clouds.base.Capability` set,
    readable without loading the provider: each cloud's package
    (``oa_vm/clouds/<name>/__init__.py``) holds its ``FACTS``, read by
    :func:`oa_vm.clouds.facts`. Code outside ``oa_vm/clouds/`` asks these and never compares a
    cloud's name.

    Attributes:
        max_workers: The most workers one pool may have.
        options: The ``pool-create`` options it takes beyond those every provider takes
            (``--fault``, ``--per-process``, ``--host``, ``--allow-cidr``, ``--size`` ...);
            such an option given for a cloud that does not declare it is refused
            (:func:`oa_vm.api.build_spec`), never ignored.
        simulated: Its workers are processes of this machine (the local pool): checking them
            costs no network call (so every status does, ``refresh(network=False)``; asking
            them whether they answer is ``--refresh``'s), the workers run no WAA of their
            own, and a failed create that recorded no worker left nothing behind.
        billing: How what the pool keeps bills (disks, addresses:
            :class:`oa_vm.cost.pool_cost.Billing`); None: it rents nothing.
        cli: The cloud's own command-line tool (``aws``), for listing an account's images.
        slow_first_pool: A new image's first pool is slow (blocks fetched lazily from the
            snapshot: AWS).
        check_size: Returns a size that runs WAA (nested virtualization), raises
            ``ValueError`` for one that does not; None: the provider has no sizes.
    """

    __slots__ = ("billing", "check_size", "cli", "max_workers", "options", "simulated",
                 "slow_first_pool")

    def __init__(self, *, max_workers: int = 256, options: frozenset[str] = frozenset(),
                 simulated: bool = False, billing: Billing | None = None,
                 cli: str | None = None, slow_first_pool: bool = False,
                 check_size: Callable[[str], str] | None = None) -> None:
        self.max_workers = max_workers
        self.options = options
        self.simulated = simulated
        self.billing = billing
        self.cli = cli
        self.slow_first_pool = slow_first_pool
        self.check_size = check_size
