"""``manifest.json``: what a run measured, pinned, so two runs can be told apart.

Written once, when a run starts (a resumed run keeps the manifest it started with). It records:

- ``tasks``: the SHA-256 of each task's JSON as the workers served it (``/task/<id>``, the
  document the runner runs) and of every index the workers serve (``/tasks``, ``/indexes``);
- ``checker``: the SHA-256 of this project's scoring rules and scoring server files (the copy the
  controller was installed with, which is what ``oa-vm`` ships onto workers), the scoring
  server's own ``/probe`` answer, and WAA's upstream commit where the pool's image says it;
- ``workers``: per pool, the worker image (WAA and dockur image digests, Windows build,
  snapshot or image ID, where the pool record has them) or the local worker's version, and for
  cloud workers QEMU's command line and ``-cpu`` value as each host's ``reset.sh check`` read
  them when the run started (``qemu``: ``{worker: {"cpu", "cmdline"}}``; ``compare`` looks at
  the ``-cpu`` values only: a command line carries each host's own paths and addresses);
- ``agent``: its class, its module file's SHA-256, its arguments (secrets redacted), its model;
- ``project``: this project's version and Python's;
- ``settings``: what shapes the results and a resume must keep (:mod:`evals.run.settings`), and
  ``setting_changes``, each change a resume made with ``--allow-change``;
- ``pools``: cloud, region and size of each pool.

Hashes of JSON documents are over a canonical form (keys sorted, no whitespace, UTF-8), so the
same document served with other formatting hashes the same. A fact that is not known is ``None``
(``null``), never guessed.

:func:`manifest_differences` lists every way two manifests differ other than the agent (what
``compare`` warns about before its verdict).
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals.errors import InvalidRunInputError
from evals.results.records import RunFolder, now_iso, versions
from oa_vm.kit.safe_fs import read_json_object
from oa_vm.kit.validate import Schema, record_problem

if TYPE_CHECKING:
    from evals.agents import AgentOptions, BenchmarkAgent
    from evals.run.pools import RunPool

MANIFEST = "manifest.json"
MANIFEST_VERSION = 1
CHECKER_FILES = {"scoring_rules": "scoring_rules.py", "scoring_server": "worker/scoring_server.py"}
"""The checker's files, relative to the ``infra`` package (read as bytes, never imported:
``evals`` does not import ``infra``)."""
IMAGE_FACTS = ("id", "cloud_id", "waa_image", "base_image", "waa_image_digest", "dockur_image",
               "dockur_image_digest", "windows_build", "waa_upstream_commit", "created")
"""What a cloud pool's ``settings["image"]`` may say about its worker image."""
UNREAD = "(error)"
"""The key of a pool's ``tasks.indexes`` that holds why its worker's indexes were not read."""
_SECRET_WORDS = ("key", "token", "secret", "password", "credential", "auth")
REDACTED = "<redacted>"


def sha256_json(document: Any) -> str:
    """The SHA-256 (hex) of a JSON document's canonical form."""
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_file(path: Path) -> str | None:
    """The SHA-256 (hex) of a file's bytes, or ``None`` when it cannot be read."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def checker_files() -> dict[str, str | None]:
    """The SHA-256 of the scoring rules and scoring server files this project ships."""
    spec = importlib.util.find_spec("infra")  # finds the package without importing it
    roots = list(spec.submodule_search_locations or []) if spec else []
    if not roots:
        return {f"{name}_sha256": None for name in CHECKER_FILES}
    root = Path(roots[0])
    return {f"{name}_sha256": sha256_file(root / rel) for name, rel in CHECKER_FILES.items()}


def recorded_arguments(args: Mapping[str, Any]) -> dict[str, Any]:
    """Agent arguments as the manifest records them, sorted: ``<redacted>`` where a name says
    secret."""
    return {k: REDACTED if any(w in k.lower() for w in _SECRET_WORDS) else v
            for k, v in sorted(args.items())}


def module_sha256(agent: BenchmarkAgent) -> str | None:
    """The SHA-256 of the file the agent's class is defined in (``None``: not a file)."""
    try:
        source = inspect.getsourcefile(type(agent))
    except TypeError:
        return None
    return sha256_file(Path(source)) if source else None


