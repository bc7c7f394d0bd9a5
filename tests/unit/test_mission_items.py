"""The MAVLink mission of a trajectory (standards.flight_plans.mission_items), read by MAVLink's meanings
(tests/support/consumers.py): a ground-to-ground route takes off (NAV_TAKEOFF), flies its waypoints and lands
(NAV_LAND); every DO_CHANGE_SPEED is the plan's speed on its leg in the frame its SPEED_TYPE names, and the speeds in
force keep every leg's time; an older track that starts or ends in the air has no take-off or landing there."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from standards.flight_plans import mission_items
from standards.frame import GeoFrame
from tests.support.consumers import (
    CLIMB,
    DESCENT,
    DO_CHANGE_SPEED,
    GROUND,
    NAV_LAND,
    NAV_TAKEOFF,
    mission_follows_the_plan,
)
from tools.trajectory import LANDING_DESCENT_MPS, TAKEOFF_CLIMB_MPS, ground_to_ground
from tools.world import GeoReference

FRAME = GeoFrame(
    GeoReference(anchor_lat_lon=(47.397742, 8.545594), ground_elevation_amsl_m=488.0, geoid_undulation_m=47.336),
    datetime(2026, 11, 28, 9, tzinfo=UTC),
)


def _mission(waypoints: np.ndarray) -> list[tuple[int, tuple]]:
    plan = SimpleNamespace(waypoints=np.round(waypoints, 3).tolist(), frame=FRAME)
    return [(item.command, item.params) for item in mission_items(plan)]  # type: ignore[arg-type]


def test_a_ground_to_ground_route_takes_off_climbs_cruises_descends_and_lands():
    cruise = np.array([[0, 0, 40, 0], [0, 0, 40, 5], [120, 0, 40, 15], [150, 40, 60, 19], [150, 40, 60, 25],
                       [150, 40, 30, 31], [300, 40, 30, 43]], dtype=float)  # fmt: skip
    track = ground_to_ground(cruise, depart_time_sec=10.0)
    items = _mission(track)
    assert items[0] == (DO_CHANGE_SPEED, (CLIMB, TAKEOFF_CLIMB_MPS, -1, 0, 0, 0, 0))
    assert items[1][0] == NAV_TAKEOFF and items[1][1][6] == 40.0
    assert items[-2] == (DO_CHANGE_SPEED, (DESCENT, LANDING_DESCENT_MPS, -1, 0, 0, 0, 0))
    assert items[-1][0] == NAV_LAND and items[-1][1][6] == 0.0 and items[-1][1][4:6] == items[-3][1][4:6]
    assert mission_follows_the_plan(items, np.round(track, 3)) == []
    holds = [p[0] for c, p in items if c == 16 and p[0]]
    assert holds == [5.0, 6.0]  # over the climb's top, and en route


def test_a_climbing_legs_path_speed_written_as_its_ground_speed_is_caught():
    """The old export's DO_CHANGE_SPEED: param1 1 (ground speed), the value the 3D path speed (issue 38, item 3)."""
    cruise = np.array([[0, 0, 40, 0], [100, 0, 40, 10], [130, 0, 80, 15], [230, 0, 80, 25]], dtype=float)
    track = ground_to_ground(cruise, depart_time_sec=0.0)
    items = _mission(track)
    climbing = next(n for n, (c, p) in enumerate(items) if c == DO_CHANGE_SPEED and p[:2] == (CLIMB, 8.0))
    ground = items[climbing + 1]
    assert ground[1][:2] == (GROUND, 6.0)  # 30 m across and 40 m up in 5 s: 6 m/s over the ground, 8 up
    wrong = list(items)
    wrong[climbing + 1] = (DO_CHANGE_SPEED, (GROUND, 10.0, -1, 0, 0, 0, 0))  # 50 m of path in 5 s
    assert any("SPEED_TYPE_GROUNDSPEED 10.0 m/s" in e for e in mission_follows_the_plan(wrong, np.round(track, 3)))


def test_a_track_in_the_air_has_no_take_off_or_landing():
    track = np.array([[0, 0, 40, 0], [100, 0, 40, 10], [100, 50, 60, 16]], dtype=float)
    items = _mission(track)
    commands = [c for c, _ in items if c != DO_CHANGE_SPEED]
    assert commands == [16, 16, 16]
    assert mission_follows_the_plan(items, track) == []


step = st.tuples(
    st.floats(min_value=-300, max_value=300, allow_nan=False),
    st.floats(min_value=-300, max_value=300, allow_nan=False),
    st.sampled_from([20.0, 40.0, 60.0, 80.0, 120.0]),
    st.floats(min_value=0.5, max_value=40.0, allow_nan=False),
    st.booleans(),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(step, min_size=1, max_size=8))
def test_any_ground_to_ground_route_flies_at_the_speeds_its_plan_assumes(steps):
    points, x, y, t = [], 0.0, 0.0, 0.0
    for dx, dy, z, dt, hover in steps:
        points.append([x, y, z, t])
        if hover:  # a hold where it is
            t += dt
            points.append([x, y, z, t])
        x, y, t = x + dx, y + dy, t + dt
    points.append([x, y, points[-1][2], t])
    track = np.round(ground_to_ground(np.asarray(points, dtype=float), depart_time_sec=3.0), 3)
    assert mission_follows_the_plan(_mission(track), track) == []


def test_home_is_the_take_off_surface_and_a_rooftop_landing_is_above_it():
    """A take-off from a 20 m roof and a landing on a 35 m roof: frame 3's altitudes are above home, the take-off
    surface, so the climb's top is cruise minus 20 and the landing 15 above home."""
    cruise = np.array([[0, 0, 60, 0], [200, 0, 60, 20]], dtype=float)
    track = ground_to_ground(cruise, depart_time_sec=0.0, start_surface_m=20.0, end_surface_m=35.0)
    items = _mission(track)
    takeoff = next(p for c, p in items if c == NAV_TAKEOFF)
    landing = next(p for c, p in items if c == NAV_LAND)
    assert takeoff[6] == 40.0 and landing[6] == 15.0
    assert [p[6] for c, p in items if c == 16] == [40.0]
