"""The world map and altitude profile drawings: what they contain, to scale, escaped and repeatable."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from drawing import Marker, Route, altitude_svg, map_png, map_svg, marker_from_counterexample, route_colour
from tests.support.paths import DOWNTOWN
from tools.world import World, parse_world

SVG = "{http://www.w3.org/2000/svg}"
NASTY = "<script>alert(1)</script>"


def _find(root: ET.Element, tag: str, cls: str | None = None) -> list[ET.Element]:
    """Elements of a tag (without namespace) whose class list holds `cls`."""
    return [e for e in root.iter(SVG + tag) if cls is None or cls in e.get("class", "").split()]


def _points(polyline: ET.Element) -> list[tuple[float, float]]:
    return [tuple(float(v) for v in p.split(",")) for p in polyline.get("points", "").split()]


def _route(label: str, start: tuple[float, float], n: int = 50, **kw) -> Route:
    x0, y0 = start
    return Route(label=label, waypoints=[[x0 + 10 * k, y0 + 10 * k, 40.0 + k, 6.0 * k] for k in range(n)], **kw)


@pytest.fixture(scope="module")
def routes() -> list[Route]:
    return [
        _route("round 1", (100, 100), uav_id="uav_03"),
        _route("gold", (120, 100), style="dashed"),
        _route("react", (140, 100)),
        _route("round 2", (160, 100), n=3),
    ]


@pytest.fixture(scope="module")
def marker() -> Marker:
    return Marker(
        x=375,
        y=260,
        z=60,
        time_sec=245,
        rule="R1",
        robustness=-12.34,
        entity="nfz_temp_1",
        segment=[[360, 250, 60, 240], [390, 270, 60, 250]],
    )


def test_the_map_has_an_element_per_route_building_zone_place_and_counterexample(downtown, routes, marker):
    root = ET.fromstring(map_svg(downtown, routes, [marker], title="downtown"))

    assert root.get("class") == "world-map"
    groups = _find(root, "g", "route")
    assert [g.get("data-label") for g in groups] == [r.label for r in routes]
    for group, route in zip(groups, routes):
        assert len(_points(group.find(SVG + "polyline"))) == len(route.waypoints)
    [cx] = _find(root, "g", "counterexample")
    assert cx.get("data-rule") == "R1"
    assert cx.find(SVG + "title").text == "R1 robustness -12.3 m at t=245 s, nfz_temp_1"
    assert {e.get("data-id") for e in _find(root, "path", "building")} == {b.id for b in downtown.buildings}
    assert {e.get("data-id") for e in _find(root, "g", "nfz")} == {z.id for z in downtown.no_fly_zones}
    assert {e.get("data-id") for e in _find(root, "g", "sensitive")} == {z.id for z in downtown.sensitive_zones}
    assert {e.get("data-id") for e in _find(root, "g", "place")} == {e.id for e in downtown.entities}


def test_the_map_is_to_scale_with_north_up(downtown, marker):
    depth = downtown.grid.depth_m
    route = Route(label="r", waypoints=[[100, 150, 40, 0], [430.5, 612.26, 60, 30]])
    root = ET.fromstring(map_svg(downtown, [route], [marker]))

    line = _find(_find(root, "g", "route")[0], "polyline")[0]
    assert line.get("points") == "100,650 430.5,187.7"  # (x, depth - y), to 0.1 m
    view_box = [float(v) for v in root.get("viewBox").split()]
    assert view_box[0] < 0 < view_box[0] + view_box[2] and view_box[0] + view_box[2] > downtown.grid.width_m
    [segment] = _find(root, "polyline", "offending-segment")
    assert _points(segment) == [(360, depth - 250), (390, depth - 270)]
    [bar] = _find(root, "g", "scale-bar")
    assert float(bar.get("data-metres")) == 200  # a quarter of 800 m, rounded down to 1, 2 or 5 x 10^n
    assert f"H{bar.get('data-metres')}V" in bar.find(SVG + "path").get("d")


def test_strings_from_outside_are_text_never_markup(downtown):
    data = json.loads(DOWNTOWN.read_text())
    data["entities"][0]["name"] = NASTY
    data["buildings"][0]["name"] = NASTY
    world = parse_world(data)
    route = Route(label=NASTY, uav_id='"><script>', waypoints=[[100, 100, 40, 0], [200, 200, 40, 20]])
    marker = Marker(x=1, y=1, rule=NASTY, label="a & b")

    text = map_svg(world, [route], [marker], title=NASTY)
    root = ET.fromstring(text)

    assert not any(e.tag.endswith("script") for e in root.iter())
    assert _find(root, "g", "route")[0].get("data-label") == NASTY
    assert _find(root, "g", "counterexample")[0].get("data-rule") == NASTY
    texts = [e.text or "" for e in root.iter()]
    assert f"hospital_A (hospital): {NASTY}" in texts and f"bldg_tower_1 ({NASTY}): 150 m" in texts
    assert f'{NASTY} ("><script>)' in texts  # the legend entry
    assert "<script" not in text and "a &amp; b" in text
    profile = ET.fromstring(altitude_svg([route], [marker], floor_m=20, ceiling_m=120))
    assert not any(e.tag.endswith("script") for e in profile.iter())


def test_no_fly_zones_inactive_at_the_time_shown_are_faded(downtown):
    def faded(time_sec: float | None) -> dict[str, bool]:
        root = ET.fromstring(map_svg(downtown, [], time_sec=time_sec))
        return {g.get("data-id"): "inactive" in g.get("class").split() for g in _find(root, "g", "nfz")}

    assert faded(8000) == {"nfz_temp_1": True, "nfz_gov_1": False}  # nfz_temp_1 is active from 0 to 7200 s
    assert faded(100) == faded(None) == {"nfz_temp_1": False, "nfz_gov_1": False}
    root = ET.fromstring(map_svg(downtown, [], time_sec=8000))
    zones = {g.get("data-id"): g for g in _find(root, "g", "nfz")}
    assert float(zones["nfz_temp_1"].get("opacity")) < 1 and zones["nfz_gov_1"].get("opacity") is None
    assert zones["nfz_temp_1"].find(SVG + "path").get("stroke-dasharray")  # temporary: dashed
    assert zones["nfz_gov_1"].find(SVG + "path").get("stroke-dasharray") is None
    assert [t.text for t in zones["nfz_temp_1"].iter(SVG + "text")] == ["nfz_temp_1 (t 0–7200 s)"]


def test_a_counterexample_is_placed_half_way_along_its_segment(downtown):
    cx = {
        "violated_rule": "R1",
        "time_sec": 245,
        "robustness": -12.3,
        "offending_entity": "nfz_temp_1",
        "offending_segment": [[0, 0, 40, 100], [30, 0, 60, 110], [30, 10, 60, 120]],
    }
    m = marker_from_counterexample(cx, downtown)
    assert (m.x, m.y, m.z, m.time_sec) == (20, 0, pytest.approx(160 / 3), 245)  # 20 m along a 40 m path
    assert (m.rule, m.robustness, m.entity, len(m.segment)) == ("R1", -12.3, "nfz_temp_1", 3)

    flat = marker_from_counterexample({"offending_segment": [[10, 10], [20, 30]]}, downtown)
    assert (flat.x, flat.y, flat.z, flat.time_sec, flat.rule) == (15, 20, None, None, None)
    timed = marker_from_counterexample({"offending_segment": [[10, 10, 50, 8], [20, 30, 70, 12]]}, downtown)
    assert (timed.z, timed.time_sec) == (60, 10)  # the segment's own time, without a time_sec
    # the verifier's segment brackets the violating instant: the marker sits where the route was then
    at_time = {"time_sec": 80, "offending_segment": [[0, 0, 0, 0], [80, 0, 80, 80], [100, 0, 100, 100]]}
    m = marker_from_counterexample(at_time, downtown)
    assert (m.x, m.z, m.time_sec) == (80, 80, 80)


def test_a_counterexample_without_segment_is_placed_at_its_entity(downtown):
    zone = marker_from_counterexample({"offending_entity": "nfz_temp_1", "offending_segment": []}, downtown)
    assert (zone.x, zone.y) == (375, 260)  # the zone's centroid
    place = marker_from_counterexample({"offending_entity": "hospital_B", "violated_rule": "R3"}, downtown)
    assert (place.x, place.y, place.rule) == (700, 700, "R3")
    track = marker_from_counterexample({"offending_entity": "track_t1", "time_sec": 30}, downtown)
    assert (track.x, track.y, track.z) == (700, 450, 60)  # where the track is at t = 30 s
    building = marker_from_counterexample({"offending_entity": "bldg_tower_1"}, downtown)
    assert (building.x, building.y) == (205, 270)


@pytest.mark.parametrize("cx", [{}, {"violated_rule": "R1", "time_sec": 3}, {"offending_entity": "nowhere"}])
def test_a_counterexample_with_nothing_to_place_it_gives_no_marker(downtown, cx):
    assert marker_from_counterexample(cx, downtown) is None


def test_the_altitude_profile_shades_the_allowed_band_and_draws_each_route(marker):
    low_high = Route(label="climb", waypoints=[[0, 0, 20, 0], [0, 0, 120, 100], [0, 0, 120, 300]])
    routes = [low_high, _route("cruise", (0, 0), n=10)]
    root = ET.fromstring(altitude_svg(routes, [marker], floor_m=20, ceiling_m=120))

    assert root.get("class") == "altitude-profile"
    [band] = _find(root, "rect", "band")
    top, bottom = float(band.get("y")), float(band.get("y")) + float(band.get("height"))
    groups = _find(root, "g", "route")
    assert [g.get("data-label") for g in groups] == ["climb", "cruise"]
    climb = _points(groups[0].find(SVG + "polyline"))
    assert len(climb) == 3 and climb[0][1] == pytest.approx(bottom, abs=0.1) and climb[1][1] == pytest.approx(top)
    assert climb[0][0] < climb[1][0] < climb[2][0]  # time runs to the right
    assert [g.find(SVG + "polyline").get("stroke") for g in groups] == [route_colour(0), route_colour(1)]
    [cx] = _find(root, "g", "counterexample")
    [when] = _find(cx, "path", "violation-time")
    assert cx.get("data-rule") == "R1" and climb[0][0] < float(when.get("d")[1:].split(",")[0]) < climb[2][0]
    assert {t.text for t in root.iter(SVG + "text")} >= {"0", "100", "200", "300", "time (s)", "altitude (m)"}


def test_routes_keep_their_colour_on_the_map(downtown, routes):
    assert len({route_colour(i) for i in range(8)}) == 8 and route_colour(9) == route_colour(1)
    root = ET.fromstring(map_svg(downtown, routes))
    strokes = [g.find(SVG + "polyline").get("stroke") for g in _find(root, "g", "route")]
    assert strokes == [route_colour(i) for i in range(len(routes))]
    assert _find(root, "g", "route")[1].find(SVG + "polyline").get("stroke-dasharray")  # gold is dashed


def test_drawings_are_repeatable(downtown, routes, marker):
    again = [Route.model_validate(r.model_dump()) for r in routes]
    assert map_svg(downtown, routes, [marker], time_sec=100) == map_svg(downtown, again, [marker], time_sec=100)
    assert altitude_svg(routes, [marker], floor_m=20, ceiling_m=120) == altitude_svg(
        again, [marker], floor_m=20, ceiling_m=120
    )


def test_map_png_writes_an_image(downtown: World, routes, marker, tmp_path):
    path = map_png(downtown, routes, [marker], path=tmp_path / "map.png", time_sec=8000, title="downtown")
    assert path == tmp_path / "map.png"
    assert path.read_bytes().startswith(b"\x89PNG") and path.stat().st_size > 10_000
