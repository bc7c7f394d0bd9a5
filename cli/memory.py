"""`memory search | stats | seed`: the safety memory (repair cases in Qdrant) from the terminal.

The memory lives in `.cloudbrain/memory` under the current directory (Qdrant local mode, one process at a time)
unless --qdrant-url or CLOUDBRAIN_QDRANT_URL names a Qdrant server.

Seeding runs the agent (memory open, so `finalize` stores each repaired run): with no option on the example
worlds with the rules model; with `--split NAME` on that benchmark split with the rules and oracle models.
`memory seed --from FILE.jsonl` stores RepairCase records given one JSON object a line.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from cli.common import EXIT_OK, CommandError, add_json_flag, emit

if TYPE_CHECKING:
    from memory.cases import RepairCase
    from memory.store import SafetyMemory


# The commands this module registers, with their one-line help (cli/main.py lists them without importing more)
COMMANDS = {
    "memory": "search, inspect and seed the safety memory (repair cases)",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    memory = subparsers.add_parser("memory", help=COMMANDS["memory"])
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

    p = commands.add_parser("seed", help="fill the memory from agent runs (example worlds or a benchmark split)")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--from", dest="source", default=None, help="JSONL file, one RepairCase object a line")
    source.add_argument("--split", default=None, help="benchmark split to run the agent on, e.g. train_like")
    p.add_argument("--limit", type=int, default=None, help="at most this many samples of the split")
    p.add_argument("--bench-dir", default=None, help="folder of `bench generate` output (else generated here)")
    p.add_argument("--models", default="rules,oracle", help="models whose repairs are stored (default: %(default)s)")
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
    from memory.cases import format_case_for_prompt

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


def read_cases_jsonl(path: str) -> Iterator[RepairCase]:
    from pydantic import ValidationError

    from memory.cases import RepairCase

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
    if args.source:
        cases = list(read_cases_jsonl(args.source))
        with _open_memory(args) as memory:
            stored = memory.store_cases(cases)
            total = memory.count_cases()
        emit(
            {"stored": stored, "repair_cases": total, "location": memory.location},
            args.json,
            f"stored {stored} repair cases in {memory.location} (now {total})",
        )
        return EXIT_OK
    from cli.memory_seeding import example_tasks, seed_memory, split_tasks

    models = [m.strip() for m in args.models.split(",") if m.strip()]
    if args.split:
        try:
            tasks = split_tasks(args.split, limit=args.limit, bench_dir=args.bench_dir)
        except KeyError as exc:
            raise CommandError(str(exc.args[0])) from None
    else:
        tasks, models = example_tasks(), [m for m in models if m != "oracle"]  # example worlds have no gold
    with _open_memory(args) as memory:
        report = seed_memory(memory, tasks, models)
        location = memory.location
    payload = {**asdict(report), "cases_added": report.cases_added, "location": location}
    emit(
        payload,
        args.json,
        f"{report.runs} agent runs ({report.executed} executed): {report.cases_added} new repair cases in "
        f"{location} (now {report.cases_after})",
    )
    return EXIT_OK
