"""Quantiles of the normal, Student's t and Gamma distributions, and the t distribution's CDF,
for the intervals and tests of :mod:`evals.results.stats`.

Why not ``scipy.special`` (``ndtri``, ``stdtrit``, ``stdtr``, ``gammaincinv``), which gives the
same figures: importing it costs about 0.3 s of CPU, most of it in its array-API layer, which
imports numpy's ``testing``, ``f2py`` and ``ma`` packages (``python -X importtime -c "import
scipy.special"``). That was a third of the CPU of a 24-task local ``run``, paid again by every
command that summarizes a run (``run``, ``sweep``, ``view``, ``export``; ``bench/cli.py``).

What is here is textbook: the normal quantile is the standard library's
(:class:`statistics.NormalDist`, Wichura's algorithm AS 241, as scipy's ``ndtri`` is accurate to
double precision); the regularized incomplete gamma and beta functions are their power series and
continued fractions (evaluated by the modified Lentz method; Press et al., *Numerical Recipes*,
2nd ed., sections 5.2, 6.2 and 6.4), and each quantile inverts its CDF by Newton steps held
inside a bracket that bisection narrows whenever a step would leave it. They agree with scipy to
1e-10 relative over the ranges the project uses and well beyond (t up to 50,000 degrees of
freedom; 1e-9 at a million, where ``lgamma`` of the large shape rounds;
``tests/unit/evals/test_quantiles.py``). scipy stays for the comparison's vectorized power
simulation (:func:`evals.results.stats.score_pvalues`), which imports it only when it runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from statistics import NormalDist

_EPS = 1e-16
_TINY = 1e-300
_TERMS = 2000
"""Series and continued-fraction terms at most (far more than any argument here needs)."""
_STEPS = 200
"""Newton or bisection steps at most per quantile (bisection alone halves ~1e300 to 1e-300)."""


def normal_quantile(p: float) -> float:
    """The standard normal distribution's ``p`` quantile (scipy's ``ndtri``)."""
    return NormalDist().inv_cdf(p)


def _gamma_series(a: float, x: float) -> float:
    """``sum x^n / (a (a+1) ... (a+n))``: the regularized lower incomplete gamma function is
    this times ``x^a e^-x / Gamma(a)``; converges quickly for ``x < a + 1``."""
    term = total = 1.0 / a
    n = a
    for _ in range(_TERMS):
        n += 1.0
        term *= x / n
        total += term
        if abs(term) < abs(total) * _EPS:
            break
    return total


def _gamma_fraction(a: float, x: float) -> float:
    """The continued fraction of the regularized upper incomplete gamma function over
    ``x^a e^-x / Gamma(a)``; converges quickly for ``x >= a + 1``."""
    b = x + 1.0 - a
    c = 1.0 / _TINY
    d = 1.0 / b
    h = d
    for i in range(1, _TERMS):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = d if abs(d) >= _TINY else _TINY
        c = b + an / c
        c = c if abs(c) >= _TINY else _TINY
        d = 1.0 / d
        step = d * c
        h *= step
        if abs(step - 1.0) < _EPS:
            break
    return h


def gamma_cdf(shape: float, x: float) -> float:
    """The Gamma(``shape``, scale 1) distribution's CDF at ``x`` (the regularized lower
    incomplete gamma function, scipy's ``gammainc``)."""
    if x <= 0.0:
        return 0.0
    front = math.exp(shape * math.log(x) - x - math.lgamma(shape))
    if x < shape + 1.0:
        return min(1.0, front * _gamma_series(shape, x))
    return max(0.0, 1.0 - front * _gamma_fraction(shape, x))


def _gamma_pdf(shape: float, x: float) -> float:
    if x <= 0.0:
        return 0.0
    return math.exp((shape - 1.0) * math.log(x) - x - math.lgamma(shape))


