"""Measurement scripts, each printing its ratios against a named baseline in the same run (docs/performance.md).

Run one as a module: `.venv/bin/python -m evaluation.perf.<name> --help`."""
