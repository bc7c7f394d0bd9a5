"""Reading a benchmark results database back for comparisons between runs."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from evaluation.store import DB_FILE

# Timing and per-run identity differ between any two runs; everything else must be equal.
VOLATILE = {"thread_id", "llm_latency_sec", "tool_latency_sec", "total_latency_sec", "latency_sec", "record"}


def stored_rows(out: Path, table: str) -> list[dict]:
    """A table's rows without the volatile columns (and latency metrics), in a canonical order."""
    db = sqlite3.connect(out / DB_FILE)
    db.row_factory = sqlite3.Row
    rows = [{k: row[k] for k in row.keys() if k not in VOLATILE} for row in db.execute(f"select * from {table}")]
    rows = [r for r in rows if not any(word in r.get("metric", "") for word in ("latency", "sec"))]
    db.close()
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))
