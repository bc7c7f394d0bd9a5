"""The pieces on their own: `validate`, `plan`, `verify`, `simulate`, `certify` (what users call directly)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.common import (
    EXIT_FAILED_CHECK,
    EXIT_OK,
    CommandError,
    add_json_flag,
    add_world_arg,
    emit,
    open_world,
    read_json_file,
)
from graph.checkpoint import DEFAULT_DB, display_name, thread_config

if TYPE_CHECKING:
    from tools.certificate import SafetyCertificate
    from tools.contract import ToolResult
    from tools.trajectory import Trajectory

# Tool errors that mean "your input names something that does not exist", not "the answer is no".
USAGE_ERROR_TYPES = {"bad_arguments", "unknown_entity", "unknown_uav", "unknown_zone", "unknown_tool", "invalid_spec"}


# The commands this module registers, with their one-line help (cli/main.py lists them without importing more)
COMMANDS = {
    "validate": "run the layered validator on an IR file",
    "plan": "plan a 3D A* route between two entities",
    "verify": "check a trajectory against rules R1-R6 (STL/LTL)",
    "simulate": "stress-simulate a trajectory (wind, traffic, pop-up NFZ)",
    "certify": "re-check an execute's safety certificate offline",
}


def _csv(value: str | None) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()] if value else []


def register(subparsers: argparse._SubParsersAction) -> None:
    from tools.rules import DEFAULT_MIN_SEPARATION_M

    p = subparsers.add_parser("validate", help=COMMANDS["validate"])
    add_world_arg(p)
    p.add_argument("--ir", required=True, help="IR JSON (bare LowAltitudeIR or the LLM answer envelope)")
    add_json_flag(p)
    p.set_defaults(run=run_validate)

    p = subparsers.add_parser("plan", help=COMMANDS["plan"])
    add_world_arg(p)
    p.add_argument("--from", dest="start", required=True, help="entity or UAV id")
    p.add_argument("--to", dest="goal", required=True, help="entity id")
    p.add_argument("--via", default="", help="comma-separated entity ids to pass, in order")
    p.add_argument("--avoid", default="", help="comma-separated zone ids to keep out of")
    p.add_argument("--uav", default=None, help="UAV id (speed, energy, pickup leg)")
    p.add_argument("--alt-min", type=float, default=30.0)
    p.add_argument("--alt-max", type=float, default=120.0)
    p.add_argument("--separation", type=float, default=DEFAULT_MIN_SEPARATION_M, help="minimum separation, metres")
    p.add_argument("--deadline", type=float, default=None, help="seconds")
    add_json_flag(p)
    p.set_defaults(run=run_plan)

    p = subparsers.add_parser("verify", help=COMMANDS["verify"])
    add_world_arg(p)
    p.add_argument("--trajectory", required=True, help="JSON object with waypoints [[x,y,z,t],...]")
    p.add_argument("--rules", default="R1,R2,R3,R4,R5,R6")
    p.add_argument("--ltl", action="append", default=[], help="LTL spec in Spot syntax (repeatable)")
    p.add_argument("--deadline", type=float, default=None, help="R4 needs it; without it R4 is not applicable")
    p.add_argument("--uav", default=None, help="R5 needs it; without it R5 is not applicable")
    p.add_argument("--goal", default=None, help="goal entity (default: the trajectory file's `goal`)")
    p.add_argument("--alt-min", type=float, default=30.0)
    p.add_argument("--alt-max", type=float, default=120.0)
    p.add_argument("--separation", type=float, default=DEFAULT_MIN_SEPARATION_M, help="minimum separation, metres")
    add_json_flag(p)
    p.set_defaults(run=run_verify)

    p = subparsers.add_parser("simulate", help=COMMANDS["simulate"])
    add_world_arg(p)
    p.add_argument("--trajectory", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--stress", choices=["low", "medium", "high"], default="medium")
    p.add_argument("--uav", default=None)
    p.add_argument("--deadline", type=float, default=None)
    add_json_flag(p)
    p.set_defaults(run=run_simulate)

    p = subparsers.add_parser("certify", help=COMMANDS["certify"])
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--check", metavar="CERT", help="certificate JSON, or a `run --json` output that holds one")
    source.add_argument("--thread", help="the certificate of this checkpointed run (with --db), and its final IR")
    p.add_argument("--db", "--checkpointer", dest="db", default=DEFAULT_DB, help="checkpoints (default: %(default)s)")
    add_world_arg(p)
    p.add_argument("--ir", default=None, help="the run's IR JSON, to check it is the certified one")
    add_json_flag(p)
    p.set_defaults(run=run_certify)


def run_validate(args: argparse.Namespace) -> int:
    from ir.validation import validate_ir
    from tools.catalog import default_registry

    world = open_world(args.world)
    try:
        raw = Path(args.ir).read_text(encoding="utf-8")
    except OSError as exc:
        raise CommandError(f"cannot read IR {args.ir}: {exc.strerror or exc}") from None
    report = validate_ir(raw, world, default_registry())
    payload = report.model_dump(mode="json", exclude={"ir"})
    if report.valid:
        text = "valid: all stages passed"
    else:
        text = (
            f"invalid at stage {report.stage}: {report.error_type} ({report.field} = {report.value!r})\n"
            f"  {report.message}" + (f"\n  allowed: {', '.join(map(str, report.allowed))}" if report.allowed else "")
        )
    emit(payload, args.json, text)
    return EXIT_OK if report.valid else EXIT_FAILED_CHECK


def _tool_exit(result: ToolResult) -> int:
    if result.ok:
        return EXIT_OK
    if result.error and result.error.type in USAGE_ERROR_TYPES:
        raise CommandError(f"{result.error.type}: {result.error.message}")
    return EXIT_FAILED_CHECK


def _call(tool: str, world: Any, tool_args: dict[str, Any]) -> tuple[ToolResult, int, dict[str, Any]]:
    """Run a tool for a command: its result, the command's exit code, and the result body."""
    from tools.catalog import default_registry

    result = default_registry().call(tool, world, tool_args)
    return result, _tool_exit(result), result.result or {}


