"""Serializer benchmark: the pool record's hand-written JSON pair against msgspec and pydantic.

``oa_vm.model.state`` reads and writes each pool's record with plain classes and a ``to_json`` /
``from_json`` pair (types checked field by field, :func:`oa_vm.model.state.type_problem`). Two
figures decide whether a library should do it instead, both measured in this run:

1. **Import cost**, what every ``oa-vm pool-status`` pays before it reads anything:
   ``python -X importtime -c "import X"`` in a fresh interpreter, the module's cumulative
   microseconds, median of ``--imports`` runs, for ``oa_vm.model.state`` (all of it), ``msgspec``
   and ``pydantic``; beside the wall time of ``python -c pass`` measured the same way.
2. **Round trip** of one record of ``--workers`` workers (SSH endpoints, timestamps, enums):
   the text parsed and checked into the typed record, and the record written as text; ours
   (``oa_vm.model.state`` as ``load`` and ``save`` do it, with the indented JSON the file holds)
   against ``msgspec.json`` with ``msgspec.Struct`` types and pydantic's ``model_validate_json``
   / ``model_dump_json`` with the same fields; medians of ``--rounds`` rounds of ``--calls``.

A library that is not installed is reported as such (``pip install msgspec``).

Usage (from the repository root)::

    .venv/bin/python bench/serializers.py [--workers 40] [--rounds 5] [--calls 200] [--json]
"""

# No ``from __future__ import annotations``: msgspec and pydantic read the field types of the
# classes defined inside the functions below, which lazy annotations would hide from them.
import functools
import importlib.util
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import BenchInputError, emit, machine_info, parser, progress, run_cli
from oa_vm.model import state
from oa_vm.model.state import PoolState, WorkerState

PROG = "bench/serializers.py"
LIBRARIES = ("msgspec", "pydantic")
RUN_TIMEOUT_S = 60.0


def _import_us(module: str) -> int:
    """Cumulative microseconds of ``import module`` in a fresh interpreter."""
    done = subprocess.run(  # fixed argv, no shell
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=True,
    )
    for line in reversed(done.stderr.splitlines()):
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2] == module:
            return int(parts[1])
    raise RuntimeError(f"no import time for {module} in: {done.stderr[-300:]}")


def _bare_start_us() -> int:
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True, timeout=RUN_TIMEOUT_S)
    return int((time.perf_counter() - began) * 1e6)


def import_costs(runs: int) -> dict[str, Any]:
    """Median import microseconds per module (``None``: not installed), and a bare start."""
    modules = ["oa_vm.model.state", *(m for m in LIBRARIES if importlib.util.find_spec(m))]
    samples: dict[str, list[int]] = {m: [] for m in modules}
    bare: list[int] = []
    for _ in range(runs):
        bare.append(_bare_start_us())
        for module in modules:
            samples[module].append(_import_us(module))
    figures: dict[str, Any] = {"python -c pass (wall)": int(statistics.median(bare))}
    for module in ("oa_vm.model.state", *LIBRARIES):
        figures[module] = int(statistics.median(samples[module])) if module in samples else None
    for module in LIBRARIES:
        if figures[module] is not None:
            base = figures["oa_vm.model.state"]
            figures[f"{module} / oa_vm.model.state"] = round(figures[module] / base, 2)
    return figures


def sample_record(workers: int) -> state.PoolRecord:
    """A cloud pool's record: every worker reached over SSH, timestamps, provider data."""
    created = datetime(2026, 1, 5, 9, 30, tzinfo=UTC)
    return state.PoolRecord(
        name="bench-pool", cloud="aws", state=state.PoolState.READY, created_at=created,
        expires_at=created + timedelta(hours=8), owner="bench", price_per_hour=0.384 * workers,
        settings={"region": "us-east-1", "instance_type": "m7i.2xlarge", "disk_gb": 96},
        provider_data={"stack": "oa-vm-bench-pool", "project": "oa-vm"},
        workers=[
            state.WorkerRecord(
                name=f"w{i}", state=state.WorkerState.READY,
                waa_url=f"http://127.0.0.1:{20000 + 2 * i}",
                scoring_url=f"http://127.0.0.1:{20001 + 2 * i}", host=f"198.51.100.{i % 250}",
                ssh=state.SshEndpoint(f"198.51.100.{i % 250}", 22, "ubuntu", "keys/pool"),
                provider_id=f"i-{i:017x}", phase="ready", detail="",
            )
            for i in range(workers)
        ],
    )


RECORD_PATH = Path("bench-pool") / "pool.json"
"""The sample record's path: named in error messages only (nothing is read or written), in its
pool's folder as a record must be (``state._parse`` refuses one naming another pool)."""


def _ours() -> tuple[Callable[[str], Any], Callable[[Any], str]]:
    import json

    def parse(text: str) -> Any:
        return state._parse(RECORD_PATH, text)

    def dump(record: Any) -> str:
        return json.dumps(record.to_json(), indent=2, sort_keys=False, allow_nan=False)

    return parse, dump


def _msgspec() -> tuple[Callable[[str], Any], Callable[[Any], str]]:
    import msgspec

    class Ssh(msgspec.Struct):
        host: str
        port: int
        user: str
        key_path: str

    class Worker(msgspec.Struct):
        name: str
        state: WorkerState = WorkerState.STARTING
        waa_url: str | None = None
        scoring_url: str | None = None
        pid: int | None = None
        pid_create_time: float | None = None
        host: str | None = None
        ssh: Ssh | None = None
        remote_waa_port: int = 5000
        remote_scoring_port: int = 5051
        log_path: str | None = None
        workdir: str | None = None
        provider_id: str | None = None
        phase: str | None = None
        detail: str | None = None

    class Pool(msgspec.Struct):
        version: int
        name: str
        cloud: str
        state: PoolState
        created_at: datetime
        expires_at: datetime | None = None
        owner: str = ""
        price_per_hour: float | None = None
        settings: dict[str, Any] = {}
        provider_data: dict[str, Any] = {}
        workers: list[Worker] = []

    decoder = msgspec.json.Decoder(Pool)
    encoder = msgspec.json.Encoder()

    def parse(text: str) -> Any:
        return decoder.decode(text)

    def dump(record: Any) -> str:
        return msgspec.json.format(encoder.encode(record), indent=2).decode()

    return parse, dump


