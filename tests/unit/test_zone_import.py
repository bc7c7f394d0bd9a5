"""Published UAS geographical zones into a world and back: restriction classes, FT / AMSL limits, circles,
schedules, either coordinate order, ED-318's spellings, and round trips that land on the same world."""

from __future__ import annotations

import copy
import json
import math
from datetime import UTC, datetime

import numpy as np
import pytest
from implicitdict import ImplicitDict
from pyproj import Geod
from shapely.geometry import Point, Polygon
from uas_standards import eurocae_ed318
from uas_standards.eurocae_ed269 import ED269Schema

from standards.formats import ZONE_FORMATS
from standards.frame import StandardsError, geo_frame
from standards.zones import export_zones, import_zones
from tests.support.zones import ED269_SAMPLE, bow_tie
from tools.world import NoFlyZone, SensitiveZone, World

SAMPLE = ED269_SAMPLE
THURSDAY_9 = datetime(2026, 11, 26, 9, tzinfo=UTC)
GEOD = Geod(ellps="WGS84")
HOURS = 3600.0


@pytest.fixture
def sample() -> dict:
    return json.loads(SAMPLE.read_text(encoding="utf-8"))


def _import(world: World, document: dict, file_format: str = "ed269", start=THURSDAY_9, horizon=12 * HOURS):
    return import_zones(world, document, file_format, geo_frame(world, start), horizon)


def _zone(world: World, zone_id: str) -> NoFlyZone | SensitiveZone:
    return world.zone_index[zone_id]


def test_each_restriction_class_lands_where_it_restricts(downtown, sample):
    result = _import(downtown, sample)
    outcome = {line.identifier: line.outcome for line in result.lines}
    assert outcome == {
        "EMG0001": "approximated",  # a circle
        "PWR0002": "imported",
        "MKT0003": "imported",
        "PRK0004": "approximated",  # CONDITIONAL kept clear at every altitude
        "INF0005": "skipped",  # NO_RESTRICTION
        "FAR0006": "skipped",  # Zurich airport, kilometres from this city
    }
    world = result.world
    assert isinstance(_zone(world, "EMG0001"), NoFlyZone) and isinstance(_zone(world, "PRK0004"), SensitiveZone)
    assert _zone(world, "PWR0002").reason.startswith("authorisation required")
    assert _zone(world, "PRK0004").buffer_m == 0.0
    assert {"INF0005", "FAR0006"}.isdisjoint(world.zone_index)
    assert {"nfz_temp_1", "nfz_gov_1", "school_zone_2"} <= set(world.zone_index)  # the world's own stay
    skipped = {line.identifier: line.detail for line in result.lines if line.outcome == "skipped"}
    assert "outside the world" in skipped["FAR0006"] and "NO_RESTRICTION" in skipped["INF0005"]


def test_feet_and_amsl_limits_become_metres_above_this_ground(downtown, sample):
    world = _import(downtown, sample).world
    ground = downtown.geo_reference.ground_elevation_amsl_m
    substation = _zone(world, "PWR0002")  # 1600-2000 ft AMSL over ground at 488 m AMSL
    assert substation.alt_min_m == 0.0  # 487.68 m AMSL is below the ground here
    assert substation.alt_max_m == pytest.approx(2000 * 0.3048 - ground, abs=1e-3)
    assert _zone(world, "EMG0001").alt_max_m == pytest.approx(400 * 0.3048, abs=1e-3)


def test_a_circle_becomes_a_polygon_holding_it_within_the_stated_error(downtown, sample):
    result = _import(downtown, sample)
    polygon = _zone(result.world, "EMG0001").shape
    circle = sample["features"][0]["geometry"][0]["horizontalProjection"]
    lon, lat = circle["center"]
    radius = circle["radius"] * 0.3048
    frame = geo_frame(downtown)
    azimuths = np.linspace(0.0, 360.0, 720, endpoint=False)
    lons, lats, _ = GEOD.fwd(np.full(720, lon), np.full(720, lat), azimuths, np.full(720, radius))
    on_circle = [frame.local(a, b) for a, b in zip(lons, lats)]
    assert all(polygon.covers(Point(p)) for p in on_circle)  # the whole circle is kept clear
    centre = Point(frame.local(lon, lat))
    farthest = max(centre.distance(Point(v)) for v in polygon.exterior.coords)
    assert farthest - radius <= 0.5 + 1e-3  # the default tolerance
    assert "at most" in next(line.detail for line in result.lines if line.identifier == "EMG0001")


