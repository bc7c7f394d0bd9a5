"""A fleet mission's members as traffic for their whole time in the world (issue 42's review): parked at the start
before departing, parked where they landed after; two grounded UAVs are no conflict, one in the air next to a parked
one is; landing slots keep members apart at a shared site, and fail cleanly when none fits."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tools import signals
from tools.rules import NEAR_MISS_FACTOR
from tools.team_traffic import (
    PARKED_AFTER_SEC,
    landing_slot,
    member_track,
    move_landing,
    slot_clear_m,
    slot_preferred_m,
    with_members_as_traffic,
)
from tools.world import TrafficTrack, World

FLEET_CITY = Path(__file__).resolve().parents[2] / "examples" / "fleet_city.json"
SEP = 10.0


@pytest.fixture(scope="module")
def city() -> World:
    return World.model_validate_json(FLEET_CITY.read_text("utf-8"))


def _flight(x0: float, y0: float, x1: float, y1: float, t0: float) -> list[list[float]]:
    return [[x0, y0, 0.0, t0], [x0, y0, 40.0, t0 + 10], [x1, y1, 40.0, t0 + 60], [x1, y1, 0.0, t0 + 70]]


def _vertical(x: float, y: float, t0: float) -> np.ndarray:
    """A UAV standing at (x, y) for 10 s, then climbing to 40 m over 10 s, sampled each second."""
    times = np.arange(t0, t0 + 21.0)
    z = np.clip((times - t0 - 10.0) * 4.0, 0.0, 40.0)
    return np.column_stack([np.full_like(times, x), np.full_like(times, y), z, times])


def test_a_parked_member_is_traffic_for_the_whole_mission(city):
    track = member_track("t1", "uav_01", _flight(100, 100, 640, 200, 50.0))
    assert track.id == "t1:uav_01"
    assert list(track.waypoints[0]) == [100.0, 100.0, 0.0, 0.0]  # parked at its start from t = 0
    assert list(track.waypoints[-1]) == [640.0, 200.0, 0.0, 120.0 + PARKED_AFTER_SEC]  # parked where it landed
    # a UAV hovering 5 m over its landing point long after it landed, and over its start before it departed
    for x, y, t in ((640.0, 200.0, 2000.0), (100.0, 100.0, 10.0)):
        hover = np.array([[x, y, 5.0, t], [x, y, 5.0, t + 1.0]])
        _, distance, hit = signals.traffic_separation(city, hover, [track]).worst()
        assert hit == "t1:uav_01" and distance == pytest.approx(5.0)


def test_two_grounded_uavs_side_by_side_are_not_a_violation(city):
    parked = TrafficTrack(id="t1:uav_06", waypoints=[[755.0, 565.0, 0.0, 0.0], [755.0, 565.0, 0.0, 1e5]])
    standing = np.array([[765.0, 555.0, 0.0, float(t)] for t in range(10)])
    margin = signals.traffic_separation(city, standing, [parked])
    assert margin.values.min() >= signals.far_distance(city) - 1e-9


def test_a_uav_in_the_air_next_to_a_parked_one_is_a_violation(city):
    parked = TrafficTrack(id="t1:uav_06", waypoints=[[755.0, 565.0, 0.0, 0.0], [755.0, 565.0, 0.0, 1e5]])
    climbing = _vertical(762.0, 565.0, 0.0)
    margin = signals.traffic_separation(city, climbing, [parked])
    assert margin.values[:11].min() >= signals.far_distance(city) - 1e-9  # on the ground: not counted
    assert margin.values[11] == pytest.approx(math.hypot(7.0, 4.0)) and margin.values[11] < SEP
    descending = np.array([[640.0, 203.0, z, 200.0 + i] for i, z in enumerate((20.0, 10.0, 3.0, 0.5, 0.0))])
    landed = member_track("t1", "uav_01", _flight(100, 100, 640, 200, 0.0))
    _, distance, hit = signals.traffic_separation(city, descending, [landed]).worst()
    assert hit == "t1:uav_01" and distance < SEP


def test_airborne_traffic_is_measured_as_before(city):
    track = TrafficTrack(id="other", waypoints=[[0.0, 0.0, 30.0, 0.0], [100.0, 0.0, 30.0, 100.0]])
    samples = np.array([[float(t), 5.0, 0.0, float(t)] for t in range(0, 101, 10)])
    margin = signals.traffic_separation(city, samples, [track])
    assert np.allclose(margin.values, math.hypot(5.0, 30.0))


def test_landing_slots_are_distinct_apart_and_within_tolerance(city):
    site = city.position_of("flood_site_1")
    parked: list[tuple[float, float]] = [tuple(site)]  # the first member landed on the centre
    for _ in range(2):
        slot = landing_slot(city, site, parked, 1.2 * SEP)
        assert slot is not None
        assert math.dist(slot, site) <= city.arrival_tolerance_m - 1.0 + 1e-6
        assert all(math.dist(slot, p) >= 1.2 * SEP for p in parked)
        assert city.surface_height_m(slot) == city.surface_height_m(tuple(site))
        parked.append(slot)
    # with a member to land there later, the first leaves room for it at the preferred spacing
    first = landing_slot(city, site, [], 1.2 * SEP, preferred_m=2 * SEP, later=1)
    second = landing_slot(city, site, [first], 1.2 * SEP, preferred_m=2 * SEP)
    assert first is not None and second is not None and math.dist(first, second) >= 2 * SEP


def test_a_member_waiting_at_a_pad_pushes_the_landing_slot_away(city):
    pad, waiting = (800.0, 400.0), (805.0, 395.0)  # the relay: uav_04 waits 7.1 m from vertiport_1
    slot = landing_slot(city, pad, [waiting], 1.2 * SEP, preferred_m=2 * SEP)
    assert slot is not None and math.dist(slot, waiting) >= 1.2 * SEP and math.dist(slot, pad) <= 14.0 + 1e-6


def test_no_slot_fits_fails_cleanly(city):
    site = city.position_of("flood_site_1")
    ring = [(site[0] + 8 * math.cos(a), site[1] + 8 * math.sin(a)) for a in np.linspace(0, 2 * math.pi, 16)]
    assert landing_slot(city, site, [tuple(site), *ring], 1.2 * SEP) is None


def test_a_moved_landing_is_a_level_move_then_the_same_descent(city):
    route = _flight(100, 100, 640, 200, 0.0)
    moved = move_landing(route, (652.0, 200.0), 12.0)
    assert moved[:3] == route[:3]
    assert moved[3] == [652.0, 200.0, 40.0, 61.0]  # 12 m at 12 m/s
    assert moved[4] == [652.0, 200.0, 0.0, 71.0]


def test_members_join_the_worlds_traffic(city):
    track = member_track("t1", "uav_01", _flight(100, 100, 640, 200, 0.0))
    assert with_members_as_traffic(city, [track]).traffic[-1] == track
    assert with_members_as_traffic(city, []) is city


def test_four_members_landing_at_one_site_keep_past_the_simulators_near_miss(city):
    """A parked member stays where it landed whatever the next one's timing, so landing slots closer than the near
    miss fail the simulate gate for every departure time (four bags on four drones at the flood site did)."""
    site, parked = city.position_of("flood_site_1"), []
    for later in (3, 2, 1, 0):
        slot = landing_slot(city, site, parked, slot_clear_m(SEP), preferred_m=slot_preferred_m(SEP), later=later)
        assert slot is not None and math.dist(slot, site) <= city.arrival_tolerance_m
        assert all(math.dist(slot, p) > NEAR_MISS_FACTOR * SEP for p in parked)
        parked.append(slot)
