"""The task catalog: which WAA tasks exist, how a selection names them, which are allowed.

A catalog reads either a folder in WAA's layout (index files ``<name>.json`` of the form
``{domain: [task_id]}`` at its top level, tasks in ``examples/<domain>/<task_id>.json``) or a
scoring server (``/tasks`` for the index, ``/task/<id>`` fetched when first needed).

Tasks are keyed by their *index ID*, which is also their file name. The ``"id"`` inside the task
JSON is never used as a key: in WAA's own data six files disagree with their name.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from waa_client import inputs
from waa_client.errors import CatalogError, SyntheticTaskError, UnknownTaskError

if TYPE_CHECKING:  # a type only: reading a catalog from files loads no HTTP client
    from waa_client.scoring import ScoringClient

INFEASIBLE_PREFIX = "INF-"
BULK_CHUNK = 500  # task IDs per bulk request (the servers take up to 1000)

BulkLoader = Callable[[list[str]], "dict[str, dict[str, Any]] | None"]
"""Reads many tasks at once: ``{task_id: json}`` (unknown IDs left out), or None if it cannot."""
_EXAMPLES = "examples"
_LISTED_MAX = 20
_UNKNOWN_SHOWN = 5  # unknown IDs named in a refusal, each with its close match
LIST_HINT = "list the known ones with 'openadapt-evals tasks'"
WAA_SUITE_TASKS = 154
"""Tasks in WAA's ``test_all.json``: what ``all`` selects on a WAA worker, whose catalog is
WAA's own (WAA_PROTOCOL section 4)."""
WAA_DOMAINS = ("chrome", "clock", "file_explorer", "libreoffice_calc", "libreoffice_writer",
               "microsoft_paint", "msedge", "notepad", "settings", "vlc", "vs_code",
               "windows_calc")
"""The twelve domains of WAA's suite (its ``evaluation_examples_windows`` folders)."""
WAA_INDEXES = ("test_all", "test_small", "test_custom")
"""The index files a WAA worker holds (``evaluation_examples_windows/<name>.json``)."""
WAA_SUITE = "WAA's suite"
"""How a refusal names WAA's catalog before a worker holds it."""

# Synthetic IDs are the placeholders of mock runs (``mock_chrome_001``) and the
# ``<domain>_<n>`` names of toy suites (``notepad_1``). A live pool holds only WAA's real tasks,
# so such an ID there means the selection was written for something else.
_SYNTHETIC = re.compile(r"^(?:mock_.*|[A-Za-z]+(?:_[A-Za-z]+)*_\d+)$")


def is_synthetic(task_id: str) -> bool:
    """True for IDs that only exist in mock or toy suites (``mock_*``, ``<domain>_<n>``)."""
    return bool(_SYNTHETIC.match(task_id))


def is_infeasible(task_id: str, task: dict[str, Any] | None = None) -> bool:
    """True for tasks WAA marks infeasible: an ``INF-`` ID or ``evaluator.func == "infeasible"``."""
    if task_id.startswith(INFEASIBLE_PREFIX):
        return True
    evaluator = (task or {}).get("evaluator")
    return isinstance(evaluator, dict) and evaluator.get("func") == "infeasible"


@dataclass(frozen=True)
class TaskRef:
    """What a listing or a queue needs to know about one task, without its full JSON.

    Attributes:
        task_id: The index ID (the file name), the task's identity.
        domain: The index domain (``chrome``, ``libreoffice_calc``, ...).
        infeasible: True when the right answer is to report ``FAIL``.
        instruction: The task's instruction to the agent.
    """

    task_id: str
    domain: str
    infeasible: bool
    instruction: str


