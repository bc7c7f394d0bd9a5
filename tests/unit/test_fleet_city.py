"""examples/fleet_city.json: a world whose fleet can form each kind of team of issue 42, and the physical premise of
each request kind in examples/fleet_requests.jsonl, checked with the assignment tool's feasibility, the energy model
and planned routes; on examples/downtown.json the teams those requests ask for cannot be formed."""

from __future__ import annotations

import json
import math
from collections import Counter
from itertools import permutations
from pathlib import Path

import numpy as np
import pytest

from tests.support.paths import EXAMPLES
from tools import route
from tools.assignment import AssignUavArgs, evaluate
from tools.energy import battery_profile
from tools.registry import ToolRegistry
from tools.trajectory import vertical_legs_sec
from tools.world import UAV, UAVStatus, World, load_world

FLEET_CITY = EXAMPLES / "fleet_city.json"
REQUESTS = EXAMPLES / "fleet_requests.jsonl"
KINDS = ("split_load", "parallel_sites", "coverage", "roles", "relay")
CRUISE_FLOOR_M = 30.0  # the lowest cruise height: every flight climbs to it and lands from it


@pytest.fixture(scope="module")
def city() -> World:
    return load_world(FLEET_CITY)


@pytest.fixture(scope="module")
def plan(city):
    registry = ToolRegistry([route.SPEC])

    def planned(start: str, goal: str, uav: str, waypoints: tuple[str, ...] = (), payload_kg: float = 0.0) -> dict:
        args = {"start": start, "goal": goal, "waypoints": list(waypoints), "uav_id": uav, "payload_kg": payload_kg}
        result = registry.call("plan_route", city, args)
        assert result.ok, result.error
        return result.result

    return planned


def _requests() -> list[dict]:
    return [json.loads(line) for line in REQUESTS.read_text(encoding="utf-8").splitlines() if line.strip()]


def _idle(world: World) -> list[UAV]:
    return [u for u in world.fleet if u.status is UAVStatus.idle]


def _can_fly(world: World, uav: UAV, origin: str, destination: str, payload_kg: float) -> bool:
    args = AssignUavArgs(origin=origin, destination=destination, payload_kg=payload_kg)
    return not evaluate(world, uav, world.position_of(origin), world.position_of(destination), args).reasons


def test_the_world_loads_with_a_varied_idle_fleet(city):
    idle = _idle(city)
    assert city.world_id == "fleet_city" and 8 <= len(idle) <= 10
    assert {u.payload_capacity_kg for u in idle} >= {2, 3, 4, 5}
    assert {s for u in idle for s in u.sensors} >= {"camera", "thermal", "defibrillator_bay", "winch"}
    assert len({u.battery_capacity_wh for u in idle}) >= 3 and len({u.cruise_speed_mps for u in idle}) >= 3
    kinds = Counter(e.kind.value for e in city.entities)
    assert kinds["inspection_site"] == 4 and kinds["hospital"] == 1 and kinds["vertiport"] == 1
    # small enough for routes to plan in about a second: at most 2.5 times downtown's planning grid
    downtown = load_world(EXAMPLES / "downtown.json").grid
    assert city.grid.nx * city.grid.ny * city.grid.nz <= 2.5 * downtown.nx * downtown.ny * downtown.nz


def test_the_requests_file_names_real_places_and_covers_every_kind():
    requests = _requests()
    assert len({r["id"] for r in requests}) == len(requests)
    on_city = Counter(r["kind"] for r in requests if r["world"] == "examples/fleet_city.json")
    assert all(on_city[kind] >= 2 for kind in KINDS), on_city
    assert {r["lang"] for r in requests} == {"en", "zh"}
    downtown = [r for r in requests if r["world"] == "examples/downtown.json"]
    assert len(downtown) >= 3
    assert all(
        r["expect"]["decision"] in ("safe_refusal", "human_confirm") and r["expect"]["binding"] for r in downtown
    )
    for request in requests:
        world = load_world(Path(EXAMPLES.parent, request["world"]))
        expect = request["expect"]
        assert request["kind"] in KINDS and expect["decision"] in ("execute", "safe_refusal", "human_confirm")
        named = [*expect["sites"], *(expect[k] for k in ("origin", "handoff") if k in expect)]
        assert set(named) <= set(world.entity_index), request["id"]
        # a request not flown says why: the binding constraint, or the question the agent asks ("asks")
        assert expect["decision"] == "execute" or expect.get("binding") or expect.get("asks"), request["id"]


def test_split_load_eight_and_twelve_kg_need_two_and_three_uavs_that_can_each_fly_a_share(city):
    idle = _idle(city)
    largest = max(u.payload_capacity_kg for u in idle)
    assert largest < 8.0 and math.ceil(12.0 / largest) == 3
    for total, members in ((8.0, 2), (12.0, 3)):
        share = total / members
        able = [
            u
            for u in idle
            if u.payload_capacity_kg >= share and _can_fly(city, u, "warehouse_1", "flood_site_1", share)
        ]
        assert len(able) >= members, (total, [u.id for u in able])
    assert sum(u.payload_capacity_kg for u in idle) < 30.0  # split-4: more than the whole idle fleet lifts


