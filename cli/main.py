"""`cloudbrain`: the verification-guided UAV traffic agent, its tools and its benchmark. One module per command family
(cli/*.py), each listing its commands in COMMANDS and adding their options in register(subparsers)."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from cli.common import EXIT_USAGE, CommandError

ALL = "*"
COMMAND_MODULES = (
    "cli.tools",
    "cli.agent",
    "cli.memory",
    "cli.bench",
    "cli.schemas",
    "cli.mcp_command",
    "cli.selftest",
    "cli.ui",
    "cli.standards",
    "cli.ops",
    "cli.warm",
)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; a command's options (and the modules they name) load only for `command`, the one chosen.

    Every command module lists its commands and their help in COMMANDS, importing nothing heavy at its top, so
    `cloudbrain --help` and a mistyped command cost the interpreter's start and no more. `command=ALL` registers
    every command's options (for tests and tools that read the whole parser).
    """
    parser = argparse.ArgumentParser(prog="cloudbrain", description=__doc__.split(". ")[0].replace("`", "") + ".")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        module = importlib.import_module(name)
        if command == ALL or command in module.COMMANDS:
            module.register(subparsers)
        else:
            for listed, text in module.COMMANDS.items():
                subparsers.add_parser(listed, help=text, add_help=False)
    return parser


def chosen_command(argv: list[str]) -> str | None:
    """The command word of a command line (its first word that is not an option), if any."""
    return next((word for word in argv if not word.startswith("-")), None)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(chosen_command(argv)).parse_args(argv)
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
    except Exception as exc:  # last: a clause after it would never see its exceptions
        from ir.failure import ComponentUnavailable  # pydantic: not for the parser's path

        if not isinstance(exc, ComponentUnavailable):
            raise
        print(f"cloudbrain {args.command}: {exc}", file=sys.stderr)  # an install or a server to fix: no traceback
        return EXIT_USAGE


def entry() -> int:
    """The `cloudbrain` program: through the warm process when one runs (`cloudbrain warm`), else here."""
    from cli.warm import forwarded

    argv = sys.argv[1:]
    code = forwarded(argv, chosen_command(argv))
    return main(argv) if code is None else code


if __name__ == "__main__":
    sys.exit(entry())