class Catalog:
    """Tasks known to one source, their indexes, and selection of tasks by name.

    Build one with :meth:`from_folder` or :meth:`from_scoring`. Task JSON is loaded when first
    needed and cached.
    """

    def __init__(
        self,
        *,
        source: str,
        indexes: dict[str, dict[str, list[str]]],
        domains: dict[str, str],
        loader: Callable[[str], dict[str, Any]],
        bulk_loader: BulkLoader | None = None,
    ) -> None:
        """Use :meth:`from_folder` or :meth:`from_scoring`.

        Args:
            source: Where the tasks come from, for messages.
            indexes: Index name -> ``{domain: [task_id]}``.
            domains: Every known task ID -> its domain, in catalog order.
            loader: Reads one task's JSON by ID.
            bulk_loader: Reads many at once (``{id: json}``, or None when the source cannot);
                :meth:`select` then loads a selection's tasks in a few requests, not one each.
        """
        self.source = source
        self._indexes = indexes
        self._domains = domains
        self._loader = loader
        self._bulk_loader = bulk_loader
        self._cache: dict[str, dict[str, Any]] = {}

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    def from_folder(cls, path: Path) -> Catalog:
        """Read a folder in WAA's layout.

        Every top-level ``*.json`` must be an index; every ID an index lists must have its file
        under ``examples/<domain>/``. Tasks present in ``examples/`` but in no index are known
        too (after the indexed ones, by domain and name).

        Raises:
            CatalogError: The folder is missing, an index is malformed, or lists a missing file.
        """
        root = Path(path)
        examples = root / _EXAMPLES
        if not examples.is_dir():
            raise CatalogError(
                f"{root} is not a WAA task folder (no {_EXAMPLES}/ inside); pass the folder "
                "holding test_all.json and examples/"
            )
        files: dict[str, Path] = {}
        file_domain: dict[str, str] = {}
        for domain_dir in sorted(p for p in examples.iterdir() if p.is_dir()):
            for task_file in sorted(domain_dir.glob("*.json")):
                task_id = task_file.stem
                if task_id in files:
                    raise CatalogError(
                        f"task {task_id} has two files ({files[task_id]} and {task_file}); "
                        "keep one"
                    )
                files[task_id] = task_file
                file_domain[task_id] = domain_dir.name
        indexes = {
            index_file.stem: _read_index(index_file)
            for index_file in sorted(root.glob("*.json"))
        }
        for name, index in indexes.items():
            missing = [
                f"{domain}/{task_id}"
                for domain, ids in index.items()
                for task_id in ids
                if file_domain.get(task_id) != domain
            ]
            if missing:
                raise CatalogError(
                    f"index {root / (name + '.json')} lists {len(missing)} task(s) with no file "
                    f"under {examples}/<domain>/: {_listing(missing)}; fix the index or add "
                    "the files"
                )
        domains = _ordered_domains(indexes, file_domain)

        def load(task_id: str) -> dict[str, Any]:
            return _read_task(files[task_id])

        return cls(source=str(root), indexes=indexes, domains=domains, loader=load)

    @classmethod
    def from_scoring(cls, client: ScoringClient, index_name: str = "worker",
                     source: str | None = None) -> Catalog:
        """Read the index a scoring server holds (``/tasks``); tasks are fetched lazily.

        Args:
            client: The worker's scoring client.
            index_name: The name the server's index gets in :attr:`indexes`.

        Raises:
            WaaError: The server cannot be reached or answers wrongly (see the client).
        """
        index = client.tasks()
        indexes = {index_name: index}
        names = client.indexes()
        if names:
            # Serve the worker's index files under their own names (local_all, local_small...)
            # so a selection means the same thing on a pool as on disk.
            indexes = {name: client.tasks(index=name) for name in names}
        file_domain = {task_id: domain for domain, ids in index.items() for task_id in ids}
        domains = _ordered_domains(indexes, file_domain)
        return cls(
            source=source or client.base_url,
            indexes=indexes,
            domains=domains,
            loader=client.task,
            bulk_loader=client.tasks_batch,
        )

    @classmethod
    def from_indexes(cls, indexes: dict[str, dict[str, list[str]]], source: str) -> Catalog:
        """The catalog of a worker whose index files are known before it exists (recorded with
        its prepared image): its IDs, domains and indexes, as :meth:`from_scoring` reads them;
        its task files are on the workers only, so :meth:`load` refuses.
        """
        def load(task_id: str) -> dict[str, Any]:
            raise CatalogError(f"task {task_id}'s file is on the workers, not in {source}")

        return cls(source=source, indexes=indexes, domains=_ordered_domains(indexes, {}),
                   loader=load)

    # -- queries ----------------------------------------------------------------------------------

    @property
    def indexes(self) -> dict[str, dict[str, list[str]]]:
        """Index name -> ``{domain: [task_id]}``, as read (copies)."""
        return {name: {d: list(ids) for d, ids in idx.items()}
                for name, idx in self._indexes.items()}

    def task_ids(self) -> list[str]:
        """Every task ID the catalog knows, in catalog order."""
        return list(self._domains)

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._domains

    def __len__(self) -> int:
        return len(self._domains)

    def load(self, task_id: str) -> dict[str, Any]:
        """The task's JSON (cached after the first read).

        Raises:
            UnknownTaskError: The catalog does not know ``task_id``.
            CatalogError: The task file is malformed.
        """
        check_known([task_id], self._domains, source=self.source)
        if task_id not in self._cache:
            task = self._loader(task_id)
            if not isinstance(task, dict):
                raise CatalogError(f"task {task_id} from {self.source} is not a JSON object")
            self._cache[task_id] = task
        return self._cache[task_id]

    def prefetch(self, task_ids: Iterable[str]) -> None:
        """Load the known, not yet cached tasks among ``task_ids`` with the bulk loader, in
        chunks of :data:`BULK_CHUNK`; without one (or if the source cannot) nothing happens and
        :meth:`load` reads them one by one later. Malformed tasks are left to :meth:`load`."""
        if self._bulk_loader is None:
            return
        wanted = [t for t in _dedupe(task_ids) if t in self._domains and t not in self._cache]
        for start in range(0, len(wanted), BULK_CHUNK):
            got = self._bulk_loader(wanted[start:start + BULK_CHUNK])
            if got is None:  # a source without the bulk endpoint
                self._bulk_loader = None
                return
            for task_id, task in got.items():
                if task_id in self._domains and isinstance(task, dict):
                    self._cache[task_id] = task

    def ref(self, task_id: str) -> TaskRef:
        """A :class:`TaskRef` for one task (loads its JSON for the instruction)."""
        task = self.load(task_id)
        instruction = task.get("instruction", "")
        return TaskRef(
            task_id=task_id,
            domain=self._domains[task_id],
            infeasible=is_infeasible(task_id, task),
            instruction=instruction if isinstance(instruction, str) else str(instruction),
        )

    # -- selection --------------------------------------------------------------------------------

    def resolve(self, selection: str, *, live: bool) -> list[str]:
        """The IDs a selection names, validated, in stable order, without duplicates.

        See :meth:`select` for the syntax and the errors.
        """
        wanted = _dedupe(self._expand(selection))
        if not wanted:
            raise CatalogError(f"--tasks {selection!r} names no task")
        if live:
            check_not_synthetic(wanted)
        check_known(wanted, self._domains, source=self.source)
        return wanted

    def select(self, selection: str, *, live: bool) -> list[TaskRef]:
        """Resolve a selection to tasks, rejecting bad IDs before anything is dispatched.

        Syntax: ``all`` (every known task); a number ``N`` (the first N of ``all``); an index
        name (``test_small``, ``local_all``...); ``domain:<name>``; comma-separated task IDs;
        ``@file`` (one ID a line or several separated by commas, ``#`` comments and blank lines
        ignored; :func:`~waa_client.inputs.read_id_file`). Order follows the
        index (or the list given); duplicates are dropped.

        Args:
            selection: The selection text.
            live: True for a pool of real WAA workers, where synthetic IDs are refused.

        Raises:
            SyntheticTaskError: ``live`` and some IDs are synthetic (lists them all).
            UnknownTaskError: Some IDs are not in the catalog (lists them all).
            CatalogError: Unknown index or domain, unreadable ``@file``, empty selection.
        """
        task_ids = self.resolve(selection, live=live)
        self.prefetch(task_ids)
        return [self.ref(task_id) for task_id in task_ids]

    def _expand(self, selection: str) -> list[str]:
        text = selection.strip()
        if text == "all":
            return self.task_ids()
        count = selection_count(text)
        if count is not None:
            known = self.task_ids()
            check_count(text, len(known), self.source)
            return known[:count]
        if text in self._indexes:
            return [t for ids in self._indexes[text].values() for t in ids]
        if text.startswith("domain:"):
            domain = text.removeprefix("domain:").strip()
            ids = [t for t, d in self._domains.items() if d == domain]
            if not ids:
                raise _unknown_domain(text, sorted(set(self._domains.values())), self.source)
            return ids
        if text.startswith("@"):
            return inputs.read_id_file(Path(text[1:]))
        inputs.check_argument("--tasks", text)
        ids = _checked_ids(part.strip() for part in text.split(",") if part.strip())
        if len(ids) == 1 and ids[0] not in self._domains and _looks_like_index(ids[0]):
            raise _unknown_index(ids[0], sorted(self._indexes), [*self._domains], self.source)
        return ids