def _pydantic() -> tuple[Callable[[str], Any], Callable[[Any], str]]:
    from pydantic import BaseModel, ConfigDict

    class Ssh(BaseModel):
        model_config = ConfigDict(strict=True)
        host: str
        port: int
        user: str
        key_path: str

    class Worker(BaseModel):
        model_config = ConfigDict(strict=True)
        name: str
        state: WorkerState = WorkerState.STARTING
        waa_url: str | None = None
        scoring_url: str | None = None
        pid: int | None = None
        pid_create_time: float | None = None
        host: str | None = None
        ssh: Ssh | None = None
        remote_waa_port: int = 5000
        remote_scoring_port: int = 5051
        log_path: str | None = None
        workdir: str | None = None
        provider_id: str | None = None
        phase: str | None = None
        detail: str | None = None

    class Pool(BaseModel):
        model_config = ConfigDict(strict=False)  # strict would refuse ISO text for datetimes
        version: int
        name: str
        cloud: str
        state: PoolState
        created_at: datetime
        expires_at: datetime | None = None
        owner: str = ""
        price_per_hour: float | None = None
        settings: dict[str, Any] = {}
        provider_data: dict[str, Any] = {}
        workers: list[Worker] = []

    def parse(text: str) -> Any:
        return Pool.model_validate_json(text)

    def dump(record: Any) -> str:
        return str(record.model_dump_json(indent=2))

    return parse, dump


MAKERS = {"ours": _ours, "msgspec": _msgspec, "pydantic": _pydantic}


def _per_call(fn: Callable[[], Any], calls: int) -> float:
    fn()
    began = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - began) / calls


def round_trips(workers: int, rounds: int, calls: int) -> dict[str, Any]:
    """Median microseconds to parse and to write one record, per serializer installed."""
    import json

    text = json.dumps(sample_record(workers).to_json(), indent=2)
    makers = {name: make for name, make in MAKERS.items()
              if name not in LIBRARIES or importlib.util.find_spec(name)}
    codecs = {name: make() for name, make in makers.items()}
    records = {name: parse(text) for name, (parse, _) in codecs.items()}
    for name, (_, dump) in codecs.items():  # every one reads what the others wrote
        again = state._parse(RECORD_PATH, dump(records[name]))
        if again != records["ours"]:
            raise RuntimeError(f"{name} does not write the record ours reads back")
    parse_s: dict[str, list[float]] = {name: [] for name in codecs}
    dump_s: dict[str, list[float]] = {name: [] for name in codecs}
    for _ in range(rounds):
        for name, (parse, dump) in codecs.items():
            record = records[name]
            parse_s[name].append(_per_call(functools.partial(parse, text), calls))
            dump_s[name].append(_per_call(functools.partial(dump, record), calls))
    base_parse, base_dump = statistics.median(parse_s["ours"]), statistics.median(dump_s["ours"])
    figures: dict[str, Any] = {"record_bytes": len(text)}
    for name in MAKERS:
        if name not in codecs:
            figures[name] = None
            continue
        p, d = statistics.median(parse_s[name]), statistics.median(dump_s[name])
        figures[name] = {
            "parse_us": round(p * 1e6, 1), "parse_ratio_to_ours": round(p / base_parse, 2),
            "dump_us": round(d * 1e6, 1), "dump_ratio_to_ours": round(d / base_dump, 2),
        }
    return figures


def _text(result: dict[str, Any]) -> str:
    imports = result["imports_us"]
    lines = ["import, cumulative us (median):"]
    lines += [f"  {name:<24} {'not installed' if us is None else us}"
              for name, us in imports.items()]
    trips = result["round_trip"]
    lines.append(f"round trip of one record ({result['workers']} workers, "
                 f"{trips['record_bytes']} bytes), us per call (x ours):")
    for name in MAKERS:
        f = trips[name]
        lines.append(f"  {name:<10} not installed" if f is None else
                     f"  {name:<10} parse {f['parse_us']:>8.1f} ({f['parse_ratio_to_ours']:.2f})"
                     f"  write {f['dump_us']:>8.1f} ({f['dump_ratio_to_ours']:.2f})")
    lines.append(f"load average {result['machine']['load_average_1m']}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; returns the exit status."""
    p = parser(PROG, __doc__.splitlines()[0] if __doc__ else PROG)
    p.add_argument("--workers", type=int, default=40, help="workers in the record (default 40)")
    p.add_argument("--rounds", type=int, default=5, help="rounds of round trips (default 5)")
    p.add_argument("--calls", type=int, default=200, help="calls per round (default 200)")
    p.add_argument("--imports", type=int, default=9, help="fresh interpreters per import")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args(argv)
    if min(args.workers, args.rounds, args.calls, args.imports) < 1:
        raise BenchInputError("--workers, --rounds, --calls and --imports must be at least 1")
    progress("timing imports")
    imports = import_costs(args.imports)
    progress("timing round trips")
    trips = round_trips(args.workers, args.rounds, args.calls)
    result = {"machine": machine_info(), "workers": args.workers, "imports_us": imports,
              "round_trip": trips}
    emit(result, args.json, _text(result))
    return 0


if __name__ == "__main__":
    run_cli(main, PROG)
