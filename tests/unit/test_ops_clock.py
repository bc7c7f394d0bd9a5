"""A request is planned with t = 0 at its departure: the world's own timed zones and traffic, and the approved
intents, are moved onto that clock (a zone that opens at 1200 s is 200 s away for a request at 1000 s)."""

from __future__ import annotations

from ops.ledger import OperationalIntent
from ops.stream import PLANNING, on_clock, with_reservations
from standards.volumes import LegVolume
from tools.world import NoFlyZone, TimeWindow, TrafficTrack, World


def _timed(world: World) -> World:
    ring = [(300.0, 300.0), (350.0, 300.0), (350.0, 350.0), (300.0, 350.0)]
    zones = [
        NoFlyZone(id="later", polygon=ring, active_window=TimeWindow(start_sec=1200, end_sec=1800)),
        NoFlyZone(id="over", polygon=ring, active_window=TimeWindow(start_sec=0, end_sec=900)),
        NoFlyZone(id="always", polygon=ring),
    ]
    tracks = [
        TrafficTrack(id="past", waypoints=[(0, 0, 50, 0), (100, 0, 50, 10)]),
        TrafficTrack(id="coming", waypoints=[(0, 0, 50, 990), (100, 0, 50, 1100)]),
    ]
    return world.updated(no_fly_zones=zones, traffic=tracks)


def test_the_worlds_timed_zones_and_traffic_move_onto_the_requests_clock(downtown):
    shifted = on_clock(_timed(downtown), 1000.0)
    windows = {z.id: z.active_window for z in shifted.no_fly_zones}
    assert set(windows) == {"later", "always"}  # "over" closed before the request
    assert (windows["later"].start_sec, windows["later"].end_sec) == (200.0, 800.0) and windows["always"] is None
    assert [t.id for t in shifted.traffic] == ["coming"]
    assert [w[3] for w in shifted.traffic[0].waypoints] == [-10.0, 100.0]  # already flying when it departs
    assert shifted.zone_index["later"].active_window.start_sec == 200.0  # no index left from the old world


def test_approved_volumes_are_widened_and_on_the_requests_clock(downtown):
    volume = LegVolume(leg=2, ring=[(0, 0), (100, 0), (100, 20), (0, 20)], lower_m=50, upper_m=70,
                       t_start=1100.0, t_end=1160.0)  # fmt: skip
    gone = LegVolume(leg=0, ring=volume.ring, lower_m=50, upper_m=70, t_start=900.0, t_end=990.0)
    intent = OperationalIntent(request_id="a", owner="cityparcel", volumes=[gone, volume])
    world = with_reservations(downtown, [intent], 1000.0, PLANNING)
    (reservation,) = world.reservations
    assert reservation.id == f"{intent.intent_id}_leg2" and reservation.intent_id == intent.intent_id
    window = reservation.active_window
    assert (window.start_sec, window.end_sec) == (100.0 - PLANNING.delay_sec, 160.0)
    assert (reservation.alt_min_m, reservation.alt_max_m) == (50 - PLANNING.vertical_m, 70 + PLANNING.vertical_m)
    minx, miny, maxx, maxy = reservation.shape.bounds
    assert (minx, miny, maxx, maxy) == (-PLANNING.lateral_m, -PLANNING.lateral_m, 100 + PLANNING.lateral_m,
                                        20 + PLANNING.lateral_m)  # fmt: skip
    assert len(world.reservation_tree.query(reservation.shape)) == 1