def _flatten(result: ToolResult) -> dict[str, Any]:
    """The tool's result fields at top level (what scripts read), plus the contract's envelope."""
    return {
        "ok": result.ok,
        **(result.result or {}),
        "error": result.error.model_dump() if result.error else None,
        "warnings": result.warnings,
        "request_id": result.request_id,
        "provenance": result.provenance.model_dump(),
    }


def _error_line(result: ToolResult) -> str:
    return f"FAILED {result.error.type}: {result.error.message}" if result.error else "FAILED"


def run_plan(args: argparse.Namespace) -> int:
    world = open_world(args.world)
    tool_args = {
        "start": args.start,
        "goal": args.goal,
        "waypoints": _csv(args.via),
        "avoid_zones": _csv(args.avoid),
        "uav_id": args.uav,
        "altitude_min_m": args.alt_min,
        "altitude_max_m": args.alt_max,
        "min_separation_m": args.separation,
        "deadline_sec": args.deadline,
    }
    result, code, body = _call("plan_route", world, tool_args)
    text = (
        f"route {args.start} -> {args.goal}: {len(body.get('waypoints', []))} waypoints, "
        f"{body.get('length_m', 0):.0f} m, ETA {body.get('eta_sec', 0):.0f} s, {body.get('energy_wh', 0):.1f} Wh"
        if body.get("waypoints")
        else _error_line(result)
    )
    emit(_flatten(result), args.json, text)
    return code


def _load_trajectory(path: str) -> tuple[Trajectory, dict[str, Any]]:
    from pydantic import ValidationError

    from tools.trajectory import Trajectory

    data = read_json_file(path, "trajectory")
    if not isinstance(data, dict):
        raise CommandError(f"trajectory {path} must be a JSON object with a `waypoints` list")
    try:
        return Trajectory.model_validate({"waypoints": data.get("waypoints")}), data
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"]))
        raise CommandError(f"trajectory {path}: {where}: {first['msg']}") from None


