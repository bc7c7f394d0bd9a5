"""Requests written by hand (tests/data/own_words_*.jsonl: a person's wording on the example worlds, each with
its intended reading), run through the agent and judged against that reading, not against the agent's own.

    python -m evaluation.own_words --requests tests/data/own_words_second_pass.jsonl --model rules --out out.json

Each outcome is one of: `right execute` (executes and meets every check), `execute against the words` (executes an
ask_or_refuse request, or breaks a check: the goal is none), `asked or refused` (as expected), `asked where clear`
(a question or refusal on a request meant to execute; the reason says why). The checks are read here from the
world's own geometry, with no use of the agent's reading."""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

import shapely
from langgraph.checkpoint.memory import InMemorySaver

from graph.runner import run_task_values
from graph.settings import RunSettings
from tools.trajectory import flight_phases
from tools.world import World, load_world

# A place named to keep away from: the route stays this far from it (the gate's own bound is not read here).
AVOID_CLEARANCE_M = 50.0
ALTITUDE_SLACK_M = 1e-6
PAYLOAD_ROUNDING = 0.005  # the writers' own unit conversions are rounded ("2.5 lb" written as 1.134 kg)


def _track(waypoints: list[list[float]]) -> shapely.LineString | shapely.Point:
    xy = [wp[:2] for wp in waypoints]
    return shapely.LineString(xy) if len(xy) > 1 else shapely.Point(xy[0])


_ID_CHECKS = ("origin", "destination", "via", "uav", "not_uav", "avoid")


def unknown_ids(world: World, checks: dict[str, Any]) -> list[str]:
    """Ids a request's checks name that the world does not have (a misspelt check would pass silently)."""
    known = {*world.entity_index, *world.zone_index, *world.uav_index, *(b.id for b in world.buildings)}
    named = [
        v for key in _ID_CHECKS for v in ([checks[key]] if isinstance(checks.get(key), str) else checks.get(key) or [])
    ]
    return [ref for ref in named if ref not in known]


