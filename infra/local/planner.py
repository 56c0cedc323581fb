"""The simulated desktop's calendar, map and app launcher (which app the user is in).

Pure data plus validation, like :mod:`workapps`, which owns one of each. The calendar holds
events (title, date, description, location, url, invitees); the map holds saved places (name,
latitude, longitude); the launcher holds the app on screen, shown in the state as a URL path
(``_url``, ``/`` for the start page) as a browser-based suite of apps would show it.

A fresh profile starts with the events and places that OpenApps-style tasks name (conference
deadlines and birthdays to remove, New York landmarks to unsave): :func:`seeded_planner`.
"""

from __future__ import annotations

import datetime
import math
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from infra.local.apps import AppError

APP_PATHS = {"start_page": "/", "todo": "/todo", "calendar": "/calendar",
             "messages": "/messages", "map": "/maps", "codeeditor": "/codeeditor"}
"""The launcher's apps and the URL path each shows (the start page lists the others)."""
APP_TITLES = {"start_page": "OpenApps", "todo": "OpenTodos", "calendar": "OpenCalendar",
              "messages": "OpenMessages", "map": "OpenMaps", "codeeditor": "OpenCodeEditor"}
"""Each app's name on screen, as OpenApps' start page names them."""

SEED_EVENTS = (
    ("WACV 2026 Abstract Deadline", "2025-07-11"),
    ("3DV 2026 Deadline", "2025-08-18"),
    ("CHI 2026 Paper Deadline", "2025-09-11"),
    ("SATML 2026 Deadline", "2025-09-24"),
    ("ICLR 2026 Paper Deadline", "2025-09-25"),
    ("LREC 2026 Deadline", "2025-10-17"),
    ("CPAL 2025 Deadline", "2025-11-25"),
    ("IJCNN 2026 Deadline", "2026-01-31"),
    ("InterSpeech 2026 Deadline", "2026-03-02"),
    ("ECCV 2026 Paper Deadline", "2026-03-06"),
    ("Franz's Birthday", "1970-01-25"),
    ("Otto's Birthday", "1990-04-02"),
    ("Zack's Birthday", "1995-07-30"),
)
"""A fresh calendar: submission deadlines (online) and birthdays, by title and date."""

SEED_PLACES = (
    ("Statue of Liberty", 40.6892, -74.0445),
    ("Central Park", 40.7829, -73.9654),
    ("Brooklyn Bridge", 40.7061, -73.9969),
    ("Times Square", 40.7580, -73.9855),
    ("Empire State Building", 40.7484, -73.9857),
)
"""A fresh map's saved places: New York landmarks (name, latitude, longitude)."""
_Entry = TypeVar("_Entry")


@dataclass
class Event:
    """One calendar event; absent text fields are empty strings, invitees sorted."""

    title: str
    date: str
    description: str = ""
    location: str = ""
    url: str = ""
    invitees: list[str] = field(default_factory=list)


@dataclass
class Place:
    """One saved place on the map."""

    name: str
    latitude: float
    longitude: float


def parse_date(text: str) -> str:
    """A calendar date as ``YYYY-MM-DD``.

    Raises:
        AppError: not a real date in that form.
    """
    try:
        return datetime.date.fromisoformat(text.strip()).isoformat()
    except ValueError:
        raise AppError(f"{text!r} is not a date (YYYY-MM-DD)") from None


def split_invitees(text: str) -> list[str]:
    """Invitees typed as ``"Ann, Bob"``: the names, sorted, each once."""
    return sorted({name.strip() for name in text.split(",") if name.strip()})


