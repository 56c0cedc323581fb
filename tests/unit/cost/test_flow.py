"""The flow preflight and dry-run planning (no CLI)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.compat.flow import (
    count_bundles,
    missing_bundles,
    plan_dry_run,
    read_task_ids,
    resolve_vm_price,
    split_task_ids,
)
from evals.results.cost import EstimateInput, Mode
from oa_vm.cost import pricing
from oa_vm.errors import InvalidInputError


def _bundles(root: Path, *task_ids: str) -> Path:
    for task_id in task_ids:
        (root / task_id).mkdir(parents=True)
        (root / task_id / "workflow.json").write_text("{}", encoding="utf-8")
    return root


def test_missing_bundles_keeps_the_given_order(tmp_path: Path) -> None:
    root = _bundles(tmp_path / "b", "a", "c")
    (root / "d").mkdir()  # a folder without workflow.json is not a bundle
    assert missing_bundles(["d", "a", "b", "c"], root) == ["d", "b"]
    assert missing_bundles([], root) == []
    assert missing_bundles(["a"], tmp_path / "absent") == ["a"]


def test_count_bundles(tmp_path: Path) -> None:
    root = _bundles(tmp_path / "b", "a", "c")
    assert count_bundles(root, None).present == 2
    counted = count_bundles(root, ["a", "x"])
    assert (counted.present, counted.missing) == (1, ("x",))
    with pytest.raises(InvalidInputError, match="nope does not exist"):
        count_bundles(tmp_path / "nope", None)


def test_task_ids_from_text_and_file(tmp_path: Path) -> None:
    assert split_task_ids("a, b,,a\nc # comment\n# all comment") == ["a", "b", "c"]
    ids_file = tmp_path / "ids.txt"
    ids_file.write_text("x-1\nx-2, x-3\n", encoding="utf-8")
    assert read_task_ids(f"@{ids_file}") == ["x-1", "x-2", "x-3"]
    with pytest.raises(InvalidInputError, match="the task ID file .*missing.txt does not exist"):
        read_task_ids(f"@{tmp_path / 'missing.txt'}")
    with pytest.raises(InvalidInputError, match="no task IDs"):
        read_task_ids(" , ")


def test_vm_price_from_flag_default_and_catalog(oa_home: Path) -> None:
    default = resolve_vm_price(vm_hourly=None, cloud=None)
    shipped = pricing.load_catalog().lookup("aws", "us-east-1", "m8i.2xlarge")
    assert (default.hourly, default.origin, default.cloud, default.size, default.region) == (
        shipped.on_demand, "catalog", "aws", "m8i.2xlarge", "us-east-1")
    assert default.defaulted == ("cloud", "size", "region")
    sized = resolve_vm_price(vm_hourly=None, cloud=None, size="c8i.2xlarge", spot=True)
    assert (sized.cloud, sized.size, sized.spot, sized.defaulted) == (
        "aws", "c8i.2xlarge", True, ("cloud", "region"))
    assert resolve_vm_price(vm_hourly=0.46, cloud=None).hourly == 0.46
    price = resolve_vm_price(vm_hourly=None, cloud="aws", spot=True)
    entry = pricing.load_catalog().lookup("aws", "us-east-1", "m8i.2xlarge")
    assert (price.hourly, price.size, price.region, price.origin) == (
        entry.spot, "m8i.2xlarge", "us-east-1", "catalog",
    )
    assert price.date == entry.spot_date
    assert "spot, aws m8i.2xlarge in us-east-1" in price.describe()


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"vm_hourly": -1.0, "cloud": None}, "from 0 to 10000"),
        ({"vm_hourly": float("inf"), "cloud": None}, "from 0 to 10000"),
        ({"vm_hourly": 1e308, "cloud": None}, "from 0 to 10000"),
        ({"vm_hourly": 0.3, "cloud": "aws"}, "not both"),
        ({"vm_hourly": 0.3, "cloud": None, "size": "m8i.2xlarge"}, "--price-per-hour or --size"),
        ({"vm_hourly": 0.3, "cloud": None, "spot": True, "region": "x"}, "--region, --spot"),
        ({"vm_hourly": None, "cloud": None, "region": "mars"}, "known regions: us-east-1"),
        ({"vm_hourly": None, "cloud": "aws", "size": "t3.nano"}, "known sizes: m8i.2xlarge"),
        ({"vm_hourly": None, "cloud": "azure", "region": "mars"}, "known regions: eastus"),
    ],
)
def test_vm_price_bad_input(oa_home: Path, kwargs: dict[str, object], fragment: str) -> None:
    with pytest.raises(InvalidInputError, match=fragment):
        resolve_vm_price(**kwargs)  # type: ignore[arg-type]


def test_plan_defaults_to_the_full_suite(oa_home: Path) -> None:
    plan = plan_dry_run(
        n_tasks=None, task_ids=None, bundles_dir=None, inputs=EstimateInput(n_tasks=1),
        price=resolve_vm_price(vm_hourly=None, cloud=None),
    )
    assert plan.estimate.n_tasks == 154 and plan.full_suite is None


def test_plan_of_ids_adds_the_full_suite_row(tmp_path: Path) -> None:
    root = _bundles(tmp_path / "b", "t1")
    plan = plan_dry_run(
        n_tasks=None, task_ids=["t1", "t2"], bundles_dir=root,
        inputs=EstimateInput(n_tasks=1, mode=Mode.HYBRID, workers=2),
        price=resolve_vm_price(vm_hourly=0.5, cloud=None),
    )
    assert plan.estimate.n_tasks == 2 and plan.estimate.vm_hourly == 0.5
    assert plan.full_suite is not None and plan.full_suite.n_tasks == 154
    assert plan.bundles is not None and plan.bundles.missing == ("t2",)
    data = plan.to_json()
    assert data["dry_run"] is True and data["plan"]["task_ids"] == ["t1", "t2"]


def test_plan_refuses_a_count_and_ids() -> None:
    with pytest.raises(InvalidInputError, match="not both"):
        plan_dry_run(
            n_tasks=3, task_ids=["a"], bundles_dir=None, inputs=EstimateInput(n_tasks=1),
            price=resolve_vm_price(vm_hourly=None, cloud=None),
        )