def _unknown_domain(text: str, known: Sequence[str], source: str) -> CatalogError:
    """The refusal of ``domain:<name>`` naming no domain of ``source`` (``known``)."""
    domain = text.removeprefix("domain:").strip()
    return CatalogError(f"--tasks {text!r}: no domain {_with_match(domain, known)} in {source}; "
                        f"known domains: {', '.join(known)}")


def _unknown_index(name: str, indexes: Sequence[str], others: Sequence[str],
                   source: str) -> CatalogError:
    """The refusal of a word naming no index of ``source`` (nor one of ``others``, its IDs)."""
    return CatalogError(
        f"no index or task named {_with_match(name, [*indexes, *others])} in {source}; "
        f"indexes: {', '.join(indexes) or 'none'} (or use all, domain:<name>, IDs separated "
        "by commas, @file)"
    )


def check_waa_selection(selection: str) -> None:
    """What a WAA worker's catalog would refuse, known before the worker exists: a count past
    WAA's suite, a domain or an index it does not have (:data:`WAA_SUITE_TASKS`,
    :data:`WAA_DOMAINS`, :data:`WAA_INDEXES`), said as the worker's catalog says it. The IDs
    themselves are the worker's to check.

    Raises:
        CatalogError: the count, the domain or the index is not WAA's.
    """
    text = selection.strip()
    check_count(text, WAA_SUITE_TASKS, WAA_SUITE)
    if text.startswith("domain:"):
        if text.removeprefix("domain:").strip() not in WAA_DOMAINS:
            raise _unknown_domain(text, WAA_DOMAINS, WAA_SUITE)
    elif (text not in ("all", *WAA_INDEXES) and selection_count(text) is None
          and not text.startswith("@") and named_ids(text) is None):
        raise _unknown_index(text, WAA_INDEXES, (), WAA_SUITE)


