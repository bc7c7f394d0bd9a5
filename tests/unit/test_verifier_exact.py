"""The exact verifier against an independent shapely oracle, on random polygons and corner-cutting flights.

Cases and oracle live in evaluation/perf/verifier_cases.py (evaluation/perf/verifier_fuzz.py runs the same generator on
100,000 numpy-drawn cases); here hypothesis draws the generator's numbers, so a failure shrinks to a small case.
Robustness is compared below the verifier's 3-decimal rounding: the minimum of each signal over the exact time grid
(signals.exact_times) must be within 1e-6 m of the oracle's, and never above a value the oracle found the flight to
attain (by more than 1e-7 m: rounding on near-degenerate pieces; the fuzz script holds 1e-9). The whole tool is checked on generated worlds (verdicts, robustness within 1e-3), and
on the issue's example: a corner cut of nfz_temp_1 between two whole seconds that 1 Hz sampling missed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from shapely.geometry import Point, Polygon

from evaluation.perf import verifier_cases as vc
from tools import exact_grid, signals, verifier
from tools import segment_geometry as geo
from tools.contract import ToolFailure
from tools.trajectory import Trajectory
from tools.world import World

ROBUSTNESS_TOL = 1e-6
# Near tangency the roots of squared distances keep only half the digits (sqrt(2.2e-16) x 500 m ~ 7e-6 m before
# polishing): hypothesis found ours 2.3e-8 m, then (a 6e-8 m sub-piece grazing an edge) 1.2e-7 m above the value the
# oracle attains. The one-sided bound is therefore the documented exactness bound itself.
ATTAINED_TOL = ROBUSTNESS_TOL
VERDICT_TOL = 1e-9
TOOL_TOL = 1e-3  # the tool rounds robustness to verifier.DIGITS = 3 decimals
FAR = 1e9  # "nothing to measure" for the per-segment functions, which have no world


def fuzz(examples: int):
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


class HypothesisSource:
    """The generator's numbers drawn by hypothesis (so failures shrink)."""

    def __init__(self, data: st.DataObject):
        self.data = data

    def uniform(self, lo: float, hi: float) -> float:
        return self.data.draw(st.floats(lo, hi, allow_nan=False, allow_infinity=False))

    def integer(self, lo: int, hi: int) -> int:
        return self.data.draw(st.integers(lo, hi))


def assert_matches(ours: float, truth: float, what: str = "") -> None:
    assert abs(ours - truth) <= ROBUSTNESS_TOL, f"{what}: ours {ours!r} vs oracle {truth!r}"
    assert ours <= truth + ATTAINED_TOL, f"{what}: ours {ours!r} above the attained {truth!r}"


def world_of(case: vc.Case) -> World:
    return World.model_validate(case.world_dict())


def random_piece(source: HypothesisSource, polygon) -> tuple[np.ndarray, np.ndarray, float, float]:
    """A straight piece near the polygon's corners and edges, and a sub-range [lo, hi] of it."""
    a, b = vc.polyline_xy(source, [polygon], 2)
    lo, hi = (0.0, 1.0) if source.integer(0, 1) else sorted((source.uniform(0.0, 1.0), source.uniform(0.0, 1.0)))
    return a, b, lo, hi


# --- tools/segment_geometry, one piece --------------------------------------------------------------------------
@fuzz(400)
@given(st.data())
def test_min_signed_distance_is_the_exact_minimum_on_a_piece(data):
    source = HypothesisSource(data)
    polygon = vc.random_polygon(source)
    a, b, lo, hi = random_piece(source, polygon)
    u, value = geo.min_signed_distance(polygon, geo.polygon_edges(polygon), a, b, lo, hi)

    shape = vc.Shape.of(vc.ring_of(polygon))
    truth = vc.min_horizontal(shape, vc.Piece(np.append(a, 0.0), np.append(b, 0.0), 0.0, 1.0), lo, hi)
    assert_matches(value, truth, "min_signed_distance")
    assert lo <= u <= hi
    # the instant it reports is where that value is taken (the grid samples there)
    at_u = vc.signed_horizontal(shape, (a + u * (b - a))[None])[0]
    assert abs(at_u - value) <= ATTAINED_TOL


