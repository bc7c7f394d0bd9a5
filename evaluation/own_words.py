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
import sys
from pathlib import Path
from typing import Any

import shapely
from langgraph.checkpoint.memory import InMemorySaver

from graph.runner import run_task_values
from nodes.context import Context
from tools.world import World, load_world

# A place named to keep away from: the route stays this far from it (the gate's own bound is not read here).
AVOID_CLEARANCE_M = 50.0
ALTITUDE_SLACK_M = 1e-6
PAYLOAD_ROUNDING = 0.005  # the writers' own unit conversions are rounded ("2.5 lb" written as 1.134 kg)


def _track(waypoints: list[list[float]]) -> shapely.LineString | shapely.Point:
    xy = [wp[:2] for wp in waypoints]
    return shapely.LineString(xy) if len(xy) > 1 else shapely.Point(xy[0])


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
    via = checks.get("via") or []
    missed = [ref for ref in via if passed(ref) > tolerance]
    broken += [f"never reaches {ref}" for ref in missed]
    if not missed and len(via) > 1 and isinstance(track, shapely.LineString):
        along = [track.project(shapely.Point(world.entity_index[ref].position)) for ref in via]
        if along != sorted(along):
            broken.append(f"passes {', '.join(via)} out of order")
    for ref in checks.get("avoid") or []:
        if ref in world.entity_index and passed(ref) < AVOID_CLEARANCE_M:
            broken.append(f"passes {passed(ref):.0f} m from {ref}, which the request says to keep away from")
        elif (zone := world.zone_index.get(ref)) is not None and track.intersects(zone.shape):
            broken.append(f"enters {ref}, which the request says to keep away from")
    altitudes = [wp[2] for wp in waypoints]
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
    if payload and planned < payload * (1 - PAYLOAD_ROUNDING):
        broken.append(f"planned for {planned:g} kg, the request states {payload:g} kg")
    return broken


def judge(world: World, request: dict[str, Any], status: str, decision: dict[str, Any], ir: dict | None) -> str:
    if status != "execute":
        return "asked or refused" if request["expected"] == "ask_or_refuse" else "asked where clear"
    if request["expected"] == "ask_or_refuse":
        return "execute against the words"
    return "execute against the words" if broken_checks(world, request["checks"], decision, ir) else "right execute"


def run(requests: list[dict[str, Any]], model: str) -> list[dict[str, Any]]:
    context = Context(model=model, without=frozenset({"memory"}))
    worlds: dict[str, World] = {}
    rows = []
    for request in requests:
        world = worlds.setdefault(request["world"], load_world(request["world"]))
        out, values = run_task_values(world, request["request"], context=context, checkpointer=InMemorySaver())
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
            }
        )
        print(f"{request['id']:6} {model:6} {out.status:13} {verdict:26} {'; '.join(broken)}", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", default="tests/data/own_words_second_pass.jsonl")
    parser.add_argument("--model", default="rules")
    parser.add_argument("--only", default="", help="comma-separated request ids")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    with open(args.requests, encoding="utf-8") as handle:
        requests = [json.loads(line) for line in handle if line.strip()]
    if args.only:
        requests = [r for r in requests if r["id"] in set(args.only.split(","))]
    rows = run(requests, args.model)
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["verdict"]] = counts.get(row["verdict"], 0) + 1
    print(json.dumps(counts, sort_keys=True))
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
