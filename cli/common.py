"""What every CLI command shares: world loading with clean errors, JSON / text output, exit codes."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from models.options import IR_FORMATS, STRUCTURED_OUTPUT_CHOICES

if TYPE_CHECKING:
    from tools.world import World

EXIT_OK = 0
EXIT_USAGE = 2  # bad input: malformed world, unreadable file, unknown id
EXIT_FAILED_CHECK = 3  # the input was fine and the answer is "no": invalid IR, rule violation


class CommandError(Exception):
    """A user-facing failure: printed as one line, exit code EXIT_USAGE."""


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")


def add_server_format_options(parser: argparse.ArgumentParser) -> None:
    """How an openai:<model> server gets the answer's schema, and what it writes."""
    parser.add_argument(
        "--structured-output",
        choices=STRUCTURED_OUTPUT_CHOICES,
        default="auto",
        help="how that server gets the answer's schema (default: auto, probed once per server and model)",
    )
    parser.add_argument(
        "--ir-format",
        choices=IR_FORMATS,
        default="full",
        help="what that server writes: the full IR, or slots a small model can fill, compiled into the IR "
        "(default: full; local models: local = local:slots)",
    )


def add_world_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--world", required=True, help="world JSON file")


def open_world(path: str) -> World:
    from tools.world import WorldFileError, load_world

    try:
        return load_world(path)
    except WorldFileError as exc:
        raise CommandError(f"malformed world: {exc}") from None


def read_json_file(path: str, what: str) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise CommandError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise CommandError(f"{what} {path} is not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except UnicodeDecodeError:
        raise CommandError(f"{what} {path} is not UTF-8 text") from None
    except RecursionError:
        raise CommandError(f"{what} {path} nests deeper than a JSON reader follows") from None


def emit(payload: Any, as_json: bool, text: str | None = None) -> None:
    """JSON for machines, the given text (or indented JSON) for people."""
    if hasattr(payload, "model_dump"):  # a pydantic model (pydantic itself is not imported for the parser)
        payload = payload.model_dump(mode="json")
    if as_json or text is None:
        json.dump(payload, sys.stdout, indent=None if as_json else 2, ensure_ascii=False, default=str)
        sys.stdout.write("\n")
    else:
        print(text)