@fuzz(300)
@given(st.data())
def test_min_prism_distance_is_the_exact_minimum_on_a_piece(data):
    source = HypothesisSource(data)
    polygon = vc.random_polygon(source)
    low = source.uniform(0.0, 80.0)
    high = low + source.uniform(1.0, 80.0)
    a, b, lo, hi = random_piece(source, polygon)
    za, zb = vc.altitudes(source, 2, [low, high])
    a3, b3 = np.append(a, za), np.append(b, zb)
    u, value = geo.min_prism_distance(polygon, geo.polygon_edges(polygon), low, high, a3, b3, lo, hi)

    # the oracle on the sub-range: a one-piece flight from lo to hi (a hover where lo = hi) with no window
    start, stop = a3 + lo * (b3 - a3), a3 + hi * (b3 - a3)
    case = vc.Case("nfz", np.array([[*start, 0.0], [*stop, 1.0]]), nfz=vc.ring_of(polygon), low=low, high=high)
    assert_matches(value, vc.nfz_oracle(case, FAR), "min_prism_distance")
    assert lo <= u <= hi


# --- the signals on the verifier's exact time grid ----------------------------------------------------------------
@fuzz(400)
@given(st.data())
def test_r1_nfz_margin_on_the_exact_grid_matches_the_oracle(data):
    case = vc.random_case(HypothesisSource(data), "nfz")
    world = world_of(case)
    ours = vc.exact_minimum(world, case)
    truth = vc.nfz_oracle(case, signals.far_distance(world))
    assert_matches(ours, truth, "R1 nfz_margin")
    if vc.nfz_intrusion(case):  # inside, in band, while active, for a positive time: never a pass
        assert ours < 0


@fuzz(250)
@given(st.data())
def test_r2_obstacle_clearance_on_the_exact_grid_matches_the_oracle(data):
    case = vc.random_case(HypothesisSource(data), "building")
    world = world_of(case)
    assert_matches(vc.exact_minimum(world, case), vc.building_oracle(case, signals.far_distance(world)), "obstacle")


def test_minimum_of_a_near_level_piece_just_over_a_roof_is_not_moved_to_the_pieces_end():
    # Found by the fuzz test above: the piece is 1e-12 m over the roof where it passes 0.09 m from the footprint;
    # the band fix-up used to move that instant to the piece's end, where the roof height is reached (1.0 m away).
    case = vc.Case(
        kind="building",
        waypoints=np.array([[506.0, 495.0, 3.000000000001, 0.0], [495.0, 494.0, 3.0, 1.0]]),
        building=[(495.0, 495.0), (505.0, 495.0), (505.0, 500.0), (500.0, 500.0), (500.0, 505.0), (495.0, 505.0)],
        height=3.0,
    )
    world = world_of(case)
    assert_matches(vc.exact_minimum(world, case), vc.building_oracle(case, signals.far_distance(world)), "obstacle")


@fuzz(200)
@given(st.data())
def test_r2_sensitive_clearance_on_the_exact_grid_matches_the_oracle(data):
    case = vc.random_case(HypothesisSource(data), "sensitive")
    world = world_of(case)
    assert_matches(vc.exact_minimum(world, case), vc.sensitive_oracle(case, signals.far_distance(world)), "sensitive")


@fuzz(150)
@given(st.data())
def test_r2_separation_on_the_exact_grid_matches_the_closed_form(data):
    case = vc.random_case(HypothesisSource(data), "traffic")
    world = world_of(case)
    truth = vc.traffic_oracle(case.waypoints, case.tracks, signals.far_distance(world))
    assert_matches(vc.exact_minimum(world, case), truth, "separation")


@fuzz(150)
@given(
    st.tuples(st.floats(100, 900), st.floats(100, 900), st.floats(20, 120)),
    st.tuples(st.floats(-20, 20), st.floats(-20, 20), st.floats(-3, 3)),
    st.tuples(st.floats(-20, 20), st.floats(-20, 20), st.floats(-3, 3)),
    st.floats(0.0, 60.0),
    st.integers(0, 30),
    st.floats(0.05, 0.95),
    st.floats(0.5, 8.0),
)
def test_closest_approach_between_two_whole_seconds(start, velocity, approach, miss, second, fraction, tail):
    """Two straight motions whose closest approach falls strictly between two whole seconds: the separation's
    minimum over the exact grid is the closed-form closest distance."""
    velocity, approach = np.asarray(velocity), np.asarray(approach)
    assume(np.linalg.norm(approach) > 0.1)
    t_star, end = second + fraction, second + fraction + tail
    # relative position r(t) = r* + (t - t*) w with r* perpendicular to w, |r*| = miss
    w = approach
    normal = np.cross(w, [0.0, 0.0, 1.0] if abs(w[2]) < 0.9 * np.linalg.norm(w) else [1.0, 0.0, 0.0])
    r_star = miss * normal / np.linalg.norm(normal)
    ours = np.array([[*start, 0.0], [*(np.asarray(start) + velocity * end), end]])
    other = np.array([[*(ours[i, :3] - r_star - (ours[i, 3] - t_star) * w), ours[i, 3]] for i in range(2)])
    world = World.model_validate(
        {"world_id": "approach", "grid": vc.GRID, "traffic": [{"id": "other", "waypoints": other.tolist()}]}
    )
    rows = exact_grid.sample_track(ours, signals.exact_times(world, ours))
    exact = signals.traffic_separation(world, rows).values.min()
    assert abs(exact - miss) <= ROBUSTNESS_TOL
    hz = signals.traffic_separation(world, Trajectory(waypoints=ours.tolist()).sample(1.0)).values.min()
    assert hz >= miss - ATTAINED_TOL