def broken_checks(
    world: World, checks: dict[str, Any], decision: dict[str, Any], ir: dict[str, Any] | None
) -> list[str]:
    """The request's checks an executed decision does not meet (empty: it does what the request says)."""
    broken: list[str] = []
    waypoints = decision.get("waypoints") or []
    uav = decision.get("uav_id")
    tolerance = world.arrival_tolerance_m + 1e-6
    if checks.get("uav") and uav != checks["uav"]:
        broken.append(f"flies {uav}, not {checks['uav']}")
    if uav in (checks.get("not_uav") or []):
        broken.append(f"flies {uav}, which the request excludes")
    if not waypoints:
        return [*broken, "no waypoints"]
    track = _track(waypoints)

    def near(xy: list[float], ref: str) -> bool:
        return math.dist(xy[:2], world.entity_index[ref].position) <= tolerance

    def passed(ref: str) -> float:
        return track.distance(shapely.Point(world.entity_index[ref].position))

    if (origin := checks.get("origin")) and passed(origin) > tolerance:
        broken.append(f"never reaches the origin {origin}")
    end = checks.get("origin") if checks.get("return_leg") else checks.get("destination")
    if end and not near(waypoints[-1], end):
        broken.append(f"ends {math.dist(waypoints[-1][:2], world.entity_index[end].position):.0f} m from {end}")
    if checks.get("return_leg") and (far := checks.get("destination")) and passed(far) > tolerance:
        broken.append(f"never reaches {far} before coming back")
    via = checks.get("via") or []
    if origin and isinstance(track, shapely.LineString) and passed(origin) <= tolerance:
        # where the flight is first at the origin: a round trip is there again at its end, and a UAV that took off
        # a few metres from the place passes nearest to it on the way back
        at = next((i for i, w in enumerate(waypoints) if near(w, origin)), 0)
        first = track.project(shapely.Point(waypoints[at][:2]))
        later = [ref for ref in via if passed(ref) <= tolerance]
        if any(track.project(shapely.Point(world.entity_index[ref].position)) < first for ref in later):
            broken.append(f"reaches a stop before the origin {origin}")
    missed = [ref for ref in via if passed(ref) > tolerance]
    broken += [f"never reaches {ref}" for ref in missed]
    if not missed and len(via) > 1 and isinstance(track, shapely.LineString):
        along = [track.project(shapely.Point(world.entity_index[ref].position)) for ref in via]
        if along != sorted(along):
            broken.append(f"passes {', '.join(via)} out of order")
    for ref in checks.get("avoid") or []:
        if ref in world.entity_index and passed(ref) < AVOID_CLEARANCE_M:
            broken.append(f"passes {passed(ref):.0f} m from {ref}, which the request says to keep away from")
        elif (building := next((b for b in world.buildings if b.id == ref), None)) is not None:
            if track.intersects(building.shape):  # "don't route over the shopping centre": not even above it
                broken.append(f"passes over {ref}, which the request says to keep away from")
        elif (zone := world.zone_index.get(ref)) is not None and track.intersects(
            getattr(zone, "buffered_shape", zone.shape)  # a sensitive zone with its buffer
        ):
            broken.append(f"enters {ref}, which the request says to keep away from")
    # the stated heights bind en route: between the take-off and the landing
    altitudes = [wp[2] for wp in waypoints[flight_phases(waypoints).en_route]]
    if (high := checks.get("altitude_max_m")) is not None and max(altitudes) > high + ALTITUDE_SLACK_M:
        broken.append(f"climbs to {max(altitudes):g} m, above the stated {high:g} m")
    if (low := checks.get("altitude_min_m")) is not None and min(altitudes) < low - ALTITUDE_SLACK_M:
        broken.append(f"descends to {min(altitudes):g} m, below the stated {low:g} m")
    if (cruise := checks.get("cruise_altitude_m")) is not None and any(abs(a - cruise) > 10.0 for a in altitudes):
        broken.append(f"flies at {sorted(set(altitudes))} m, not at the stated {cruise:g} m")
    if (deadline := checks.get("deadline_sec")) is not None and waypoints[-1][3] > deadline + 1e-6:
        broken.append(f"arrives at {waypoints[-1][3]:.0f} s, after the stated {deadline:g} s")
    payload = checks.get("payload_kg")
    planned = float((((ir or {}).get("constraints") or {}).get("payload_kg")) or 0.0)
    if payload is not None and abs(planned - payload) > max(payload, 0.01) * PAYLOAD_ROUNDING:
        broken.append(f"planned for {planned:g} kg, the request states {payload:g} kg")
    return broken


# A question the world forces (no UAV whose wind limit, battery or payload covers the task) rather than the reading.
_FLEET_CANNOT = re.compile(r"no_available_uav|low_battery|wind \+ gusts|below the reserve|payload_over_capacity")


def cause_of_question(reason: str) -> str:
    """Why a clear request was asked about: 'fleet' (no UAV whose limits cover the task), 'simulation' (a stress
    scenario the repairs could not clear), 'planner' (the planner keeps out of zones only, not of a place named to
    avoid), else 'reading'."""
    if _FLEET_CANNOT.search(reason):
        return "fleet"
    if reason.startswith("simulate:"):
        return "simulation"
    return "planner" if "avoided_place_visited" in reason else "reading"


_NAMES_A_RULE = re.compile(r"\bR[1-6]\b")


def judge(world: World, request: dict[str, Any], status: str, decision: dict[str, Any], ir: dict | None) -> str:
    if status != "execute":
        if request["expected"] != "ask_or_refuse":
            return "asked where clear"
        reason = decision.get("reason", "")
        if "demand" in request.get("construction", "") and not (_NAMES_A_RULE.search(reason) and "'" in reason):
            return "asked, but not quoting the demand and its rule"
        return "asked or refused"
    if request["expected"] == "ask_or_refuse":
        return "execute against the words"
    return "execute against the words" if broken_checks(world, request["checks"], decision, ir) else "right execute"


