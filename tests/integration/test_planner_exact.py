"""Every planned route of a whole benchmark split stays out of what it was told to keep out of, judged with exact
geometry on each straight piece (the independent judge's own, evaluation/judge.py), not at sampled instants: no
active no-fly zone is entered in its altitude band and active window, no building is approached closer than the
separation below its roof + separation, and no avoided sensitive zone's buffer is entered."""

from __future__ import annotations

import json

import numpy as np
import pytest
from shapely.geometry import LineString, Point

from benchmark.generator import DEFAULT_SEED, jobs_for, run_jobs
from benchmark.splits import SPLITS
from evaluation.judge import intrusions, parameter_range
from tools.world import World

EPS = 1e-6


@pytest.fixture(scope="module")
def routes() -> list[tuple[str, World, np.ndarray, dict]]:
    """(sample id, world, gold route, its plan_route arguments) for every executed dev_mini sample; a fleet sample's
    every member, with the zones and separation its team's IR gives every member's route."""
    found = []
    for line, _ in run_jobs(jobs_for(SPLITS["dev_mini"], DEFAULT_SEED), workers=2):
        sample = json.loads(line)
        decision = sample["gold_decision"]
        if decision["status"] != "execute":
            continue
        world = World.model_validate(sample["world"])
        if decision.get("team"):
            ir = sample["gold_ir"]
            plan = {
                "min_separation_m": ir["constraints"]["min_separation_m"],
                "avoid_zones": ir["entities"]["avoid_zones"],
            }
            for member in decision["team"]:
                route = np.asarray(member["waypoints"], dtype=float)
                found.append((f"{sample['sample_id']}:{member['subtask_id']}", world, route, plan))
            continue
        plan = next(s for s in sample["gold_tool_trace"] if s["tool"] == "plan_route")["args"]
        found.append((sample["sample_id"], world, np.asarray(decision["waypoints"], dtype=float), plan))
    return found


def _intrusions(world: World, route: np.ndarray, plan: dict) -> list[str]:
    found = []
    separation = plan.get("min_separation_m", 10.0)
    ends = [Point(route[0, :2]), Point(route[-1, :2])]
    avoided = [world.zone_index[z] for z in plan.get("avoid_zones", []) if z in {s.id for s in world.sensitive_zones}]
    exempt = {z.id for z in avoided if any(z.buffered_shape.covers(p) for p in ends)}
    for zone in world.no_fly_zones:
        window = zone.active_window
        hits = intrusions(
            route, zone.shape, (zone.alt_min_m, zone.alt_max_m), window and (window.start_sec, window.end_sec)
        )
        found += [f"piece {hit.segment} enters {zone.id}" for hit in hits]
    for k, (a, b) in enumerate(zip(route[:-1], route[1:])):
        for building in world.buildings:
            low = parameter_range(a[2], b[2], -np.inf, building.height_m + separation)
            if low and _part(a, b, *low).distance(building.shape) < separation - EPS:
                found.append(f"piece {k} passes within {separation} m of {building.id} below its roof + separation")
        for zone in avoided:
            if zone.id not in exempt and LineString([a[:2], b[:2]]).distance(zone.shape) < zone.buffer_m - EPS:
                found.append(f"piece {k} enters the buffer of {zone.id}")
    return found


def _part(a: np.ndarray, b: np.ndarray, lo: float, hi: float) -> LineString | Point:
    start, stop = a + lo * (b - a), a + hi * (b - a)
    return LineString([start[:2], stop[:2]]) if hi > lo else Point(start[:2])


def test_every_planned_route_of_dev_mini_passes_an_exact_intrusion_check(routes):
    assert len(routes) > 100  # most of dev_mini executes
    problems = {sid: found for sid, world, route, plan in routes if (found := _intrusions(world, route, plan))}
    assert problems == {}


def test_the_exact_check_catches_a_corner_cut(downtown):
    """The check itself is not blind: the issue's corner cut of nfz_temp_1 is found."""
    corner = np.array([[470, 300, 60, 0], [441, 325, 60, 3.191], [411, 355, 60, 6.727], [400, 380, 60, 9.003]], float)
    assert _intrusions(downtown, corner, {}) == ["piece 1 enters nfz_temp_1"]