# --- the whole tool -----------------------------------------------------------------------------------------------
@fuzz(100)
@given(st.data())
def test_verify_tool_agrees_with_the_oracle(data):
    case = vc.random_case(HypothesisSource(data), "mixed")
    # the tool exempts a sensitive zone whose buffer holds the origin or goal, using shapely's polygonal buffer:
    # keep both ends clearly inside or outside that buffer so the exact distance decides the same way
    zone = vc.Shape.of(case.sensitive).polygon
    for row in (case.waypoints[0], case.waypoints[-1]):
        assume(abs(zone.distance(Point(row[:2])) - case.buffer) > 0.5)
        # an end inside the building's outline is a rooftop pad, which the tool exempts over the pad and the
        # oracle does not model: keep the ends off the roof
        assume(case.building is None or not vc.Shape.of(case.building).polygon.buffer(0.5).covers(Point(row[:2])))
    world = world_of(case)
    args = verifier.VerifyArgs(waypoints=case.waypoint_list(), rules=["R1", "R2"])
    try:
        result = verifier.verify(world, args).result
    except ToolFailure as failure:
        result = failure.result
    truth = vc.oracle_rules(case, signals.far_distance(world), args.min_separation_m)
    for rule, expected in zip(("R1", "R2"), truth):
        got = result["rules"][rule]
        assert abs(got["robustness"] - expected) <= TOOL_TOL, (rule, got, expected)
        if abs(expected) > VERDICT_TOL:
            assert got["status"] == ("pass" if expected >= 0 else "fail"), (rule, got, expected)
    if vc.nfz_intrusion(case):
        assert result["rules"]["R1"]["status"] == "fail"
        assert not result["pass"]


# --- cases the fuzzing found, each missed before the fix named --------------------------------------------------
REGRESSIONS = {
    # the minimum on the band's top edge inside the zone: its grid time rounded to just above the band, where the
    # signal is the (tiny) 3D distance to the top face (exact_grid._into_band)
    "band_edge_rounding": vc.Case(
        "nfz",
        np.array(
            [
                [498.0, 545.0, 78.50458408461355, 0.5921409081330551],
                [545.8393972524242, 481.4108849206168, 14.803203867364454, 12.278553572222796],
                [485.4493167162679, 373.3983368045437, 130.1450611967884, 21.27338249483806],
            ]
        ),
        nfz=[(469.0, 407.0), (579.0, 407.0), (579.0, 451.0), (498.0, 451.0), (498.0, 545.0), (469.0, 545.0)],
        low=19.894751838084773,
        high=65.75228982389729,
        window=(8.99421630170782, 26.51073628137749),
    ),
    # the same at a roof's height
    "roof_edge_rounding": vc.Case(
        "building",
        np.array(
            [
                [514.4811735518517, 579.1457892666028, 95.26446039391085, 0.3098837320260699],
                [488.3184086121804, 426.7659023240763, 41.978356869532576, 7.8076578941245565],
            ]
        ),
        building=[
            (491.6943983946672, 571.4322530499837),
            (432.4822695147632, 480.2953882705321),
            (490.6203577868383, 418.4053037876014),
            (595.3208060265637, 503.0442026908457),
        ],
        height=52.81506709993594,
    ),
    # a vertical descent through the band 3.2 m outside the zone: GEOS's STRtree finds no `dwithin` partner for a
    # zero-length line (exact_grid.Segments.lines gives a point)
    "vertical_next_to_zone": vc.Case(
        "nfz",
        np.array(
            [
                [563.4437279245773, 509.3101728522525, 46.307906258597235, 1.3668218745619545],
                [525.0526358610446, 471.1801988158887, 137.21967325344758, 4.916085490147064],
                [520.3662796826727, 467.91709008729265, 65.89319442092156, 12.136109182078108],
                [520.3662796826727, 467.91709008729265, 34.118005588827735, 12.674457893817552],
            ]
        ),
        nfz=[
            (491.56193476144153, 447.2706409191086),
            (422.76520624673446, 462.6184317973726),
            (507.31656633138965, 521.2421755472752),
            (562.4039663846025, 508.52267485918503),
        ],
        low=46.307906258597235,
        high=59.68668735561485,
        window=(9.815729698197456, 15.073937730123724),
    ),
    # a climb along an edge's line that enters the boundary at a vertex: the crossing rounded to just past both
    # edges' ends, so the whole piece was judged over the roof (segment_geometry.inside_intervals)
    "along_an_edge_through_a_vertex": vc.Case(
        "building",
        np.array(
            [
                [381.8328807179671, 630.7668302544542, 28.43988874493824, 0.537862657799798],
                [598.1353462220591, 505.8845435692869, 55.83916659792794, 7.991227192098405],
            ]
        ),
        building=[
            (608.3276746634167, 500.0),
            (445.8361626682917, 593.8145181914148),
            (445.8361626682916, 406.18548180858534),
        ],
        height=17.127898656722735,
    ),
    # a corner cut 0.1 mm deep at the end of a 130 m piece: the kink's root, from squared distances taken from the
    # piece's start, lost digits and the depth came out 2.3e-9 m short (segment_geometry.deepest_point polishes)
    "shallow_corner_cut": vc.Case(
        "nfz",
        np.array(
            [
                [430.23024561880555, 409.26049209573165, 47.9593994425116, 11.060660867321925],
                [551.2500469885883, 451.73648990101174, 33.66886867314565, 20.312289584409395],
            ]
        ),
        nfz=[
            (453.1518532182632, 430.30680921980706),
            (464.5233806843862, 519.7463278037756),
            (572.8573745227769, 514.474781312762),
            (518.6102690386357, 440.2803274845762),
        ],
        low=33.66886867314565,
        high=60.52389361750098,
    ),
}


