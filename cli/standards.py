"""The airspace's formats: `zones import` / `zones export` (ED-269, ED-318, GeoJSON) and `export` of an execute
(ASTM F3548-21 operational intent, QGroundControl .plan, MAVLink mission, GeoJSON, KML).

A file that cannot be used is one line on stderr and exit 2; outputs are written whole or not at all.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from cli.common import EXIT_OK, CommandError, add_json_flag, add_world_arg, emit, open_world, read_json_file
from graph.checkpoint import DEFAULT_DB, CheckpointerError, is_postgres_url, open_checkpointer, thread_config

if TYPE_CHECKING:
    from standards.flight_plans import FlightExport
    from tools.world import World


# The commands this module registers, with their one-line help (cli/main.py lists them without importing more)
COMMANDS = {
    "zones": "import or export UAS geographical zones (ED-269, ED-318, GeoJSON)",
    "export": "write an execute as an F3548 intent, QGC plan, MAVLink mission, GIS",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    from standards.formats import PLAN_FORMATS, ZONE_FORMATS

    zones = subparsers.add_parser("zones", help=COMMANDS["zones"])
    actions = zones.add_subparsers(dest="zones_command", required=True, metavar="ACTION")

    p = actions.add_parser("import", help="add a zone file's zones to a world, written as a new world file")
    add_world_arg(p)
    p.add_argument("--file", required=True, help="ED-269 JSON, ED-318 or GeoJSON zone file")
    p.add_argument("--format", choices=ZONE_FORMATS, default=None, help="the file's format (default: read from it)")
    p.add_argument("--out", required=True, help="the world file to write")
    p.add_argument(
        "--mission-start",
        default=None,
        help="RFC 3339 instant of t = 0, for schedules (default: the world's clock origin, else now)",
    )
    p.add_argument("--horizon-hours", type=float, default=12.0, help="schedules read over this long (default 12)")
    p.add_argument("--circle-tolerance", type=float, default=0.5, help="metres a circle's polygon may lie outside it")
    p.add_argument(
        "--axis-order",
        choices=("auto", "lon,lat", "lat,lon"),
        default="auto",
        help="the file's coordinate pairs (default auto: the order that puts more zones near the world)",
    )
    add_json_flag(p)
    p.set_defaults(run=run_zones_import)

    p = actions.add_parser("export", help="write a world's zones as a published zone file")
    add_world_arg(p)
    p.add_argument("--format", choices=ZONE_FORMATS, required=True)
    p.add_argument("--out", required=True)
    add_json_flag(p)
    p.set_defaults(run=run_zones_export)

    p = subparsers.add_parser("export", help=COMMANDS["export"])
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--run", dest="run_file", metavar="RUN_JSON", help="a `cloudbrain run --json` output (or its certificate)"
    )
    source.add_argument("--thread", help="a checkpointed run's thread (with --db)")
    p.add_argument("--db", "--checkpointer", dest="db", default=DEFAULT_DB, help="checkpoints (default: %(default)s)")
    add_world_arg(p)
    p.add_argument("--format", choices=PLAN_FORMATS, required=True)
    p.add_argument(
        "--out",
        required=True,
        help="the file to write (a fleet mission: one per member beside it, <stem>.<sub-task>.<UAV><suffix>)",
    )
    p.add_argument(
        "--start",
        default=None,
        help="RFC 3339 instant of t = 0, or `now`: the run's one mission clock (default: the world's clock origin, else the "
        "run's start as its checkpoint recorded it; without either, required)",
    )
    p.add_argument("--priority", type=int, default=0, help="the F3548 operational intent's priority (default 0)")
    add_json_flag(p)
    p.set_defaults(run=run_export)


def _world_with_frame(path: str, start: str | None, option: str = "--start"):
    from standards.frame import StandardsError, geo_frame, parse_instant

    world = open_world(path)
    try:
        instant = parse_instant(start, option) if start else None
        return world, geo_frame(world, instant)
    except StandardsError as exc:
        raise CommandError(str(exc)) from None


def write_whole(path: str, text: str) -> None:
    """Write to a temporary file beside `path`, then rename: a reader never sees half a file."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # as an ordinary file would be, not mkstemp's owner-only 0600
        os.replace(temporary, target)
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc.strerror or exc}") from None


