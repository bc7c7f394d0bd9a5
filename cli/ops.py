"""`cloudbrain ops`: a stream of requests on one airspace, each approved plan an operational intent in the ledger
the next requests must respect (docs/operations.md).

Requests come from a JSONL file (`{"at_sec": 0, "instruction": "...", "priority": "normal|emergency"}` a line,
optional `request_id` and `owner`), checked whole before the first is run, or interactively from standard input
(a JSON line, or plain text: the instruction, arriving now; `!` before it makes it an emergency).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from cli.common import EXIT_OK, CommandError, add_json_flag, add_world_arg, emit, open_world

if TYPE_CHECKING:
    from ops.ledger import OperationalIntent
    from ops.stream import OpsDecision, OpsRequest


# The commands this module registers, with their one-line help (cli/main.py lists them without importing more)
COMMANDS = {
    "ops": "operations mode: a stream of requests, each plan respecting those approved",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    from cli.agent import add_agent_options, add_db_arg

    p = subparsers.add_parser("ops", help=COMMANDS["ops"])
    add_world_arg(p)
    p.add_argument("--requests", default=None, help="JSONL file of requests (default: read them from standard input)")
    add_db_arg(p)
    p.add_argument(
        "--fresh-ledger",
        action="store_true",
        help="start from an empty airspace: delete every intent of the ledger in --db first (its checkpoints stay); "
        "without it, the intents of earlier runs on that ledger are respected",
    )
    p.add_argument(
        "--operator",
        choices=["ask", "approve", "deny"],
        default=None,
        help="who answers when an emergency would pre-empt approved intents: ask on the terminal (the default "
        "when there is one), a standing approval, or never (the default without a terminal)",
    )
    add_agent_options(p)
    add_json_flag(p)
    p.set_defaults(run=run_ops)


def read_requests(path: str) -> list[OpsRequest]:
    """Every line checked before any is run: a bad line is one error naming it, not half a stream."""
    from pydantic import ValidationError

    from ops.stream import OpsRequest

    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise CommandError(f"cannot read requests {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise CommandError(f"requests {path} are not UTF-8 text") from None
    requests = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            requests.append(OpsRequest.model_validate(json.loads(line)))
        except (json.JSONDecodeError, RecursionError):
            raise CommandError(f"{path} line {number}: not a JSON object") from None
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "the line"
            raise CommandError(f"{path} line {number}: {where}: {first['msg']}") from None
    ids = [r.request_id for r in requests if r.request_id]
    if len(ids) != len(set(ids)):
        raise CommandError(f"{path}: a request_id is used twice")
    return requests


def clock_origin(world_origin: datetime | None) -> datetime:
    """The interactive stream's t = 0: the world's clock origin, else midnight UTC today. Every process on one
    ledger then counts from the same instant (a per-process start would let one read another's intents as long
    past)."""
    return world_origin or datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def _interactive(stream: TextIO, origin: datetime):
    """Requests arriving now, on the shared clock: a JSON line (its own at_sec, if any, is not taken) or text."""
    from pydantic import ValidationError

    from ops.stream import OpsRequest

    for line in stream:
        text = line.strip()
        if not text:
            continue
        now = round((datetime.now(UTC) - origin).total_seconds(), 3)
        if text.startswith("{"):
            try:
                yield OpsRequest.model_validate({**json.loads(text), "at_sec": now})
            except (json.JSONDecodeError, RecursionError, ValidationError, TypeError) as exc:
                print(f"not a request: {' '.join(str(exc).split())[:200]}", file=sys.stderr)
            continue
        emergency = text.startswith("!")
        yield OpsRequest(
            at_sec=now, instruction=text.lstrip("!").strip() or text, priority="emergency" if emergency else "normal"
        )


def _approver(choice: str | None):
    """The operator's answer to a pre-emption. `ask` reads the terminal itself (/dev/tty), never the request
    stream on stdin; no terminal, or no answer, is a no."""
    choice = choice or ("ask" if sys.stdin.isatty() and sys.stdout.isatty() else "deny")
    if choice == "approve":
        return lambda request, intents: True
    if choice == "deny":
        return lambda request, intents: False

    def ask(request: OpsRequest, intents: list[OperationalIntent]) -> bool:
        names = ", ".join(f"{i.intent_id} ({i.owner}, departs t={i.t_start:g} s)" for i in intents)
        try:
            with open("/dev/tty", "r+", encoding="utf-8") as tty:
                tty.write(f"emergency {request.request_id} needs the airspace of {names}. Pre-empt them? [y/N] ")
                tty.flush()
                answer = tty.readline()
        except OSError:
            return False
        return answer.strip().lower() in ("y", "yes")

    return ask


def _line(decision: OpsDecision) -> str:
    """One line a decision; a fleet mission's admitted members follow it, one line each with its own intent."""
    head = f"{decision.request_id} t={decision.at_sec:g}s {decision.status.upper()}"
    members = [
        f"  {m.subtask_id} ({m.role}): {m.uav_id} as {m.intent_id}, t={m.waypoints[0][3]:g}-{m.waypoints[-1][3]:g} s"
        for m in decision.team
    ]
    if decision.status == "execute" and decision.team:
        head += f" a team of {len(decision.team)} UAVs as {decision.intent_id}"
    elif decision.status == "execute":
        head += f" {decision.uav_id} as {decision.intent_id}, t={decision.waypoints[0][3]:g}-{decision.waypoints[-1][3]:g} s"
    line = f"{head}: {decision.reason} ({decision.latency_sec:.2f} s, {decision.active_intents} active intents)"
    return "\n".join([line, *members])


