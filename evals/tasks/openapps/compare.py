"""When two states of the apps are the same: OpenApps' rule, the one every task class uses.

OpenApps scores a task by comparing the state its target describes with the state the episode
ended in, after bringing both to one form; a verdict here must be the verdict OpenApps gives
for the same end state. The rule, app by app (each list is an app's entries: ``todo/todos``,
``calendar/events``, ``map/places``, ``messenger/messages``):

- every string (a value, never a key) compares by :func:`normalize_text`: lower case, every
  character that is neither a letter, a digit, ``_`` nor white space removed, runs of white
  space made one space, trimmed;
- the entries of the four lists compare as sorted by their normalised ``title`` (to-do,
  calendar), ``name`` (map) or recipient ``to`` (messenger), a stable sort: entries that sort
  alike keep their order, so messages to one person compare in the order sent;
- to-do items: ``id`` dropped; ``done`` of ``None``/``False``/``0``/``"0"`` is false, of
  ``True``/``1``/``"1"`` true;
- calendar events: ``invitees`` (a comma-separated string or a list) become the list of names,
  each trimmed, empty ones dropped, sorted; then ``id``, ``recurring`` and every field that is
  ``None``, ``""`` or ``[]`` are dropped;
- map places: the first comma-separated part of the name (a geocoder's full address shows the
  place's own name first) and the coordinates truncated to whole tenths of a degree; two
  places' coordinates are the same when those truncated points lie within the comparison's
  ``tolerance_km`` (flat-earth distance, the edge included);
- numbers compare by value (``1 == 1.0``), a boolean only with a boolean.

The code editor is not compared (only ``EditFileTask`` scores its files), nor is ``_url``.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from functools import partial
from typing import Any

COMPARED_APPS = ("todo", "messenger", "calendar", "map", "settings", "clock")
"""The apps a state comparison covers (the code editor is scored by EditFileTask)."""
KM_PER_DEGREE = 111.0
"""Kilometres per degree of latitude (and of longitude at the equator)."""
DEFAULT_TOLERANCE_KM = 10.0
"""How far apart two saved places' truncated coordinates may be unless a task says otherwise."""
COORDS = "coords"
"""The key a place's truncated coordinates take in the compared form."""

def normalize_text(text: str) -> str:
    """A string as OpenApps compares it (``"  Call  Aunt-Lisa! "`` -> ``"call auntlisa"``).

    Python's ``\\w`` is ``isalnum()`` or ``_`` and its ``\\s`` is ``isspace()``: spelled out
    here so that no regular expression stands between the rule and its reader.
    """
    kept = "".join(c for c in text.lower() if c.isalnum() or c == "_" or c.isspace())
    return " ".join(kept.split())


def primary_name(name: str) -> str:
    """A place name's first comma-separated part, trimmed (``Paris, France`` -> ``Paris``)."""
    return name.split(",", 1)[0].strip()


def tenths(degrees: float) -> int:
    """Degrees truncated toward zero to whole tenths, counted in tenths (``40.79`` -> ``407``,
    ``-73.99`` -> ``-739``): the precision OpenApps compares places at."""
    return int(float(degrees) * 10)


def distance_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Ground distance between two points, flat-earth (equirectangular): a degree of latitude
    is 111 km, a degree of longitude that shrunk by the cosine of the mean latitude."""
    mean = math.radians((lat1 + lat2) / 2)
    north = (lat1 - lat2) * KM_PER_DEGREE
    east = (lon1 - lon2) * KM_PER_DEGREE * math.cos(mean)
    return math.hypot(north, east)


def is_done(value: Any) -> Any:
    """A to-do item's ``done`` as a boolean where OpenApps reads one (``0``, ``"1"``,
    ``None``...); any other value is kept, and then matches nothing but itself."""
    if value is None or value is False or value == 0 or value == "0":
        return False
    if value is True or value == 1 or value == "1":
        return True
    return value


def invitee_names(value: Any) -> list[str]:
    """An event's invitees, given as ``"Ann, Bob"`` or as a list: the names, trimmed, empty
    ones dropped, sorted by their normalised text."""
    if value is None:
        parts: list[Any] = []
    elif isinstance(value, str):
        parts = value.split(",")
    elif isinstance(value, (list, tuple)):
        parts = list(value)
    else:
        parts = [value]
    names = [str(part).strip() for part in parts if str(part).strip()]
    return sorted(names, key=normalize_text)


def canonical(state: dict[str, Any], normalize_ids: bool = False) -> dict[str, Any]:
    """The compared apps of a state in the form the rule compares (a new document; see the
    module). ``normalize_ids`` drops every ``id`` besides (the to-do list's and the calendar's
    are always dropped). A document not in an app's shape is kept as it is: it then matches
    only the same document."""
    picked: dict[str, Any] = {app: copy.deepcopy(state.get(app)) for app in COMPARED_APPS}
    for app, key, entry_form, sort_field in _LISTS:
        document = picked.get(app)
        entries = _entries(document, key)
        if isinstance(document, dict) and entries is not None:
            shaped = [entry_form(e) if isinstance(e, dict) else e for e in entries]
            document[key] = sorted(shaped, key=partial(_sort_key, field=sort_field))
    compared: dict[str, Any] = _texts_normalized(_drop_ids(picked) if normalize_ids else picked)
    return compared


def states_match(target: dict[str, Any], current: dict[str, Any], *,
                 tolerance_km: float = DEFAULT_TOLERANCE_KM,
                 normalize_ids: bool = False) -> bool:
    """Whether two states hold the same apps by the rule (see the module): the one comparison
    every state-comparison class, a composite's chained target and an abstention's "did the
    agent change anything" use."""
    return _same(canonical(target, normalize_ids), canonical(current, normalize_ids), (),
                 tolerance_km)


