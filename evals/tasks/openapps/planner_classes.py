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

from evals.tasks.openapps.classes import Matcher, StateTask, Task, _command, unreachable

KM_PER_DEGREE = 111.0
"""Kilometres per degree of latitude (and of longitude at the equator)."""
DEFAULT_TOLERANCE_KM = 10.0
"""How far a saved place may be from the task's coordinates unless the task says otherwise."""
APP_PATHS = {"start_page": "/", "todo": "/todo", "calendar": "/calendar",
             "messages": "/messages", "map": "/maps", "codeeditor": "/codeeditor"}
"""The desktop's apps and the URL path each shows in ``_url`` (the desktop's launcher keeps
the same table; a unit test holds them equal)."""


def distance_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Ground distance between two points, flat-earth (equirectangular): within a fraction of
    a percent at the few kilometres a saved place may be off by, and simple at the edge."""
    mean = math.radians((lat1 + lat2) / 2)
    north = (lat1 - lat2) * KM_PER_DEGREE
    east = (lon1 - lon2) * KM_PER_DEGREE * math.cos(mean)
    return math.hypot(north, east)


def primary_name(name: str) -> str:
    """A place name's first comma-separated part (``Paris, Île-de-France, France`` ->
    ``Paris``), as a map that stores a geocoder's full address shows it first."""
    return name.split(",", 1)[0].strip().casefold()


class NearPlace(Matcher):
    """A saved place: the same primary name, within ``tolerance_km`` of the coordinates."""

    def __init__(self, name: str, latitude: float, longitude: float,
                 tolerance_km: float) -> None:
        self.name, self.latitude, self.longitude = name, latitude, longitude
        self.tolerance_km = tolerance_km

    def matches(self, value: Any) -> bool:
        """A place document with that name, near enough."""
        if not isinstance(value, dict) or set(value) != {"name", "latitude", "longitude"}:
            return False
        try:
            far = distance_km(self.latitude, self.longitude, float(value["latitude"]),
                              float(value["longitude"]))
        except (TypeError, ValueError):
            return False
        return (primary_name(str(value["name"])) == primary_name(self.name)
                and far <= self.tolerance_km)

    def __repr__(self) -> str:
        return (f"NearPlace({self.name!r}, {self.latitude}, {self.longitude}, "
                f"within {self.tolerance_km} km)")


def _date_problem(date: str) -> str | None:
    try:
        datetime.date.fromisoformat(date.strip())
    except ValueError:
        return f"date must be a date written YYYY-MM-DD, not {date!r}"
    return None


@dataclass(kw_only=True)
class AddEventTask(StateTask):
    """Add the event ``title`` on ``date`` (with its description, location, url and
    invitees, each absent when null) at the calendar's end."""

    title: str
    date: str
    description: str | None = None
    location: str | None = None
    url: str | None = None
    invitees: list[str] = field(default_factory=list)

    def problem(self) -> str | None:
        """An empty title, a date that is not one, an invitee the calendar cannot hold."""
        if not self.title.strip():
            return "title is empty"
        bad = next((n for n in self.invitees if "," in n or not n.strip()), None)
        if bad is not None:
            return f"invitees: {bad!r} is not a name (no commas, not empty)"
        return _date_problem(self.date)

    def event(self) -> dict[str, Any]:
        """The event as the calendar holds it."""
        return {"title": self.title, "date": self.date.strip(),
                "description": self.description or "", "location": self.location or "",
                "url": self.url or "",
                "invitees": sorted({n.strip() for n in self.invitees})}

    def target(self, state: dict[str, Any]) -> dict[str, Any]:
        """The calendar with the event added at its end."""
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
        """The calendar without the event (none of that title and date: a target no state
        can reach, so that doing nothing cannot pass)."""
        result = copy.deepcopy(state)
        events = result.setdefault("calendar", {}).setdefault("events", [])
        for index, event in enumerate(events):
            if (str(event.get("title", "")).casefold() == self.title.casefold()
                    and event.get("date") == self.date.strip()):
                del events[index]
                return result
        return unreachable(result, "calendar", f"{self.title} on {self.date}")

    def reference_solution(self) -> list[str]:
        """``calendar delete``."""
        return [_command("calendar", "delete", self.title, self.date.strip())]


@dataclass(kw_only=True)
class SavePlaceTask(StateTask):
    """Save the place ``name`` at ``latitude``, ``longitude`` on the map: a place of that
    primary name (the part before the first comma) within ``tolerance_km`` (10 km unless
    given) counts."""

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
        """The map with the place saved at its end, near enough."""
        result = copy.deepcopy(state)
        tolerance = DEFAULT_TOLERANCE_KM if self.tolerance_km is None else self.tolerance_km
        result.setdefault("map", {}).setdefault("places", []).append(
            NearPlace(self.name, self.latitude, self.longitude, tolerance))
        return result

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
        """The map without the place (none of that name: a target no state can reach)."""
        result = copy.deepcopy(state)
        places = result.setdefault("map", {}).setdefault("places", [])
        for index, place in enumerate(places):
            if str(place.get("name", "")).casefold() == self.name.strip().casefold():
                del places[index]
                return result
        return unreachable(result, "map", self.name)

    def reference_solution(self) -> list[str]:
        """``map delete``."""
        return [_command("map", "delete", self.name)]


@dataclass(kw_only=True)
class NavigateToAppTask(Task):
    """Starting in ``source_app``, end in ``target_app`` (one of :data:`APP_PATHS`): the
    final ``_url`` is that app's path or under it. No app's contents are compared."""

    source_app: str
    target_app: str

    def problem(self) -> str | None:
        """An app the desktop does not have."""
        for name, app in (("source_app", self.source_app), ("target_app", self.target_app)):
            if app not in APP_PATHS:
                return (f"{name} {app!r} is not an app of the simulated desktop "
                        f"({', '.join(APP_PATHS)})")
        if self.source_app == self.target_app:
            return "source_app and target_app are the same app: the task would start done"
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
