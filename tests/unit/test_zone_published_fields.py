"""What an export writes back besides the shapes: the published authority, every window of a weekly schedule, the
country and the text of a reason OTHER, for ED-269 and ED-318 files (each in its own names); the world's own zones
with a country and their reason as the text of OTHER; and zones whose axes look swapped named as such."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta

import pytest
from implicitdict import ImplicitDict
from uas_standards import eurocae_ed318
from uas_standards.eurocae_ed269 import ED269Schema

from standards.formats import ZONE_FORMATS
from standards.frame import geo_frame
from standards.schedule import active_intervals
from standards.zone_files import read_zones
from standards.zones import export_zones, import_zones, nothing_imported
from tests.support.paths import ROOT
from tests.support.zones import ED269_SAMPLE
from tools.world import TimeWindow, World

DATA = ROOT / "tests" / "data" / "zones"
WEEKLY = {"ed269": DATA / "weekly_ed269.json", "ed318": DATA / "weekly_ed318.json"}
SWAPPED = {"ed269": DATA / "swapped_one_zone_ed269.json", "geojson": DATA / "swapped_one_zone.geojson"}
THURSDAY_9 = datetime(2026, 11, 26, 9, tzinfo=UTC)
HOURS = 3600.0
HORIZON = 48 * HOURS  # Thursday 09:00 to Saturday 09:00: the heron colony's Saturday dawn window is in it
ED269_FIELDS = ("country", "name", "reason", "otherReasonInfo", "restrictionConditions", "message", "zoneAuthority")
ED318_FIELDS = (*ED269_FIELDS, "limitedApplicability")


def _read(path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _import(world: World, document: dict, file_format: str, **options):
    return import_zones(world, document, file_format, geo_frame(world, THURSDAY_9), HORIZON, **options)


def _strip_zones(world: World) -> World:
    return World.model_validate({**world.model_dump(), "no_fly_zones": [], "sensitive_zones": []})


def _parse_ed318(document: dict) -> None:
    """uas-standards' ED-318 models, part by part (its ED318Schema reads any geometry as a Point)."""
    ImplicitDict.parse(document.get("metadata", {}), eurocae_ed318.DatasetMetadata)
    for feature in document["features"]:
        ImplicitDict.parse(feature["properties"], eurocae_ed318.UASZone)
        ImplicitDict.parse(feature["geometry"], getattr(eurocae_ed318, feature["geometry"]["type"]))


def _checked(document: dict, file_format: str) -> dict:
    """The exported document, read by the standard's own model first."""
    document = json.loads(json.dumps(document))
    if file_format == "ed269":
        ED269Schema.from_dict(document)
    if file_format == "ed318":
        _parse_ed318(document)
    return document


def _feature(document: dict, identifier: str) -> dict:
    """A feature by its identifier, as fields (ED-269) or properties (ED-318, GeoJSON)."""
    for feature in document["features"]:
        fields = feature.get("properties", feature)
        if fields["identifier"] == identifier:
            return fields
    raise AssertionError(f"{identifier} not in the file")


def _windows(document: dict, file_format: str) -> dict[str, list[tuple[float, float]]]:
    """Every zone's active intervals over four weeks from Thursday 09:00, read from the file's periods."""
    return {
        zone.identifier: active_intervals(zone.periods or [], THURSDAY_9, 28 * 24 * HOURS)
        for zone in read_zones(document, file_format)
    }


@pytest.mark.parametrize("file_format", ["ed269", "ed318"])
def test_an_unchanged_zone_is_written_back_with_its_published_fields_verbatim(downtown, file_format):
    published = _read(WEEKLY[file_format])
    world = _import(downtown, published, file_format).world
    exported = _checked(export_zones(world, geo_frame(world), file_format), file_format)
    fields = ED269_FIELDS if file_format == "ed269" else ED318_FIELDS
    for identifier in ("EVT0010", "NAT0011"):
        mine, theirs = _feature(exported, identifier), _feature(published, identifier)
        assert {k: mine.get(k) for k in fields} == {k: theirs.get(k) for k in fields}, identifier
        if file_format == "ed269":  # ED-269's applicability as published, `permanent` included
            assert mine["applicability"] == theirs["applicability"]