def run_verify(args: argparse.Namespace) -> int:
    from tools.catalog import default_registry

    world = open_world(args.world)
    trajectory, data = _load_trajectory(args.trajectory)
    tool_args = {
        "waypoints": trajectory.waypoints,
        "uav_id": args.uav,
        "goal": args.goal or data.get("goal"),
        "origin": data.get("start"),
        "ltl": args.ltl,
        "rules": _csv(args.rules),
        "altitude_min_m": args.alt_min,
        "altitude_max_m": args.alt_max,
        "min_separation_m": args.separation,
        "deadline_sec": args.deadline,
    }
    result = default_registry().call("verify_ltl_stl", world, tool_args)
    body = result.result or {}
    if result.error and not body:
        _tool_exit(result)  # unusable input: raises with the tool's message
        emit(_flatten(result), args.json, _error_line(result))
        return EXIT_FAILED_CHECK
    payload = {
        "pass": body.get("pass", False),
        "engine": body.get("engine", result.provenance.engine),
        "rules": body.get("rules", {}),
        "violations": body.get("violations", []),
        "counterexample": body.get("counterexample"),
        "error": result.error.model_dump() if result.error else None,
    }
    lines = [f"{'PASS' if payload['pass'] else 'VIOLATION'} (engines: {payload['engine']})"]
    for rule, verdict in payload["rules"].items():
        lines.append(f"  {rule}: {verdict.get('status')} robustness={verdict.get('robustness')}")
    for v in payload["violations"]:
        lines.append(f"  ! {v['rule']} at t={v['time_sec']} s robustness={v['robustness']} entity={v.get('entity')}")
    emit(payload, args.json, "\n".join(lines))
    return EXIT_OK if payload["pass"] else EXIT_FAILED_CHECK


def run_simulate(args: argparse.Namespace) -> int:
    world = open_world(args.world)
    trajectory, _ = _load_trajectory(args.trajectory)
    tool_args = {
        "waypoints": trajectory.waypoints,
        "uav_id": args.uav,
        "seed": args.seed,
        "stress_level": args.stress,
        "deadline_sec": args.deadline,
    }
    result, code, body = _call("simulate_scenario", world, tool_args)
    events = body.get("events", [])
    lines = [
        f"{'SUCCESS' if body.get('success') else 'FAILED'}: {len(events)} events (seed {args.seed}, {args.stress})"
    ]
    lines += [f"  t={e.get('time_sec')} {e.get('type')}: {e.get('detail', '')}" for e in events]
    emit(_flatten(result), args.json, "\n".join(lines))
    return code


def _stored_certificate(db: str, thread_id: str) -> tuple[Any, dict[str, Any] | None]:
    """(the certificate, the final IR) of a checkpointed run."""
    from cli.agent import open_saver
    from graph.history import certificate_and_ir

    stored = open_saver(db, existing=True).get_tuple(thread_config(thread_id))
    if stored is None:
        raise CommandError(f"no thread {thread_id!r} in {display_name(db)}")
    return certificate_and_ir(stored.checkpoint["channel_values"])


def load_certificate(
    path: str | None, db: str, thread_id: str | None
) -> tuple[SafetyCertificate, dict[str, Any] | None]:
    """The certificate (and the run's final IR, for a checkpointed run) from a certificate JSON, a `run --json`
    output or a thread of the checkpoint database."""
    from pydantic import ValidationError

    from tools.certificate import SafetyCertificate

    if thread_id:
        source = f"thread {thread_id}"
        document, ir = _stored_certificate(db, thread_id)
    else:
        source = str(path)
        document = read_json_file(str(path), "certificate")
        if isinstance(document, dict) and "decision" in document:  # a `cloudbrain run --json` output
            document = (document.get("decision") or {}).get("certificate")
        ir = None
    if not isinstance(document, dict):
        raise CommandError(f"{source} holds no certificate (only an execute carries one)")
    try:
        return SafetyCertificate.model_validate(document), ir
    except ValidationError as exc:
        raise CommandError(f"{source} is not a certificate: {exc.errors()[0]['msg']}") from None


def run_certify(args: argparse.Namespace) -> int:
    from tools.certificate import check_certificate

    world = open_world(args.world)
    certificate, ir = load_certificate(args.check, args.db, args.thread)
    ir = read_json_file(args.ir, "IR") if args.ir else ir
    check = check_certificate(certificate, world, ir)
    text = (
        "valid: the certificate re-checks"
        if check.valid
        else "INVALID\n" + "\n".join(f"  - {d}" for d in check.differences)
    )
    emit(check.model_dump(mode="json"), args.json, text)
    return EXIT_OK if check.valid else EXIT_FAILED_CHECK
