"""The OpenApps window: the launcher's app on screen, its forms, and what its controls do.

The launcher (:class:`~infra.local.planner.Planner`, ``_url`` in the state) says which app is on
screen; this window shows it, as OpenApps' pages show theirs in a browser: a row of buttons to
go between the apps and, for the calendar, its events (date, title and the other fields) with a
form to add one and a Delete button by each; for the map, its saved places (name, coordinates)
with a form to save one and a Delete button by each. Where each control sits is
:mod:`infra.local.gui`'s; what a click or Enter on it does is here, through the planner's own
methods, the ones the ``calendar``, ``map`` and ``goto`` verbs call: a form refuses what the
verb refuses, with the verb's message, shown on the page (the form keeps what was typed, and
the script goes on, as a web page's form does).
"""

from __future__ import annotations

from infra.local.apps import AppError, Window
from infra.local.desktop import Desktop
from infra.local.planner import Event

FORMS = {"calendar": ("Title", "Date", "Location", "Description", "URL", "Invitees"),
         "map": ("Name", "Latitude", "Longitude")}
"""Each page's form: its fields in tab order (the pages not listed have none)."""
SUBMIT = {"calendar": "Add Event", "map": "Save Place"}
"""The button that submits each page's form."""
_EVENT_DETAILS = {"Location": "location", "Description": "description", "URL": "url",
                  "Invitees": "invitees"}


def go(desktop: Desktop, app: str) -> str:
    """Put an app on screen (the ``goto`` verb and the window's app buttons): the launcher
    switches, and the OpenApps window opens, or comes to the front, showing the app's page
    afresh. Returns the URL path now shown.

    Raises:
        AppError: no such app in the launcher (nothing changes).
    """
    with desktop.lock:
        path = desktop.apps.planner.go(app)
        window = desktop.open_app("openapps")
        window.fields, window.focus, window.select_all = {}, "", False
        window.notice, window.scroll = "", 0
        desktop.touch()
        return path


def form(desktop: Desktop) -> tuple[str, ...]:
    """The fields of the form on the page on screen (none on a page without one)."""
    return FORMS.get(desktop.apps.planner.app, ())


def press(desktop: Desktop, window: Window, action: str) -> None:
    """What a click on one of the window's controls does (``goto:calendar``, ``submit``,
    ``event:3``, ``place:0``: the entry's index in the planner's list).

    Raises:
        AppError: the entry a Delete button stood by is gone.
    """
    verb, _, arg = action.partition(":")
    planner = desktop.apps.planner
    if verb == "goto":
        go(desktop, arg)
    elif verb == "submit":
        submit(desktop, window)
    elif verb == "event":
        planner.remove_event_at(int(arg))
    elif verb == "place":
        planner.remove_place_at(int(arg))


def submit(desktop: Desktop, window: Window) -> None:
    """Submit the page's form: add the event, or save the place, by the verbs' rules. Refused,
    the reason is shown on the page and the fields keep their text; done, the form is
    emptied."""
    planner = desktop.apps.planner
    typed = {name: window.fields.get(name, "") for name in form(desktop)}
    try:
        if planner.app == "calendar":
            details = {key: typed[name] for name, key in _EVENT_DETAILS.items()}
            planner.add_event(typed["Title"], typed["Date"], **details)
        elif planner.app == "map":
            planner.save_place(typed["Name"], typed["Latitude"], typed["Longitude"])
        else:
            return
    except AppError as exc:
        window.notice = str(exc)
        return
    window.fields, window.focus, window.select_all, window.notice = {}, "", False, ""


def scroll(desktop: Desktop, window: Window, clicks: int, rows: int) -> None:
    """Turn the wheel over the page's list (``clicks`` up when positive, as pyautogui's),
    three entries a notch, never past either end (``rows``: how many the list shows)."""
    planner = desktop.apps.planner
    total = len(planner.events if planner.app == "calendar" else planner.places)
    window.scroll = max(0, min(window.scroll - 3 * clicks, max(0, total - rows)))


def event_details(event: Event) -> str:
    """An event's fields beside its date and title, as its row shows them."""
    parts = [event.location, event.description, event.url]
    if event.invitees:
        parts.append("with " + ", ".join(event.invitees))
    return "  |  ".join(part for part in parts if part)


def agenda(desktop: Desktop) -> list[tuple[int, Event]]:
    """The calendar's events in date order (an agenda), each with its index in the
    calendar."""
    events = desktop.apps.planner.events
    return sorted(enumerate(events), key=lambda pair: pair[1].date)
