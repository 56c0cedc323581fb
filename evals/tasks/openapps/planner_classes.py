"""The calendar, map and navigation task classes (OpenApps' ``AddEventTask``,
``RemoveEventTask``, ``SavePlaceTask``, ``RemoveLandmarkTask``, ``NavigateToAppTask``).

The state they read (``infra/local/planner.py``): ``calendar`` is ``{"events": [{"title",
"date", "description", "location", "url", "invitees"}]}`` (absent text fields empty, invitees
sorted), ``map`` is ``{"places": [{"name", "latitude", "longitude"}]}``, and ``_url`` is the
URL path of the app on screen (``/`` for the start page, ``/todo``, ``/calendar``,
``/messages``, ``/maps``, ``/codeeditor``).
"""

from __future__ import annotations

import copy
import datetime
import math
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from evals.tasks.openapps.classes import StateTask, Task, _command, last_titled, unreachable
from evals.tasks.openapps.compare import DEFAULT_TOLERANCE_KM, invitee_names

APP_PATHS = {"start_page": "/", "todo": "/todo", "calendar": "/calendar",
             "messages": "/messages", "map": "/maps", "codeeditor": "/codeeditor"}
"""The desktop's apps and the URL path each shows in ``_url`` (the desktop's launcher keeps
the same table; a unit test holds them equal)."""


def _date_problem(date: str) -> str | None:
    try:
        datetime.date.fromisoformat(date.strip())
    except ValueError:
        return f"date must be a date written YYYY-MM-DD, not {date!r}"
    return None


@dataclass(kw_only=True)
class AddEventTask(StateTask):
    """Add the event ``title`` on ``date`` (with its description, location, url and
    invitees, each absent when null) to the calendar."""

    title: str
    date: str
    description: str | None = None
    location: str | None = None
    url: str | None = None
    invitees: list[str] | str | None = field(default_factory=list)
    """A list of names, or as OpenApps also takes them, one string ``"Ann, Bob"``."""

    def problem(self) -> str | None:
        """An empty title, a date that is not one, an invitee the calendar cannot hold."""
        if not self.title.strip():
            return "title is empty"
        if isinstance(self.invitees, list):
            bad = next((n for n in self.invitees if "," in n or not n.strip()), None)
            if bad is not None:
                return f"invitees: {bad!r} is not a name (no commas, not empty)"
        return _date_problem(self.date)

    def event(self) -> dict[str, Any]:
        """The event as the calendar holds it."""
        return {"title": self.title, "date": self.date.strip(),
                "description": self.description or "", "location": self.location or "",
                "url": self.url or "", "invitees": sorted(set(invitee_names(self.invitees)))}

    def target(self, state: dict[str, Any]) -> dict[str, Any]:
        """The calendar with the event added (where in the list is not compared)."""
        result = copy.deepcopy(state)
        result.setdefault("calendar", {}).setdefault("events", []).append(self.event())
        return result

    def reference_solution(self) -> list[str]:
        """``calendar add`` with each field given."""
        event = self.event()
        details = [f"{key}={event[key]}" for key in ("description", "location", "url")
                   if event[key]]
        if event["invitees"]:
            details.append("invitees=" + ", ".join(event["invitees"]))
        return [_command("calendar", "add", self.title, event["date"], *details)]


@dataclass(kw_only=True)
class RemoveEventTask(StateTask):
    """Remove the event ``title`` on ``date`` from the calendar."""

    title: str
    date: str

    def problem(self) -> str | None:
        """An empty title, a date that is not one."""
        return "title is empty" if not self.title.strip() else _date_problem(self.date)

    def target(self, state: dict[str, Any]) -> dict[str, Any]:
        """The calendar without the event of exactly that title and date, the last if several
        (none: a target no state can reach, so that doing nothing cannot pass)."""
        result = copy.deepcopy(state)
        events = result.setdefault("calendar", {}).setdefault("events", [])
        same_day = [i for i, e in enumerate(events)
                    if isinstance(e, dict) and e.get("date") == self.date.strip()]
        index = last_titled([events[i] for i in same_day], "title", self.title)
        if index is None:
            return unreachable(result, "calendar", f"{self.title} on {self.date}")
        del events[same_day[index]]
        return result

    def reference_solution(self) -> list[str]:
        """``calendar delete``."""
        return [_command("calendar", "delete", self.title, self.date.strip())]