@pytest.mark.parametrize("name", list(REGRESSIONS))
def test_cases_found_by_fuzzing(name):
    case = REGRESSIONS[name]
    world = world_of(case)
    assert_matches(vc.exact_minimum(world, case), vc.oracle(case, signals.far_distance(world)), name)


def test_min_prism_distance_sees_a_band_edge_touched_at_an_end_only():
    """(496, 496) at the band's floor, then below it: the one in-band point is 1 m inside the footprint."""
    polygon = Polygon([(495, 495), (505, 495), (505, 505), (495, 505)])
    a, b = np.array([496.0, 496.0, 1.0]), np.array([495.0, 495.0, 0.0])
    assert geo.min_prism_distance(polygon, geo.polygon_edges(polygon), 1.0, 2.0, a, b) == (0.0, -1.0)


# --- the example ------------------------------------------------------------------------------------------
CORNER_CUT = [
    [470.0, 300.0, 60.0, 0.0],
    [441.0, 325.0, 60.0, 3.191],
    [411.0, 355.0, 60.0, 6.727],
    [400.0, 380.0, 60.0, 9.003],
]


def test_corner_cut_of_nfz_temp_1_fails_r1_with_its_true_depth(downtown):
    """(441, 325) -> (411, 355) cuts nfz_temp_1's corner (430, 340) between t = 4 s and t = 5 s: the deepest point
    (428, 338) is 2 m from both edges. The 1 Hz samples all lie outside the zone."""
    with pytest.raises(ToolFailure) as failed:
        verifier.verify(downtown, verifier.VerifyArgs(waypoints=CORNER_CUT))
    result = failed.value.result
    assert result["rules"]["R1"] == {"status": "fail", "robustness": -2.0}
    counterexample = result["counterexample"]
    assert counterexample["violated_rule"] == "R1" and counterexample["offending_entity"] == "nfz_temp_1"
    segment = counterexample["offending_segment"]
    assert [441.0, 325.0, 60.0, 3.2] in segment and [411.0, 355.0, 60.0, 6.7] in segment

    waypoints = np.asarray(CORNER_CUT)
    rows = exact_grid.sample_track(waypoints, signals.exact_times(downtown, waypoints))
    margin = signals.nfz_margin(downtown, rows)
    index, value, entity = margin.worst()
    assert value == pytest.approx(-2.0, abs=ROBUSTNESS_TOL) and entity == "nfz_temp_1"
    assert rows[index, :2] == pytest.approx([428.0, 338.0], abs=1e-6)

    old = signals.nfz_margin(downtown, Trajectory(waypoints=CORNER_CUT).sample(1.0)).values.min()
    assert old > 0  # the old 1 Hz verifier passed this flight


def test_corner_cut_oracle_agrees(downtown):
    zone = downtown.zone_index["nfz_temp_1"]
    case = vc.Case(
        "nfz",
        np.asarray(CORNER_CUT),
        nfz=zone.polygon,
        low=zone.alt_min_m,
        high=zone.alt_max_m,
        window=(zone.active_window.start_sec, zone.active_window.end_sec),
    )
    assert vc.nfz_intrusion(case)
    assert vc.nfz_oracle(case, math.inf) == pytest.approx(-2.0, abs=1e-9)
