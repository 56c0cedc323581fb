"""The simulated desktop's own productivity apps: a to-do list, a code editor, a messenger, and
(in :mod:`planner`) a calendar, a map and the launcher that says which app is on screen.

Each keeps its state as one JSON document (:meth:`WorkApps.state`), the shape OpenApps-style
tasks compare before and after an episode (``evals.tasks.openapps``). A fresh profile starts with
the same seed every time (:func:`seeded`): a to-do list holding "Water plants" and the other
items of :data:`SEED_TODOS`, a code editor holding ``script.py``, an empty messenger, and the
calendar's and map's seed. Pure data plus validation, like :mod:`apps`.

The code editor separates what is typed (a file's ``buffer``) from what is saved
(``content``): only ``save`` makes an edit count, as in an editor whose reward reads the saved
file tree.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from infra.local.apps import AppError
from infra.local.planner import Planner, entry_at, pop_at, seeded_planner

SEED_TODOS = (
    ("Water plants", False), ("Buy groceries", False), ("Call the dentist", False),
    ("Visit grandma", False), ("Sort medical papers", False), ("Plan weekly meals", False),
    ("Call Aunt Lisa", True), ("Check budget", False), ("Tidy living room", True),
    ("Walk for 20 minutes", False), ("Meditate for 30", False), ("Update calendar", False),
    ("Answer emails", False), ("Read before bed", False),
)
"""A fresh to-do list (title, done): the items OpenApps-style tasks mark done or delete."""
SEED_SCRIPT = 'def main():\n    print("hello")\n\n\nif __name__ == "__main__":\n    main()\n'
MAX_TEXT = 100_000


@dataclass
class Todo:
    """One to-do item."""

    id: int
    title: str
    done: bool = False


@dataclass
class EditorFile:
    """One file of the code editor's workspace: saved contents and the unsaved buffer."""

    content: str
    buffer: str | None = None
    """Text typed and not saved yet (``None``: the buffer is the saved content)."""


@dataclass
class Message:
    """One message sent from the messenger."""

    to: str
    text: str


@dataclass
class WorkApps:
    """The apps' state, mutated only under the desktop's lock."""

    todos: list[Todo] = field(default_factory=list)
    files: dict[str, EditorFile] = field(default_factory=dict)
    messages: list[Message] = field(default_factory=list)
    planner: Planner = field(default_factory=Planner)
    next_todo: int = 1

    # -- to-do list ----------------------------------------------------------------------

    def find_todo(self, title: str) -> Todo:
        """The first item with that title (case-insensitive).

        Raises:
            AppError: none has it.
        """
        wanted = title.strip().casefold()
        for todo in self.todos:
            if todo.title.casefold() == wanted:
                return todo
        raise AppError(f"no to-do item titled {title!r}")

    def add_todo(self, title: str, done: bool = False) -> Todo:
        """Add an item at the end of the list."""
        title = _text(title, "a to-do title")
        if not title.strip():
            raise AppError("a to-do item needs a title")
        todo = Todo(self.next_todo, title, done)
        self.next_todo += 1
        self.todos.append(todo)
        return todo

    def delete_todo(self, title: str) -> None:
        """Remove an item."""
        self.todos.remove(self.find_todo(title))

    def todo_at(self, index: int) -> Todo:
        """The item at ``index`` of the list (the row a check box stands on).

        Raises:
            AppError: no item is there any more.
        """
        return entry_at(self.todos, index, "to-do item")

    def delete_todo_at(self, index: int) -> Todo:
        """Remove the item at ``index`` of the list (the one a Delete button stands by).

        Raises:
            AppError: no item is there any more.
        """
        return pop_at(self.todos, index, "to-do item")

    # -- code editor ---------------------------------------------------------------------

    def edit(self, name: str, text: str) -> None:
        """Type ``text`` as the whole buffer of ``name`` (a new file when there is none);
        nothing is saved."""
        name = _file_name(name)
        text = _text(text, "the editor's text")
        current = self.files.get(name)
        if current is None:
            self.files[name] = EditorFile(content=_UNSAVED_NEW, buffer=text)
        else:
            current.buffer = text

    def text(self, name: str) -> str:
        """A file's text as the editor shows it (its unsaved edits included).

        Raises:
            AppError: no such file in the editor.
        """
        found = self.files.get(name.replace("\\", "/"))
        if found is None:
            raise AppError(f"no file {name!r} in the code editor")
        return found.content if found.buffer is None else found.buffer

    def file_names(self) -> list[str]:
        """The editor's files in name order, each once: the saved ones and any typed and not
        saved yet (as an editor's file list shows them)."""
        return sorted(self.files)

    def save(self, name: str) -> str:
        """Save the buffer of ``name``; returns the saved text."""
        name = _file_name(name)
        current = self.files.get(name)
        if current is None:
            raise AppError(f"no file {name!r} in the code editor")
        if current.buffer is not None:
            current.content, current.buffer = current.buffer, None
        return current.content

    # -- messenger -----------------------------------------------------------------------

    def send(self, to: str, text: str) -> None:
        """Send a message."""
        if not to.strip():
            raise AppError("a message needs a recipient")
        self.messages.append(Message(_text(to, "a recipient"), _text(text, "a message")))

    # -- state ---------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """One JSON document per app: ``{"todo": ..., "codeeditor": ..., "messenger": ...,
        "calendar": ..., "map": ...}``, and ``_url``, the path of the app on screen.

        A code editor file is listed once saved (a new file typed and never saved is not in
        the tree); ``unsaved`` says that its buffer differs from what is saved.
        """
        files = [
            {"path": name, "content": f.content,
             "unsaved": f.buffer is not None and f.buffer != f.content}
            for name, f in sorted(self.files.items()) if f.content != _UNSAVED_NEW
        ]
        return {
            "todo": {"todos": [asdict(t) for t in self.todos]},
            "codeeditor": {"files": files},
            "messenger": {"messages": [asdict(m) for m in self.messages]},
            **self.planner.state(),
        }


_UNSAVED_NEW = "\x00never saved"
"""The content marker of a file created in the editor and not saved yet (a string, so that
the snapshot's deep copy keeps it comparable)."""


def seeded() -> WorkApps:
    """The apps as a fresh profile has them."""
    apps = WorkApps(planner=seeded_planner())
    for title, done in SEED_TODOS:
        apps.add_todo(title, done)
    apps.files["script.py"] = EditorFile(SEED_SCRIPT)
    return apps


def _text(value: str, what: str) -> str:
    if len(value) > MAX_TEXT:
        raise AppError(f"{what} is longer than {MAX_TEXT} characters")
    return value


def _file_name(name: str) -> str:
    name = name.strip().replace("\\", "/")
    if not name or name.startswith("/") or ".." in name.split("/"):
        raise AppError(f"{name!r} is not a path inside the code editor's workspace")
    return name
