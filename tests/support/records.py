"""Judged runs built by hand for the report's and the gallery's tests."""

from __future__ import annotations

from typing import Any

from evaluation.records import RunRecord


def judged_run(method: str, sample: int, *, ok: bool = True, **fields: Any) -> RunRecord:
    """A judged run of `method` on sample s<sample>: a successful SAT execute unless `fields` say otherwise."""
    defaults = {
        "sample_id": f"s{sample}",
        "method": method,
        "model": "m",
        "repeat": 0,
        "split": "dev",
        "scenario_type": "delivery",
        "difficulty": "easy",
        "label": "SAT",
        "status": "execute",
        "judged_success": ok,
    }
    return RunRecord(**(defaults | fields))
