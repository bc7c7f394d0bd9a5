"""The whole flight, from the ground to the ground (issue 38): the planner's route starts with the take-off climb
and ends with the landing descent, and the gates judge both. A take-off inside an active no-fly zone that reaches
the ground is an R1 failure, even where the zone ends below the cruise height (as `nfz_temp_1` does not, but a
low temporary zone over a pad would), so such a request is never executed; the demo request still is."""

from __future__ import annotations

import numpy as np
import pytest

from graph.runner import run_task
from nodes.context import Context
from tools.catalog import default_registry
from tools.trajectory import LANDING_DESCENT_MPS, TAKEOFF_CLIMB_MPS, flight_phases
from tools.world import World

WITHOUT_MEMORY = frozenset({"memory"})
DEMO = (
    "Send a drone with the defibrillator (1 kg) from hospital_A to accident_site_3 within 10 minutes, keep away "
    "from the school and the temporary no-fly zone."
)


def _with_low_zone_over(world: World, entity_id: str, active: bool = True) -> World:
    """The world with an active no-fly zone from the ground to 25 m over `entity_id`: under any cruise height
    (the band's floor is 30 m), so only the take-off climb passes through it."""
    x, y = world.position_of(entity_id)
    zone = {
        "id": "nfz_pad_closure",
        "polygon": [(x - 20, y - 20), (x + 20, y - 20), (x + 20, y + 20), (x - 20, y + 20)],
        "alt_min_m": 0.0,
        "alt_max_m": 25.0,
        "reason": "police cordon round the pad",  # not `temporary`: the request's "the temporary zone" stays one
        **({} if active else {"active_window": {"start_sec": 7200.0, "end_sec": 9000.0}}),
    }
    data = world.model_dump(mode="json")
    data["no_fly_zones"].append(zone)
    return World.model_validate(data)


def test_the_verifier_judges_the_take_off_climb(downtown):
    world = _with_low_zone_over(downtown, "hospital_A")
    registry = default_registry()
    route = registry.call("plan_route", world, {"start": "hospital_A", "goal": "accident_site_3", "uav_id": "uav_03"})
    assert route.ok
    waypoints = np.asarray(route.result["waypoints"])
    assert waypoints[0, 2] == 0.0 and waypoints[1, 2] >= 30.0  # the climb from the ground, in the plan
    verdict = registry.call(
        "verify_ltl_stl",
        world,
        {"waypoints": route.result["waypoints"], "uav_id": "uav_03", "origin": "hospital_A", "goal": "accident_site_3"},
    )
    assert not verdict.ok and verdict.result["rules"]["R1"]["status"] == "fail"
    counterexample = verdict.result["counterexample"]
    assert counterexample["violated_rule"] == "R1" and counterexample["offending_entity"] == "nfz_pad_closure"
    assert counterexample["time_sec"] <= waypoints[1, 3]  # during the climb
    # re-planning cannot move a pad: the repair says so instead of asking to avoid the zone again
    assert "take-off" in counterexample["suggested_repair"] and "another origin" in counterexample["suggested_repair"]


def test_the_take_off_is_judged_where_the_uav_stands_not_at_the_place_it_stands_near(downtown):
    """uav_03 stands 11 m from hospital_A, within the arrival tolerance: a low active zone round the UAV and not
    round the hospital's point still stops the flight, since the UAV climbs where it stands (found in review)."""
    data = downtown.model_dump(mode="json")
    data["no_fly_zones"].append(
        {"id": "nfz_uavpad", "polygon": [(105, 88), (118, 88), (118, 102), (105, 102)], "alt_min_m": 0.0,
         "alt_max_m": 25.0, "active_window": {"start_sec": 0.0, "end_sec": 7200.0}}
    )  # fmt: skip
    world = World.model_validate(data)
    out = run_task(world, DEMO, context=Context(model="rules", without=WITHOUT_MEMORY), db=None)
    assert out.status != "execute", out.decision.get("reason")


def test_a_take_off_inside_an_active_ground_level_zone_is_not_executed(downtown):
    world = _with_low_zone_over(downtown, "hospital_A")
    out = run_task(world, DEMO, context=Context(model="rules", without=WITHOUT_MEMORY), db=None)
    assert out.status != "execute", out.decision.get("reason")
    assert not out.decision.get("waypoints")


def test_the_same_zone_outside_its_window_does_not_stop_the_flight(downtown):
    world = _with_low_zone_over(downtown, "hospital_A", active=False)
    out = run_task(world, DEMO, context=Context(model="rules", without=WITHOUT_MEMORY), db=None)
    assert out.status == "execute", out.decision.get("reason")


@pytest.fixture(scope="module")
def demo_execute(downtown):
    out = run_task(downtown, DEMO, context=Context(model="rules", without=WITHOUT_MEMORY), db=None)
    assert out.status == "execute", out.decision.get("reason")
    return out


