"""Per-sample signals on small hand-made worlds, so every expected value follows from the geometry below."""

from __future__ import annotations

import numpy as np
import pytest

from tools import signals
from tools.world import parse_world

SQUARE = [(100, 100), (200, 100), (200, 200), (100, 200)]


@pytest.fixture(scope="module")
def world():
    return parse_world(
        {
            "world_id": "signals_test",
            "grid": {"nx": 40, "ny": 40},
            "buildings": [{"id": "tower", "polygon": [(300, 100), (320, 100), (320, 120), (300, 120)], "height_m": 50}],
            "entities": [
                {"id": "pad", "kind": "depot", "position": (20, 20)},
                {"id": "school_gate", "kind": "school", "position": (250, 310)},
            ],
            "no_fly_zones": [
                {"id": "nfz_low", "polygon": SQUARE, "alt_min_m": 0, "alt_max_m": 80},
                {
                    "id": "nfz_later",
                    "polygon": [(100, 250), (200, 250), (200, 350), (100, 350)],
                    "active_window": {"start_sec": 100, "end_sec": 200},
                },
            ],
            "sensitive_zones": [
                {"id": "school", "polygon": [(240, 300), (260, 300), (260, 320), (240, 320)], "buffer_m": 30}
            ],
            "corridors": [{"id": "lane", "polyline": [(0, 50), (400, 50)], "width_m": 20, "capacity": 2, "load": 1}],
            "traffic": [{"id": "other", "waypoints": [(0, 50, 60, 0), (400, 50, 60, 40)]}],
        }
    )


def _samples(*rows):
    return np.array(rows, dtype=float)


def test_nfz_margin_is_signed_and_names_the_worst_zone(world):
    # (150, 150) is 50 m deep in nfz_low; (150, 90) is 10 m south of it; above the band (z 100) it is 20 m over it.
    margin = signals.nfz_margin(world, _samples((150, 150, 50, 0), (150, 90, 50, 1), (150, 150, 100, 2)))
    assert margin.values == pytest.approx([-50.0, 10.0, 20.0])
    assert margin.entities[0] == "nfz_low"
    assert margin.worst() == (0, pytest.approx(-50.0), "nfz_low")


def test_an_inactive_zone_constrains_nothing(world):
    inside_later = _samples((150, 300, 50, 50), (150, 300, 50, 150))
    margin = signals.nfz_margin(world, inside_later)
    assert margin.values[0] > 0 and margin.entities[0] == "nfz_low"  # nfz_later not active yet: nfz_low is nearest
    assert margin.values[1] == pytest.approx(-50.0) and margin.entities[1] == "nfz_later"


def test_building_clearance_is_horizontal_below_the_roof_and_3d_above(world):
    clearance = signals.obstacle_clearance(world, _samples((290, 110, 40, 0), (290, 110, 60, 1), (310, 110, 40, 2)))
    assert clearance.values[0] == pytest.approx(10.0)
    assert clearance.values[1] == pytest.approx(np.hypot(10.0, 10.0))
    assert clearance.values[2] < 0  # inside the footprint, below the roof


def test_sensitive_clearance_subtracts_the_buffer_and_can_exempt(world):
    point = _samples((250, 280, 100, 0))  # 20 m south of the school polygon, inside its 30 m buffer
    assert signals.sensitive_clearance(world, point).values[0] == pytest.approx(-10.0)
    exempt = signals.sensitive_clearance(world, point, exempt=["school"]).values[0]
    assert exempt == signals.far_distance(world)
    assert signals.zones_containing(world, [world.entity_index["school_gate"].position]) == ["school"]


def test_traffic_separation_interpolates_and_ignores_grounded_traffic(world):
    # "other" flies (0,50,60) -> (400,50,60) during 0..40 s, i.e. at (100, 50, 60) at t = 10.
    separation = signals.traffic_separation(world, _samples((100, 80, 60, 10), (100, 80, 60, 50)))
    assert separation.values[0] == pytest.approx(30.0)
    assert separation.entities[0] == "other"
    assert separation.values[1] == signals.far_distance(world) and separation.entities[1] is None


def test_corridor_load_counts_world_load_traffic_inside_and_us(world):
    # At t = 10 the other UAV is in the lane (world load 1 + it + us = 3 > capacity 2); at t = 50 it has landed.
    load = signals.corridor_load(world, _samples((100, 50, 60, 10), (100, 50, 60, 50), (100, 150, 60, 60)))
    assert list(load.load) == [3, 2, 0]
    assert list(load.margin.values[:2]) == [-1, 0]
    assert load.entities == ("lane", "lane", None)
    assert signals.corridor_load(world, _samples((100, 50, 60, 50)), own_slots=2).load[0] == 3


def test_altitude_margin_waives_the_floor_only_over_origin_and_goal():
    samples = _samples((0, 0, 0, 0), (100, 0, 10, 10), (200, 0, 60, 20), (300, 0, 0, 30))
    margin = signals.altitude_margin(samples, 30.0, 120.0, tolerance_m=15.0)
    assert margin[0] == pytest.approx(120.0) and margin[3] == pytest.approx(120.0)
    assert margin[1] == pytest.approx(-20.0)
    assert margin[2] == pytest.approx(30.0)


def test_atoms(world):
    samples = _samples((20, 25, 0, 0), (150, 150, 50, 1), (150, 300, 50, 2), (300, 50, 60, 3))
    atom = lambda name: list(signals.atom_values(world, samples, name, (20, 20), (300, 50)))  # noqa: E731
    assert atom("at_pad") == [True, False, False, False]
    assert atom("at_origin") == atom("at_pad")
    assert atom("at_goal") == [False, False, False, True]
    assert atom("in_nfz_low") == [False, True, False, False]
    assert atom("in_nfz_later") == [False, False, False, False]  # not active at t = 2
    assert atom("in_lane") == [False, False, False, True]
    assert atom("airborne") == [False, True, True, True]
    assert "in_school" in signals.known_atoms(world) and "at_school_gate" in signals.known_atoms(world)


def test_compute_signals_builds_the_stl_dataset(world):
    samples = _samples((20, 20, 40, 0), (60, 20, 40, 1))
    sig = signals.compute_signals(world, samples, alt_min_m=30, alt_max_m=120, goal_xy=(60, 20))
    data = sig.stl_dataset()
    assert data["goal_dist"] == pytest.approx([40.0, 0.0])
    assert "battery" not in data  # no UAV given
    assert all(len(values) == 2 for values in data.values())
