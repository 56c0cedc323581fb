"""``toy``: a small synthetic benchmark with a complete adapter, offline, audited in well under
a second. Copy it to audit your own benchmark (``--benchmark package.module:Adapter``).

It models no real benchmark. Its five tasks are chosen so that the audit shows each of its
outcomes: two verifiers compare the values of the new records without counting them (a repeated
write passes: ``extra`` and ``extra-ni`` are false accepts), one task is the same with a count,
and in two the app makes a repeat change nothing.

- ``invite-guests``: invite three guests to their seats; the verifier compares a guest-to-seat
  map, which a second identical invitation does not change.
- ``invite-guests-counted``: the same task; its verifier also counts the invitations.
- ``tag-photo``: tag a photo ``beach`` and ``sunset``; the verifier compares the set of tags, in
  which a tag given twice is one element.
- ``star-repos``: star two repositories; the app refuses a second star (409).
- ``set-status``: set the profile's status; setting it twice is a no-op.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from evals.verifier_audit.adapters.base import Delivery, Reference, Run
from evals.verifier_audit.effects import Effect
from evals.verifier_audit.operators import DEFAULT_POLICY, Call

TOKEN = "toy-token"
SEATS = {"kim@example.org": "A1", "lou@example.org": "A2", "max@example.org": "B4"}
PHOTOS = (11, 12)
REPOS = ("oa-vm", "waa", "dockur")

Tables = dict[str, list[dict[str, Any]]]


def _start() -> Tables:
    return {
        "toy.Invite": [],
        "toy.Message": [],
        "toy.Tag": [],
        "toy.Star": [],
        "toy.Profile": [{"id": 1, "status": "away"}],
        "supervisor.Task": [{"id": 1, "status": None}],
    }


class ToyApp:
    """An in-memory app behind an HTTP-like ``call``; every instance is a fresh start state."""

    def __init__(self) -> None:
        self.tables = _start()
        self._start = copy.deepcopy(self.tables)

    def _add(self, table: str, **record: Any) -> None:
        rows = self.tables[table]
        rows.append({"id": len(rows) + 1, **record})

    def call(self, call: Call) -> int:
        """Play one call; answers an HTTP-style status."""
        method, url = str(call.get("method", "get")).lower(), str(call.get("url", ""))
        data = dict(call.get("data") or {})
        if url.endswith("/auth/token") or method == "get":
            return 200
        if url == "/supervisor/complete_task":
            self.tables["supervisor.Task"][0]["status"] = data.get("status")
            return 200
        if data.get("access_token") != TOKEN:
            return 401
        if (method, url) == ("post", "/toy/invites"):
            if data.get("guest") not in SEATS:
                return 422
            self._add("toy.Invite", guest=data["guest"], seat=data.get("seat"))
            self._add("toy.Message", to=data["guest"], kind="invite")
            return 201
        if method == "post" and url.startswith("/toy/photos/"):
            photo = int(url.rsplit("/", 2)[1]) if url.endswith("/tags") else -1
            if photo not in PHOTOS:
                return 404
            self._add("toy.Tag", photo=photo, tag=data.get("tag"))
            return 201
        if (method, url) == ("post", "/toy/stars"):
            if data.get("repo") not in REPOS:
                return 404
            if any(r["repo"] == data["repo"] for r in self.tables["toy.Star"]):
                return 409
            self._add("toy.Star", repo=data["repo"])
            return 201
        if (method, url) == ("patch", "/toy/profile"):
            self.tables["toy.Profile"][0]["status"] = data.get("status")
            return 200
        return 404

    def effect(self) -> Effect:
        """What changed since the start, table by table (read without any verifier)."""
        effect: Effect = {}
        for table, rows in self.tables.items():
            before = {r["id"]: r for r in self._start[table]}
            after = {r["id"]: r for r in rows}
            added = [copy.deepcopy(after[i]) for i in sorted(after.keys() - before.keys())]
            removed = [copy.deepcopy(before[i]) for i in sorted(before.keys() - after.keys())]
            updated = [{"before": copy.deepcopy(before[i]), "after": copy.deepcopy(after[i])}
                       for i in sorted(after.keys() & before.keys()) if before[i] != after[i]]
            if added or removed or updated:
                effect[table] = {"added": added, "removed": removed, "updated": updated}
        return effect

    def new(self, table: str) -> list[dict[str, Any]]:
        """The records of ``table`` that were not there at the start."""
        old = {r["id"] for r in self._start[table]}
        return [r for r in self.tables[table] if r["id"] not in old]


def _sign_in() -> Call:
    return {"method": "post", "url": "/toy/auth/token",
            "data": {"username": "kim", "password": "secret"}}


def _write(method: str, url: str, **data: Any) -> Call:
    return {"method": method, "url": url, "data": {"access_token": TOKEN, **data}}


def _claim() -> Call:
    return {"method": "post", "url": "/supervisor/complete_task", "data": {"status": "success"}}


def _invite_calls() -> list[Call]:
    return [_sign_in(), {"method": "get", "url": "/toy/guests", "data": {}},
            *[_write("post", "/toy/invites", guest=g, seat=s) for g, s in SEATS.items()],
            _claim()]


def _invites_match(app: ToyApp) -> bool:
    # Values only: two identical invitations make one map entry, so a duplicate passes.
    return {r["guest"]: r["seat"] for r in app.new("toy.Invite")} == SEATS


def _invites_counted(app: ToyApp) -> bool:
    return _invites_match(app) and len(app.new("toy.Invite")) == len(SEATS)


def _tags_match(app: ToyApp) -> bool:
    # A set: a tag given twice is one element.
    return {(r["photo"], r["tag"]) for r in app.new("toy.Tag")} == {(11, "beach"), (11, "sunset")}


def _stars_match(app: ToyApp) -> bool:
    new = app.new("toy.Star")
    return sorted(r["repo"] for r in new) == ["oa-vm", "waa"] and len(new) == 2


def _status_set(app: ToyApp) -> bool:
    return (app.tables["toy.Profile"][0]["status"] == "focusing"
            and not app.new("toy.Invite") and not app.new("toy.Tag"))


@dataclass(frozen=True)
class ToyTask:
    """One toy task: its reference solution and its verifier."""

    solution: Callable[[], list[Call]]
    verifier: Callable[[ToyApp], bool]


TASKS: dict[str, ToyTask] = {
    "invite-guests": ToyTask(_invite_calls, _invites_match),
    "invite-guests-counted": ToyTask(_invite_calls, _invites_counted),
    "tag-photo": ToyTask(lambda: [_sign_in(), _write("post", "/toy/photos/11/tags", tag="beach"),
                                  _write("post", "/toy/photos/11/tags", tag="sunset"), _claim()],
                         _tags_match),
    "star-repos": ToyTask(lambda: [_sign_in(), _write("post", "/toy/stars", repo="oa-vm"),
                                   _write("post", "/toy/stars", repo="waa"), _claim()],
                          _stars_match),
    "set-status": ToyTask(lambda: [_sign_in(), _write("patch", "/toy/profile", status="focusing"),
                                   _claim()],
                          _status_set),
}


class ToyAdapter:
    """The toy benchmark as a :class:`~evals.verifier_audit.adapters.base.BenchmarkAdapter`."""

    name = "toy"
    ignore_fields = frozenset({"id"})
    policy = DEFAULT_POLICY

    def describe(self) -> dict[str, Any]:
        """What the report records about the benchmark."""
        return {"name": self.name, "tasks": len(TASKS), "synthetic": True}

    def task_ids(self, split: str | None = None, limit: int | None = None) -> list[str]:
        """All five tasks (the toy has no splits), at most ``limit``."""
        ids = list(TASKS)
        return ids[:limit] if limit else ids

    def _task(self, task_id: str) -> ToyTask:
        if task_id not in TASKS:
            raise KeyError(f"unknown toy task {task_id!r}; choose from {', '.join(TASKS)}")
        return TASKS[task_id]

    def reference(self, task_id: str) -> Reference:
        """The task's own solution, played on a fresh app."""
        calls = self._task(task_id).solution()
        app = ToyApp()
        for call in calls:
            app.call(call)
        return Reference(task_id, calls, app.effect())

    def deliver(self, task_id: str, runs: Sequence[Run]) -> list[Delivery]:
        """Each run on a fresh app; the effect is read before the verifier runs."""
        task = self._task(task_id)
        out: list[Delivery] = []
        for run in runs:
            app = ToyApp()
            statuses = [app.call(call) for call in run.calls]
            effect = app.effect()
            verdict = ("PASS" if task.verifier(app) else "FAIL") if run.grade else None
            out.append(Delivery(run.run_id, effect, verdict, statuses))
        return out
