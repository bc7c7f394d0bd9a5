"""plan_route through the registry: NFZ avoidance on downtown, pickup leg, corridors, typed errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import shapely
from shapely.geometry import LineString

from tools import route
from tools.registry import ToolRegistry
from tools.trajectory import LANDING_DESCENT_MPS, TAKEOFF_CLIMB_MPS, resample
from tools.world import World


@pytest.fixture(scope="module")
def call(downtown):
    registry = ToolRegistry([route.SPEC])
    return lambda **args: registry.call("plan_route", downtown, args)


def _waypoints(result) -> np.ndarray:
    return np.asarray(result.result["waypoints"], dtype=float)


def test_named_nfz_is_avoided_and_band_kept(call, downtown):
    result = call(start="hospital_A", goal="accident_site_3", avoid_zones=["nfz_temp_1"])
    assert result.ok, result.error
    wps = _waypoints(result)
    nfz = downtown.zone_index["nfz_temp_1"].shape
    assert not LineString(wps[:, :2]).intersects(nfz)
    assert (wps[1:-1, 2] >= 30).all() and (wps[:, 2] <= 120).all()  # the band en route
    assert wps[0, 2] == wps[-1, 2] == 0.0  # the take-off and the landing, from and to the ground
    assert wps[0, :2].tolist() == list(downtown.position_of("hospital_A"))
    assert wps[-1, :2].tolist() == list(downtown.position_of("accident_site_3"))


def test_unnamed_nfz_is_not_masked_so_the_route_is_shorter(call, downtown):
    avoiding = call(start="hospital_A", goal="accident_site_3", avoid_zones=["nfz_temp_1"])
    straight = call(start="hospital_A", goal="accident_site_3")
    assert straight.ok
    assert LineString(_waypoints(straight)[:, :2]).intersects(downtown.zone_index["nfz_temp_1"].shape)
    assert straight.result["length_m"] < avoiding.result["length_m"]


def test_times_follow_the_uav_speed(call):
    result = call(start="hospital_A", goal="accident_site_3", uav_id="uav_03", depart_time_sec=20)
    wps = _waypoints(result)
    assert result.result["stops"] == ["hospital_A", "accident_site_3"]  # uav_03 is within tolerance of start
    assert wps[0, 3] == 20
    cruise = result.result["length_m"] - wps[1, 2] - wps[-2, 2]
    vertical = wps[1, 2] / TAKEOFF_CLIMB_MPS + wps[-2, 2] / LANDING_DESCENT_MPS
    assert result.result["eta_sec"] == pytest.approx(20 + cruise / 12.0 + vertical, abs=0.01)
    assert result.result["energy_wh"] > 0


def test_pickup_leg_starts_at_the_uav(call, downtown):
    result = call(start="hospital_A", goal="metro_station_4", uav_id="uav_09")
    assert result.ok
    wps = _waypoints(result)
    assert result.result["stops"] == ["uav_09", "hospital_A", "metro_station_4"]
    assert wps[0, :2].tolist() == list(downtown.uav_index["uav_09"].position)
    assert any(np.allclose(w[:2], downtown.position_of("hospital_A")) for w in wps)


def test_waypoint_entities_are_visited_in_order(call, downtown):
    result = call(start="hospital_A", goal="accident_site_3", waypoints=["police_2", "metro_station_4"])
    wps = _waypoints(result)
    hits = [
        int(np.flatnonzero(np.all(np.isclose(wps[:, :2], downtown.position_of(ref)), axis=1))[0])
        for ref in ("police_2", "metro_station_4")
    ]
    assert hits == sorted(hits)


def test_congested_corridor_is_kept_clear_unless_allowed(call, downtown):
    corridor = downtown.corridor_index["corridor_c1"]
    assert corridor.load >= corridor.capacity

    def samples_inside(result) -> int:
        samples = resample(_waypoints(result), dt=0.25)
        in_band = (samples[:, 2] >= corridor.alt_min_m) & (samples[:, 2] <= corridor.alt_max_m)
        inside = shapely.contains_xy(corridor.shape, samples[:, 0], samples[:, 1])
        return int((in_band & inside).sum())

    # A 60-100 m band lies wholly inside the corridor's band: crossing it is only possible through the corridor.
    args = dict(start="hospital_A", goal="hospital_B", altitude_min_m=60, altitude_max_m=100)
    avoided = call(**args)
    allowed = call(**args, avoid_congested_corridors=False)
    assert avoided.ok and allowed.ok
    assert samples_inside(avoided) == 0 and samples_inside(allowed) > 0
    assert avoided.result["avoided_corridors"] == ["corridor_c1"] and avoided.warnings
    assert allowed.result["length_m"] < avoided.result["length_m"]


def test_deadline_risk_is_recoverable_and_keeps_the_route(call):
    result = call(start="hospital_A", goal="hospital_B", deadline_sec=30)
    assert not result.ok and result.error.type == "deadline_risk" and result.error.recoverable
    assert result.result["eta_sec"] > 30 and len(result.result["waypoints"]) >= 2


def test_a_sensitive_zone_holding_the_goal_is_not_kept_clear_but_a_no_fly_zone_is(call, downtown):
    """A delivery to the school: its own zone cannot be kept clear of (the verifier's R2 exempts it too), and the
    route says so; a no-fly zone over the goal still blocks it."""
    to_school = call(start="hospital_A", goal="school_2", avoid_zones=["school_zone_2", "nfz_temp_1"])
    assert to_school.ok, to_school.error
    assert to_school.result["avoided_zones"] == ["nfz_temp_1"]
    assert any(w.startswith("school_zone_2 holds the route's start or goal") for w in to_school.warnings)
    data = downtown.model_dump(mode="json")
    over_site = [[630, 400], [670, 400], [670, 440], [630, 440]]  # round accident_site_3 (650, 420)
    data["no_fly_zones"].append({"id": "nfz_site", "polygon": over_site, "alt_min_m": 0, "alt_max_m": 500})
    closed = ToolRegistry([route.SPEC]).call(
        "plan_route",
        World.model_validate(data),
        {"start": "hospital_A", "goal": "accident_site_3", "avoid_zones": ["nfz_site"]},
    )
    assert not closed.ok and closed.error.type == "no_path" and "nfz_site" in closed.error.message
    assert closed.error.blockers == ["nfz_site"]  # the same, as ids for the decision (ops reads them)
    assert closed.result is None  # nothing added to what a chat baseline reads back


def test_altitude_band_without_a_layer_is_no_path(call):
    result = call(start="hospital_A", goal="accident_site_3", altitude_min_m=125, altitude_max_m=135)
    assert result.error.type == "no_path" and "altitude band" in result.error.message


def test_unreachable_goal_is_no_path(downtown):
    data = downtown.model_dump(mode="json")
    walls = {  # four no-fly walls around the accident site, ground to above the ceiling; the inside stays free
        "wall_s": [[560, 340], [740, 340], [740, 360], [560, 360]],
        "wall_n": [[560, 480], [740, 480], [740, 500], [560, 500]],
        "wall_w": [[560, 340], [580, 340], [580, 500], [560, 500]],
        "wall_e": [[720, 340], [740, 340], [740, 500], [720, 500]],
    }
    data["no_fly_zones"] += [{"id": i, "polygon": p, "alt_min_m": 0, "alt_max_m": 500} for i, p in walls.items()]
    world = World.model_validate(data)
    args = {"start": "hospital_A", "goal": "accident_site_3", "avoid_zones": list(walls)}
    result = ToolRegistry([route.SPEC]).call("plan_route", world, args)
    assert result.error.type == "no_path" and result.error.recoverable
    assert "no path from hospital_A to accident_site_3" in result.error.message


@pytest.mark.parametrize(
    "args, error_type",
    [
        ({"start": "hospital_Z", "goal": "accident_site_3"}, "unknown_entity"),
        ({"start": "hospital_A", "goal": "accident_site_3", "waypoints": ["nowhere"]}, "unknown_entity"),
        ({"start": "hospital_A", "goal": "accident_site_3", "avoid_zones": ["nfz_tmp_1"]}, "unknown_zone"),
        ({"start": "hospital_A", "goal": "accident_site_3", "uav_id": "uav_99"}, "unknown_uav"),
        ({"start": "hospital_A", "goal": "school_2", "altitude_min_m": 100, "altitude_max_m": 50}, "bad_arguments"),
        ({"start": "hospital_A", "goal": "accident_site_3", "speed": 3}, "bad_arguments"),
        ({"goal": "accident_site_3"}, "bad_arguments"),
    ],
)
def test_bad_arguments_and_unknown_ids_are_recoverable_tool_errors(call, args, error_type):
    result = call(**args)
    assert not result.ok and result.error.type == error_type and result.error.recoverable


def test_unknown_zone_suggests_the_nearest_id(call):
    result = call(start="hospital_A", goal="accident_site_3", avoid_zones=["nfz_tmp_1"])
    assert "nfz_temp_1" in result.error.suggested_actions[0]


def test_uav_id_as_start(call, downtown):
    result = call(start="uav_09", goal="depot_1")
    assert result.ok
    start = _waypoints(result)[0, :2]
    assert math.dist(start, downtown.uav_index["uav_09"].position) == 0
