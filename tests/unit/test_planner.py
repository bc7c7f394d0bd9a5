"""Grid masks and the 3D A* planner: optimal costs (checked against networkx), masks, route geometry."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
import shapely
from shapely.geometry import LineString

from evaluation.perf.planner_vs_networkx import networkx_graph
from tools.grid_masks import MaskSpec, build_occupancy, cell_centres
from tools.planner import GridGraph, NoPathError, endpoint_cell, merge_collinear, plan_through
from tools.trajectory import LANDING_DESCENT_MPS, TAKEOFF_CLIMB_MPS, resample
from tools.world import World


def _small_world(**extra) -> World:
    grid = {"nx": 20, "ny": 20, "nz": 4, "cell_size_m": 10.0, "layer_base_m": 20.0, "layer_height_m": 20.0}
    return World.model_validate({"world_id": "tiny", "grid": grid, **extra})


def test_cost_equals_networkx_on_random_small_grid():
    rng = np.random.default_rng(3)
    blocked = rng.random((12, 10, 4)) < 0.3
    graph = GridGraph(blocked, cell_size_m=10.0, layer_height_m=20.0)
    reference = networkx_graph(graph)
    free = np.argwhere(~blocked)
    checked = 0
    for a, b in rng.choice(len(free), size=(25, 2)):
        start, goal = tuple(free[a].tolist()), tuple(free[b].tolist())
        ours = graph.astar(start, goal)
        try:
            path = nx.astar_path(reference, start, goal, heuristic=graph.heuristic, weight="weight")
        except nx.NetworkXNoPath:
            assert ours is None
            continue
        assert ours is not None
        assert ours.cost_m == pytest.approx(nx.path_weight(reference, path, "weight"), abs=1e-6)
        steps = np.diff(ours.cells, axis=0)
        recomputed = np.linalg.norm(steps * [10.0, 10.0, 20.0], axis=1).sum()
        assert recomputed == pytest.approx(ours.cost_m, abs=1e-6)  # the path really has the cost it claims
        assert np.abs(steps).max() <= 1 and not blocked[tuple(ours.cells.T)].any()
        checked += 1
    assert checked >= 10


def test_step_costs_are_metric_and_anisotropic():
    graph = GridGraph(np.zeros((3, 3, 3), dtype=bool), cell_size_m=10.0, layer_height_m=20.0)
    assert graph.astar((0, 0, 0), (0, 0, 1)).cost_m == pytest.approx(20.0)
    assert graph.astar((0, 0, 0), (1, 1, 0)).cost_m == pytest.approx(10.0 * math.sqrt(2))
    assert graph.astar((0, 0, 0), (1, 1, 1)).cost_m == pytest.approx(math.sqrt(100 + 100 + 400))


def test_unreachable_or_blocked_ends_give_none():
    blocked = np.zeros((5, 5, 1), dtype=bool)
    blocked[2, :, 0] = True  # a wall across the map
    graph = GridGraph(blocked, 10.0, 20.0)
    assert graph.astar((0, 0, 0), (4, 4, 0)) is None
    assert graph.astar((2, 2, 0), (0, 0, 0)) is None
    assert graph.astar((0, 0, 0), (0, 4, 0)) is not None


def test_merge_collinear_keeps_turns_and_ends():
    cells = np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 1, 0], [4, 2, 0], [4, 3, 1]])
    assert merge_collinear(cells).tolist() == [[0, 0, 0], [2, 0, 0], [4, 2, 0], [4, 3, 1]]


def test_building_mask_respects_height_separation_and_band():
    world = _small_world(
        buildings=[{"id": "b", "polygon": [(90, 90), (110, 90), (110, 110), (90, 110)], "height_m": 45.0}]
    )
    occupancy = build_occupancy(world, MaskSpec(altitude_min_m=30, altitude_max_m=80, min_separation_m=10))
    blocked = occupancy.blocked
    assert blocked[:, :, 0].all()  # layer 20 m is below the band
    assert blocked[9, 9, 1] and blocked[9, 9, 2]  # slabs of 40 m and 60 m reach below 45 + 10 m
    assert not blocked[9, 9, 3]  # the 80 m slab [70, 90] clears the roof plus separation
    assert not blocked[0, 0, 1]  # far away
    assert blocked[7, 9, 1]  # centre 75 m: 15 m from the wall, within separation + half a cell diagonal
    assert occupancy.blockers((9, 9, 1)) == ["b"]
    assert occupancy.blockers((0, 0, 0)) == ["altitude_band"]


def test_occupancy_is_cached_and_read_only(downtown):
    spec = MaskSpec(avoid_zones=("nfz_temp_1",))
    first = build_occupancy(downtown, spec)
    assert build_occupancy(downtown, spec) is first
    with pytest.raises(ValueError):
        first.blocked[0, 0, 0] = False


def test_inactive_zones_are_not_masked(downtown):
    during = build_occupancy(downtown, MaskSpec(avoid_zones=("nfz_temp_1",), time_window=(0, 100)))
    after = build_occupancy(downtown, MaskSpec(avoid_zones=("nfz_temp_1",), time_window=(8000, math.inf)))
    nfz_cell = (37, 25, 1)  # centre (375, 255) inside the zone
    assert during.blocked[nfz_cell] and not after.blocked[nfz_cell]


def test_sensitive_zone_mask_is_its_buffer_plus_half_a_cell_diagonal(downtown):
    with_school = build_occupancy(downtown, MaskSpec(avoid_zones=("school_zone_2",))).blocked
    without = build_occupancy(downtown, MaskSpec()).blocked
    zone = downtown.zone_index["school_zone_2"]
    for layer in range(1, downtown.grid.nz):  # at every altitude
        centres = cell_centres(downtown.grid, np.argwhere((with_school & ~without)[:, :, layer : layer + 1]))
        distances = shapely.distance(zone.shape, shapely.points(centres[:, 0], centres[:, 1]))
        assert distances.max() > zone.buffer_m
        assert distances.max() <= zone.buffer_m + downtown.grid.cell_size_m * math.sqrt(2) / 2


def test_route_segments_keep_clear_of_every_keep_out(downtown):
    spec = MaskSpec(avoid_zones=("nfz_temp_1", "nfz_gov_1", "school_zone_2"), min_separation_m=10)
    occupancy = build_occupancy(downtown, spec)
    for a, b in [("hospital_A", "accident_site_3"), ("depot_1", "fire_station_1"), ("hospital_B", "police_2")]:
        route = plan_through(downtown, occupancy, [(a, downtown.position_of(a)), (b, downtown.position_of(b))])
        samples = resample(route.waypoints, dt=0.05)  # every half metre at 10 m/s
        points = shapely.points(samples[:, 0], samples[:, 1])
        for zone_id in ("nfz_temp_1", "nfz_gov_1"):
            assert not LineString(route.waypoints[:, :2]).intersects(downtown.zone_index[zone_id].shape)
        school = downtown.zone_index["school_zone_2"]
        assert shapely.distance(school.shape, points).min() > school.buffer_m
        for building in downtown.buildings:
            low = samples[:, 2] <= building.height_m + spec.min_separation_m
            if low.any():
                assert shapely.distance(building.shape, points[low]).min() > spec.min_separation_m


def test_plan_through_times_follow_speed_and_stops_are_kept(downtown):
    occupancy = build_occupancy(downtown, MaskSpec())
    stops = [(ref, downtown.position_of(ref)) for ref in ("hospital_A", "police_2", "metro_station_4")]
    route = plan_through(downtown, occupancy, stops, speed_mps=12.0, depart_time_sec=30.0)
    wps = route.waypoints
    assert wps[0].tolist()[:2] == [100.0, 100.0] and wps[-1].tolist()[:2] == [400.0, 120.0]
    assert any(np.allclose(w[:2], (250.0, 400.0)) for w in wps)  # passes police_2 exactly
    assert wps[0, 3] == 30.0 and np.all(np.diff(wps[:, 3]) > 0)
    length = np.linalg.norm(np.diff(wps[:, :3], axis=0), axis=1).sum()
    assert route.length_m == pytest.approx(length)
    # ground to ground: the climb and the descent at their vertical speeds, the cruise at the given speed
    assert wps[0, 2] == 0.0 and wps[-1, 2] == 0.0 and np.allclose(wps[1, :2], wps[0, :2])
    cruise = length - wps[1, 2] - wps[-2, 2]
    vertical = wps[1, 2] / TAKEOFF_CLIMB_MPS + wps[-2, 2] / LANDING_DESCENT_MPS
    assert route.eta_sec == pytest.approx(30.0 + cruise / 12.0 + vertical)
    assert wps[1, 3] == pytest.approx(30.0 + wps[1, 2] / TAKEOFF_CLIMB_MPS)
    assert route.energy_wh > 0


def test_blocked_endpoint_names_its_blockers(downtown):
    occupancy = build_occupancy(downtown, MaskSpec(avoid_zones=("school_zone_2",)))
    stops = [("hospital_A", downtown.position_of("hospital_A")), ("school_2", downtown.position_of("school_2"))]
    with pytest.raises(NoPathError) as error:
        plan_through(downtown, occupancy, stops)
    assert error.value.blockers == ["school_zone_2"]


def test_endpoint_beside_a_building_climbs_above_its_clearance():
    world = _small_world(
        buildings=[{"id": "b", "polygon": [(90, 90), (110, 90), (110, 110), (90, 110)], "height_m": 45.0}],
        no_fly_zones=[{"id": "low_nfz", "polygon": [(0, 150), (40, 150), (40, 200), (0, 200)], "alt_max_m": 50}],
    )
    occupancy = build_occupancy(world, MaskSpec(avoid_zones=("low_nfz",), altitude_min_m=30, altitude_max_m=80))
    assert endpoint_cell(occupancy, "far", (15.0, 15.0)) == (1, 1, 1)  # lowest layer in the band: 40 m
    assert endpoint_cell(occupancy, "beside", (115.0, 100.0)) == (11, 10, 3)  # 80 m clears roof + separation
    with pytest.raises(NoPathError) as error:
        endpoint_cell(occupancy, "under_zone", (20.0, 170.0))  # a zone never lets the endpoint climb over it
    assert error.value.blockers == ["low_nfz"]
    route = plan_through(world, occupancy, [("beside", (115.0, 100.0)), ("far", (15.0, 15.0))])
    assert route.waypoints[1, 2] == 80.0 and route.waypoints[-2, 2] == 40.0  # the cruise's ends, over the pads
    assert route.waypoints[0, 2] == route.waypoints[-1, 2] == 0.0  # taking off from and landing on the ground
    # the cruise descends from 80 m to 40 m: no faster than the autopilot's descent speed, the rest at cruise speed
    steps = np.diff(route.waypoints, axis=0)
    rate = steps[:, 2] / steps[:, 3]
    assert rate.min() >= -LANDING_DESCENT_MPS - 1e-9 and rate.max() <= TAKEOFF_CLIMB_MPS + 1e-9
    assert (steps[1:-1, 2] < 0).any() and np.isclose(rate[1:-1], -LANDING_DESCENT_MPS).any()
