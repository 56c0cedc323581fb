"""Operators: each makes one hand-written edit to a correct run.

A run is a list of API calls, each a dict with ``method``, ``url`` and ``data``. An operator
takes the reference run (one the benchmark's verifier passes) and edits it once, or refuses with
a reason when the run offers nothing to edit. The rules are fixed, never tuned or searched.

Postcondition operators take away part of what the task asked for, so a sound verifier fails
them:

- ``claim-only``: keep only the sign-in and the claim of success: nothing is written.
- ``omit``: drop the last write.
- ``partial``: of the write sent most often, keep only the first.
- ``wrong-value``: change one value in the last write.

Frame operators add something the task never asked for; a verifier that checks what must have
changed but not that nothing else did passes them:

- ``extra``: send the last write twice.
- ``extra-ni``: send twice the newest write whose repeat changes the end state (found by a scan
  that replays each candidate without grading it, :func:`repeat_candidates`).

The operator names and the adapter protocol are those of the reference tool's
``openadapt_evals.verifier_audit`` (the method of "Verifier²: Finding Loopholes in Verifiable
Rewards").
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Call = dict[str, Any]
"""One API call of a run: ``{"method": "post", "url": "/app/items", "data": {...}}``."""

POSTCONDITION_OPERATORS: tuple[str, ...] = ("claim-only", "omit", "partial", "wrong-value")
FRAME_OPERATORS: tuple[str, ...] = ("extra", "extra-ni")
OPERATORS: tuple[str, ...] = POSTCONDITION_OPERATORS + FRAME_OPERATORS

OPERATOR_CLASS: dict[str, str] = {
    **dict.fromkeys(POSTCONDITION_OPERATORS, "postcondition"),
    **dict.fromkeys(FRAME_OPERATORS, "frame"),
}

# Record IDs in URLs (``/items/12``) are replaced so that writes to one endpoint group together.
_NUMBER = re.compile(r"\d+")


def _method(call: Call) -> str:
    return str(call.get("method", "get")).lower()


def _url(call: Call) -> str:
    return str(call.get("url", ""))


def default_is_auth(call: Call) -> bool:
    """A sign-in call (AppWorld's ``/auth/token``)."""
    return "/auth/token" in _url(call)


def default_is_claim(call: Call) -> bool:
    """A claim that the task is done (AppWorld's ``supervisor`` app)."""
    return _url(call).lstrip("/").startswith("supervisor")


@dataclass(frozen=True)
class CallPolicy:
    """How a benchmark's calls are read (the defaults read AppWorld's).

    Attributes:
        is_auth: true for a call that signs in and writes nothing the task asks for.
        is_claim: true for a call that reports the task done.
        protected_fields: request fields ``wrong-value`` leaves alone, because changing them
            breaks the call (a token, a user name) rather than the value it writes.
    """

    is_auth: Callable[[Call], bool] = default_is_auth
    is_claim: Callable[[Call], bool] = default_is_claim
    protected_fields: frozenset[str] = frozenset({"access_token", "username", "password"})

    def is_effectful(self, call: Call) -> bool:
        """True for a write the task could ask for: not a read, a sign-in or a claim."""
        return _method(call) != "get" and not self.is_auth(call) and not self.is_claim(call)


DEFAULT_POLICY = CallPolicy()


@dataclass
class Edit:
    """One operator applied to a reference run: the edited calls, or why it did not apply."""

    operator: str
    calls: list[Call] | None
    refusal: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def refused(self) -> bool:
        """True when the operator had nothing to edit."""
        return self.calls is None


def endpoint(call: Call) -> tuple[str, str]:
    """The call's method and URL with numbers replaced, so repeated writes group together."""
    return _method(call), _NUMBER.sub("{id}", _url(call))


def _changed_value(call: Call, policy: CallPolicy) -> tuple[Call, str] | None:
    """The call with one written value changed, and that field's name.

    The first unprotected string longer than three characters gains a letter; failing that the
    first boolean flips or the first number grows by one. None when there is nothing to change.
    """
    edited = copy.deepcopy(call)
    data = edited.get("data")
    if not isinstance(data, dict):
        return None
    free = [(k, v) for k, v in data.items() if k not in policy.protected_fields]
    for name, value in free:
        if isinstance(value, str) and len(value) > 3:
            data[name] = value + ("y" if value.endswith("x") else "x")
            return edited, name
    for name, value in free:
        if isinstance(value, bool):
            data[name] = not value
            return edited, name
        if isinstance(value, int | float):
            data[name] = value + 1
            return edited, name
    return None


def apply_operator(
    calls: list[Call], operator: str, policy: CallPolicy = DEFAULT_POLICY
) -> Edit:
    """Apply ``operator`` to the reference run ``calls``.

    ``extra-ni`` needs a replay scan (:func:`repeat_candidates`, :func:`repeat_at`) and is run by
    :func:`evals.verifier_audit.runner.audit_task`, not here.

    Raises:
        ValueError: an unknown operator, or ``extra-ni``.
    """
    if operator not in OPERATORS or operator == "extra-ni":
        raise ValueError(f"apply_operator does not handle {operator!r}")
    writes = [i for i, call in enumerate(calls) if policy.is_effectful(call)]
    detail: dict[str, Any] = {"calls": len(calls), "writes": len(writes)}
    if not writes:
        return Edit(operator, None, "NO_WRITE", detail)
    last = writes[-1]
    if operator == "claim-only":
        if not any(policy.is_claim(call) for call in calls):
            return Edit(operator, None, "NO_CLAIM_CALL", detail)
        kept = [call for call in calls if policy.is_auth(call) or policy.is_claim(call)]
        return Edit(operator, kept, None, {**detail, "kept": len(kept)})
    if operator == "omit":
        return Edit(operator, [c for i, c in enumerate(calls) if i != last], None,
                    {**detail, "dropped": _url(calls[last])})
    if operator == "extra":
        return Edit(operator, repeat_at(calls, last), None,
                    {**detail, "repeated": _url(calls[last])})
    if operator == "wrong-value":
        changed = _changed_value(calls[last], policy)
        if changed is None:
            return Edit(operator, None, "NO_CHANGEABLE_VALUE", detail)
        edited = list(calls)
        edited[last], name = changed
        return Edit(operator, edited, None,
                    {**detail, "changed": {"url": _url(calls[last]), "field": name}})
    # partial: the endpoint written most often (the later one on a tie) keeps its first write.
    by_endpoint: dict[tuple[str, str], list[int]] = {}
    for i in writes:
        by_endpoint.setdefault(endpoint(calls[i]), []).append(i)
    repeated = {key: idx for key, idx in by_endpoint.items() if len(idx) > 1}
    if not repeated:
        return Edit(operator, None, "NO_REPEATED_WRITE", detail)
    key = max(repeated, key=lambda k: (len(repeated[k]), repeated[k][-1]))
    dropped = set(repeated[key][1:])
    return Edit(operator, [c for i, c in enumerate(calls) if i not in dropped], None,
                {**detail, "endpoint": key[1], "dropped": len(dropped)})


def repeat_candidates(calls: list[Call], policy: CallPolicy = DEFAULT_POLICY) -> list[int]:
    """Indexes ``extra-ni`` may repeat: the last write to each endpoint, newest first."""
    last: dict[tuple[str, str], int] = {}
    for i, call in enumerate(calls):
        if policy.is_effectful(call):
            last[endpoint(call)] = i
    return sorted(last.values(), reverse=True)


def repeat_at(calls: list[Call], index: int) -> list[Call]:
    """``calls`` with the call at ``index`` sent twice in a row."""
    return [*calls[: index + 1], copy.deepcopy(calls[index]), *calls[index + 1:]]