def run_zones_import(args: argparse.Namespace) -> int:
    from standards.frame import StandardsError
    from standards.zone_files import detect_format
    from standards.zones import import_zones, nothing_imported

    world, frame = _world_with_frame(args.world, args.mission_start, "--mission-start")
    document = read_json_file(args.file, "zone file")
    try:
        file_format = args.format or detect_format(document)
        imported = import_zones(
            world, document, file_format, frame, args.horizon_hours * 3600.0, args.circle_tolerance, args.axis_order
        )
    except StandardsError as exc:
        raise CommandError(f"{args.file}: {exc}") from None
    refusal = nothing_imported(imported)
    if refusal:  # a world written with nothing imported would hide a wrong file, world, axis order or time
        swapped = any(line.axes_look_swapped for line in imported.lines)
        other = "lon,lat" if imported.axis_order == "lat,lon" else "lat,lon"
        hint = f" (--axis-order {other} reads the file's pairs the other way round)" if swapped else ""
        raise CommandError(f"{args.file}: {refusal}; nothing written{hint}")
    write_whole(args.out, _world_json(imported.world))
    report = {
        "format": file_format,
        "axis_order": imported.axis_order,
        "clock_origin_utc": frame.clock_origin.isoformat(),
        "zones": [line.model_dump() for line in imported.lines],
        "assumptions": frame.assumptions,
        "out": args.out,
    }
    lines = [f"{args.file} ({file_format}, pairs read as {imported.axis_order}) -> {args.out}"]
    for line in imported.lines:
        ids = f" as {', '.join(line.zone_ids)}" if line.zone_ids and line.zone_ids != [line.identifier] else ""
        lines.append(f"  {line.identifier}: {line.outcome}{ids}{': ' + line.detail if line.detail else ''}")
    lines += [f"  assumption: {a}" for a in frame.assumptions]
    emit(report, args.json, "\n".join(lines))
    return EXIT_OK


def _world_json(world: World) -> str:
    return json.dumps(world.model_dump(mode="json", exclude_none=False), indent=1, ensure_ascii=False) + "\n"