def check_not_synthetic(task_ids: Iterable[str]) -> None:
    """The rule of a pool of real WAA workers, known without its catalog: no synthetic IDs.

    Raises:
        SyntheticTaskError: some IDs are synthetic (lists them all).
    """
    synthetic = [t for t in _dedupe(task_ids) if is_synthetic(t)]
    if synthetic:
        raise SyntheticTaskError(
            f"{len(synthetic)} synthetic task ID(s) cannot run on a live pool: "
            f"{_listing(synthetic)} (these name mock/toy tasks, not WAA tasks; select "
            "real WAA IDs, or run on a local pool)",
            task_ids=synthetic,
        )


def check_known(
    task_ids: Iterable[str], known: Collection[str], *, source: str, hint: str = LIST_HINT
) -> None:
    """The one rule for task IDs a catalog does not hold, whoever asks (a selection, a flow
    plan, an audit, an adapter): refused in one line that counts them, names the first few,
    each with its closest known ID when one is close (a typo), and says what to do.

    Args:
        task_ids: The IDs given.
        known: Every ID the catalog holds.
        source: Where the catalog comes from, for the message.
        hint: What to do next (default: list the known IDs).

    Raises:
        UnknownTaskError: some IDs are not in ``known`` (``task_ids`` lists every one).
    """
    unknown = [t for t in _dedupe(task_ids) if t not in known]
    if not unknown:
        return
    named = [_with_match(task_id, known) for task_id in unknown[:_UNKNOWN_SHOWN]]
    more = len(unknown) - len(named)
    raise UnknownTaskError(
        f"{len(unknown)} unknown task ID(s) in {source}: {', '.join(named)}"
        f"{f' and {more} more' if more else ''}; {hint}",
        task_ids=unknown,
    )


def _with_match(name: str, known: Iterable[str]) -> str:
    """``name``, quoted, with the closest known name when one is close (a typo)."""
    close = difflib.get_close_matches(name, list(known), n=1)
    return f"{name!r} (did you mean {close[0]!r}?)" if close else repr(name)


def selection_count(selection: str) -> int | None:
    """N for a selection that is a bare whole number (``"5"``: the first 5 tasks of ``all``, as
    ``openadapt-evals mock --tasks 5`` and ``openadapt-eval-flow --tasks 154`` always meant),
    else ``None``."""
    text = selection.strip()
    return int(text) if text.isascii() and text.isdigit() else None