@pytest.mark.parametrize(
    ("start", "horizon", "expected"),
    [
        (THURSDAY_9, 12 * HOURS, (0.0, 9 * HOURS)),  # Thursday until the market closes at 18:00
        (datetime(2026, 11, 26, 6, tzinfo=UTC), 12 * HOURS, (2 * HOURS, 12 * HOURS)),  # opens at 08:00
        (datetime(2026, 11, 28, 9, tzinfo=UTC), 12 * HOURS, None),  # Saturday: closed
        (datetime(2031, 1, 6, 9, tzinfo=UTC), 12 * HOURS, None),  # a Monday after the schedule's end date
    ],
)
def test_a_weekly_schedule_becomes_the_active_window_on_the_mission_clock(downtown, sample, start, horizon, expected):
    world = _import(downtown, sample, start=start, horizon=horizon).world
    if expected is None:
        assert "MKT0003" not in world.zone_index
        return
    window = _zone(world, "MKT0003").active_window
    assert (window.start_sec, window.end_sec) == expected
    assert world.geo_reference.clock_origin_utc == start  # the windows keep their meaning in the written world


def test_two_windows_in_the_horizon_merge_and_say_so(downtown, sample):
    result = _import(downtown, sample, horizon=48 * HOURS)  # Thursday and Friday's markets
    window = _zone(result.world, "MKT0003").active_window
    assert (window.start_sec, window.end_sec) == (0.0, 33 * HOURS)  # Friday 18:00
    line = next(line for line in result.lines if line.identifier == "MKT0003")
    assert line.outcome == "approximated" and "merged" in line.detail


def test_lat_lon_pairs_are_recognised_and_read_the_same(downtown, sample):
    swapped = copy.deepcopy(sample)
    for feature in swapped["features"]:
        projection = feature["geometry"][0]["horizontalProjection"]
        if projection["type"] == "Circle":
            projection["center"] = projection["center"][::-1]
        else:
            projection["coordinates"] = [[p[::-1] for p in ring] for ring in projection["coordinates"]]
    as_published, swapped_result = _import(downtown, sample), _import(downtown, swapped)
    assert swapped_result.axis_order == "lat,lon" and as_published.axis_order == "lon,lat"
    assert swapped_result.world.no_fly_zones == as_published.world.no_fly_zones


def _parse_ed318(document: dict) -> None:
    """uas-standards' own ED-318 models, part by part: its ED318Schema reads a geometry only as a Point (the
    union is tried in order and the first mismatch raised), so each geometry is parsed with its own type."""
    assert document["type"] == "FeatureCollection"
    ImplicitDict.parse(document.get("metadata", {}), eurocae_ed318.DatasetMetadata)
    for feature in document["features"]:
        ImplicitDict.parse(feature["properties"], eurocae_ed318.UASZone)
        geometry = feature["geometry"]
        ImplicitDict.parse(geometry, getattr(eurocae_ed318, geometry["type"]))


def _ed318_feature(identifier: str, zone_type: str, ring: list, layer: dict, **extra) -> dict:
    return {
        "type": "Feature",
        "properties": {
            "identifier": identifier,
            "country": "CHE",
            "name": [{"text": f"zone {identifier}", "lang": "en-GB"}],
            "type": zone_type,
            "variant": "COMMON",
            "reason": ["SENSITIVE"],
            "zoneAuthority": [{"purpose": "AUTHORIZATION"}],
            **extra,
        },
        "geometry": {"type": "Polygon", "coordinates": [ring], "layer": layer},
    }


def _lon_lat_ring(world: World, corners: list[tuple[float, float]]) -> list[list[float]]:
    frame = geo_frame(world)
    ring = [list(frame.lon_lat(x, y)) for x, y in corners]
    return [*ring, ring[0]]


def test_ed318_spellings_layers_and_wgs84_heights(downtown):
    world = downtown.model_copy(
        update={"geo_reference": downtown.geo_reference.model_copy(update={"geoid_undulation_m": 48.0})}
    )
    ring = _lon_lat_ring(world, [(300, 600), (360, 600), (360, 660), (300, 660)])
    layer = {"upper": 656.0, "upperReference": "WGS84", "lower": 0.0, "lowerReference": "AGL", "uom": "m"}
    window = {"startDateTime": "2026-11-26T10:00:00Z", "endDateTime": "2026-11-26T11:30:00Z"}
    document = {
        "type": "FeatureCollection",
        "metadata": {"issued": "2026-11-20T00:00:00Z"},
        "features": [_ed318_feature("ZONE318", "REQ_AUTHORIZATION", ring, layer, limitedApplicability=[window])],
    }
    _parse_ed318(document)  # the test's own file is valid ED-318
    zone = _zone(_import(world, document, "ed318").world, "ZONE318")
    assert zone.source.restriction == "REQ_AUTHORISATION" and zone.reason.startswith("authorisation required")
    assert zone.alt_max_m == pytest.approx(656.0 - 48.0 - 488.0)
    assert (zone.active_window.start_sec, zone.active_window.end_sec) == (HOURS, 2.5 * HOURS)


