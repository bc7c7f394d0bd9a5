"""The results database of a benchmark run (sqlite-utils) and its JSONL traces, written so a killed run loses
nothing it wrote and a resumed run counts nothing twice.

One run (method x model x sample x repeat, its `run_key`) is written by the one writer, the runner's main process:
first its trace line (flushed and fsynced), then all its rows in one transaction. A run is done exactly when its
`runs` row exists and its worker did not die running it (a resumed run retries that one and replaces its rows); on
resume, trace lines of runs that are not done are dropped before anything new is appended. Tables: runs (one RunRecord each), decisions, attempts (repair rounds of the graph methods),
tool_calls, and metrics (recomputed from `runs` at the end).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import sqlite_utils

from evaluation.records import RunRecord
from tools.sqlite_wal import use_wal

DB_FILE = "results.sqlite"
TRACES_FILE = "traces.jsonl"
WORKER_DIED = "worker died"  # the error of a run whose worker process died: not done, a resumed run retries it


def run_key(method: str, model: str, sample_id: str, repeat: int, variant: str | None = None) -> str:
    """The run's identity; a variant run (the canonical wording of a free-form sample) adds its variant."""
    key = f"{method}|{model}|{sample_id}|{repeat}"
    return f"{key}|{variant}" if variant else key


def open_db(out_dir: Path) -> sqlite_utils.Database:
    out_dir.mkdir(parents=True, exist_ok=True)
    db = sqlite_utils.Database(out_dir / DB_FILE)
    use_wal(db.conn)  # a reader (bench report) never blocks the writer
    return db


def done_keys(db: sqlite_utils.Database) -> set[str]:
    """The runs a resumed benchmark skips: every stored run but those whose worker died."""
    if not db["runs"].exists():
        return set()
    rows = db["runs"].rows_where(select="run_key, error")
    return {row["run_key"] for row in rows if not (row["error"] or "").startswith(WORKER_DIED)}


def compact_traces(out_dir: Path, keep: set[str]) -> int:
    """Drop trace lines whose run never reached the database (the runner was killed in between); returns drops."""
    path = out_dir / TRACES_FILE
    if not path.exists():
        return 0
    kept, dropped = [], 0
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            key = json.loads(line)["run_key"]
        except (json.JSONDecodeError, KeyError, TypeError):
            key = None  # a line cut off by the kill
        if key in keep:
            kept.append(line)
            keep = keep - {key}  # a key twice (cannot happen with one writer) keeps its first line
        else:
            dropped += 1
    temporary = path.with_suffix(".jsonl.tmp")
    temporary.write_text("".join(f"{line}\n" for line in kept), encoding="utf-8")
    os.replace(temporary, path)
    return dropped


def append_trace(out_dir: Path, trace: dict[str, Any]) -> None:
    with open(out_dir / TRACES_FILE, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(trace, ensure_ascii=False, separators=(",", ":"), default=str) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def _jsonl_line(path: Path, field: str, value: str) -> dict[str, Any] | None:
    """The first line of a JSONL file whose `field` is `value` (lines without the text are not parsed)."""
    if not path.exists():
        return None
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if f'"{value}"' in line and (found := json.loads(line)).get(field) == value:
                return found
    return None


def read_trace(out_dir: Path, key: str) -> dict[str, Any] | None:
    """The trace line of one run (its decision, judgement and method trace), None when it has none."""
    return _jsonl_line(Path(out_dir) / TRACES_FILE, "run_key", key)


def read_sample(samples: Path, sample_id: str) -> dict[str, Any] | None:
    """One sample of a split file (JSONL), None when the file or the sample is not there."""
    return _jsonl_line(samples, "sample_id", sample_id)


def write_run(db: sqlite_utils.Database, outcome: dict[str, Any]) -> None:
    """All rows of one finished run, in one transaction (see the module docstring).

    `runs` has the record's fields as columns for SQL, and the whole record as JSON (`record`) for exact reloads.
    """
    key = outcome["run_key"]
    record = RunRecord.model_validate(outcome["record"])
    dumped = record.model_dump(mode="json")
    row = {name: _cell(value) for name, value in dumped.items()}
    extra = {"thread_id": outcome.get("thread_id"), "error": outcome.get("error"), "record": record.model_dump_json()}
    # sqlite-utils' atomic(): each insert below nests as a savepoint. `with db.conn:` would not do: it opens no
    # transaction, so every insert committed on its own and a kill between them left a `runs` row without its
    # attempts (a resumed run then skipped it).
    with db.atomic():
        # replace: a retried run (its worker died before) takes the place of its earlier row
        db["runs"].insert({"run_key": key, **row, **extra}, pk="run_key", alter=True, replace=True)
        db["decisions"].insert(
            {"run_key": key, **{k: _cell(v) for k, v in outcome["decision_row"].items()}},
            pk="run_key",
            alter=True,
            replace=True,
        )
        db["attempts"].insert_all(
            ({"run_key": key, **a} for a in outcome.get("attempts", [])), pk=("run_key", "round"), alter=True
        )
        db["tool_calls"].insert_all(
            ({"run_key": key, "position": i, **c} for i, c in enumerate(outcome.get("tool_calls", []))),
            pk=("run_key", "position"),
            alter=True,
        )


def _cell(value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return value


def load_records(out_dir: Path, variant: str | None = None) -> list[RunRecord]:
    """Every judged run of a results folder of one `variant` (None: the runs on the samples' own requests), in
    run-key order. Folders written before variants existed hold only None runs."""
    path = Path(out_dir) / DB_FILE
    if not path.exists():
        raise FileNotFoundError(f"no results database at {path}")
    runs = sqlite_utils.Database(path)["runs"]
    rows = runs.rows_where(order_by="run_key", select="record") if runs.exists() else []
    records = (RunRecord.model_validate_json(row["record"]) for row in rows)
    return [record for record in records if record.variant == variant]


def write_metrics(db: sqlite_utils.Database, rows: Iterable[dict[str, Any]]) -> None:
    with db.atomic():
        if db["metrics"].exists():
            db["metrics"].delete_where()
        db["metrics"].insert_all(rows, pk=("method", "model", "metric"), alter=True)


def flatten_metrics(summary: dict[str, Any], prefix: str = "") -> list[tuple[str, float]]:
    """The numeric leaves of `evaluation.metrics.summarize`, as (dotted name, value)."""
    leaves: list[tuple[str, float]] = []
    for name, value in summary.items():
        path = f"{prefix}{name}"
        if isinstance(value, dict):
            leaves.extend(flatten_metrics(value, f"{path}."))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            leaves.append((path, float(value)))
    return leaves
