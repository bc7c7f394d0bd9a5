"""`cloudbrain schemas`: export the JSON Schemas of the world, the IR, the tool contract and a bench sample. The
tracked `schemas/` folder is what it writes (tests/unit/test_world.py keeps the two equal), so `--out schemas/`
regenerates it and changes nothing unless a model changed."""

from __future__ import annotations

import argparse
from pathlib import Path

from cli.common import EXIT_OK, add_json_flag, emit

# The commands this module registers, with their one-line help (cli/main.py lists them without importing more)
COMMANDS = {
    "schemas": "write JSON Schemas (world, IR, tool result, bench sample) to a folder",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("schemas", help=COMMANDS["schemas"])
    parser.add_argument("--out", default="schemas", help="output folder (default: schemas, the tracked copy)")
    add_json_flag(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from benchmark.sample import SCHEMA_PATH, render_schema
    from ir.schemas import write_schemas

    written = write_schemas(Path(args.out))
    sample = Path(args.out) / SCHEMA_PATH.name
    sample.write_text(render_schema(), encoding="utf-8")
    written.append(sample)
    emit({"written": [str(path) for path in written]}, args.json, "\n".join(map(str, written)))
    return EXIT_OK