def run_ops(args: argparse.Namespace) -> int:
    from cli.agent import EXIT_NOT_EXECUTED, settings_from_args
    from graph.checkpoint import display_name
    from ir.failure import ComponentUnavailable
    from ops.ledger import Ledger, LedgerError
    from ops.stream import OpsRunner

    world = open_world(args.world)
    requests = read_requests(args.requests) if args.requests else None
    try:
        ledger = Ledger(args.db)
        cleared = ledger.clear() if args.fresh_ledger else 0
        held = len(ledger.active())
    except LedgerError as exc:
        raise CommandError(str(exc)) from None
    # one line on every run: where the airspace is kept and what it already holds (a second run of one request
    # file meets the intents of the first)
    print(
        f"ledger: {display_name(args.db)}, {held} intent(s) holding airspace"
        + (f" ({cleared} deleted by --fresh-ledger)" if args.fresh_ledger else " (--fresh-ledger starts it empty)"),
        file=sys.stderr,
    )
    runner = OpsRunner(
        world=world,
        ledger=ledger,
        context=settings_from_args(args).to_context(),
        db=args.db,
        approve_pre_emption=_approver(args.operator),
    )
    decisions: list[OpsDecision] = []
    if requests is not None:
        source = sorted(requests, key=lambda r: r.at_sec)
    else:
        origin = clock_origin(world.geo_reference.clock_origin_utc if world.geo_reference else None)
        print(f"requests arrive on a clock whose t = 0 is {origin.isoformat()}", file=sys.stderr)
        source = _interactive(sys.stdin, origin)
    try:
        for request in source:
            made = runner.decide(request)
            decisions += made
            if not args.json:
                print("\n".join(_line(d) for d in made), flush=True)
    except (ComponentUnavailable, LedgerError, KeyboardInterrupt) as exc:
        # what was decided stays decided (in the ledger, and printed): then one line for what stopped the stream
        if args.json:
            emit({"decisions": [d.model_dump() for d in decisions]}, True)
        raise CommandError(f"stopped after {len(decisions)} decisions: {exc or 'interrupted'}") from None
    if args.json:
        emit({"decisions": [d.model_dump() for d in decisions]}, True)
    # as `run`: 0 when every request is served, 4 when one ended in safe_refusal / human_confirm (a pre-empted
    # mission counts by its re-plan's decision)
    refused = any(d.status in ("safe_refusal", "human_confirm") for d in decisions)
    return EXIT_NOT_EXECUTED if refused else EXIT_OK
