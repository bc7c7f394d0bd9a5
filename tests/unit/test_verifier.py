"""verify_ltl_stl through the registry on examples/downtown.json, and the program checks R7 / R8."""

from __future__ import annotations

import math

import numpy as np
import pytest
from shapely.geometry import LineString, Point

from ir.model import LowAltitudeIR
from ir.policy import check_r7, check_r8, safety_relaxations
from tools import exact_grid, ltl, signals, verifier
from tools.energy import battery_profile
from tools.registry import ToolRegistry
from tools.rules import MONITORED_RULES
from tools.trajectory import Trajectory

SPEED = 10.0


@pytest.fixture(scope="module")
def registry():
    return ToolRegistry([verifier.SPEC])


def timed(points, z=90.0, speed=SPEED, t0=0.0):
    """[x, y, z, t] waypoints along `points` at constant speed."""
    out, t = [], t0
    for i, p in enumerate(points):
        if i:
            t += math.dist(points[i - 1][:2], p[:2]) / speed
        out.append([p[0], p[1], p[2] if len(p) > 2 else z, round(t, 3)])
    return out


# hospital_A -> south of nfz_temp_1 (y 180..340) -> accident_site_3, 20 m over the roofs it crosses.
DETOUR = [(100, 100), (300, 140), (450, 140), (650, 420)]


def verify(registry, world, **args):
    args.setdefault("origin", "hospital_A")
    args.setdefault("goal", "accident_site_3")
    return registry.call("verify_ltl_stl", world, args)


def test_straight_route_through_the_nfz_fails_r1_with_its_true_depth(registry, world):
    start, goal = world.entity_index["hospital_A"].position, world.entity_index["accident_site_3"].position
    waypoints = timed([start, goal], z=60.0)
    nfz = world.zone_index["nfz_temp_1"].shape
    line = LineString([start, goal])
    entry_sec, exit_sec = (line.project(Point(p)) / SPEED for p in line.intersection(nfz).coords)

    res = verify(registry, world, waypoints=waypoints, ltl=["G !in_nfz_temp_1"])

    assert not res.ok and res.error.type == "spec_violation" and res.error.recoverable
    r1 = res.result["rules"]["R1"]
    chord = line.intersection(nfz)
    dense = [chord.interpolate(f, normalized=True) for f in np.linspace(0, 1, 20001)]
    depth = max(nfz.exterior.distance(p) for p in dense)  # the deepest point, not the deepest whole second
    assert r1["status"] == "fail" and r1["robustness"] == pytest.approx(-depth, abs=0.01)
    first = res.result["violations"][0]
    assert (first["rule"], first["entity"]) == ("R1", "nfz_temp_1")
    assert entry_sec < first["time_sec"] < (entry_sec + exit_sec) / 2  # reported from the entry on
    assert first["segment"][0] == [*start, 60.0, 0.0] and first["segment"][-1][:3] == [*goal, 60.0]
    ltl_violation = next(v for v in res.result["violations"] if v.get("spec") == "G !in_nfz_temp_1")
    assert entry_sec < ltl_violation["time_sec"] < (entry_sec + exit_sec) / 2
    cx = res.result["counterexample"]
    assert cx["failure_stage"] == "verify" and cx["violated_rule"] == "R1" and cx["time_sec"] == first["time_sec"]
    assert cx["offending_entity"] == "nfz_temp_1" and "nfz_temp_1" in cx["suggested_repair"]
    assert "avoid_zones" in cx["suggested_repair"]
    assert res.provenance.engine == {"stl": "rtamt", "ltl": ltl.default_engine().name}


def test_detour_passes_r1_to_r6(registry, world):
    res = verify(
        registry,
        world,
        waypoints=timed(DETOUR),
        uav_id="uav_03",
        deadline_sec=600,
        ltl=["G !in_nfz_temp_1", "G !in_school_zone_2", "F at_goal"],
        stl=["always (clearance - d_min >= 0)"],
    )
    assert res.ok, res.error
    rules = res.result["rules"]
    assert [rules[r]["status"] for r in MONITORED_RULES] == ["pass"] * 6
    assert all(rules[r]["robustness"] >= 0 for r in MONITORED_RULES)
    assert res.result["counterexample"] is None and res.result["violations"] == []
    assert [x["status"] for x in res.result["ltl"]] == ["pass"] * 3
    assert res.result["stl"][0]["status"] == "pass"


def test_altitude_bust_fails_r3(registry, world):
    bust = [(100, 100), (300, 140, 150), (450, 140, 150), (650, 420)]  # 150 m for a while: above the 120 m ceiling
    res = verify(registry, world, waypoints=timed(bust))
    r3 = res.result["rules"]["R3"]
    assert r3["status"] == "fail" and r3["robustness"] == pytest.approx(120.0 - 150.0)
    violation = next(v for v in res.result["violations"] if v["rule"] == "R3")
    assert violation["entity"] == "altitude_max_m"


