"""The OpenApps window: the launcher's app on screen, its forms, and what its controls do.

The launcher (:class:`~infra.local.planner.Planner`, ``_url`` in the state) says which app is on
screen; this window shows it, as OpenApps' pages show theirs in a browser: a row of buttons to
go between the apps and, for the calendar, its events (date, title and the other fields) with a
form to add one and a Delete button by each; for the map, its saved places (name, coordinates)
with a form to save one and a Delete button by each; for the to-do list, its items, each with a
Done check box and a Delete button, and a form to add one; for the messenger, the messages sent
(to whom, what) and a form to send one; for the code editor, its files (a click opens one),
the open file's name and text in edit boxes, and Save. Where each control sits is
:mod:`infra.local.gui`'s; what a click, a key or Enter on it does is here, through the apps' own
methods, the ones the ``calendar``, ``map``, ``todo``, ``msg``, ``editor`` and ``goto`` verbs
call: a form refuses what the verb refuses, with the verb's message, shown on the page (the
form keeps what was typed, and the script goes on, as a web page's form does).

The code editor's text box is the file's buffer, as ``editor write`` is: what is typed there is
the file's unsaved text at once (``appstate`` shows the file ``unsaved``), and only Save makes
it the file's content, as ``editor save`` does.
"""

from __future__ import annotations

from typing import Any

from infra.local.apps import AppError, Window
from infra.local.desktop import Desktop
from infra.local.planner import Event, entry_at

FORMS = {"calendar": ("Title", "Date", "Location", "Description", "URL", "Invitees"),
         "map": ("Name", "Latitude", "Longitude"), "todo": ("Title",),
         "messages": ("To", "Message"), "codeeditor": ("File", "Text")}
"""Each page's form: its fields in tab order (the pages not listed have none)."""
SUBMIT = {"calendar": "Add Event", "map": "Save Place", "todo": "Add", "messages": "Send",
          "codeeditor": "Save"}
"""The button that submits each page's form."""
MULTILINE = {"codeeditor": "Text"}
"""The page's field that holds lines (Enter starts a new one, Tab indents, a click puts the
caret at its end rather than selecting it all), as a code editor's text area does."""
INDENT = "    "
"""What Tab types in a multi-line field (OpenApps' editor indents with four spaces)."""
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


def multiline(desktop: Desktop, name: str) -> bool:
    """Whether the page's field ``name`` holds lines (:data:`MULTILINE`)."""
    return MULTILINE.get(desktop.apps.planner.app) == name


def press(desktop: Desktop, window: Window, action: str) -> None:
    """What a click on one of the window's controls does (``goto:calendar``, ``submit``,
    ``event:3``, ``place:0``, ``todo:2`` (Delete), ``done:2`` (the check box), ``file:0``
    (open): the entry's index in the app's list).

    Raises:
        AppError: the entry the control stood by is gone.
    """
    verb, _, arg = action.partition(":")
    apps = desktop.apps
    if verb == "goto":
        go(desktop, arg)
    elif verb == "submit":
        submit(desktop, window)
    elif verb == "event":
        apps.planner.remove_event_at(int(arg))
    elif verb == "place":
        apps.planner.remove_place_at(int(arg))
    elif verb == "todo":
        apps.delete_todo_at(int(arg))
    elif verb == "done":
        todo = apps.todo_at(int(arg))
        todo.done = not todo.done  # as ``todo done``/``todo undone`` set it
    elif verb == "file":
        open_file(desktop, window, entry_at(files(desktop), int(arg), "file"))


def open_file(desktop: Desktop, window: Window, name: str) -> None:
    """Show a code editor file: its name and its text (unsaved edits included, as ``editor
    read`` gives it) in the form, the caret at the text's end."""
    window.fields = {"File": name, "Text": desktop.apps.text(name)}
    window.focus, window.select_all, window.notice = "field:Text", False, ""


def typed(desktop: Desktop, window: Window, name: str) -> None:
    """A key changed the field ``name``: in the code editor's text box, the text becomes the
    open file's buffer, as ``editor write`` makes it (a refusal shows on the page)."""
    if desktop.apps.planner.app != "codeeditor" or name != "Text":
        return
    path = window.fields.get("File", "")
    if not path.strip():
        return  # no file named yet: Save says so
    try:
        desktop.apps.edit(path, window.fields.get("Text", ""))
    except AppError as exc:
        window.notice = str(exc)
    else:
        window.notice = ""


def submit(desktop: Desktop, window: Window) -> None:
    """Submit the page's form: add the event, save the place, add the to-do item, send the
    message, or write and save the file, by the verbs' rules. Refused, the reason is shown on
    the page and the fields keep their text; done, the form is emptied (the code editor's
    file stays open)."""
    apps = desktop.apps
    planner = apps.planner
    values = {name: window.fields.get(name, "") for name in form(desktop)}
    try:
        if planner.app == "calendar":
            details = {key: values[name] for name, key in _EVENT_DETAILS.items()}
            planner.add_event(values["Title"], values["Date"], **details)
        elif planner.app == "map":
            planner.save_place(values["Name"], values["Latitude"], values["Longitude"])
        elif planner.app == "todo":
            apps.add_todo(values["Title"])
        elif planner.app == "messages":
            apps.send(values["To"], values["Message"])
        elif planner.app == "codeeditor":
            apps.edit(values["File"], values["Text"])  # ``editor write``, then ``save``
            apps.save(values["File"])
            window.notice = ""
            return  # the file stays open, as in an editor
        else:
            return
    except AppError as exc:
        window.notice = str(exc)
        return
    window.fields, window.focus, window.select_all, window.notice = {}, "", False, ""


def scroll(desktop: Desktop, window: Window, clicks: int, rows: int) -> None:
    """Turn the wheel over the page's list (``clicks`` up when positive, as pyautogui's),
    three entries a notch, never past either end (``rows``: how many the list shows)."""
    total = len(entries(desktop))
    window.scroll = max(0, min(window.scroll - 3 * clicks, max(0, total - rows)))


def entries(desktop: Desktop) -> list[Any]:
    """The list the page on screen shows (events, places, to-do items, messages, files)."""
    apps = desktop.apps
    lists: dict[str, list[Any]] = {
        "calendar": apps.planner.events, "map": apps.planner.places, "todo": apps.todos,
        "messages": apps.messages, "codeeditor": files(desktop)}
    return lists.get(apps.planner.app, [])


def files(desktop: Desktop) -> list[str]:
    """The code editor's files as its list shows them (a row's index is its place here)."""
    return desktop.apps.file_names()


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