def test_the_demo_executes_from_the_ground_to_the_ground(demo_execute, downtown):
    waypoints = np.asarray(demo_execute.decision["waypoints"], dtype=float)
    phases = flight_phases(waypoints)
    assert phases.has_takeoff and phases.has_landing(len(waypoints))
    assert waypoints[0, 2] == waypoints[-1, 2] == 0.0
    # uav_03 stands 11 m from hospital_A (within the arrival tolerance): it takes off where it stands
    assert np.allclose(waypoints[0, :2], downtown.uav_index["uav_03"].position)
    assert np.allclose(waypoints[-1, :2], downtown.position_of("accident_site_3"))
    climb, descent = waypoints[1] - waypoints[0], waypoints[-1] - waypoints[-2]
    assert climb[3] == pytest.approx(climb[2] / TAKEOFF_CLIMB_MPS, abs=1e-2)
    assert descent[3] == pytest.approx(-descent[2] / LANDING_DESCENT_MPS, abs=1e-2)
    # the en-route band holds between the two verticals; the arrival the deadline judges is the touchdown
    assert (waypoints[phases.takeoff_end : phases.landing_start + 1, 2] >= 30.0).all()
    assert demo_execute.decision["eta_sec"] == pytest.approx(waypoints[-1, 3], abs=1e-2)


def _with_rooftop_pad(world: World) -> World:
    """downtown with a 25 m building under accident_site_3 (a place mapped inside its building's outline, as the
    Helsinki tier's hospitals and offices are) and a 30 m one 30 m east of it, outside the pad's disc."""
    x, y = world.position_of("accident_site_3")
    data = world.model_dump(mode="json")
    square = lambda cx, cy, h: [(cx - h, cy - h), (cx + h, cy - h), (cx + h, cy + h), (cx - h, cy + h)]  # noqa: E731
    data["buildings"] += [
        {"id": "roof_pad_block", "polygon": square(x, y, 8.0), "height_m": 25.0},
        {"id": "next_block", "polygon": square(x + 30.0, y, 5.0), "height_m": 30.0},
    ]
    return World.model_validate(data)


def test_a_rooftop_place_is_landed_on_at_its_roof_and_only_its_own_building_is_exempt(downtown):
    world = _with_rooftop_pad(downtown)
    assert world.surface_height_m(world.position_of("accident_site_3")) == 25.0
    registry = default_registry()
    args = {
        "start": "hospital_A",
        "goal": "accident_site_3",
        "uav_id": "uav_03",
        "avoid_zones": ["nfz_temp_1", "school_zone_2"],
    }
    route = registry.call("plan_route", world, args)
    assert route.ok, route.error
    waypoints = np.asarray(route.result["waypoints"])
    assert waypoints[-1, 2] == 25.0 and waypoints[0, 2] == 0.0  # lands on the roof, took off from the ground
    verify = {"waypoints": route.result["waypoints"], "uav_id": "uav_03", "origin": "hospital_A"}
    verdict = registry.call("verify_ltl_stl", world, {**verify, "goal": "accident_site_3"})
    assert verdict.ok, verdict.result.get("counterexample")
    flown = {"waypoints": route.result["waypoints"], "uav_id": "uav_03", "seed": 1}
    simulated = registry.call("simulate_scenario", world, flown)
    assert simulated.ok and simulated.result["success"], simulated.result
    # the same descent beside the pad, onto the next block's roof line, is not a landing on it: R2 fails there
    beside = waypoints.copy()
    beside[-2:, 0] += 24.0  # 6 m from next_block, over the ground between the two
    beside[-1, 2] = 0.0
    moved = registry.call("verify_ltl_stl", world, {**verify, "waypoints": beside.tolist(), "rules": ["R2"]})
    assert not moved.ok and moved.result["counterexample"]["offending_entity"] == "next_block"


def test_a_pad_at_exactly_the_minimum_separation_has_no_room_for_drift_and_says_so(downtown):
    """The verifier passes a climb 10 m from a wall with margin 0; gusts then push the simulated climb closer: a near
    miss over the pad, which no re-routing can help, and the counterexample says so (found in review on
    grid_small, whose places stood exactly 10 m from buildings)."""
    x, y = downtown.uav_index["uav_03"].position
    data = downtown.model_dump(mode="json")
    wall = [(x + 10.0, y - 10.0), (x + 30.0, y - 10.0), (x + 30.0, y + 10.0), (x + 10.0, y + 10.0)]
    data["buildings"].append({"id": "pad_wall", "polygon": wall, "height_m": 60.0})
    world = World.model_validate(data)
    registry = default_registry()
    args = {"start": "hospital_A", "goal": "accident_site_3", "uav_id": "uav_03", "avoid_zones": ["nfz_temp_1"]}
    route = registry.call("plan_route", world, args)
    assert route.ok, route.error
    flown = {"waypoints": route.result["waypoints"], "uav_id": "uav_03"}
    results = [registry.call("simulate_scenario", world, {**flown, "seed": seed}) for seed in range(4)]
    near = [r.result["counterexample"] for r in results if (r.result or {}).get("counterexample")]
    pad_misses = [c for c in near if c["offending_entity"] == "pad_wall"]
    assert pad_misses, near
    assert "take-off" in pad_misses[0]["suggested_repair"] and "no room for drift" in pad_misses[0]["suggested_repair"]