@pytest.mark.parametrize("source_format", ["ed269", "ed318"])
@pytest.mark.parametrize("file_format", ZONE_FORMATS)
def test_authority_every_schedule_window_country_and_reason_text_survive_a_round_trip(
    downtown, source_format, file_format
):
    published = _read(WEEKLY[source_format])
    imported = _import(downtown, published, source_format).world
    exported = _checked(export_zones(imported, geo_frame(imported), file_format), file_format)
    first = _import(_strip_zones(imported), exported, file_format).world
    again = _import(_strip_zones(imported), export_zones(first, geo_frame(first), file_format), file_format).world
    assert again == first  # a fixed point, field for field
    windows = _windows(published, source_format)
    assert len(windows["EVT0010"]) > 8  # two windows a weekday, Saturday's, and the one-off night: not one hull
    assert {k: v for k, v in _windows(exported, file_format).items() if k in windows} == windows
    for zone_id in ("EVT0010", "NAT0011"):
        before, after = imported.zone_index[zone_id], first.zone_index[zone_id]
        assert after.source.authorities == before.source.authorities
        assert after.source.country == "CHE" and after.source.reasons == before.source.reasons
        assert after.source.other_reason_info == before.source.other_reason_info
        assert "; ".join(after.source.restriction_conditions) == "; ".join(before.source.restriction_conditions)
        assert getattr(after, "active_window", None) == getattr(before, "active_window", None)
    assert imported.zone_index["EVT0010"].source.authorities[0] == {
        "name": "City events office",
        "service": "Permits desk",
        "email": "events@example.org",
        "contactName": "A. Muster",
        "siteURL": "https://example.org/events",
        "phone": "+41 44 000 00 00",
        "purpose": "AUTHORIZATION",
        "intervalBefore": "P1D",
    }


@pytest.mark.parametrize("file_format", ZONE_FORMATS)
def test_the_worlds_own_zones_get_a_country_and_reason_other_with_its_text(downtown, file_format):
    world = _import(downtown, _read(WEEKLY["ed269"]), "ed269").world
    frame = geo_frame(world)
    exported = _checked(export_zones(world, frame, file_format), file_format)
    own = _feature(exported, "nfz_temp_1")
    assert own["country"] == "CHE" and own["reason"] == ["OTHER"]  # the country every imported zone names
    text = own["otherReasonInfo"] if file_format != "ed318" else own["otherReasonInfo"][0]["text"]
    reason = downtown.zone_index["nfz_temp_1"].reason
    if file_format == "ed269":  # at most 30 characters there, said; the whole text stays in the name
        assert len(text) == 30 and reason.startswith(text[:-1]) and own["name"] == reason
        assert any("cut to ED-269's 30 characters" in a for a in frame.assumptions)
    else:
        assert text == reason
    assert any("written with CHE" in a for a in frame.assumptions)
    assert _feature(exported, "school_zone_2")["reason"] == ["OTHER"]


def test_a_world_of_its_own_zones_only_is_written_with_its_country_else_xxx(downtown):
    frame = geo_frame(downtown)
    assert _feature(export_zones(downtown, frame, "ed269"), "nfz_gov_1")["country"] == "XXX"
    assert any("XXX" in a for a in frame.assumptions)
    finnish = downtown.model_copy(
        update={"geo_reference": downtown.geo_reference.model_copy(update={"country": "FIN"})}
    )
    assert _feature(export_zones(finnish, geo_frame(finnish), "ed318"), "nfz_gov_1")["country"] == "FIN"


