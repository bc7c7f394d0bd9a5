"""A fleet mission member's volumes (standards.volumes.member_volumes): each leg held in time slices of at most
MEMBER_SLICE_SEC, every instant of the certified flight inside a slice's volume (checked against the certified
waypoints, not the slices), and two members flying one corridor in trail, the planner's 40 s apart, with no two
volumes sharing airspace at one time by this test's own geometry, where whole-leg volumes do."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from shapely.geometry import Point, Polygon

from standards.volumes import MEMBER_SLICE_SEC, Buffers, leg_volumes, member_volumes, uncovered_legs
from tests.support.volume_strategies import steps_up_to, timed

BUFFERS = Buffers(lateral_m=3.4, vertical_m=3.8, delay_sec=15.0, basis="the split loads' measured buffers, rounded up")

step = steps_up_to(90.0)


@settings(max_examples=200, deadline=None)
@given(st.lists(step, min_size=2, max_size=10), st.floats(min_value=0.0, max_value=1.0))
def test_every_instant_of_a_members_flight_lies_in_a_slice_no_longer_than_the_limit(steps, where):
    waypoints = timed(steps)
    volumes = member_volumes(waypoints, BUFFERS)
    assert uncovered_legs(volumes, waypoints) == []
    assert len({v.label for v in volumes}) == len(volumes)  # ids made from labels are unique
    assert all(v.t_end - BUFFERS.delay_sec - v.t_start <= MEMBER_SLICE_SEC + 1e-9 for v in volumes)
    # any instant of the plan, by this test's own interpolation: in some volume, in space and time
    points = np.asarray(waypoints)
    t = points[0, 3] + where * (points[-1, 3] - points[0, 3])
    at = np.array([np.interp(t, points[:, 3], points[:, k]) for k in range(3)])
    assert any(
        Polygon(v.ring).covers(Point(at[:2])) and v.lower_m <= at[2] <= v.upper_m and v.t_start <= t <= v.t_end
        for v in volumes
    )


def test_a_short_leg_is_one_volume_as_a_one_uav_intent_has_it():
    waypoints = [[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 40.0, 8.0], [80.0, 0.0, 40.0, 16.0], [80.0, 0.0, 0.0, 26.0]]
    assert member_volumes(waypoints, BUFFERS) == leg_volumes(waypoints, BUFFERS)
    assert all(v.part is None and "part" not in v.model_dump() for v in member_volumes(waypoints, BUFFERS))


def test_a_slice_moved_off_its_leg_or_a_leg_flown_late_is_caught():
    waypoints = [[0.0, 0.0, 40.0, 0.0], [400.0, 0.0, 40.0, 40.0]]
    volumes = member_volumes(waypoints, BUFFERS)
    assert [v.part for v in volumes] == [0, 1, 2, 3]
    moved = [v.model_copy(update={"ring": [(x, y + 10.0) for x, y in v.ring]}) if v.part == 2 else v for v in volumes]
    assert uncovered_legs(moved, waypoints) == ["leg 0 (slice 2): leaves its volume sideways"]
    late = [[*w[:3], w[3] + (BUFFERS.delay_sec + 1.0) * i] for i, w in enumerate(waypoints)]
    assert "leg 0 (slice 3): outside its volume's time span" in uncovered_legs(volumes, late)
    gap = [v for v in volumes if v.part != 1]
    assert uncovered_legs(gap, waypoints)  # slice 0's volume does not reach slice 1's stretch


def _overlap(a, b) -> bool:
    """Two volumes share airspace at one time: footprints intersect, altitudes and time spans overlap."""
    return (
        Polygon(a.ring).intersects(Polygon(b.ring))
        and a.lower_m < b.upper_m
        and b.lower_m < a.upper_m
        and a.t_start < b.t_end
        and b.t_start < a.t_end
    )


def test_two_members_in_trail_40_s_apart_have_no_volumes_in_common():
    """The split load's shape: each member takes off from its own pad, flies one 600 m cruise leg along the same
    corridor and lands (the second at a slot beside the first's landing point), the second departing 40 s after
    the first (the closest trail gap the team planner built in examples/fleet_requests.jsonl)."""
    ahead = [[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 40.0, 13.0], [600.0, 0.0, 40.0, 73.0], [600.0, 0.0, 0.0, 100.0]]
    behind = [[-30.0, 0.0, 0.0, 40.0], [-30.0, 0.0, 40.0, 53.0], [0.0, 0.0, 40.0, 56.0], [580.0, 0.0, 40.0, 114.0],
              [580.0, 20.0, 40.0, 116.0], [580.0, 20.0, 0.0, 143.0]]  # fmt: skip
    whole = [(a, b) for a in leg_volumes(ahead, BUFFERS) for b in leg_volumes(behind, BUFFERS) if _overlap(a, b)]
    assert whole  # the first member's cruise volume holds the corridor until 88 s: the second joins it at 53 s
    sliced = [(a, b) for a in member_volumes(ahead, BUFFERS) for b in member_volumes(behind, BUFFERS) if _overlap(a, b)]
    assert sliced == []
