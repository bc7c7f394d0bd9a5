"""`memory search | stats | seed`: the safety memory (repair cases in Qdrant) from the terminal.

The memory lives in `.cloudbrain/memory` under the current directory (Qdrant local mode, one process at a time)
unless --qdrant-url or CLOUDBRAIN_QDRANT_URL names a Qdrant server.

Seeding: `memory seed --from FILE.jsonl` stores RepairCase records, one JSON object a line. Seeding from agent
runs on a benchmark split (`memory seed --split train`) goes through `seed_cases`, which needs the agent graph
and is not wired yet.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from graph.commands.common import EXIT_OK, CommandError, add_json_flag, emit
from memory.cases import RepairCase, format_case_for_prompt

if TYPE_CHECKING:
    from memory.store import SafetyMemory


def register(subparsers: argparse._SubParsersAction) -> None:
    memory = subparsers.add_parser("memory", help="search, inspect and seed the safety memory (repair cases)")
    commands = memory.add_subparsers(dest="memory_command", required=True, metavar="SUBCOMMAND")

    p = commands.add_parser("search", help="repair cases most similar to a text")
    p.add_argument("query", help="instruction or failure description")
    p.add_argument("--failure-type", default=None, help="only cases of this failure type, e.g. spec_violation")
    p.add_argument("--k", type=int, default=3, help="number of cases (default 3)")
    _add_location_args(p)
    add_json_flag(p)
    p.set_defaults(run=run_search)

    p = commands.add_parser("stats", help="case and rule counts, cases per failure type")
    _add_location_args(p)
    add_json_flag(p)
    p.set_defaults(run=run_stats)

    p = commands.add_parser("seed", help="store repair cases (from a JSONL file of RepairCase records)")
    p.add_argument("--from", dest="source", default=None, help="JSONL file, one RepairCase object a line")
    p.add_argument("--split", default="train", help="benchmark split to seed from agent runs (needs the graph)")
    _add_location_args(p)
    add_json_flag(p)
    p.set_defaults(run=run_seed)


def _add_location_args(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--memory-path", default=None, help="local Qdrant folder (default .cloudbrain/memory)")
    where.add_argument("--qdrant-url", default=None, help="Qdrant server URL (default $CLOUDBRAIN_QDRANT_URL if set)")


def _open_memory(args: argparse.Namespace) -> SafetyMemory:
    # Imported here: qdrant-client takes ~1.5 s to import, which other commands should not pay.
    from memory.store import MemoryStoreError, SafetyMemory

    try:
        return SafetyMemory(path=args.memory_path, url=args.qdrant_url)
    except MemoryStoreError as exc:
        raise CommandError(str(exc)) from None


def run_search(args: argparse.Namespace) -> int:
    if args.k < 1:
        raise CommandError("--k must be at least 1")
    with _open_memory(args) as memory:
        hits = memory.search_cases(args.query, failure_type=args.failure_type, k=args.k)
    blocks = [f"[{i}] score {hit.score:.3f}\n{format_case_for_prompt(hit.case)}" for i, hit in enumerate(hits, 1)]
    text = "\n\n".join(blocks) if hits else "no matching repair cases"
    emit({"results": [hit.model_dump(mode="json") for hit in hits]}, args.json, text)
    return EXIT_OK


def run_stats(args: argparse.Namespace) -> int:
    with _open_memory(args) as memory:
        stats = memory.stats()
    per_type = ", ".join(f"{name} {count}" for name, count in stats["failure_types"].items()) or "none"
    text = (
        f"{stats['backend']} memory at {stats['location']}\n"
        f"repair cases: {stats['repair_cases']} ({per_type})\n"
        f"rules indexed: {stats['rules']}"
    )
    emit(stats, args.json, text)
    return EXIT_OK


def seed_cases(split: str) -> list[RepairCase]:
    """Repair cases from agent runs on a benchmark split: filled in once the agent graph exists."""
    raise CommandError(
        f"seeding from agent runs on split {split!r} needs the agent graph (not available yet); "
        f"pass --from FILE.jsonl with RepairCase records"
    )


def read_cases_jsonl(path: str) -> Iterator[RepairCase]:
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror or exc}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield RepairCase.model_validate(json.loads(line))
        except json.JSONDecodeError as exc:
            raise CommandError(f"{path} line {number}: not valid JSON ({exc.msg})") from None
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or "record"
            raise CommandError(f"{path} line {number}: {field}: {first['msg']}") from None


def run_seed(args: argparse.Namespace) -> int:
    cases = list(read_cases_jsonl(args.source)) if args.source else seed_cases(args.split)
    with _open_memory(args) as memory:
        stored = memory.store_cases(cases)
        total = memory.count_cases()
    emit(
        {"stored": stored, "repair_cases": total, "location": memory.location},
        args.json,
        f"stored {stored} repair cases in {memory.location} (now {total})",
    )
    return EXIT_OK