def agent_facts(spec: str, agent: BenchmarkAgent, options: AgentOptions | None) -> dict[str, Any]:
    """The agent's entry: its name, class, module file hash, arguments and model."""
    from evals.agents.model_api import parse_agent_args
    from oa_vm.kit.redact import redact_url

    cls = type(agent)
    args = parse_agent_args(options.args) if options else {}
    model = getattr(agent, "model", None) or args.get("model")
    return {
        "name": spec,
        "class": f"{cls.__module__}:{cls.__qualname__}",
        "module_sha256": module_sha256(agent),
        "arguments": recorded_arguments(args),
        "bundles": str(options.bundles) if options and options.bundles else None,
        # credentials in the URL (user, password, token-like query values) are never stored
        "agent_url": redact_url(options.agent_url) if options and options.agent_url else None,
        "model": None if model is None else str(model),
        "sees_answers": bool(getattr(agent, "sees_answers", False)),
    }


def _pool_facts(pool: RunPool) -> dict[str, Any]:
    record = pool.record
    settings, provider = record.settings, record.provider_data
    return {
        "name": record.name,
        "cloud": record.cloud,
        "region": settings.get("region") or provider.get("region"),
        "size": settings.get("size"),
        "workers": len(pool.workers),
        "egress": settings.get("egress"),
    }


SIMULATED_KIND = "local"
"""A simulated worker's ``kind`` in the manifest (a real one's is ``cloud``)."""


