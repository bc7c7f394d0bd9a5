"""`cloudbrain` console script: one sub-command module per family, each exposing register(subparsers)."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from cli.common import EXIT_USAGE, CommandError

COMMAND_MODULES = (
    "cli.tools",
    "cli.agent",
    "cli.memory",
    "cli.bench",
    "cli.schemas",
    "cli.mcp_server",
    "cli.selftest",
    "cli.ui",
    "cli.standards",
    "cli.ops",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cloudbrain", description=__doc__.split(":")[0])
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except CommandError as exc:
        print(f"cloudbrain {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (`... | head`): stop quietly, as Python's documentation advises for a pipe's writer
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