def check_count(selection: str, available: int, source: str) -> None:
    """The one rule for a count (``--tasks N``): N selects the first N tasks of ``source``, so
    it is 1 to ``available``. A selection that is not a count passes. Said the same by a
    catalog and, before a WAA worker's catalog exists, against WAA's suite
    (:data:`WAA_SUITE_TASKS`).

    Raises:
        CatalogError: the count is 0 or more than ``available``.
    """
    text = selection.strip()
    count = selection_count(text)
    if count is not None and not 1 <= count <= available:
        raise CatalogError(
            f"--tasks {text!r}: a number N selects the first N tasks, and {source} has "
            f"{available}; give 1 to {available}, or all"
        )


def named_ids(selection: str) -> list[str] | None:
    """The IDs a selection names one by one (``A,B``, ``@file``, one ID), by the one ID rule;
    None for ``all``, N, an index or a domain, whose IDs only the catalog knows. What a command
    can check before the pool whose catalog it is exists."""
    text = selection.strip()
    if text == "all" or selection_count(text) is not None or text.startswith("domain:"):
        return None
    if text.startswith("@"):
        return inputs.read_id_file(Path(text[1:]))
    ids = _checked_ids(part.strip() for part in text.split(",") if part.strip())
    return None if len(ids) == 1 and _looks_like_index(ids[0]) else ids


def _looks_like_index(name: str) -> bool:
    # Index names are short snake_case words; task IDs carry dashes (UUIDs). Only used to word
    # the error better when a misspelt index name is given.
    return "-" not in name and not is_synthetic(name)


def _checked_ids(ids: Iterable[str]) -> list[str]:
    """Every ID given by name passes the one ID rule before it is looked up (so ``X#2`` or a
    path is refused as such, not reported as an unknown task)."""
    return [inputs.check_id("task ID", task_id) for task_id in ids]


def _dedupe(ids: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(ids))


def _listing(items: list[str]) -> str:
    shown = ", ".join(items[:_LISTED_MAX])
    return shown if len(items) <= _LISTED_MAX else f"{shown} and {len(items) - _LISTED_MAX} more"


def _ordered_domains(
    indexes: dict[str, dict[str, list[str]]], file_domain: dict[str, str]
) -> dict[str, str]:
    """Every task in a stable order: the largest index first, then tasks no index lists."""
    ordered: dict[str, str] = {}
    for name in sorted(indexes, key=lambda n: (-sum(map(len, indexes[n].values())), n)):
        for domain, ids in indexes[name].items():
            for task_id in ids:
                ordered.setdefault(task_id, domain)
    for task_id in sorted(file_domain, key=lambda t: (file_domain[t], t)):
        ordered.setdefault(task_id, file_domain[task_id])
    return ordered


def _read_json(path: Path) -> Any:
    # the one bounded reader: a FIFO or a 50 MB task file in a --source folder is one line
    return inputs.read_json(path, what="task file")


def _read_index(path: Path) -> dict[str, list[str]]:
    return index_from_json(_read_json(path), f"index {path}",
                           "fix the file or move it out of the task folder")


def index_from_json(data: Any, what: str, fix: str = "") -> dict[str, list[str]]:
    """An index file's content (``{domain: [task_id, ...]}``), checked; ``what`` names it and
    ``fix`` (if any) says what to do in the refusal.

    Raises:
        CatalogError: not of that shape.
    """
    then = f"; {fix}" if fix else ""
    if not isinstance(data, dict):
        raise CatalogError(f"{what} must be an object {{domain: [task_id, ...]}}, "
                           f"not {type(data).__name__}{then}")
    for domain, ids in data.items():
        if not isinstance(ids, list) or not all(isinstance(i, str) and i for i in ids):
            raise CatalogError(
                f"{what}: domain {domain!r} must map to a list of task ID strings{then}")
    return {domain: list(ids) for domain, ids in data.items()}


def _read_task(path: Path) -> dict[str, Any]:
    data = _read_json(path)
    if not isinstance(data, dict):
        raise CatalogError(f"task file {path} must be a JSON object, not {type(data).__name__}")
    for key, kind in (("instruction", str), ("config", list), ("evaluator", dict)):
        if key in data and not isinstance(data[key], kind):
            raise CatalogError(
                f"task file {path}: {key!r} must be a {kind.__name__}, "
                f"not {type(data[key]).__name__}"
            )
    return data


