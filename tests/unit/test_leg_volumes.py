"""The legs' 4D volumes: every leg of any trajectory lies in its volume at every instant, a flight that strays by
up to the buffers stays inside, and one that strays further is caught; a ground-to-ground flight is held from the
ground up, take-off and landing included."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from shapely.geometry import Point, Polygon

from standards.volumes import Buffers, leg_volumes, uncovered_legs
from tests.support.volume_strategies import steps_up_to, timed
from tools.trajectory import GROUND_M, flight_phases, ground_to_ground

BUFFERS = Buffers(lateral_m=3.0, vertical_m=2.0, delay_sec=5.0, basis="test")

step = steps_up_to(60.0)


@settings(max_examples=200, deadline=None)
@given(st.lists(step, min_size=2, max_size=12))
def test_every_leg_of_any_trajectory_lies_in_its_volume(steps):
    waypoints = timed(steps)
    assert uncovered_legs(leg_volumes(waypoints, BUFFERS), waypoints) == []


@settings(max_examples=100, deadline=None)
@given(
    st.lists(step, min_size=2, max_size=6),
    st.floats(min_value=0.0, max_value=1.0),
    st.floats(min_value=0.0, max_value=2 * np.pi),
    st.floats(min_value=0.0, max_value=1.0),
    st.floats(min_value=0.0, max_value=1.0),
)
def test_a_point_strayed_within_the_buffers_is_inside_the_volume_of_its_leg(steps, where, heading, reach, late):
    """The plan's point at plan time s, moved up to the lateral buffer sideways and flown up to the delay buffer
    late, lies in the volume of the leg s falls in."""
    waypoints = np.asarray(timed(steps))
    volumes = leg_volumes(waypoints.tolist(), BUFFERS)
    leg = min(int(where * (len(waypoints) - 1)), len(waypoints) - 2)
    a, b = waypoints[leg], waypoints[leg + 1]
    fraction = where * (len(waypoints) - 1) - leg
    planned = a + (b - a) * min(fraction, 1.0)
    strayed = planned[:2] + reach * (BUFFERS.lateral_m - 1e-6) * np.array([np.cos(heading), np.sin(heading)])
    flown_at = planned[3] + late * BUFFERS.delay_sec
    volume = volumes[leg]
    assert Polygon(volume.ring).covers(Point(strayed))
    assert volume.lower_m <= planned[2] <= volume.upper_m and volume.t_start <= flown_at <= volume.t_end


def test_a_moved_waypoint_or_a_late_leg_is_caught():
    waypoints = [[0.0, 0.0, 40.0, 0.0], [100.0, 0.0, 40.0, 10.0], [100.0, 100.0, 60.0, 20.0]]
    volumes = leg_volumes(waypoints, BUFFERS)
    moved = [list(w) for w in waypoints]
    moved[1][1] += BUFFERS.lateral_m + 0.5
    assert any("sideways" in f for f in uncovered_legs(volumes, moved))
    climbed = [list(w) for w in waypoints]
    climbed[2][2] += BUFFERS.vertical_m + 0.5
    assert any("altitudes" in f for f in uncovered_legs(volumes, climbed))
    late = [list(w) for w in waypoints]
    late[2][3] += BUFFERS.delay_sec + 0.5
    assert any("time span" in f for f in uncovered_legs(volumes, late))


@settings(max_examples=100, deadline=None)
@given(st.lists(step, min_size=1, max_size=8))
def test_a_ground_to_ground_flight_is_held_from_the_ground_up(steps):
    """The take-off climb's and the landing descent's volumes reach the ground (0 m AGL: the W84 height of the
    ground once exported) and no volume goes below it; every leg, vertical ones included, lies in its volume."""
    cruise = np.asarray(timed(steps), dtype=float)
    cruise[:, 2] = np.maximum(cruise[:, 2], 10.0)  # en route, above the ground
    cruise[:, 3] -= cruise[0, 3]
    waypoints = ground_to_ground(cruise, depart_time_sec=0.0).tolist()
    phases = flight_phases(waypoints)
    assert phases.has_takeoff and phases.has_landing(len(waypoints))
    volumes = leg_volumes(waypoints, BUFFERS)
    assert uncovered_legs(volumes, waypoints) == []
    assert volumes[0].lower_m == GROUND_M and volumes[-1].lower_m == GROUND_M
    assert min(v.lower_m for v in volumes) >= GROUND_M
    assert volumes[0].t_start == waypoints[0][3] and volumes[-1].t_end == waypoints[-1][3] + BUFFERS.delay_sec