@dataclass(kw_only=True)
class SavePlaceTask(StateTask):
    """Save the place ``name`` at ``latitude``, ``longitude`` on the map: a place of that
    primary name (the part before the first comma) whose coordinates, truncated to tenths of
    a degree, lie within ``tolerance_km`` (10 km unless given) of the task's, truncated
    alike, counts."""

    name: str
    latitude: float
    longitude: float
    tolerance_km: float | None = None

    def problem(self) -> str | None:
        """An empty name, coordinates off the globe, a tolerance that is not a distance."""
        if not self.name.strip():
            return "name is empty"
        if not (math.isfinite(self.latitude) and abs(self.latitude) <= 90):
            return f"latitude must be within -90..90, not {self.latitude}"
        if not (math.isfinite(self.longitude) and abs(self.longitude) <= 180):
            return f"longitude must be within -180..180, not {self.longitude}"
        if self.tolerance_km is not None and not (self.tolerance_km >= 0
                                                  and math.isfinite(self.tolerance_km)):
            return f"tolerance_km must be a distance of 0 or more, not {self.tolerance_km}"
        return None

    def target(self, state: dict[str, Any]) -> dict[str, Any]:
        """The map with the place saved (how near it must be: the comparison's tolerance)."""
        result = copy.deepcopy(state)
        result.setdefault("map", {}).setdefault("places", []).append(
            {"name": self.name, "latitude": self.latitude, "longitude": self.longitude})
        return result

    def comparison_tolerance_km(self) -> float:
        """``tolerance_km``, 10 km unless given (inside a composite, OpenApps compares at
        10 km whatever its subtasks say, and so does :class:`CompositeTask`)."""
        return DEFAULT_TOLERANCE_KM if self.tolerance_km is None else self.tolerance_km

    def reference_solution(self) -> list[str]:
        """``map save``."""
        return [_command("map", "save", self.name, repr(float(self.latitude)),
                         repr(float(self.longitude)))]


@dataclass(kw_only=True)
class RemoveLandmarkTask(StateTask):
    """Unsave the place ``name`` from the map."""

    name: str

    def problem(self) -> str | None:
        """An empty name."""
        return None if self.name.strip() else "name is empty"

    def target(self, state: dict[str, Any]) -> dict[str, Any]:
        """The map without the place of exactly that name, the last if several (none: a
        target no state can reach)."""
        result = copy.deepcopy(state)
        places = result.setdefault("map", {}).setdefault("places", [])
        index = last_titled(places, "name", self.name)
        if index is None:
            return unreachable(result, "map", self.name)
        del places[index]
        return result

    def reference_solution(self) -> list[str]:
        """``map delete``."""
        return [_command("map", "delete", self.name)]


@dataclass(kw_only=True)
class NavigateToAppTask(Task):
    """Starting in ``source_app``, end in ``target_app`` (one of :data:`APP_PATHS`): the
    final ``_url`` is that app's path or under it. No app's contents are compared.

    The reward reads the final ``_url`` alone, as OpenApps' does, so a task whose
    ``source_app`` is its ``target_app`` is taken and scores 1 for an episode that stays (or
    ends) there: what OpenApps' check answers for that end state."""

    source_app: str
    target_app: str

    def problem(self) -> str | None:
        """An app the desktop does not have."""
        for name, app in (("source_app", self.source_app), ("target_app", self.target_app)):
            if app not in APP_PATHS:
                return (f"{name} {app!r} is not an app of the simulated desktop "
                        f"({', '.join(APP_PATHS)})")
        return None

    def check_if_task_is_complete(self, initial_state: dict[str, Any],
                                  current_state: dict[str, Any]) -> bool:
        """The final ``_url`` is in the target app."""
        url = current_state.get("_url")
        if not isinstance(url, str) or not url:
            return False
        path = urlsplit(url).path or "/"
        wanted = APP_PATHS[self.target_app]
        if wanted == "/":
            return path.rstrip("/") == ""
        return path == wanted or path.startswith(wanted.rstrip("/") + "/")

    def setup(self) -> list[str]:
        """Start in the source app."""
        return [_command("goto", self.source_app)]

    def reference_solution(self) -> list[str]:
        """``goto`` the target app."""
        return [_command("goto", self.target_app)]