def _todo_item(item: dict[str, Any]) -> dict[str, Any]:
    shaped = {k: v for k, v in item.items() if k != "id"}
    if "done" in shaped:
        shaped["done"] = is_done(shaped["done"])
    return shaped


def _event(event: dict[str, Any]) -> dict[str, Any]:
    shaped = dict(event)
    if "invitees" in shaped:
        shaped["invitees"] = invitee_names(shaped["invitees"])
    return {k: v for k, v in shaped.items()
            if k not in ("id", "recurring") and v is not None and v != "" and v != []}


def _place(place: dict[str, Any]) -> dict[str, Any]:
    """A place as OpenApps keeps it for comparing: its primary name and its truncated point
    (what else it holds is not compared). Coordinates that are not numbers are kept as they
    are, and then match nothing but themselves."""
    name = place.get("name")
    shaped: dict[str, Any] = {"name": primary_name(name) if isinstance(name, str) else name}
    try:
        shaped[COORDS] = [tenths(place["latitude"]), tenths(place["longitude"])]
    except (KeyError, TypeError, ValueError, OverflowError):
        shaped[COORDS] = [place.get("latitude"), place.get("longitude")]
    return shaped


def _message(message: dict[str, Any]) -> dict[str, Any]:
    return dict(message)


_LISTS: tuple[tuple[str, str, Callable[[dict[str, Any]], dict[str, Any]], str], ...] = (
    ("todo", "todos", _todo_item, "title"),
    ("calendar", "events", _event, "title"),
    ("map", "places", _place, "name"),
    ("messenger", "messages", _message, "to"),
)
"""Each app's list of entries: its key, the form an entry is compared in, the field it sorts
by."""


def _entries(document: Any, key: str) -> list[Any] | None:
    if isinstance(document, dict) and isinstance(document.get(key), list):
        entries: list[Any] = document[key]
        return entries
    return None


def _sort_key(entry: Any, field: str) -> str:
    value = entry.get(field) if isinstance(entry, dict) else None
    return normalize_text(value) if isinstance(value, str) else ""


def _texts_normalized(value: Any) -> Any:
    if isinstance(value, str):
        return normalize_text(value)
    if isinstance(value, dict):
        return {k: _texts_normalized(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_texts_normalized(v) for v in value]
    return value


def _drop_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_ids(v) for k, v in value.items() if k != "id"}
    if isinstance(value, list):
        return [_drop_ids(v) for v in value]
    return value


def _is_place_point(path: tuple[Any, ...]) -> bool:
    return len(path) == 4 and path[0] == "map" and path[1] == "places" and path[3] == COORDS


def _near(a: list[Any], b: list[Any], tolerance_km: float) -> bool:
    """Two truncated points (in tenths of a degree) within the tolerance."""
    try:
        far = distance_km(a[0] / 10.0, a[1] / 10.0, b[0] / 10.0, b[1] / 10.0)
    except (TypeError, IndexError, ValueError):
        return False
    return far <= tolerance_km


def _same(a: Any, b: Any, path: tuple[Any, ...], tolerance_km: float) -> bool:
    """Structural equality of two compared forms (strings already normalised)."""
    if _is_place_point(path) and isinstance(a, list) and isinstance(b, list):
        return a == b or _near(a, b, tolerance_km)
    if isinstance(a, dict) and isinstance(b, dict):
        return set(a) == set(b) and all(_same(a[k], b[k], (*path, k), tolerance_km)
                                        for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y, (*path, i), tolerance_km)
                                        for i, (x, y) in enumerate(zip(a, b, strict=True)))
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b or (math.isnan(a) and math.isnan(b))
    return type(a) is type(b) and bool(a == b)
