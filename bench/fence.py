"""Fencing benchmark: the cost of :meth:`oa_vm.model.lease.Hold.check`, which a run asks before
every
request it sends to a worker, against reading and parsing ``lease.json`` each time (what the
check does only when the file changed) and against one ``GET /probe`` to a local worker.

All three are timed in the same run on this machine and reported as ratios to the check.

Usage (from the repository root)::

    .venv/bin/python bench/fence.py [--calls 5000]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import timeit
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> None:
    """Print the per-call times and their ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        os.environ["OA_VM_HOME"] = home
        from oa_vm import api
        from oa_vm.model import lease
        from waa_client import WaaClient

        api.create_pool(name="bench", cloud="local", workers=1)
        try:
            record = api.wait_pool("bench", timeout_s=120)
            url = record.workers[0].waa_url
            assert url is not None
            client = WaaClient(url, connect_timeout=5, read_timeout=30)
            with lease.hold_pool("bench", "bench-run") as hold:
                path = lease.lease_path("bench")
                check = timeit.timeit(hold.check, number=args.calls) / args.calls
                parse = timeit.timeit(lambda: json.loads(path.read_text()),
                                      number=args.calls) / args.calls
                probes = max(1, args.calls // 20)
                probe = timeit.timeit(client.probe, number=probes) / probes
            client.close()
        finally:
            api.cleanup_pool("bench")
    print(f"Hold.check          {check * 1e6:8.1f} us  1.0")
    print(f"read+parse lease    {parse * 1e6:8.1f} us  {parse / check:.1f}x the check")
    print(f"GET /probe (local)  {probe * 1e6:8.1f} us  {probe / check:.1f}x the check")


if __name__ == "__main__":
    main()
