"""A world's geodetic frame: local metres <-> WGS84 both ways, checked against pyproj and geodesics computed here,
and altitudes that never assume a ground elevation or a geoid undulation the world does not give."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError
from pyproj import Geod, Transformer

from standards.frame import FEET, StandardsError, geo_frame, metres, parse_instant
from tools.world import GeoReference, World

GEOD = Geod(ellps="WGS84")


def _with_reference(world: World, **reference) -> World:
    return world.model_copy(update={"geo_reference": GeoReference(**reference)})


def test_an_anchored_frame_puts_local_zero_on_the_anchor_and_keeps_ground_distances(downtown):
    frame = geo_frame(downtown)
    lat, lon = downtown.geo_reference.anchor_lat_lon
    assert frame.lon_lat(0.0, 0.0) == pytest.approx((lon, lat), abs=1e-12)
    east = frame.lon_lat(1000.0, 0.0)
    north = frame.lon_lat(0.0, 1000.0)
    _, _, d_east = GEOD.inv(lon, lat, *east)
    azimuth, _, d_north = GEOD.inv(lon, lat, *north)
    assert d_east == pytest.approx(1000.0, abs=1e-3) and d_north == pytest.approx(1000.0, abs=1e-3)
    assert azimuth == pytest.approx(0.0, abs=1e-6)  # +y is true north


@pytest.mark.parametrize("xy", [(0.0, 0.0), (812.5, 33.25), (-4000.0, 9000.0)])
def test_local_to_wgs84_and_back_is_exact_to_a_micrometre(downtown, xy):
    frame = geo_frame(downtown)
    assert frame.local(*frame.lon_lat(*xy)) == pytest.approx(xy, abs=1e-6)


def test_a_projected_frame_is_its_crs_shifted_by_the_origin(downtown):
    origin = (385_000.0, 6_671_000.0)
    world = _with_reference(downtown, crs="EPSG:3067", origin_easting_northing=origin)
    frame = geo_frame(world)
    expected = Transformer.from_crs("EPSG:3067", "EPSG:4326", always_xy=True).transform(origin[0] + 120, origin[1] + 45)
    assert frame.lon_lat(120.0, 45.0) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ({"crs": "EPSG:999999", "origin_easting_northing": (0, 0)}, "not a CRS pyproj knows"),
        ({"crs": "EPSG:4326", "origin_easting_northing": (0, 0)}, "not a projected CRS in metres"),
    ],
)
def test_a_crs_the_frame_cannot_use_is_one_line(downtown, reference, message):
    with pytest.raises(StandardsError, match=message):
        geo_frame(_with_reference(downtown, **reference))


@pytest.mark.parametrize(
    "reference",
    [
        {},
        {"anchor_lat_lon": (47.0, 8.0), "crs": "EPSG:3067"},
        {"crs": "EPSG:3067"},
        {"anchor_lat_lon": (95.0, 8.0)},
        {"anchor_lat_lon": (47.0, 8.0), "geoid_model": "EGM96"},  # a source named for no undulation
    ],
)
def test_a_reference_is_either_a_crs_and_origin_or_an_anchor(reference):
    with pytest.raises(ValidationError):
        GeoReference(**reference)


def test_a_world_without_a_reference_cannot_be_exported(downtown):
    with pytest.raises(StandardsError, match="no geo_reference"):
        geo_frame(downtown.model_copy(update={"geo_reference": None}))


def test_altitudes_convert_through_ground_and_geoid(downtown):
    known = geo_frame(_with_reference(downtown, anchor_lat_lon=(60.0, 25.0), ground_elevation_amsl_m=12.0,
                                      geoid_undulation_m=17.5, geoid_model="stated"))  # fmt: skip
    assert known.knows_amsl and known.knows_wgs84
    assert known.amsl(40.0) == 52.0 and known.wgs84_height(40.0) == 69.5
    assert known.agl(69.5, "WGS84", "z") == pytest.approx(40.0) and known.agl(52.0, "AMSL", "z") == 40.0


def test_a_height_above_a_reference_the_world_does_not_place_is_refused_never_taken_as_zero(downtown):
    clock = datetime(2026, 1, 1, tzinfo=UTC)
    neither = geo_frame(_with_reference(downtown, anchor_lat_lon=(60.0, 25.0), geoid_undulation_m=17.9), clock)
    assert not neither.knows_amsl and not neither.knows_wgs84
    for height in (neither.amsl, neither.wgs84_height):
        with pytest.raises(StandardsError, match=r"geo_reference\.ground_elevation_amsl_m") as caught:
            height(40.0)
        assert "\n" not in str(caught.value)
    with pytest.raises(StandardsError, match="ground elevation"):
        neither.agl(100.0, "AMSL", "zone Z")  # an import never guesses the ground

    ground_only = geo_frame(_with_reference(downtown, anchor_lat_lon=(60.0, 25.0), ground_elevation_amsl_m=12.0), clock)
    assert ground_only.knows_amsl and not ground_only.knows_wgs84
    assert ground_only.amsl(40.0) == 52.0
    with pytest.raises(StandardsError, match=r"geo_reference\.geoid_undulation_m"):
        ground_only.wgs84_height(40.0)
    assert not neither.assumptions and not ground_only.assumptions  # nothing was assumed instead


def test_feet_are_international_feet_and_other_units_are_refused():
    assert metres(400, "FT", "x") == pytest.approx(121.92) and FEET == 0.3048
    with pytest.raises(StandardsError, match="unknown unit"):
        metres(1, "NM", "x")


def test_a_world_without_a_clock_says_when_its_zero_was_taken(downtown):
    frame = geo_frame(downtown)
    assert any("no clock origin" in a for a in frame.assumptions)
    given = geo_frame(downtown, datetime(2026, 11, 26, 9, tzinfo=UTC))
    assert given.instant(90.0) == datetime(2026, 11, 26, 9, 1, 30, tzinfo=UTC) and not given.assumptions


def test_an_instant_is_rfc_3339_with_its_zone_or_now():
    assert parse_instant("2030-01-01T09:00:00Z", "--start") == datetime(2030, 1, 1, 9, tzinfo=UTC)
    assert abs((parse_instant("now", "--start") - datetime.now(UTC)).total_seconds()) < 5
    for bad in ("2030-01-01T09:00:00", "tomorrow"):
        with pytest.raises(StandardsError, match="--start"):
            parse_instant(bad, "--start")