def test_deadline_miss_fails_r4_and_no_deadline_is_not_applicable(registry, world):
    waypoints = timed(DETOUR)
    eta = waypoints[-1][3]
    late = verify(registry, world, waypoints=waypoints, deadline_sec=eta / 2)
    assert late.result["rules"]["R4"]["status"] == "fail"
    violation = next(v for v in late.result["violations"] if v["rule"] == "R4")
    assert violation["time_sec"] == round(eta / 2, 1) and violation["entity"] == "accident_site_3"
    assert verify(registry, world, waypoints=waypoints, deadline_sec=eta + 1).result["rules"]["R4"]["status"] == "pass"
    assert verify(registry, world, waypoints=waypoints).result["rules"]["R4"]["status"] == "not_applicable"


def test_low_battery_uav_fails_r5(registry, world):
    res = verify(registry, world, waypoints=timed(DETOUR), uav_id="uav_07")
    r5 = res.result["rules"]["R5"]
    assert r5["status"] == "fail" and r5["robustness"] < world.uav_index["uav_07"].battery_ratio - 0.2
    cx = res.result["counterexample"]  # R1-R4 pass on the detour, so R5 is the first failing rule
    assert (cx["violated_rule"], cx["time_sec"], cx["offending_entity"]) == ("R5", 0.0, "uav_07")
    assert "more battery" in cx["suggested_repair"]
    assert verify(registry, world, waypoints=timed(DETOUR)).result["rules"]["R5"]["status"] == "not_applicable"


def test_congested_corridor_fails_r6(registry, world):
    # Along corridor_c1 (capacity 3, load 3) at 80 m, after track_t2 has left it: load 3 + us = 4 > 3.
    res = verify(registry, world, waypoints=timed([(100, 500), (550, 500)], z=80.0, t0=100.0), origin=None, goal=None)
    r6 = res.result["rules"]["R6"]
    corridor = world.corridor_index["corridor_c1"]
    assert r6["status"] == "fail" and r6["robustness"] == corridor.capacity - (corridor.load + 1)
    violation = next(v for v in res.result["violations"] if v["rule"] == "R6")
    assert violation["entity"] == "corridor_c1"


def test_contradictory_ltl_is_spec_unsat(registry, world):
    res = verify(registry, world, waypoints=timed(DETOUR), ltl=["G !at_goal", "F at_goal"])
    assert not res.ok and res.error.type == "spec_unsat" and res.error.recoverable


@pytest.mark.parametrize(
    "specs, named",
    [(["G (in_nfz_temp_1 &"], "does not parse"), (["G !in_nfz_moon"], "in_nfz_moon")],
)
def test_bad_ltl_is_invalid_spec(registry, world, specs, named):
    res = verify(registry, world, waypoints=timed(DETOUR), ltl=specs)
    assert not res.ok and res.error.type == "invalid_spec" and not res.error.recoverable
    assert named in res.error.message


def test_bad_stl_is_invalid_spec_and_a_failing_stl_is_reported(registry, world):
    bad = verify(registry, world, waypoints=timed(DETOUR), stl=["always (wind >= 0)"])
    assert bad.error.type == "invalid_spec" and "wind" in bad.error.message
    strict = verify(registry, world, waypoints=timed(DETOUR), stl=["always (nfz_margin >= 100)"])
    assert strict.error.type == "spec_violation"
    assert strict.result["stl"][0]["status"] == "fail" and strict.result["counterexample"]["violated_rule"] == (
        "always (nfz_margin >= 100)"
    )
    late = verify(registry, world, waypoints=timed(DETOUR), stl=["always (goal_dist >= 100)"])
    samples = Trajectory(waypoints=timed(DETOUR)).sample(1.0)
    first_close = next(t for x, y, _, t in samples if math.dist((x, y), (650, 420)) < 100)
    assert late.result["violations"][0]["time_sec"] == first_close  # where it first fails, not the start


def test_critical_priority_never_relaxes_r1_to_r3(registry, world):
    relaxed = {"rules": ["R4"], "min_separation_m": 1.0, "altitude_min_m": 5.0}
    res = verify(registry, world, waypoints=timed(DETOUR), priority="critical", **relaxed)
    assert {"R1", "R2", "R3", "R4"} <= set(res.result["rules"])
    assert res.result["checked"]["min_separation_m"] == 10.0 and res.result["checked"]["altitude_min_m"] == 30.0
    assert any("R7" in w for w in res.warnings)


@pytest.mark.parametrize(
    "args",
    [
        {"waypoints": []},
        {"waypoints": [[0, 0, 50, 5], [10, 0, 50, 1]]},
        {"waypoints": [[0, 0, 50, 0]], "uav_id": "uav_99"},
        {"waypoints": [[0, 0, 50, 0]], "goal": "atlantis"},
        {"waypoints": [[0, 0, 50, 0]], "rules": ["R9"]},
        {"waypoints": [[0, 0, 50, 0]], "altitude_min_m": 100, "altitude_max_m": 50},
        {"waypoints": [[0, 0, 50, 0]], "color": "red"},
    ],
)
def test_bad_arguments_are_tool_errors(registry, world, args):
    res = registry.call("verify_ltl_stl", world, args)
    assert not res.ok and res.error.type == "bad_arguments" and res.error.recoverable