def _strip_zones(world: World) -> World:
    return World.model_validate({**world.model_dump(), "no_fly_zones": [], "sensitive_zones": []})


@pytest.mark.parametrize("file_format", ZONE_FORMATS)
def test_import_export_import_lands_on_the_same_world(downtown, sample, file_format):
    imported = _import(downtown, sample).world
    frame = geo_frame(imported)
    exported = export_zones(imported, frame, file_format)
    if file_format == "ed269":
        ED269Schema.from_dict(json.loads(json.dumps(exported)))
    if file_format == "ed318":
        _parse_ed318(json.loads(json.dumps(exported)))
    empty = _strip_zones(imported)
    first = _import(empty, exported, file_format).world
    again = _import(empty, export_zones(first, geo_frame(first), file_format), file_format).world
    assert again == first  # a fixed point: the file carries everything the world keeps
    for zone in imported.no_fly_zones:  # and every zone comes back where and when it was
        back = _zone(first, zone.id)
        assert back.polygon == zone.polygon and back.active_window == zone.active_window
        band = (zone.alt_min_m, zone.alt_max_m)
        if file_format == "ed269":  # whole numbers in ED-269, rounded outwards
            band = (math.floor(band[0]), math.ceil(band[1]))
        assert (back.alt_min_m, back.alt_max_m) == band
    school = _zone(first, "school_zone_2")  # written with its buffer drawn in
    original = _zone(imported, "school_zone_2")
    assert school.shape.covers(original.shape.buffer(original.buffer_m - 1e-3))
    for zone in [*imported.no_fly_zones, *imported.sensitive_zones]:  # the published fields come back too
        if zone.source is not None:  # country, reasons, texts, authorities, every schedule window as published
            assert _published(_zone(first, zone.id).source) == _published(zone.source), zone.id
    own = _zone(first, "nfz_temp_1").source  # the world's own zones: reason OTHER with its text, the file's country
    assert own.country == "CHE" and own.reasons == ["OTHER"] and own.other_reason_info.startswith("police operation")


def _published(source) -> dict:
    """A zone's published fields, whichever standard carried them (ED-269 publishes no language)."""
    return source.model_dump(exclude={"standard", "lang"})


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda f: f["features"][0].update(restriction="FORBIDDEN"), "FORBIDDEN"),
        (lambda f: f["features"][1].update(geometry=[]), "missing geometry"),
        (lambda f: f["features"][1]["geometry"][0].pop("upperVerticalReference"), "upperVerticalReference"),
        (lambda f: bow_tie(f["features"][1]), "self-intersecting"),
        (lambda f: f["features"][1]["geometry"][0].update(uomDimensions="NM"), "NM"),
    ],
)
def test_a_bad_file_is_one_typed_error_naming_the_zone(downtown, sample, edit, message):
    edit(sample)
    with pytest.raises(StandardsError, match=message):
        _import(downtown, sample)


def test_amsl_limits_need_the_worlds_ground(downtown, sample):
    unknown_ground = downtown.model_copy(
        update={"geo_reference": downtown.geo_reference.model_copy(update={"ground_elevation_amsl_m": None})}
    )
    with pytest.raises(StandardsError, match="PWR0002.*ground elevation"):
        _import(unknown_ground, sample)


def test_a_zone_polygon_is_kept_whole_even_where_it_leaves_the_frame(downtown):
    ring = _lon_lat_ring(downtown, [(-500, -500), (100, -500), (100, 50), (-500, 50)])
    layer = {"upper": 120, "upperReference": "AGL", "lower": 0, "lowerReference": "AGL", "uom": "m"}
    feature = _ed318_feature("EDGE", "PROHIBITED", ring, layer)
    feature["properties"]["restriction"] = "PROHIBITED"
    zone = _zone(_import(downtown, {"type": "FeatureCollection", "features": [feature]}, "geojson").world, "EDGE")
    assert Polygon(zone.polygon).area == pytest.approx(600 * 550, rel=1e-6)


