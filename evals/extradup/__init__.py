"""ExtraDup: does a reward pay for wrong writes?

Five families of wrong write are applied to an encounter of the records app
(:mod:`evals.extradup.records_app`): a duplicate record, an extra field, a missing field, a form
never submitted, a "Saved" banner with nothing saved. Each reward is asked about each family (and
about the correct run) three times, each time on a fresh app, and the scan reports how many
wrong writes it paid and how many correct runs. Two reference rewards of our own are built in:
``screen`` pays when the screen looks finished, ``store`` reads the stored record back. Any
reward ``package.module:function`` (``--reward``) is scored the same way: it receives a
:class:`Case` and returns a truth value or a number (paid when it is at least 1).

The scan is offline and takes well under a second.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evals.agents.user_code import import_attribute
from evals.errors import InvalidRunInputError
from evals.extradup.records_app import EXPECTED, FIELDS, SAVED_BANNER, RecordsApp, enter_expected

ASKS = 3
"""How many times each reward is asked about each case (a reward may not answer the same)."""


@dataclass(frozen=True)
class Case:
    """What a reward sees of one run: the screen at the end, the store read back, and the
    encounter the task asked for."""

    screen: dict[str, Any]
    store: list[dict[str, str]]
    expected: dict[str, str]


def _duplicate(app: RecordsApp) -> None:
    enter_expected(app)
    app.submit()  # a second click on Save: the same encounter stored twice


def _extra_field(app: RecordsApp) -> None:
    enter_expected(app, submit=False)
    app.fill("allergies", "Penicillin")  # a field the task never asked for
    app.submit()


def _missing_field(app: RecordsApp) -> None:
    enter_expected(app, submit=False)
    shown = dict(app.form)
    del app.form["diagnosis"]
    app.submit()
    app.form = shown  # the screen still shows what was typed


def _never_submitted(app: RecordsApp) -> None:
    enter_expected(app, submit=False)  # every field typed, Save never clicked


def _banner_only(app: RecordsApp) -> None:
    enter_expected(app, submit=False)
    app.banner = SAVED_BANNER  # the banner shows, the store holds nothing


FAMILIES: dict[str, Callable[[RecordsApp], None]] = {
    "duplicate record": _duplicate,
    "extra field": _extra_field,
    "missing field": _missing_field,
    "never submitted": _never_submitted,
    "saved banner, nothing saved": _banner_only,
}
"""The five wrong-write families, each a way to leave the app after the task."""
CORRECT = "correct"


def case_of(family: str) -> Case:
    """A fresh app with ``family`` applied (``correct``: the task done right)."""
    app = RecordsApp()
    if family == CORRECT:
        enter_expected(app)
    else:
        FAMILIES[family](app)
    return Case(screen=app.screen(), store=[dict(r) for r in app.store],
                expected=dict(EXPECTED))


def screen_reward(case: Case) -> bool:
    """Reference reward 1: pays when the screen looks finished (the banner says Saved, or the
    form shows every expected value)."""
    shown = case.screen.get("form") or {}
    return case.screen.get("banner") == SAVED_BANNER or all(
        shown.get(k) == v for k, v in case.expected.items())


def store_reward(case: Case) -> bool:
    """Reference reward 2: reads the store back; pays for exactly one stored encounter of the
    patient, holding exactly the expected fields and values."""
    mine = [r for r in case.store if r.get("patient_id") == case.expected["patient_id"]]
    return len(mine) == 1 and mine[0] == case.expected and set(mine[0]) == set(FIELDS)


BUILTIN_REWARDS: dict[str, Callable[[Case], Any]] = {"screen": screen_reward,
                                                      "store": store_reward}


def load_reward(spec: str) -> Callable[[Case], Any]:
    """A built-in reward by name, or a user's ``package.module:function``.

    Raises:
        InvalidRunInputError: unknown name, import failure, not callable.
    """
    if spec in BUILTIN_REWARDS:
        return BUILTIN_REWARDS[spec]
    if ":" not in spec:
        raise InvalidRunInputError(f"--reward {spec!r}: not a built-in reward (screen, store) "
                                   "nor package.module:function")
    found = import_attribute(spec, "--reward")
    if not callable(found):
        raise InvalidRunInputError(f"--reward {spec!r} is not a function")
    return found


@dataclass
class RewardScan:
    """One reward's answers: paid counts per family, and for the correct run."""

    name: str
    paid: dict[str, int]
    correct_paid: int
    errors: list[str]

    @property
    def wrong_paid(self) -> int:
        """Wrong writes paid, over every family."""
        return sum(self.paid.values())


def paid(value: Any) -> bool:
    """Whether a reward's answer pays: true, or a number of at least 1."""
    if isinstance(value, (int, float)):  # True is 1, False 0
        return float(value) >= 1.0
    return bool(value)


def scan(name: str, reward: Callable[[Case], Any], asks: int = ASKS) -> RewardScan:
    """Ask ``reward`` about every family and the correct run, ``asks`` times each, each time
    on a fresh case. A reward that raises has not paid; what it raised is kept."""
    result = RewardScan(name, dict.fromkeys(FAMILIES, 0), 0, [])
    for family in [*FAMILIES, CORRECT]:
        for _ in range(asks):
            try:
                answer = paid(reward(case_of(family)))
            except Exception as exc:  # the user's reward: its failure is reported, not fatal
                result.errors.append(f"{family}: {type(exc).__name__}: {exc}")
                answer = False
            if family == CORRECT:
                result.correct_paid += answer
            else:
                result.paid[family] += answer
    return result


def table(scans: list[RewardScan], asks: int = ASKS) -> str:
    """The scan as a text table: one row per family, one column per reward."""
    head = ["wrong write", *[f"{s.name} reward" for s in scans]]
    rows = [[family, *[f"paid {s.paid[family]}/{asks}" for s in scans]] for family in FAMILIES]
    total = len(FAMILIES) * asks
    rows.append(["all wrong writes", *[f"paid {s.wrong_paid}/{total}" for s in scans]])
    rows.append(["correct runs", *[f"paid {s.correct_paid}/{asks}" for s in scans]])
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return "\n".join([line(head), line(["-" * w for w in widths]), *map(line, rows)])