@lru_cache(maxsize=256)
def gamma_quantile(shape: float, p: float) -> float:
    """The Gamma(``shape``, scale 1) distribution's ``p`` quantile (scipy's
    ``gammaincinv(shape, p)``, ``scipy.stats.gamma.ppf(p, shape)``).

    Raises:
        ValueError: ``shape`` is not positive or ``p`` is outside (0, 1).
    """
    if not shape > 0 or not 0.0 < p < 1.0:
        raise ValueError(f"need shape > 0 and 0 < p < 1, got shape {shape}, p {p}")
    # Two starts, the better one kept: where the CDF is ~x^a / Gamma(a + 1) (small x), and
    # Wilson and Hilferty's cube-root normal approximation (the rest).
    small = math.exp((math.log(p) + math.lgamma(shape + 1.0)) / shape)
    cube = 1.0 - 1.0 / (9.0 * shape) + normal_quantile(p) * math.sqrt(1.0 / (9.0 * shape))
    starts = [small] + ([shape * cube ** 3] if cube > 0 else [])
    start = min(starts, key=lambda x: abs(gamma_cdf(shape, x) - p))
    return _invert(lambda x: gamma_cdf(shape, x), lambda x: _gamma_pdf(shape, x), p, start)


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function ``I_x(a, b)``
    over ``x^a (1-x)^b / (a B(a, b))``; converges quickly for ``x < (a+1) / (a+b+2)``."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) >= _TINY else _TINY)
    h = d
    for m in range(1, _TERMS):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                   -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) >= _TINY else _TINY)
            c = 1.0 + aa / c
            c = c if abs(c) >= _TINY else _TINY
            step = d * c
            h *= step
        if abs(step - 1.0) < _EPS:
            break
    return h


def _beta_regularized(a: float, b: float, x: float, y: float) -> float:
    """``I_x(a, b)``, with ``y = 1 - x`` given as the caller computed it (exactly, where
    ``1 - x`` would round away a small ``y``)."""
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log(y))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, y) / b


def _t_upper(df: float, t: float) -> float:
    """``P(T > t)`` for ``t >= 0``, computed as such (a small tail keeps its digits)."""
    square = t * t
    return 0.5 * _beta_regularized(df / 2.0, 0.5, df / (df + square), square / (df + square))


def t_cdf(df: float, t: float) -> float:
    """Student's t distribution's CDF at ``t`` with ``df`` degrees of freedom (scipy's
    ``stdtr``); a small tail keeps its digits (a p-value far below 1e-16 too)."""
    if t == 0.0:
        return 0.5
    upper = _t_upper(df, abs(t))
    return 1.0 - upper if t > 0 else upper


def _t_pdf(df: float, t: float) -> float:
    return math.exp(math.lgamma((df + 1.0) / 2.0) - math.lgamma(df / 2.0)
                    - 0.5 * math.log(df * math.pi) - (df + 1.0) / 2.0 * math.log1p(t * t / df))


@lru_cache(maxsize=256)
def t_quantile(df: float, p: float) -> float:
    """Student's t distribution's ``p`` quantile with ``df`` degrees of freedom (scipy's
    ``stdtrit``, ``scipy.stats.t.ppf``).

    Raises:
        ValueError: ``df`` is not positive or ``p`` is outside (0, 1).
    """
    if not df > 0 or not 0.0 < p < 1.0:
        raise ValueError(f"need df > 0 and 0 < p < 1, got df {df}, p {p}")
    if p == 0.5:
        return 0.0
    tail = min(p, 1.0 - p)  # solved as the tail P(T > t) = tail, then signed
    z = normal_quantile(1.0 - tail)
    # The Cornish-Fisher expansion in 1/df (Abramowitz and Stegun 26.7.5) as the start.
    start = z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)
    t = _invert(lambda t: -_t_upper(df, t), lambda t: _t_pdf(df, t), -tail, max(start, 1e-3))
    return t if p > 0.5 else -t


def _invert(rising: Callable[[float], float], slope: Callable[[float], float], target: float,
            x: float) -> float:
    """The ``x > 0`` where ``rising(x) == target`` (``rising`` increasing, ``slope`` its
    derivative), from ``x``: Newton steps, each kept inside the bracket the values seen so far
    give (a step that would leave it bisects instead, or doubles ``x`` while nothing is
    above)."""
    low, high = 0.0, math.inf
    for _ in range(_STEPS):
        error = rising(x) - target
        if error == 0.0:
            return x
        if error < 0:
            low = x
        else:
            high = x
        density = slope(x)
        guess = x - error / density if density > 0 else math.nan
        if not low < guess < high:  # also NaN: no usable slope
            guess = x * 2.0 if math.isinf(high) else (low + high) / 2.0
        if abs(guess - x) <= 4 * _EPS * guess or (
                not math.isinf(high) and high - low <= 4 * _EPS * high):
            return guess
        x = guess
    return x