def _ed318_multi(world: World) -> dict:
    ring_a = _lon_lat_ring(world, [(300, 600), (360, 600), (360, 660), (300, 660)])
    ring_b = _lon_lat_ring(world, [(500, 200), (560, 200), (560, 260), (500, 260)])
    layer = {"upper": 120.0, "upperReference": "AGL", "lower": 0.0, "lowerReference": "AGL", "uom": "m"}
    feature = _ed318_feature("TWO0001", "PROHIBITED", ring_a, layer)
    feature["geometry"] = {"type": "MultiPolygon", "coordinates": [[ring_a], [ring_b]], "layer": layer}
    return {"type": "FeatureCollection", "metadata": {}, "features": [feature]}


@pytest.mark.parametrize("file_format", ZONE_FORMATS)
def test_a_zone_of_several_volumes_comes_back_whole(downtown, file_format):
    imported = _import(downtown, _ed318_multi(downtown), "ed318").world
    assert {"TWO0001_1", "TWO0001_2"} <= set(imported.zone_index)
    exported = export_zones(imported, geo_frame(imported), file_format)
    assert sum(1 for f in exported["features"] if "TWO0001" in json.dumps(f)) == 1  # one feature, two volumes
    back = _import(_strip_zones(imported), exported, file_format).world
    for part in ("TWO0001_1", "TWO0001_2"):
        assert _zone(back, part).polygon == _zone(imported, part).polygon


def _feature_269(sample: dict, index: int = 2) -> dict:
    return sample["features"][index]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda s: s["features"].append(copy.deepcopy(s["features"][2])), "names two zones"),
        (lambda s: _feature_269(s, 0)["geometry"][0]["horizontalProjection"].update(radius=1e300), "not a UAS zone"),
        (lambda s: _feature_269(s, 0)["geometry"][0]["horizontalProjection"].update(radius="164"), "positive radius"),
        (lambda s: _feature_269(s)["geometry"][0].update(upperLimit="500"), "must be a number"),
        (lambda s: _feature_269(s)["geometry"][0].update(upperLimit=True), "must be a number"),
        (lambda s: _feature_269(s)["applicability"][0].update(endDateTime="2025-01-01T00:00:00Z"), "is not after"),
        (
            lambda s: _feature_269(s)["geometry"][0]["horizontalProjection"]["coordinates"][0][0].__setitem__(0, 200.0),
            "not a lon, lat position",
        ),  # fmt: skip
        (lambda s: _feature_269(s).update(identifier=""), "no identifier"),
    ],
)
def test_values_a_model_would_coerce_or_drop_are_refused(downtown, sample, edit, message):
    edit(sample)
    with pytest.raises(StandardsError, match=message):
        _import(downtown, sample)


def test_two_identifiers_that_become_one_id_are_refused(downtown, sample):
    clash = copy.deepcopy(sample["features"][2])
    clash["identifier"] = "MKT-0003"
    sample["features"][2]["identifier"] = "MKT.0003"
    sample["features"].append(clash)
    with pytest.raises(StandardsError, match="would both be MKT_0003"):
        _import(downtown, sample)


def test_limits_keep_their_decimals_and_published_time_spellings_are_read(downtown, sample):
    market = sample["features"][2]
    market["geometry"][0].update(upperLimit=152.9, lowerLimit=12.7)
    market["applicability"][0]["schedule"][0].update(startTime="10:00:00+02:00", endTime="20:00:00+02:00")
    zone = _zone(_import(downtown, sample).world, "MKT0003")
    assert (zone.alt_min_m, zone.alt_max_m) == (12.7, 152.9)
    assert (zone.active_window.start_sec, zone.active_window.end_sec) == (0.0, 9 * HOURS)  # 08:00-18:00 UTC


@pytest.mark.parametrize(
    ("horizon", "tolerance"), [(float("nan"), 0.5), (0.0, 0.5), (12 * HOURS, 0.0), (12 * HOURS, -1)]
)
def test_a_horizon_or_tolerance_the_import_cannot_use_is_refused(downtown, sample, horizon, tolerance):
    with pytest.raises(StandardsError, match="horizon|tolerance"):
        import_zones(downtown, sample, "ed269", geo_frame(downtown, THURSDAY_9), horizon, tolerance)


def test_a_geometry_collection_with_a_null_member_is_missing_geometry(downtown):
    document = _ed318_multi(downtown)
    document["features"][0]["geometry"] = {"type": "GeometryCollection", "geometries": [None]}
    with pytest.raises(StandardsError, match="missing geometry"):
        _import(downtown, document, "ed318")