def test_rtamt_robustness_of_invariants_is_the_signal_minimum_on_the_exact_grid(registry, world):
    waypoints = timed([(100, 100), (650, 420)], z=60.0)
    res = verify(registry, world, waypoints=waypoints, uav_id="uav_03")
    track = np.asarray(waypoints, dtype=float)
    grid = exact_grid.sample_track(track, signals.exact_times(world, track, goal_xy=(650, 420), origin_xy=(100, 100)))
    seconds = Trajectory(waypoints=waypoints).sample(1.0)
    battery = battery_profile(world, world.uav_index["uav_03"], seconds)  # the energy model's 1 s resolution
    nfz_minimum = signals.nfz_margin(world, grid).values.min()
    assert res.result["rules"]["R1"]["robustness"] == pytest.approx(nfz_minimum, abs=1e-3)
    assert nfz_minimum <= signals.nfz_margin(world, seconds).values.min()  # the true minimum: none lower
    assert res.result["rules"]["R5"]["robustness"] == pytest.approx(battery.min() - 0.2, abs=1e-3)
    assert res.result["checked"]["samples"] == len(grid)


# --- R7 / R8 program checks ------------------------------------------------------------------------------------
def _ir(**overrides) -> LowAltitudeIR:
    data = {
        "task_id": "t1",
        "intent": "emergency",
        "priority": "critical",
        "entities": {"origin": "hospital_A", "destination": "accident_site_3", "avoid_zones": ["nfz_temp_1"]},
        "tool_plan": [{"id": "route", "tool": "plan_route", "args": {}}],
        "verification_specs": {"ltl": ["G !in_nfz_temp_1", "F at_goal"], "program_rules": ["R1", "R2", "R3"]},
    }
    for key, value in overrides.items():
        data[key] = {**data.get(key, {}), **value} if isinstance(value, dict) else value
    return LowAltitudeIR.model_validate(data)


def test_r7_accepts_a_safe_critical_ir(world):
    assert check_r7(_ir(), world) == []


def test_r7_flags_every_relaxation_of_a_critical_ir(world):
    ir = _ir(
        constraints={"min_separation_m": 5.0, "altitude_min_m": 10.0},
        entities={"avoid_zones": []},
        verification_specs={"ltl": ["F at_goal"], "program_rules": ["R1", "R3"]},
        tool_plan=[{"id": "route", "tool": "plan_route", "args": {"altitude_max_m": 300}}],
    )
    findings = {(f.error_type, f.field): f for f in check_r7(ir, world)}
    assert set(findings) == {
        ("critical_overrides_safety", "constraints.min_separation_m"),
        ("critical_overrides_safety", "constraints.altitude_min_m"),
        ("critical_overrides_safety", "tool_plan[0].args.altitude_max_m"),
        ("critical_overrides_safety", "entities.avoid_zones"),
        ("missing_mandatory_rule", "verification_specs.ltl"),
        ("missing_mandatory_rule", "verification_specs.program_rules"),
    }
    assert findings[("missing_mandatory_rule", "verification_specs.ltl")].allowed == ["G !in_nfz_temp_1"]
    assert findings[("critical_overrides_safety", "entities.avoid_zones")].allowed == ["nfz_temp_1"]
    assert all(f.rule == "R7" for f in findings.values())


def test_r7_only_binds_critical_priority_and_reads_ltl_semantically(world):
    relaxed = _ir(priority="normal", constraints={"min_separation_m": 5.0})
    assert check_r7(relaxed, world) == [] and safety_relaxations(relaxed, world) != []
    conjoined = _ir(verification_specs={"ltl": ["G (!in_nfz_temp_1 & !in_school_zone_2)"]})
    assert check_r7(conjoined, world) == []  # entails G !in_nfz_temp_1 without spelling it out


def test_r8_forbids_executing_unsat_or_underspecified_tasks():
    assert check_r8("safe_refusal", label="UNSAT") == []
    assert check_r8("execute", label="SAT") == []
    assert [f.error_type for f in check_r8("execute", label="UNSAT")] == ["unsat_task_executed"]
    assert [f.error_type for f in check_r8("execute", spec_unsat=True)] == ["unsat_task_executed"]
    assert [f.error_type for f in check_r8("execute", label="AMBIGUOUS")] == ["underspecified_task_executed"]
    flagged = check_r8("execute", uncertainty={"needs_human_confirmation": True, "missing_information": ["deadline"]})
    assert {f.error_type for f in flagged} == {"underspecified_task_executed", "missing_human_confirm"}
    assert all(f.rule == "R8" and "human_confirm" in f.allowed for f in flagged)
