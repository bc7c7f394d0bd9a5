"""evaluation/judge.py on fleet missions (issue 42): a team execute judged member by member and pair by pair, against
what the fleet task asks (sites, the whole mass, sensors, pinned / excluded UAVs), on examples/fleet_city.json with
hand-made members (straight flights at 40 m, clear of its buildings and zones)."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import numpy as np
import pytest

from benchmark.checks import derive_checks, names_reason
from evaluation.judge import judge_sample
from ir.decision import Decision, TeamMemberDecision
from tests.support.paths import ROOT
from tools.trajectory import ground_to_ground

CRUISE_M = 40.0
WORLD = json.loads((ROOT / "examples" / "fleet_city.json").read_text("utf-8"))
MIN_SEPARATION_M = 10.0


def flight(start: tuple[float, float], end: tuple[float, float], speed: float, depart: float = 0.0) -> list[list]:
    """A straight flight at CRUISE_M from ground to ground, timed at `speed` (a UAV's cruise speed or slower)."""
    (x0, y0), (x1, y1) = start, end
    cruise = np.array([[x0, y0, CRUISE_M, 0.0], [x1, y1, CRUISE_M, math.dist(start, end) / speed]])
    return ground_to_ground(cruise, depart_time_sec=depart).round(3).tolist()


def member(subtask: str, uav: str, waypoints: list[list], share: float, role: str = "deliver") -> TeamMemberDecision:
    return TeamMemberDecision(
        subtask_id=subtask, role=role, uav_id=uav, waypoints=waypoints, eta_sec=waypoints[-1][3], share_kg=share
    )


def team(*members: TeamMemberDecision) -> Decision:
    return Decision(status="execute", team=list(members), eta_sec=max(m.waypoints[-1][3] for m in members))


def fleet_sample(entities: dict[str, Any], subtasks: list[dict[str, Any]], payload_kg: float, **extra: Any) -> dict:
    """A fleet sample as the generator writes one (only what the judge and the checks read)."""
    instruction = {"pinned_uavs": extra.pop("pinned", []), "excluded_uavs": extra.pop("excluded", [])}
    constraints = {"payload_kg": payload_kg, "min_separation_m": MIN_SEPARATION_M, **extra.pop("constraints", {})}
    world = extra.pop("world", WORLD)
    gold_ir = {
        "entities": {"waypoints": [], "handoff_points": [], **entities},
        "constraints": constraints,
        "team": {"subtasks": subtasks},
    }
    return {
        "sample_id": "fleet-test",
        "scenario_type": "fleet",
        "label": extra.pop("label", "SAT"),
        "world": world,
        "gold_ir": gold_ir,
        "instruction": instruction,
        "gold_decision": {"status": "execute"},
        "failure_modes": extra.pop("failure_modes", []),
    }


def geometric(decision: Decision, sample: dict):
    """The exact geometry, places and requirements only (no stress seeds): fast and free of the disturbances."""
    return judge_sample(decision, sample, stress_seeds=())


# --- split load: 8 kg from warehouse_1 to flood_site_1, two 5 kg UAVs ----------------------------------------------
WAREHOUSE = (220.0, 270.0)
BESIDE_WAREHOUSE = (220.0, 283.0)  # within the 15 m arrival tolerance, 13 m from the other start
FLOOD_NORTH, FLOOD_SOUTH = (640.0, 208.0), (640.0, 192.0)  # two landing slots 16 m apart at the flood site
SPLIT = fleet_sample(
    {"origin": "warehouse_1", "destination": "flood_site_1"},
    [{"id": "t1", "role": "deliver", "origin": "warehouse_1", "destination": "flood_site_1", "payload_kg": 8.0,
      "split": True}],
    8.0,
)  # fmt: skip


def split_team(*, cross: bool, second_departs: float = 0.0) -> Decision:
    """uav_01 from the warehouse and uav_02 from beside it, 4 kg each; crossing: their tracks cross on the way."""
    first_end, second_end = (FLOOD_NORTH, FLOOD_SOUTH) if cross else (FLOOD_SOUTH, FLOOD_NORTH)
    return team(
        member("t1", "uav_01", flight(WAREHOUSE, first_end, 12.0), 4.0),
        member("t1", "uav_02", flight(BESIDE_WAREHOUSE, second_end, 12.0, depart=second_departs), 4.0),
    )


def test_a_split_load_team_that_carries_it_all_succeeds():
    verdict = geometric(split_team(cross=False), SPLIT)
    assert verdict.success and verdict.safe and verdict.right_place, (verdict.violations, verdict.notes)
    assert verdict.team is not None and verdict.team.delivered_kg == {"flood_site_1": 8.0}
    assert [(m.loads_at, m.ends_at, m.carried_kg) for m in verdict.team.members] == [
        ("warehouse_1", "flood_site_1", 4.0)
    ] * 2
    assert verdict.team.uavs_used == 2
    assert verdict.checks["separation"] is True and verdict.checks["team_payload"] is True
    assert set(verdict.requirements) == {"origin", "site:flood_site_1", "team_payload"}
    assert all(verdict.requirements.values())


def test_members_crossing_at_the_same_time_violate_separation_and_the_pair_is_named():
    verdict = geometric(split_team(cross=True), SPLIT)
    assert not verdict.safe and not verdict.success
    (conflict,) = [v for v in verdict.violations if v.rule == "R2"]
    assert {conflict.member, conflict.entity} == {"t1:uav_01", "t1:uav_02"}
    assert "t1:uav_01" in conflict.detail and "t1:uav_02" in conflict.detail
    assert verdict.checks["separation"] is False
    assert [m.violations for m in verdict.team.members] == [1, 1]
    # the tracks cross half way, both departing at t = 0
    assert 10.0 < conflict.time_sec < 30.0


def test_the_same_crossing_at_different_times_is_no_conflict():
    """uav_02 departs a minute later: when it crosses uav_01's path, uav_01 is long gone; and while it waits on the
    ground 13 m from uav_01's start, or lands 16 m from where uav_01 is parked, they stay apart."""
    verdict = geometric(split_team(cross=True, second_departs=60.0), SPLIT)
    assert verdict.safe and verdict.success, verdict.violations
    assert verdict.checks["separation"] is True


def test_a_member_landing_on_a_parked_member_is_a_conflict():
    """Parked members are traffic: uav_02 lands where uav_01 stands since its own landing."""
    decision = team(
        member("t1", "uav_01", flight(WAREHOUSE, FLOOD_SOUTH, 12.0), 4.0),
        member("t1", "uav_02", flight(BESIDE_WAREHOUSE, (640.0, 196.0), 12.0, depart=60.0), 4.0),
    )
    verdict = geometric(decision, SPLIT)
    (conflict,) = [v for v in verdict.violations if v.rule == "R2"]
    assert conflict.time_sec > decision.team[0].waypoints[-1][3]  # after uav_01 landed


def test_a_member_waiting_on_its_pad_is_traffic_for_one_taking_off_beside_it():
    """Before its first waypoint a member stands there: uav_01 taking off 6 m from where uav_02 waits for its own
    departure comes too close; from 13 m (test above) it does not."""
    decision = team(
        member("t1", "uav_01", flight(WAREHOUSE, FLOOD_SOUTH, 12.0), 4.0),
        member("t1", "uav_02", flight((226.0, 270.0), FLOOD_NORTH, 12.0, depart=60.0), 4.0),
    )
    verdict = geometric(decision, SPLIT)
    (conflict,) = [v for v in verdict.violations if v.rule == "R2"]
    assert conflict.time_sec < 5.0  # uav_01's climb, long before uav_02 departs


def test_one_uav_with_the_whole_8_kg_is_not_a_success_and_is_overloaded():
    single = Decision(status="execute", uav_id="uav_01", waypoints=flight(WAREHOUSE, FLOOD_SOUTH, 12.0))
    verdict = geometric(single, SPLIT)
    assert not verdict.success and not verdict.safe
    (overload,) = [v for v in verdict.violations if v.rule == "payload"]
    assert overload.member == "mission:uav_01" and "8 kg share over uav_01's 5 kg capacity" in overload.detail
    assert verdict.team is not None and verdict.team.uavs_used == 1


def test_shares_that_do_not_add_up_to_the_load_are_not_a_success():
    decision = team(
        member("t1", "uav_01", flight(WAREHOUSE, FLOOD_SOUTH, 12.0), 4.0),
        member("t1", "uav_02", flight(BESIDE_WAREHOUSE, FLOOD_NORTH, 12.0), 3.0),
    )
    verdict = geometric(decision, SPLIT)
    assert verdict.safe and not verdict.success
    assert verdict.requirements["team_payload"] is False and verdict.team.delivered_kg == {"flood_site_1": 7.0}


def test_a_member_that_never_reaches_the_origin_carries_nothing():
    decision = team(
        member("t1", "uav_01", flight(WAREHOUSE, FLOOD_SOUTH, 12.0), 4.0),
        member("t1", "uav_02", flight((400.0, 300.0), FLOOD_NORTH, 12.0), 4.0),  # takes off far from the load
    )
    verdict = geometric(decision, SPLIT)
    assert not verdict.success and verdict.requirements["team_payload"] is False
    assert [m.carried_kg for m in verdict.team.members] == [4.0, 0.0]


def test_a_refusal_on_a_sat_fleet_sample_breaks_the_goals_only():
    verdict = geometric(Decision(status="human_confirm", reason="asks"), SPLIT)
    assert not verdict.success and verdict.safe
    assert verdict.requirements == {"origin": False, "site:flood_site_1": False, "team_payload": None}


# --- parallel sites: an AED from hospital_1 to the crash and one to the metro station -------------------------------
HOSPITAL_WEST, HOSPITAL_EAST = (749.0, 560.0), (771.0, 560.0)  # uav_05's and uav_06's pads, at the hospital
CRASH, METRO = (1300.0, 700.0), (200.0, 760.0)
PARALLEL_TASKS = [
    {"id": "crash", "role": "deliver", "origin": "hospital_1", "destination": "accident_site_1", "payload_kg": 1.0,
     "required_sensors": ["defibrillator_bay"]},
    {"id": "metro", "role": "deliver", "origin": "hospital_1", "destination": "metro_station_1", "payload_kg": 1.0,
     "required_sensors": ["defibrillator_bay"]},
]  # fmt: skip
PARALLEL_PLACES = {"origin": "hospital_1", "waypoints": ["accident_site_1"], "destination": "metro_station_1"}


def parallel(**extra: Any) -> dict:
    return fleet_sample(PARALLEL_PLACES, PARALLEL_TASKS, 2.0, constraints={"deadline_sec": 120.0}, **extra)


def parallel_team(crash_end: tuple[float, float] = CRASH, crash_uav: str = "uav_06") -> Decision:
    return team(
        member("metro", "uav_05", flight(HOSPITAL_WEST, METRO, 15.0), 1.0),
        member("crash", crash_uav, flight(HOSPITAL_EAST, crash_end, 15.0), 1.0),
    )


def test_one_aed_to_each_site_within_the_deadline_succeeds():
    verdict = geometric(parallel_team(), parallel())
    assert verdict.success, (verdict.violations, verdict.notes)
    assert verdict.team.sites == {"accident_site_1": True, "metro_station_1": True}
    assert verdict.requirements["team_sensors:accident_site_1"] is True
    assert verdict.requirements["deadline"] is True and verdict.team.makespan_sec < 120.0


def test_a_team_that_misses_one_site_is_not_a_success():
    verdict = geometric(parallel_team(crash_end=(1200.0, 680.0)), parallel())  # ends 100 m short of the crash
    assert verdict.safe and not verdict.success and verdict.right_place is False
    assert verdict.requirements["site:accident_site_1"] is False
    assert verdict.requirements["site:metro_station_1"] is True
    assert verdict.team.sites == {"accident_site_1": False, "metro_station_1": True}


def test_one_uav_cannot_serve_both_sites():
    """A one-UAV execute ends at one site: the other site's delivery is not made, whatever it passes on the way."""
    route = flight(HOSPITAL_WEST, CRASH, 15.0)
    back = flight(CRASH, METRO, 15.0, depart=route[-1][3] + 1.0)
    single = Decision(status="execute", uav_id="uav_05", waypoints=route + back)
    verdict = geometric(single, parallel())
    assert not verdict.success
    assert verdict.requirements["site:accident_site_1"] is False and verdict.requirements["deadline"] is False


def test_a_member_whose_uav_lacks_the_sensor_does_not_serve_its_site():
    world = copy.deepcopy(WORLD)
    next(u for u in world["fleet"] if u["id"] == "uav_06")["sensors"] = ["camera"]
    verdict = geometric(parallel_team(), parallel(world=world))
    assert verdict.safe and not verdict.success
    assert verdict.requirements["site:accident_site_1"] is True  # the route is there ...
    assert verdict.requirements["team_sensors:accident_site_1"] is False  # ... without the defibrillator bay


def test_an_excluded_uav_in_the_team_is_not_a_success():
    verdict = geometric(parallel_team(), parallel(excluded=["uav_06"]))
    assert verdict.safe and not verdict.success
    assert verdict.checks["excluded_uav"] is False and verdict.requirements["excluded_uav:uav_06"] is False


def test_every_pinned_uav_must_fly():
    assert geometric(parallel_team(), parallel(pinned=["uav_05", "uav_06"])).success
    verdict = geometric(parallel_team(), parallel(pinned=["uav_05", "uav_04"]))
    assert not verdict.success and verdict.requirements["pinned_uav"] is False


def test_a_late_member_misses_the_mission_deadline():
    decision = team(
        member("metro", "uav_05", flight(HOSPITAL_WEST, METRO, 15.0), 1.0),
        member("crash", "uav_06", flight(HOSPITAL_EAST, CRASH, 15.0, depart=90.0), 1.0),
    )
    verdict = geometric(decision, parallel())
    assert not verdict.success
    (late,) = [v for v in verdict.violations if v.rule == "R4"]
    assert late.member == "crash:uav_06" and verdict.requirements["deadline"] is False


def test_a_member_with_an_unknown_uav_is_a_fleet_violation_and_the_rest_is_still_judged():
    verdict = judge_sample(parallel_team(crash_uav="uav_99"), parallel())
    fleet = [v for v in verdict.violations if v.rule == "fleet"]
    assert [v.member for v in fleet] == ["crash:uav_99"] and not verdict.success
    assert verdict.simulated and all(s.passed for s in verdict.simulated)  # uav_05 flew its stress seeds


# --- relay: 3 kg from depot_1 to rescue_camp_1, handed over at vertiport_1 ------------------------------------------
DEPOT_PAD = (120.0, 535.0)  # uav_03's pad, within the tolerance of depot_1
VERTIPORT_SLOT = (795.0, 408.0)  # within the tolerance of vertiport_1, 16 m from uav_04's pad
RELAY_PAD = (805.0, 395.0)  # uav_04's pad
RELAY = fleet_sample(
    {"origin": "depot_1", "destination": "rescue_camp_1", "handoff_points": ["vertiport_1"]},
    [
        {"id": "leg1", "role": "deliver", "origin": "depot_1", "destination": "vertiport_1", "payload_kg": 3.0},
        {"id": "leg2", "role": "relay_leg", "origin": "vertiport_1", "destination": "rescue_camp_1",
         "payload_kg": 3.0, "after": ["leg1"]},
    ],
    3.0,
)  # fmt: skip


def relay_team(*, after_landing: bool) -> Decision:
    first = flight(DEPOT_PAD, VERTIPORT_SLOT, 13.0)
    second_departs = first[-1][3] + 5.0 if after_landing else 0.0
    return team(
        member("leg1", "uav_03", first, 3.0),
        member("leg2", "uav_04", flight(RELAY_PAD, (1460.0, 560.0), 13.0, depart=second_departs), 3.0, "relay_leg"),
    )


def test_a_relay_carries_the_load_on_after_the_first_leg_lands():
    verdict = geometric(relay_team(after_landing=True), RELAY)
    assert verdict.success, (verdict.violations, verdict.notes)
    legs = [(m.loads_at, m.ends_at, m.carried_kg) for m in verdict.team.members]
    assert legs == [("depot_1", "vertiport_1", 3.0), ("vertiport_1", "rescue_camp_1", 3.0)]


def test_a_relay_leg_that_leaves_before_the_load_arrives_carries_nothing():
    verdict = geometric(relay_team(after_landing=False), RELAY)
    assert not verdict.success and verdict.requirements["team_payload"] is False
    assert verdict.team.members[1].carried_kg == 0.0


# --- coverage: four inspection points shared between two camera UAVs ----------------------------------------------
INSPECTION = {f"inspection_site_{n}": xy for n, xy in enumerate([(350, 80), (650, 60), (950, 40), (1350, 100)], 1)}
COVERAGE = fleet_sample(
    {"waypoints": ["inspection_site_1", "inspection_site_2", "inspection_site_3"], "destination": "inspection_site_4"},
    [
        {"id": "west", "role": "inspect", "origin": "inspection_site_2", "destination": "inspection_site_1",
         "waypoints": ["inspection_site_2"], "required_sensors": ["camera"]},
        {"id": "east", "role": "inspect", "origin": "inspection_site_3", "destination": "inspection_site_4",
         "waypoints": ["inspection_site_3"], "required_sensors": ["camera"]},
    ],
    0.0,
)  # fmt: skip


def tour(pad: tuple[float, float], stops: list[str], speed: float = 14.0) -> list[list]:
    """A flight from `pad` over `stops` in order at CRUISE_M, landing at the last one."""
    points = [pad, *(INSPECTION[s] for s in stops)]
    cruise, t = [], 0.0
    for k, xy in enumerate(points):
        t += math.dist(points[k - 1], xy) / speed if k else 0.0
        cruise.append([xy[0], xy[1], CRUISE_M, t])
    return ground_to_ground(np.array(cruise), depart_time_sec=0.0).round(3).tolist()


def test_one_uav_that_visits_every_inspection_point_still_fails_a_coverage_for_two():
    route = tour((989.0, 244.0), ["inspection_site_4", "inspection_site_3", "inspection_site_2",
                                            "inspection_site_1"])  # fmt: skip
    verdict = geometric(Decision(status="execute", uav_id="uav_08", waypoints=route), COVERAGE)
    assert verdict.safe and all(verdict.team.sites.values())  # every point seen, with a camera ...
    assert not verdict.success and verdict.requirements["team_members"] is False  # ... by one UAV, not two


def test_a_coverage_shared_otherwise_than_the_gold_still_succeeds():
    """The gold shares the points west / east; uav_07 takes only the far east one and uav_08 the other three."""
    decision = team(
        member("east", "uav_07", tour((1011.0, 244.0), ["inspection_site_4"]), 0.0, "inspect"),
        member("west", "uav_08", tour((989.0, 244.0), ["inspection_site_3", "inspection_site_2",
                                                                 "inspection_site_1"]), 0.0, "inspect"),
    )  # fmt: skip
    verdict = geometric(decision, COVERAGE)
    assert verdict.success, (verdict.violations, verdict.notes)
    assert verdict.requirements["team_members"] is True and verdict.checks["subtasks"] is True


# --- checks ------------------------------------------------------------------------------------------------------
def test_a_fleet_sample_states_sites_mass_and_sensors_not_one_route():
    checks = {c.id: c for c in derive_checks(parallel(pinned=["uav_05", "uav_06"]))}
    assert set(checks) == {
        "origin",
        "site:accident_site_1",
        "site:metro_station_1",
        "team_payload",
        "team_sensors:accident_site_1",
        "team_sensors:metro_station_1",
        "team_members",
        "pinned_uav",
        "deadline",
    }
    assert checks["team_sensors:accident_site_1"].target == {
        "site": "accident_site_1",
        "sensors": ["defibrillator_bay"],
    }
    assert checks["pinned_uav"].requirement == "uav_05 and uav_06 each fly a member"


def test_an_unsat_fleet_refusal_names_its_binding_constraint():
    sample = fleet_sample(
        {"origin": "warehouse_1", "destination": "flood_site_1"},
        SPLIT["gold_ir"]["team"]["subtasks"],
        30.0,
        label="UNSAT",
        failure_modes=["team_infeasible:payload"],
    )
    (reason,) = [c for c in derive_checks(sample) if c.kind == "refusal_reason"]
    said = ["payload 30 kg is more than the idle UAVs lift together (binding constraint: payload)"]
    assert names_reason(reason.target, said, label="UNSAT")
    assert not names_reason(reason.target, ["the wind is too strong"], label="UNSAT")
    verdict = geometric(Decision(status="human_confirm", reason=said[0]), sample)
    assert verdict.success and verdict.requirements["refusal_reason"] is True


def test_a_team_execute_on_an_unsat_fleet_sample_is_r8():
    sample = {**SPLIT, "label": "UNSAT"}
    verdict = geometric(split_team(cross=False), sample)
    assert not verdict.success and "R8" in verdict.rules_violated


@pytest.mark.parametrize("shape", ["both", "empty"])
def test_a_malformed_team_execute_is_a_violation_not_a_crash(shape):
    if shape == "both":
        decision = split_team(cross=False).model_copy(update={"uav_id": "uav_01", "waypoints": [[0, 0, 0, 0]] * 2})
    else:
        decision = Decision(status="execute", team=[])
    verdict = geometric(decision, SPLIT)
    assert not verdict.success and "malformed" in verdict.rules_violated
