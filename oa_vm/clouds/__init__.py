"""Provider registry: cloud name -> provider class, imported only when used.

Keeping the registry as dotted strings means ``import oa_vm.clouds`` loads no cloud SDK; the
AWS and Azure providers import Pulumi inside their methods.
"""

from __future__ import annotations

import importlib

from oa_vm.clouds.declared import ProviderFacts
from oa_vm.errors import (
    InvalidInputError,
    PoolExistsError,
    PoolNotFoundError,
    ProviderUnavailableError,
    StackWithoutRecordError,
)

TYPE_CHECKING = False  # typing and the contract are not loaded at run time (start-up time)
if TYPE_CHECKING:
    from collections.abc import Iterator

    from oa_vm.clouds.base import Provider
    from oa_vm.errors import CorruptRecordError
    from oa_vm.model.state import PoolRecord

_REGISTRY: dict[str, str] = {
    "local": "oa_vm.clouds.local.provider:LocalProvider",
    "aws": "oa_vm.clouds.aws.provider:AwsProvider",
    "azure": "oa_vm.clouds.azure.provider:AzureProvider",
    "ssh": "oa_vm.clouds.hosts.provider:SshHostsProvider",
}

def known_clouds() -> list[str]:
    """Names accepted by ``--cloud``."""
    return list(_REGISTRY)


def facts(cloud: str) -> ProviderFacts:
    """What the provider for ``cloud`` declares as data (:class:`ProviderFacts`), read from its
    package's ``FACTS`` (a provider module outside a package: its own) without loading the
    provider; an unknown name declares nothing (the defaults), so a record of a cloud this
    installation lacks still lists."""
    target = _REGISTRY.get(cloud)
    if target is None:
        return ProviderFacts()
    module = target.partition(":")[0]
    declared = getattr(importlib.import_module(module.rpartition(".")[0] or module), "FACTS", None)
    return declared if isinstance(declared, ProviderFacts) else ProviderFacts()


def rents_nothing(cloud: str) -> bool:
    """Whether ``cloud``'s pools rent nothing (a provider that declares no billing: the local
    pool, your own hosts), so that they cost $0.00 an hour unless given a price."""
    return cloud in _REGISTRY and facts(cloud).billing is None


def price_per_hour(record: PoolRecord) -> float | None:
    """A worker's $/hour, the one rule of every reader: the record's price; without one (a
    record of an earlier oa-vm, which priced nothing it did not rent) $0.00 if its cloud rents
    nothing, else unknown (None)."""
    if record.price_per_hour is not None:
        return record.price_per_hour
    return 0.0 if rents_nothing(record.cloud) else None


def size_nests(cloud: str, size: str) -> bool:
    """Whether ``size`` of ``cloud`` runs WAA (nested virtualization: its
    :attr:`~oa_vm.clouds.declared.ProviderFacts.check_size` accepts it)."""
    check = facts(cloud).check_size
    try:
        return check is not None and bool(check(size))
    except ValueError:
        return False


def get_provider(cloud: str) -> Provider:
    """An instance of the provider for ``cloud``.

    Raises:
        InvalidInputError: unknown cloud name (the message lists the known ones).
        ProviderUnavailableError: the provider's module cannot be loaded here.
    """
    target = _REGISTRY.get(cloud)
    if target is None:
        raise InvalidInputError(
            f"unknown cloud {cloud!r}: choose one of {', '.join(known_clouds())}"
        )
    module_name, _, class_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise ProviderUnavailableError(
            f"the {cloud} provider is not available in this installation ({exc.name} is missing)"
        ) from exc
    provider: Provider = getattr(module, class_name)()
    return provider


def every_pool() -> Iterator[PoolRecord | CorruptRecordError]:
    """Every pool a listing shows: each record (:func:`oa_vm.model.state.iter_records`, the
    unreadable and missing ones as their error), then each stack oa-vm's Pulumi state holds
    that no record is of (its folder removed by hand) as :class:`StackWithoutRecordError`, so
    that what a cloud pool made never bills unseen. A record of another cloud does not hide a
    stack of its name; an unreadable record, whose cloud is unknown, does. The stacks are read
    from the state's files (:mod:`oa_vm.model.stacks`), never from the engine."""
    from oa_vm.model import state

    shown: dict[str, str | None] = {}  # pool -> its record's cloud (None: unreadable)
    for item in state.iter_records():
        if isinstance(item, state.PoolRecord):
            shown[item.name] = item.cloud
        else:
            shown[item.pool] = None
        yield item
    yield from (stack for stack in pool_stacks()
                if stack.pool not in shown or shown[stack.pool] not in (None, stack.cloud))


def load_pool(name: str) -> PoolRecord:
    """The record of the pool a command names (:func:`oa_vm.model.state.load`). A name with no
    record whose stack oa-vm's Pulumi state still holds (its folder removed by hand) is the pool
    :func:`every_pool` lists: the error says so and how to remove it, where "no pool named"
    would hide what may still bill.

    Raises:
        PoolNotFoundError: no record and no stack of that name.
        StackWithoutRecordError: no record, but a stack of that name.
        CorruptRecordError: the record cannot be read (nothing is deleted).
    """
    from oa_vm.model import state

    try:
        return state.load(name)
    except PoolNotFoundError:
        stack = next(pool_stacks(name), None)
        if stack is None:
            raise
        raise stack from None


def pool_names() -> list[str]:
    """The names of the pools :func:`every_pool` lists, without reading a record: each record's,
    then each stack's whose record was removed by hand (``--pool`` may be left out when there
    is one name)."""
    from oa_vm.model import state

    names = state.list_names()
    return names + [stack.pool for stack in pool_stacks() if stack.pool not in names]


def pool_exists(name: str) -> bool:
    """Whether a pool of that name exists: its record (readable or not), its local workers'
    folders (its record removed by hand: they may still run), or its stack in oa-vm's Pulumi
    state (its folder removed by hand), so that a new pool never takes the name, and with it the
    folder or the stack, of one whose workers may still run or bill."""
    from oa_vm.model import state

    return state.exists(name) or state.record_missing(name) or any(pool_stacks(name))


def check_name_free(name: str) -> None:
    """Refuse a new pool the name of one that exists (:func:`pool_exists`), with the advice
    that fits that pool's record.

    Raises:
        CorruptRecordError: its record cannot be read: fix or move the file, as every command
            that meets it says (``pool-cleanup`` refuses it too, so removing is no way out).
        PoolExistsError: it exists otherwise: pick another name, or remove it first.
    """
    from oa_vm.model import state

    if not pool_exists(name):
        return
    if state.exists(name):
        state.load(name)  # an unreadable record raises here, naming its file
    raise PoolExistsError(name)


def pool_stacks(name: str | None = None) -> Iterator[StackWithoutRecordError]:
    """Each pool's stack oa-vm's Pulumi state holds (the pool ``name``'s, or every one), read
    from the state's files, as the error it is for a pool without a record; whether the pool
    has one is the caller's to know."""
    from oa_vm.model.stacks import backend_dir, pool_project, stacks_of

    if not backend_dir().is_dir():  # no cloud pool was ever made here: nothing to read
        return
    from oa_vm.kit.validate import name_problem

    for cloud in known_clouds():
        for pool, path in stacks_of(pool_project(cloud)).items():
            if (name is None or pool == name) and name_problem("", pool) is None:
                yield StackWithoutRecordError(path, pool, cloud)
