"""Benchmarks that print ratios measured side by side in one run (see docs/performance.md).

Run them from the repository root, e.g. ``.venv/bin/python bench/dispatch.py --json``.
"""