def test_parallel_sites_one_uav_cannot_serve_both_in_two_minutes_but_two_can(city, plan):
    deadline = 120.0
    bays = [u for u in _idle(city) if "defibrillator_bay" in u.sensors]
    assert len(bays) == 2 and all(math.dist(u.position, city.position_of("hospital_1")) < 15 for u in bays)
    # a bound no planner can beat: the straight legs at the fastest idle speed, one take-off and one landing
    fastest = max(u.cruise_speed_mps for u in _idle(city))
    hospital, crash, station = (city.position_of(p) for p in ("hospital_1", "accident_site_1", "metro_station_1"))
    nearer_first = min(math.dist(hospital, crash), math.dist(hospital, station)) + math.dist(crash, station)
    assert nearer_first / fastest + vertical_legs_sec(CRUISE_FLOOR_M) > deadline
    for first, second in (("accident_site_1", "metro_station_1"), ("metro_station_1", "accident_site_1")):
        assert plan("hospital_1", second, bays[0].id, (first,))["eta_sec"] > deadline
    for uav, site in zip(bays, ("accident_site_1", "metro_station_1")):
        assert plan("hospital_1", site, uav.id, payload_kg=1.0)["eta_sec"] <= deadline - 20  # a margin for holds
        assert _can_fly(city, uav, "hospital_1", site, 1.0)


def test_coverage_four_points_take_one_camera_uav_over_two_minutes_and_two_within(city, plan):
    deadline = 120.0
    cameras = [u for u in _idle(city) if "camera" in u.sensors]
    assert len(cameras) >= 2
    points = [f"inspection_site_{i}" for i in range(1, 5)]
    fastest = max(u.cruise_speed_mps for u in cameras)
    shortest_tour = min(
        sum(math.dist(a, b) for a, b in zip([u.position, *map(city.position_of, order)], map(city.position_of, order)))
        for u in cameras
        for order in permutations(points)
    )
    assert shortest_tour / fastest + vertical_legs_sec(CRUISE_FLOOR_M) > deadline
    east = plan("charging_pad_1", "inspection_site_4", "uav_07", ("inspection_site_3",))
    west = plan("charging_pad_1", "inspection_site_1", "uav_08", ("inspection_site_2",))
    assert max(east["eta_sec"], west["eta_sec"]) <= deadline - 20


def test_roles_no_idle_uav_both_films_and_lifts_three_kg_but_two_can_share_the_work(city):
    idle = _idle(city)
    assert not [u.id for u in idle if "camera" in u.sensors and u.payload_capacity_kg >= 3.0]
    filming = [
        u for u in idle if "camera" in u.sensors and _can_fly(city, u, "charging_pad_1", "construction_site_1", 0)
    ]
    carrying = [u for u in idle if _can_fly(city, u, "warehouse_2", "construction_site_1", 3.0)]
    assert {"uav_07", "uav_08"} <= {u.id for u in filming} and "uav_09" in {u.id for u in carrying}


def test_relay_no_idle_uav_reaches_the_rescue_camp_in_one_leg_but_two_legs_through_the_vertiport_do(city, plan):
    for payload in (3.0, 4.0):
        one_leg = {u.id: _can_fly(city, u, "depot_1", "rescue_camp_1", payload) for u in _idle(city)}
        assert not any(one_leg.values()), one_leg
        first = [u for u in _idle(city) if _can_fly(city, u, "depot_1", "vertiport_1", payload)]
        second = [u for u in _idle(city) if _can_fly(city, u, "vertiport_1", "rescue_camp_1", payload)]
        assert first and second and {u.id for u in first} != {u.id for u in second}
        assert "uav_04" in {u.id for u in second}  # the UAV waiting at the vertiport flies the last leg
    # on the planned route, not only the assignment's detour estimate: one leg lands below the 20% reserve
    lifters = [u for u in _idle(city) if u.payload_capacity_kg >= 3.0]
    heavy = max(lifters, key=lambda u: u.battery_ratio * u.battery_capacity_wh)  # the most energy on board
    whole = np.asarray(plan("depot_1", "rescue_camp_1", heavy.id, payload_kg=3.0)["waypoints"])
    assert battery_profile(city, heavy, whole, 3.0)[-1] < 0.2
    for start, goal, uav in (("depot_1", "vertiport_1", "uav_01"), ("vertiport_1", "rescue_camp_1", "uav_04")):
        leg = np.asarray(plan(start, goal, uav, payload_kg=3.0)["waypoints"])
        assert battery_profile(city, city.uav_index[uav], leg, 3.0)[-1] > 0.3


def test_downtown_cannot_form_the_teams_its_requests_ask_for(downtown):
    idle = _idle(downtown)
    # split: the idle fleet lifts 11 kg of the 12, and only uav_03 of it can fly there
    assert sum(u.payload_capacity_kg for u in idle) < 12.0
    assert [u.id for u in idle if _can_fly(downtown, u, "fire_station_1", "accident_site_3", 1.0)] == ["uav_03"]
    # parallel: one defibrillator bay in the fleet, on the one idle UAV that can fly from the hospital
    assert [u.id for u in downtown.fleet if "defibrillator_bay" in u.sensors] == ["uav_03"]
    assert [u.id for u in idle if _can_fly(downtown, u, "hospital_A", "accident_site_3", 1.0)] == ["uav_03"]
    # roles: no idle UAV has a thermal camera
    assert not [u.id for u in idle if "thermal" in u.sensors]