def run_zones_export(args: argparse.Namespace) -> int:
    from standards.frame import StandardsError
    from standards.zones import export_zones

    world, frame = _world_with_frame(args.world, None)
    try:
        document = export_zones(world, frame, args.format)
    except StandardsError as exc:
        raise CommandError(str(exc)) from None
    write_whole(args.out, json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    count = len(document["features"])
    emit(
        {"format": args.format, "zones": count, "assumptions": frame.assumptions, "out": args.out},
        args.json,
        "\n".join([f"{count} zones -> {args.out} ({args.format})", *(f"  assumption: {a}" for a in frame.assumptions)]),
    )
    return EXIT_OK


def _run_started(args: argparse.Namespace) -> tuple[datetime, str] | None:
    """When the run began, as its checkpoint recorded it (the latest input to its thread): a `--thread`'s, or the
    thread and database a `run --json` output names. None where there is no such record."""

    if args.thread:
        db, thread = args.db, args.thread
    else:
        document = read_json_file(args.run_file, "run")
        if not isinstance(document, dict) or not document.get("thread_id") or not document.get("db"):
            return None
        db, thread = str(document["db"]), str(document["thread_id"])
        if not is_postgres_url(db) and not Path(db).is_file():
            return None
    try:
        history = list(open_checkpointer(db).list(thread_config(thread)))
    except (CheckpointerError, OSError, sqlite3.Error):
        return None
    inputs = [c for c in history if (c.metadata or {}).get("source") == "input"] or history
    if not inputs:
        return None
    started = max(datetime.fromisoformat(c.checkpoint["ts"]) for c in inputs)
    return started, f"the run's start, recorded in its checkpoint (thread {thread})"


def _mission_clock(world: World, args: argparse.Namespace) -> tuple[datetime, str, list[str]]:
    """t = 0 of every export of a run, where it comes from, and what that moves: --start, else the world's clock
    origin (its zone schedules and stated clock times are read on it), else the run's recorded start."""
    from standards.frame import StandardsError, parse_instant, rfc3339

    origin = world.geo_reference.clock_origin_utc if world.geo_reference else None
    if args.start:
        try:
            start = parse_instant(args.start, "--start")
        except StandardsError as exc:
            raise CommandError(str(exc)) from None
        moved = []
        if origin is not None and start != origin:
            moved.append(
                f"t = 0 is --start {rfc3339(start)}, not the world's clock origin {rfc3339(origin)}, on which its "
                "zones' schedules and any clock time in the request were read"
            )
        return start, "--start", moved
    if origin is not None:
        return origin, "the world's clock origin (geo_reference.clock_origin_utc)", []
    if started := _run_started(args):
        return started[0], started[1], []
    raise CommandError(
        "no mission clock: the world gives no clock origin and the run records no start; give --start (the RFC 3339 "
        "instant of t = 0)"
    )


def member_out(out: str, subtask_id: str, uav_id: str | None) -> str:
    """A fleet member's file beside `--out`: `<stem>.<sub-task>.<UAV><suffix>` (plan.json -> plan.t1.uav_01.json),
    the ids cut to letters, digits, `_` and `-` so neither can name another folder."""
    target = Path(out)
    if not target.name:
        raise CommandError(f"--out {out!r} names no file: the members' files are named after it")

    def safe(text: str) -> str:
        return re.sub(r"[^A-Za-z0-9_-]", "_", text) or "_"

    return str(target.with_name(f"{target.stem}.{safe(subtask_id)}.{safe(uav_id or 'uav')}{target.suffix}"))


def run_export(args: argparse.Namespace) -> int:
    from cli.tools import load_certificate
    from standards.flight_plans import member_refusal, plan_export, plan_team_export, sidecar, write_plan
    from standards.formats import SIDECAR_FORMATS, SIDECAR_SUFFIX
    from standards.frame import StandardsError, geo_frame
    from tools.certificate import world_digest

    world, _ = _world_with_frame(args.world, None)  # a world without a geo_reference is refused here
    certificate, _ = load_certificate(args.run_file, args.db, args.thread)
    if world_digest(world) != certificate.digests.world_sha256:  # before the clock: the wrong world says so first
        raise CommandError("the certificate is not this world's (world sha256 differs): export with its own world")
    start, source, moved = _mission_clock(world, args)
    team = certificate.members is not None
    try:
        frame = geo_frame(world, start)
        if team:  # one file set per member, on the one mission clock
            members = plan_team_export(world, certificate, frame, args.priority, source)
            plans = [
                (member_out(args.out, m.subtask_id, m.certificate.trajectory.uav_id), p)
                for m, p in zip(certificate.members or [], members, strict=True)
            ]
        else:
            plans = [(args.out, plan_export(world, certificate, frame, args.priority, source))]
        exports = []
        for out, plan in plans:
            for text in moved:
                plan.note(text)
            try:
                text = write_plan(plan, args.format)
            except StandardsError as exc:  # a writer's refusal (an intent already ended) names the member
                if plan.member is None:
                    raise
                raise member_refusal(plan.member, exc) from None
            companion = sidecar(plan, args.format, text) if args.format in SIDECAR_FORMATS else None
            exports.append(_Export(out, out + SIDECAR_SUFFIX if companion is not None else None, plan, text, companion))
    except StandardsError as exc:
        raise CommandError(str(exc)) from None
    if len({e.out for e in exports}) != len(exports):  # two members' ids cut to the same name
        raise CommandError(f"members' files would share a name ({', '.join(e.out for e in exports)}): nothing written")
    _write_all(exports)
    if not team:
        (export,) = exports
        emit(_export_report(args.format, export), args.json, "\n".join(_export_lines(args.format, export)))
        return EXIT_OK
    clock = exports[0].plan.provenance()["mission_clock"]
    assumptions = list(dict.fromkeys(a for e in exports for a in e.plan.provenance()["assumptions"]))
    report = {
        "format": args.format,
        "team_trajectory_sha256": certificate.digests.trajectory_sha256,
        "mission_clock": {"t0_utc": clock["t0_utc"], "source": clock["source"]},
        "members": [{**(e.plan.membership() or {}), **_export_report(args.format, e)} for e in exports],
        "assumptions": assumptions,
    }
    text_lines = [
        f"{args.format}: a fleet mission of {len(exports)} UAVs, one file per member; mission clock: t = 0 is "
        f"{clock['t0_utc']} ({clock['source']}); team certificate trajectory sha256 "
        f"{certificate.digests.trajectory_sha256[:16]}...",
        *(f"  {_member_line(e)}" for e in exports),
        *(f"  assumption: {a}" for a in assumptions),
    ]
    emit(report, args.json, "\n".join(text_lines))
    return EXIT_OK


@dataclass
class _Export:
    """One file of an export (and the provenance sidecar of a format that cannot carry it), written whole."""

    out: str
    side_path: str | None
    plan: FlightExport
    text: str
    companion: str | None


def _write_all(exports: list[_Export]) -> None:
    """Every file or none: one that cannot be written removes those this command wrote before it."""
    written: list[str] = []
    try:
        for export in exports:
            if export.side_path is not None and export.companion is not None:
                write_whole(export.side_path, export.companion)
                written.append(export.side_path)
            write_whole(export.out, export.text)
            written.append(export.out)
    except CommandError:
        for path in written:
            Path(path).unlink(missing_ok=True)
        raise


def _export_report(file_format: str, export: _Export) -> dict:
    plan = export.plan
    provenance = plan.provenance()
    return {
        "format": file_format,
        "out": export.out,
        "provenance_file": export.side_path,
        "volumes": len(plan.volumes),
        "buffers": plan.buffers.model_dump(),
        "trajectory_sha256": plan.certificate.digests.trajectory_sha256,
        "mission_clock": provenance["mission_clock"],
        "assumptions": provenance["assumptions"],
    }


def _export_lines(file_format: str, export: _Export) -> list[str]:
    plan, buffers = export.plan, export.plan.buffers
    provenance = plan.provenance()
    clock = provenance["mission_clock"]
    where = export.out
    if export.side_path is not None:
        where += f" (its provenance in {export.side_path}: a WPL file has no comment lines)"
    return [
        f"{file_format} -> {where}: {len(plan.waypoints)} waypoints, {len(plan.volumes)} 4D volumes "
        f"(buffers {buffers.lateral_m:g} m sideways, {buffers.vertical_m:g} m vertically, {buffers.delay_sec:g} s late)",
        f"  {buffers.basis}",
        f"  mission clock: t = 0 is {clock['t0_utc']} ({clock['source']}); the flight ends by {clock['ends_utc']}",
        f"  certified trajectory sha256 {plan.certificate.digests.trajectory_sha256[:16]}...",
        *(f"  assumption: {a}" for a in provenance["assumptions"]),
    ]


def _member_line(export: _Export) -> str:
    """A fleet member's export in one line: its sub-task, UAV, file, flight window on the mission clock, buffers."""
    plan, buffers = export.plan, export.plan.buffers
    member = plan.member
    clock = plan.provenance()["mission_clock"]
    where = export.out + (f" (provenance in {export.side_path})" if export.side_path is not None else "")
    label = f"{member.subtask_id} ({member.role}) {plan.certificate.trajectory.uav_id}" if member else "?"
    return (
        f"{label} -> {where}: {len(plan.waypoints)} waypoints, {len(plan.volumes)} 4D volumes from "
        f"{clock['starts_utc']} to {clock['ends_utc']} (buffers {buffers.lateral_m:g} m sideways, "
        f"{buffers.vertical_m:g} m vertically, {buffers.delay_sec:g} s late)"
    )