def test_a_zone_whose_window_was_changed_is_written_with_its_window(downtown):
    world = _import(downtown, _read(WEEKLY["ed269"]), "ed269").world
    changed = world.zone_index["EVT0010"].model_copy(update={"active_window": TimeWindow(start_sec=0, end_sec=600)})
    world = World.model_validate(
        {**world.model_dump(), "no_fly_zones": [changed if z.id == "EVT0010" else z for z in world.no_fly_zones]}
    )
    frame = geo_frame(world)
    feature = _feature(export_zones(world, frame, "ed269"), "EVT0010")
    start = frame.clock_origin
    assert feature["applicability"] == [
        {
            "permanent": "NO",
            "startDateTime": start.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            "endDateTime": (start + timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        }
    ]
    assert any("EVT0010" in a and "written as its window" in a for a in frame.assumptions)


def test_ed318_daylight_events_and_offset_times_are_written_into_ed269_as_the_import_reads_them(downtown):
    published = _read(WEEKLY["ed318"])
    colony = _feature(published, "NAT0011")
    colony["limitedApplicability"][0]["schedule"][1] = {
        "day": ["SAT", "SUN"],
        "startTime": "17:00:00Z",
        "endEvent": "SS",
    }
    festival = _feature(published, "EVT0010")
    festival["limitedApplicability"][0]["schedule"][2].update(startTime="12:00:00+02:00", endTime="16:00:00+02:00")
    world = _import(downtown, published, "ed318").world
    frame = geo_frame(world)
    exported = _checked(export_zones(world, frame, "ed269"), "ed269")
    assert _feature(exported, "NAT0011")["applicability"][0]["schedule"][1]["endTime"] == "00:00:00.00Z"
    saturday = _feature(exported, "EVT0010")["applicability"][0]["schedule"][2]
    assert (saturday["startTime"], saturday["endTime"]) == ("12:00:00.00+0200", "16:00:00.00+0200")
    assert any("sunrise / sunset" in a for a in frame.assumptions)
    windows = _windows(published, "ed318")
    assert {k: v for k, v in _windows(exported, "ed269").items() if k in windows} == windows  # the same instants


def test_a_reason_other_reads_its_text_into_the_zones_reason(downtown):
    published = _read(WEEKLY["ed269"])
    festival = _feature(published, "EVT0010")
    del festival["name"], festival["message"]
    assert _import(downtown, published, "ed269").world.zone_index["EVT0010"].reason == "Street festival stages"


# --- axis order --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("file_format", ["ed269", "geojson"])
def test_a_one_zone_file_with_swapped_axes_is_read_as_lat_lon_or_named_as_swapped(downtown, file_format):
    document = _read(SWAPPED[file_format])
    auto = _import(downtown, document, file_format)
    assert auto.axis_order == "lat,lon" and "MKT0003" in auto.world.zone_index and nothing_imported(auto) is None
    fixed = _import(downtown, document, file_format, axis_order="lon,lat")
    (line,) = fixed.lines
    assert line.outcome == "skipped" and line.axes_look_swapped
    assert "read with its axes swapped it lies in the world" in line.detail
    refusal = nothing_imported(fixed)
    assert refusal and "MKT0003" in refusal and "axes swapped" in refusal and "\n" not in refusal


def test_one_swapped_zone_among_others_is_named_and_the_rest_imported(downtown):
    sample = json.loads(ED269_SAMPLE.read_text(encoding="utf-8"))
    swapped = _read(SWAPPED["ed269"])["features"][0]
    sample["features"][2] = swapped  # the market, its pairs as [lat, lon]
    result = _import(downtown, sample, "ed269")
    assert result.axis_order == "lon,lat"  # most zones read as published
    line = next(line for line in result.lines if line.identifier == "MKT0003")
    assert line.outcome == "skipped" and line.axes_look_swapped and "[lat, lon]" in line.detail
    assert nothing_imported(result) is None and "EMG0001" in result.world.zone_index


def test_a_zone_outside_the_frame_says_how_far_and_no_swap(downtown):
    sample = json.loads(ED269_SAMPLE.read_text(encoding="utf-8"))
    airport = copy.deepcopy(sample["features"][5])
    result = _import(downtown, {"features": [airport]}, "ed269")
    (line,) = result.lines
    assert line.outcome == "skipped" and not line.axes_look_swapped
    assert "outside the world's frame (" in line.detail and " km from it)" in line.detail
    assert "FAR0006" in nothing_imported(result)
