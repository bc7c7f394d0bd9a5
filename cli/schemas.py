"""`cloudbrain schemas`: export the JSON Schemas of the world, the IR and the tool contract."""

from __future__ import annotations

import argparse
from pathlib import Path

from cli.common import EXIT_OK
from ir.schemas import write_schemas


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("schemas", help="write JSON Schemas (world, IR, tool result) to a folder")
    parser.add_argument("--out", default="schemas", help="output folder (default: schemas)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    for path in write_schemas(Path(args.out)):
        print(path)
    return EXIT_OK