def _worker_facts(pool: RunPool, qemu: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    record = pool.record
    import oa_vm

    if oa_vm.cloud_facts(record.cloud).simulated:
        return {"pool": record.name, "kind": SIMULATED_KIND,
                "local_worker_version": versions()["oa_vm"], "image": None, "qemu": None}
    image = record.settings.get("image") or {}
    facts = {key: image.get(key) for key in IMAGE_FACTS} if isinstance(image, dict) else {}
    seen = {w.name: {"cpu": qemu[w.name].get("cpu"), "cmdline": qemu[w.name].get("cmdline")}
            for w in pool.workers if w.name in qemu}
    return {"pool": record.name, "kind": "cloud", "local_worker_version": None, "image": facts,
            "qemu": seen}


def _served_indexes(pool: RunPool) -> tuple[dict[str, str | None], dict[str, Any] | None]:
    """The SHA-256 of every index the pool's first worker serves, and its ``/probe`` answer."""
    from waa_client.errors import WaaError

    if not pool.workers:
        return {}, None
    client = pool.workers[0].scoring
    try:
        hashes: dict[str, str | None] = {"(main)": sha256_json(client.tasks())}
        for name in client.indexes() or []:
            hashes[name] = sha256_json(client.tasks(index=name))
        probe: dict[str, Any] | None = client.probe()
    except WaaError as exc:  # the run goes on; the manifest says what it could not read
        from oa_vm.kit.redact import redact_text

        return {UNREAD: redact_text(f"{type(exc).__name__}: {exc}")[:300]}, None
    return hashes, probe


def build_manifest(
    *,
    run: str,
    selection: str,
    tasks: Mapping[str, Mapping[str, Any]],
    pools: Sequence[RunPool],
    agent_spec: str,
    agent: BenchmarkAgent,
    agent_options: AgentOptions | None = None,
    trials: int | None = None,
    settings: Mapping[str, Any] | None = None,
    qemu: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The run's manifest (see the module docstring).

    ``qemu``: each cloud worker's QEMU as its host's check read it, by the run's worker name
    (``evals.run.reset.describe_plan``'s ``qemu``).

    Asks the first worker of each pool for its indexes and ``/probe`` (a few GETs, with the
    scoring client's timeouts); a worker that does not answer leaves an ``(error)`` entry
    instead of failing the run.
    """
    indexes: dict[str, dict[str, str | None]] = {}
    probes: dict[str, Any] = {}
    for pool in pools:
        indexes[pool.name], probes[pool.name] = _served_indexes(pool)
    workers = [_worker_facts(p, qemu or {}) for p in pools]
    commits = {w["image"].get("waa_upstream_commit") for w in workers if w["image"]}
    commits.discard(None)
    return {
        "manifest_version": MANIFEST_VERSION,
        "run": run,
        "created_at": now_iso(),
        "project": versions(),
        "trials": trials or 1,
        "tasks": {
            "selection": selection,
            "count": len(tasks),
            "sha256": {tid: sha256_json(task) for tid, task in tasks.items()},
            "indexes": indexes,
            **_module_files(tasks),
        },
        "checker": {
            **checker_files(),
            "waa_upstream_commit": ", ".join(sorted(commits)) if commits else None,
            "probe": probes,
        },
        "workers": workers,
        "agent": agent_facts(agent_spec, agent, agent_options),
        "pools": [_pool_facts(p) for p in pools],
        # what a resume must keep (evals.run.settings); changes go to "setting_changes"
        "settings": dict(settings or {}),
        "setting_changes": [],
    }


def _module_files(tasks: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """``{"modules": {"<module-dir>/<file>": sha256}}`` for Cua-Bench variants (every file of
    each module's folder: a changed page or helper is a changed task), else nothing."""
    files = sorted({Path(str(t["cua_bench"]["module"])) for t in tasks.values()
                    if isinstance(t.get("cua_bench"), Mapping)})
    if not files:
        return {}
    from evals.tasks.cua_bench import module_hashes

    return {"modules": module_hashes(files)}


def write_manifest(folder: RunFolder, manifest: Mapping[str, Any]) -> Path:
    """Write ``manifest.json`` into the run folder atomically; returns its path."""
    from oa_vm import atomic_write_json

    path = folder.path / MANIFEST
    atomic_write_json(path, dict(manifest))
    return path


_S, _OS = (str,), (str, type(None))
MANIFEST_SCHEMA: Schema = {
    "manifest_version": (int,), "run": _S, "created_at": _S, "project": (dict,),
    "trials": (int,), "checker": (dict,), "settings": (dict,), "setting_changes": [{}],
    "tasks": {"selection": _S, "count": (int,), "sha256": (dict,), "indexes": (dict,)},
    "agent": {"name": _S, "class": _S, "module_sha256": _OS, "arguments": (dict,),
              "bundles": _OS, "agent_url": _OS, "model": _OS, "sees_answers": (bool,)},
    "workers": [{}], "pools": [{}],
}
"""What ``manifest.json``'s fields must be (:func:`oa_vm.kit.validate.record_problem`)."""


def read_manifest(run_dir: Path) -> dict[str, Any] | None:
    """The run's manifest, or ``None`` when it has none (a run from before manifests).

    Raises:
        InvalidRunInputError: it is there but cannot be read (truncated, not a JSON object),
            or it has a field of the wrong type (the message names the file and the field):
            read as none, ``compare`` dropped every check of the settings as if the run
            predated manifests, and a resume checked none of its settings.
    """
    path = run_dir / MANIFEST
    data = read_json_object(path)
    if data is None and path.exists():
        raise InvalidRunInputError(f"{path} cannot be read (not a JSON object); restore it "
                                   "from a copy, or move it away to treat the run as one "
                                   "from before manifests")
    problem = record_problem(data, MANIFEST_SCHEMA) if data is not None else None
    if problem:
        raise InvalidRunInputError(f"{path}: {problem}; fix or move the file, then try again")
    return data


# --- comparing two manifests ---------------------------------------------------------------------

_IGNORED = ("run", "created_at", "agent", "manifest_version", "setting_changes")
"""Top-level keys that differ between any two runs, or are the point of comparing (the agent)."""


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        flat: dict[str, Any] = {}
        for key, item in value.items():
            flat.update(_flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    if isinstance(value, list):
        flat = {}
        for i, item in enumerate(value):
            flat.update(_flatten(item, f"{prefix}[{i}]"))
        return flat
    return {prefix: value}


def _short(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    return text[:12] + "..." if len(text) == 64 and all(c in "0123456789abcdef" for c in text) \
        else text


def manifest_differences(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None,
                         common_tasks: Sequence[str] | None = None) -> list[str]:
    """Every way two runs' manifests differ other than the agent, one line each
    (:func:`difference_rows` as text)."""
    if a is None or b is None:
        return [what for what, _, _ in difference_rows(a, b, common_tasks)]
    return [f"{what}: A {va} vs B {vb}" if (va or vb) else what
            for what, va, vb in difference_rows(a, b, common_tasks)]


def difference_rows(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None,
                    common_tasks: Sequence[str] | None = None, *, agent: bool = False,
                    ) -> list[tuple[str, str, str]]:
    """Every way two runs' manifests differ, as ``(what, A's value, B's value)`` rows; with
    ``agent``, the agent's class, arguments and model first (the compare page's one table).

    Task JSON is compared on the tasks both runs have (``common_tasks``, default all the
    tasks both manifests list); tasks in one run only are ``compare``'s own listing. Pool and
    worker names, and worker counts, are not compared: they say nothing about what was
    measured (a sweep makes a new pool each time).
    """
    if a is None or b is None:
        missing = [name for name, m in (("A", a), ("B", b)) if m is None]
        who = f"run {missing[0]} has" if len(missing) == 1 else "runs A and B have"
        return [(f"{who} no {MANIFEST} (started before manifests were written): the tasks, "
                 "checker and worker image measured cannot be checked", "", "")]
    lines: list[tuple[str, str, str]] = []
    if agent:
        agent_a, agent_b = (_flatten(dict(m.get("agent") or {}), "agent") for m in (a, b))
        for key in sorted(set(agent_a) | set(agent_b)):
            if agent_a.get(key) != agent_b.get(key):
                lines.append((key, _short(agent_a.get(key)), _short(agent_b.get(key))))
    hashes_a = (a.get("tasks") or {}).get("sha256") or {}
    hashes_b = (b.get("tasks") or {}).get("sha256") or {}
    shared = [t for t in (common_tasks or hashes_a) if t in hashes_a and t in hashes_b]
    changed = [t for t in shared if hashes_a[t] != hashes_b[t]]
    if changed:
        shown = ", ".join(changed[:10]) + (f" and {len(changed) - 10} more"
                                            if len(changed) > 10 else "")
        lines.append((f"{len(changed)} task(s) differ in their JSON: {shown}", "", ""))

    def comparable(manifest: Mapping[str, Any]) -> dict[str, Any]:
        doc = {k: v for k, v in manifest.items() if k not in _IGNORED}
        tasks = dict(doc.get("tasks") or {})
        tasks.pop("sha256", None)
        tasks.pop("count", None)
        tasks.pop("selection", None)
        # Index hashes by pool name would differ with the names alone: compare the set of them.
        tasks["indexes"] = sorted({json.dumps(v, sort_keys=True)
                                   for v in (tasks.get("indexes") or {}).values()})
        doc["tasks"] = tasks
        # the settings that shape results (max steps, timeouts, reset...), not the agent's
        settings = doc.get("settings")
        doc["settings"] = {k: v for k, v in (settings if isinstance(settings, dict) else {}).items()
                           if k not in ("agent", "agent-arg", "agent-module", "tasks")}
        checker = dict(doc.get("checker") or {})
        checker["probe"] = sorted({json.dumps(v, sort_keys=True)
                                   for v in (checker.get("probe") or {}).values()})
        doc["checker"] = checker
        doc["workers"] = sorted(
            json.dumps({k: _cpus(v) if k == "qemu" else v for k, v in w.items() if k != "pool"},
                       sort_keys=True)
             for w in doc.get("workers") or [] if isinstance(w, dict))
        doc["pools"] = sorted(
            json.dumps({k: v for k, v in p.items() if k not in ("name", "workers")},
                        sort_keys=True)
             for p in doc.get("pools") or [] if isinstance(p, dict))
        return _flatten(doc)

    flat_a, flat_b = comparable(a), comparable(b)
    for key in sorted(set(flat_a) | set(flat_b)):
        va, vb = flat_a.get(key), flat_b.get(key)
        if va != vb:
            lines.append((key, _short(va), _short(vb)))
    return lines


def _cpus(qemu: Any) -> list[str] | None:
    """The ``-cpu`` values of a pool's workers, without their names and command lines."""
    if not isinstance(qemu, dict):
        return None
    return sorted({str(q.get("cpu")) for q in qemu.values() if isinstance(q, dict)})


def summary_lines(manifest: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The manifest in a few ``(label, value)`` rows, for the run page."""
    tasks = manifest.get("tasks") or {}
    checker = manifest.get("checker") or {}
    agent = manifest.get("agent") or {}
    workers = manifest.get("workers") or []
    pools = manifest.get("pools") or []
    served = [per_pool or {} for per_pool in (tasks.get("indexes") or {}).values()]
    # a pool whose worker did not answer holds its error, not a hash (_served_indexes): its
    # first 12 characters read as one ("WorkerUnreac")
    index_hashes = sorted({str(h)[:12] for per_pool in served
                           for name, h in per_pool.items() if name != UNREAD})
    unread = sorted({str(per_pool[UNREAD]) for per_pool in served if UNREAD in per_pool})

    def worker_text(w: Mapping[str, Any]) -> str:
        if w.get("kind") == SIMULATED_KIND:
            return f"{w.get('pool')}: local worker {w.get('local_worker_version')}"
        image = w.get("image") or {}
        facts = ", ".join(f"{k} {v}" for k, v in image.items() if v is not None) or "unknown"
        cpus = _cpus(w.get("qemu"))
        return f"{w.get('pool')}: {facts}" + (f"; QEMU -cpu {', '.join(cpus)}" if cpus else "")

    # a commit and image digests only where the run knew them: "unknown" on every local run's
    # page said nothing and read as a defect
    commit = checker.get("waa_upstream_commit")
    known = [("WAA upstream commit", str(commit))] if commit else []
    changes = [c for c in manifest.get("setting_changes") or [] if isinstance(c, dict)]
    changed = [("setting changed on resume",
                f"{c.get('setting')}: {_change_text(c)} (at {c.get('at')})") for c in changes]
    return [
        *changed,
        ("tasks", f"{tasks.get('count', 0)} task JSON hashed; indexes "
                  f"{', '.join(index_hashes) or 'unknown'}"
                  + "".join(f"; indexes not read: {error}" for error in unread)),
        ("scoring rules", str(checker.get("scoring_rules_sha256") or "unknown")[:12]),
        ("scoring server", str(checker.get("scoring_server_sha256") or "unknown")[:12]),
        *known,
        ("workers", "; ".join(worker_text(w) for w in workers) or "none"),
        ("agent", f"{agent.get('class')} (module {str(agent.get('module_sha256'))[:12]}"
                  f"{', model ' + str(agent['model']) if agent.get('model') else ''})"),
        ("project", ", ".join(f"{k} {v}" for k, v in (manifest.get("project") or {}).items())),
        ("pools", "; ".join(f"{p.get('name')} ({p.get('cloud')}, {p.get('region') or '-'}, "
                            f"{p.get('size') or '-'})" for p in pools) or "none"),
    ]


def _change_text(change: Mapping[str, Any]) -> str:
    def text(value: Any) -> str:
        if isinstance(value, dict):
            return ",".join(f"{k}={v}" for k, v in sorted(value.items())) or "(none)"
        if isinstance(value, float):
            return f"{value:g}"
        return "(none)" if value is None else _short(value)

    return f"{text(change.get('from'))} -> {text(change.get('to'))}"
