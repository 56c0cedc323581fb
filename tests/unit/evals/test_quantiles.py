"""The quantiles of :mod:`evals.results.quantiles` against scipy's, over the ranges the
statistics use (t at 0.975 with 1 to 153+ degrees of freedom, Gamma lower quantiles of shapes
below 3.5 at 5%) and well beyond them; and a summarizing command imports neither numpy nor
scipy, which is why the module exists."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
from scipy import special

from evals.results import quantiles

DFS = [0.5, 1, 1.5, 2, 3, 4, 5, 7, 10, 23, 24, 50, 99, 153, 500, 1000, 1e4, 5e4]
"""Degrees of freedom: tasks - 1 (WAA has 154 tasks). At a million the figures still agree
to 1e-9 (``lgamma`` of a large shape rounds)."""
PS = [1e-10, 1e-6, 1e-3, 0.01, 0.025, 0.05, 0.1, 0.3, 0.5, 0.51, 0.7, 0.9, 0.95, 0.975,
      0.99, 0.995, 0.999, 1 - 1e-6]
SHAPES = [0.01, 0.05, 0.1, 0.3, 0.5, 0.9, 1, 1.3, 2, 2.5, 3, 3.5, 5, 10, 30, 100, 1000]
REL = 1e-10


@pytest.mark.parametrize("df", DFS)
def test_t_quantiles_are_scipys(df: float) -> None:
    for p in PS:
        assert quantiles.t_quantile(df, p) == pytest.approx(special.stdtrit(df, p), rel=REL,
                                                            abs=1e-300), p


@pytest.mark.parametrize("df", DFS)
def test_the_t_cdf_is_scipys_and_keeps_a_small_tails_digits(df: float) -> None:
    for t in [-1e3, -50, -10, -3, -2.06, -1, -0.1, 0, 0.1, 1, 2.06, 3, 10, 50, 1e3]:
        assert quantiles.t_cdf(df, t) == pytest.approx(special.stdtr(df, t), rel=REL), t


def test_the_t_cdf_near_zero_is_exact_where_scipy_rounds() -> None:
    # With one degree of freedom t is Cauchy: 1/2 + atan(t)/pi exactly. scipy's stdtr is off
    # by ~3e-9 at t = -1e-8; this is not.
    for t in (-1e-8, 1e-8, -1e-12):
        assert quantiles.t_cdf(1, t) == pytest.approx(0.5 + math.atan(t) / math.pi, rel=1e-14)


@pytest.mark.parametrize("shape", SHAPES)
def test_gamma_quantiles_and_cdf_are_scipys(shape: float) -> None:
    for p in [1e-8, 1e-4, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 0.9, 0.95, 0.99, 0.999]:
        assert quantiles.gamma_quantile(shape, p) == pytest.approx(
            special.gammaincinv(shape, p), rel=REL), p
    for x in [1e-5, 0.01, 0.5, 1, 2, 5, 20, 100, 1200]:
        assert quantiles.gamma_cdf(shape, x) == pytest.approx(
            special.gammainc(shape, x), rel=REL, abs=1e-290), x


def test_the_normal_quantile_is_scipys() -> None:
    for p in PS:
        assert quantiles.normal_quantile(p) == pytest.approx(special.ndtri(p), rel=1e-14)


@pytest.mark.parametrize(("call", "args"), [
    (quantiles.t_quantile, (0, 0.5)), (quantiles.t_quantile, (3, 0.0)),
    (quantiles.t_quantile, (3, 1.0)), (quantiles.gamma_quantile, (0, 0.05)),
    (quantiles.gamma_quantile, (2, 1.0)), (quantiles.gamma_quantile, (-1, 0.5)),
])
def test_a_quantile_outside_its_domain_is_refused(call: object, args: tuple[float, float]) -> None:
    with pytest.raises(ValueError):
        call(*args)  # type: ignore[operator]


def test_summarizing_a_run_imports_neither_numpy_nor_scipy() -> None:
    code = (
        "import sys\n"
        "from evals.results import stats\n"
        "from evals.run import metrics\n"
        "stats.clustered_interval([1, 0, 2, 5], [5, 5, 5, 5])\n"
        "stats.success_rate_interval([1, 0, 1], [1, 1, 1])\n"
        "stats.mean_score_interval([[0.5, 1.0], [0.0, 0.25], [1.0, 1.0]])\n"
        "stats.modified_wilson_interval(1.4, 24.0)\n"
        "stats.paired_difference([[1.0], [0.0], [1.0]], [[1.0], [1.0], [1.0]])\n"
        "print(sorted(m for m in ('numpy', 'scipy') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