@dataclass
class Planner:
    """The calendar, the map and the launcher of one desktop."""

    events: list[Event] = field(default_factory=list)
    places: list[Place] = field(default_factory=list)
    app: str = "start_page"

    def add_event(self, title: str, date: str, **details: str) -> Event:
        """Add an event at the calendar's end (``details``: description, location, url,
        invitees as ``"Ann, Bob"``)."""
        if not title.strip():
            raise AppError("an event needs a title")
        unknown = sorted(set(details) - {"description", "location", "url", "invitees"})
        if unknown:
            raise AppError(f"an event has no field {unknown[0]!r} "
                           "(description, location, url, invitees)")
        event = Event(title, parse_date(date), details.get("description", ""),
                      details.get("location", ""), details.get("url", ""),
                      split_invitees(details.get("invitees", "")))
        self.events.append(event)
        return event

    def remove_event(self, title: str, date: str | None = None) -> Event:
        """Remove the first event with that title (and date, when given)."""
        wanted = title.strip().casefold()
        day = None if date is None else parse_date(date)
        for event in self.events:
            if event.title.casefold() == wanted and day in (None, event.date):
                self.events.remove(event)
                return event
        raise AppError(f"no event titled {title!r}" + ("" if day is None else f" on {day}"))

    def remove_event_at(self, index: int) -> Event:
        """Remove the event at ``index`` of the calendar (the one a Delete button stands by).

        Raises:
            AppError: no event is there any more.
        """
        return pop_at(self.events, index, "event")

    def save_place(self, name: str, latitude: str, longitude: str) -> Place:
        """Save a place at the map's end."""
        if not name.strip():
            raise AppError("a place needs a name")
        place = Place(name, _degrees(latitude, 90, "latitude"),
                      _degrees(longitude, 180, "longitude"))
        self.places.append(place)
        return place

    def remove_place(self, name: str) -> Place:
        """Unsave the first place with that name (case-insensitive)."""
        wanted = name.strip().casefold()
        for place in self.places:
            if place.name.casefold() == wanted:
                self.places.remove(place)
                return place
        raise AppError(f"no saved place named {name!r}")

    def remove_place_at(self, index: int) -> Place:
        """Unsave the place at ``index`` of the map (the one a Delete button stands by).

        Raises:
            AppError: no place is there any more.
        """
        return pop_at(self.places, index, "saved place")

    def go(self, app: str) -> str:
        """Switch to an app of the launcher; returns the URL path now shown."""
        key = app.strip().lower()
        if key not in APP_PATHS:
            raise AppError(f"no app {app!r} in the launcher ({', '.join(APP_PATHS)})")
        self.app = key
        return APP_PATHS[key]

    def state(self) -> dict[str, Any]:
        """``calendar``, ``map`` and ``_url`` (the launcher's path) as JSON documents."""
        return {"calendar": {"events": [asdict(e) for e in self.events]},
                "map": {"places": [asdict(p) for p in self.places]},
                "_url": APP_PATHS[self.app]}


def seeded_planner() -> Planner:
    """The calendar, map and launcher as a fresh profile has them."""
    return Planner(
        events=[Event(title, date, location="Online" if "Deadline" in title else "")
                for title, date in SEED_EVENTS],
        places=[Place(name, lat, lon) for name, lat, lon in SEED_PLACES])


def entry_at(entries: list[_Entry], index: int, what: str) -> _Entry:
    """The entry at ``index`` of a list an app shows (the row a control stood on).

    Raises:
        AppError: no entry is there any more (the list changed since it was drawn).
    """
    if not 0 <= index < len(entries):
        raise AppError(f"that {what} is gone (the list has {len(entries)})")
    return entries[index]


def pop_at(entries: list[_Entry], index: int, what: str) -> _Entry:
    """Take the entry at ``index`` out of a list an app shows (the one a Delete button stood
    by).

    Raises:
        AppError: no entry is there any more.
    """
    entry_at(entries, index, what)
    return entries.pop(index)


def _degrees(text: str, limit: float, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise AppError(f"{what} {text!r} is not a number of degrees") from None
    if not math.isfinite(value) or abs(value) > limit:
        raise AppError(f"{what} {text!r} is outside -{limit:g}..{limit:g}")
    return value