def run(requests: list[dict[str, Any]], model: str) -> list[dict[str, Any]]:
    context = RunSettings(model=model, without={"memory"}).to_context()
    worlds: dict[str, World] = {}
    rows = []
    for request in requests:
        world = worlds.setdefault(request["world"], load_world(request["world"]))
        if unknown := unknown_ids(world, request["checks"]):
            raise SystemExit(f"{request['id']}: the checks name ids {unknown} that {request['world']} does not have")
        try:
            out, values = run_task_values(world, request["request"], context=context, checkpointer=InMemorySaver())
        except Exception as error:  # one request's failure is its row, not the end of the batch
            rows.append(
                {
                    "id": request["id"],
                    "model": model,
                    "request": request["request"],
                    "verdict": "error",
                    "expected": request["expected"],
                    "status": "error",
                    "uav": None,
                    "broken": [],
                    "reason": f"{type(error).__name__}: {error}",
                }
            )
            print(f"{request['id']:6} {model:6} error: {type(error).__name__}: {error}", flush=True)
            continue
        ir = ((values.get("attempts") or [{}])[-1] or {}).get("ir")
        verdict = judge(world, request, out.status, out.decision, ir)
        broken = broken_checks(world, request["checks"], out.decision, ir) if out.status == "execute" else []
        rows.append(
            {
                "id": request["id"],
                "model": model,
                "request": request["request"],
                "expected": request["expected"],
                "status": out.status,
                "uav": out.decision.get("uav_id"),
                "verdict": verdict,
                "broken": broken,
                "reason": out.decision.get("reason", ""),
                "cause": cause_of_question(out.decision.get("reason", "")) if verdict == "asked where clear" else "",
            }
        )
        cause = rows[-1]["cause"]
        print(f"{request['id']:6} {model:6} {out.status:13} {verdict:26} {cause:8} {'; '.join(broken)}", flush=True)
    return rows


def markdown_table(requests: list[dict[str, Any]], results: dict[str, list[dict[str, Any]]]) -> str:
    """One row per request: what it says, what it means, and each model's outcome (verdict, and why it asked)."""
    by_model = {model: {row["id"]: row for row in rows} for model, rows in results.items()}
    models = list(by_model)
    lines = [
        "| id | construction | request | expected | " + " | ".join(models) + " |",
        "|---|---|---|---|" + "---|" * len(models),
    ]
    for request in requests:
        cells = []
        for model in models:
            row = by_model[model].get(request["id"])
            if row is None:
                cells.append("not run")
                continue
            cause = f", {row['cause']}" if row.get("cause") else ""
            broken = f": {'; '.join(row['broken'])}" if row.get("broken") else ""
            cells.append(f"{row['status']} ({row['verdict']}{cause}){broken}")
        text = request["request"].replace("|", "/")
        lines.append(
            f"| {request['id']} | {request['construction']} | {text} | {request['expected']} | "
            + " | ".join(cells)
            + " |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", default="tests/data/own_words_second_pass.jsonl")
    parser.add_argument("--model", default="rules")
    parser.add_argument("--only", default="", help="comma-separated request ids")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--table", default="", help="MODEL=results.json,...: print the markdown table of earlier runs")
    args = parser.parse_args(argv)
    with open(args.requests, encoding="utf-8") as handle:
        requests = [json.loads(line) for line in handle if line.strip()]
    if args.table:
        results = {}
        for item in args.table.split(","):
            model, path = item.split("=", 1)
            results[model] = json.loads(Path(path).read_text(encoding="utf-8"))
        print(markdown_table(requests, results))
        return 0
    if args.only:
        requests = [r for r in requests if r["id"] in set(args.only.split(","))]
    rows = run(requests, args.model)
    counts: dict[str, int] = {}
    for row in rows:
        key = f"{row['verdict']} ({row['cause']})" if row.get("cause") else row["verdict"]
        counts[key] = counts.get(key, 0) + 1
    print(json.dumps(counts, sort_keys=True))
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
