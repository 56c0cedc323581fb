"""A local pool larger than this machine's memory is refused before anything is shown or
started (its plan, ``pool-create``, ``sweep``, the Python API's ``create_pool``:
:mod:`oa_vm.clouds.local.memory`), naming what would fit; the memory left is the
kernel's figure, or a container's limit where that is tighter."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from oa_vm import api
from oa_vm.clouds.local import memory
from oa_vm.errors import InvalidInputError


def test_what_fits_is_said_with_the_way_to_get_there() -> None:
    # 3 single-worker processes: 3 x (34 + 6) MB
    assert memory.needed_mb(3, 1) == 120
    assert memory.memory_problem(3, 1, available=120) is None
    said = memory.memory_problem(100, 1, available=2000)
    assert said is not None
    assert said.startswith("--workers 100: 100 local worker process(es) need about 3.9 GB of "
                           "memory, and this machine has 2.0 GB available; ")
    # 50 single-worker processes take 2000 MB; 100 workers three a process 34 x 34 + 600
    assert "use at most --workers 50, or serve 3 workers from each process " \
           "(oa-vm pool-create --per-process 3)" in said
    assert memory.needed_mb(50, 1) <= 2000 < memory.needed_mb(51, 1)
    assert memory.needed_mb(100, 3) <= 2000 < memory.needed_mb(100, 2)
    # already grouped as far as it goes: fewer workers only
    grouped = memory.memory_problem(1000, memory.MAX_PER_PROCESS, available=5000)
    assert grouped is not None and grouped.endswith("; use at most --workers 788")
    assert memory.memory_problem(1, 1, available=10) == (
        "--workers 1: 1 local worker process(es) need about 0.0 GB of memory, and this machine "
        "has 0.0 GB available; free some memory first")


def test_the_tightest_control_group_is_what_is_left(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    mib = 2**20
    monkeypatch.setattr("psutil.virtual_memory", lambda: SimpleNamespace(available=8000 * mib))
    groups = tmp_path / "cgroup"
    own = tmp_path / "self-cgroup"
    monkeypatch.setattr(memory, "_CGROUPS", groups)
    monkeypatch.setattr(memory, "_OWN_GROUPS", own)

    def group(folder: Path, limit: str, used: str, names: tuple[str, str]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / names[0]).write_text(limit + "\n")
        (folder / names[1]).write_text(used + "\n")

    own.write_text("0::/box\n")
    assert memory.available_mb() == 8000  # no such group: the machine's figure
    group(groups / "box", "max", str(100 * mib), memory._V2)
    assert memory.available_mb() == 8000  # no limit
    group(groups / "box", str(3000 * mib), str(1000 * mib), memory._V2)
    assert memory.available_mb() == 2000
    # cgroup v1's memory controller, seen at the mount's root (a container's own view)
    own.write_text("4:memory:/docker/abc\n1:cpu:/\n")
    group(groups / "memory", str(1500 * mib), str(500 * mib), memory._V1)
    assert memory.available_mb() == 1000
    group(groups / "memory", str(2**63 - 4096), str(500 * mib), memory._V1)  # "no limit"
    assert memory.available_mb() == 8000
    own.unlink()
    assert memory.available_mb() == 8000


def test_a_local_pool_memory_cannot_hold_is_neither_planned_nor_made(
    oa_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Refused by the plan and by the create, nothing written; the spec itself is not refused,
    as it also names a pool that runs already (a resumed sweep's)."""
    monkeypatch.setattr(memory, "available_mb", lambda: 500.0)
    spec = api.build_spec(name="m1", cloud="local", workers=20)
    said = (r"^--workers 20: 20 local worker process\(es\) need about 0\.8 GB of memory, and "
            r"this machine has 0\.5 GB available; use at most --workers 12, or serve 2 workers "
            r"from each process \(oa-vm pool-create --per-process 2\)$")
    with pytest.raises(InvalidInputError, match=said):
        api.plan_pool(spec)
    with pytest.raises(InvalidInputError, match=said):
        api.create_pool(spec)
    assert not oa_home.exists() or not any(oa_home.rglob("*.json"))
    assert api.plan_pool(api.build_spec(name="m1", cloud="local", workers=12)).workers == 12
    assert api.plan_pool(api.build_spec(name="m1", cloud="local", workers=20,
                                        per_process=2)).workers == 20
