"""query_city_state and query_airspace through the registry, with their typed errors."""

from __future__ import annotations

import pytest

from tools import airspace, city
from tools.registry import ToolRegistry
from tools.world import World


@pytest.fixture(scope="module")
def registry() -> ToolRegistry:
    return ToolRegistry([city.SPEC, airspace.SPEC])


def _ids(items: list[dict]) -> set[str]:
    return {item["id"] for item in items}


# --- query_city_state -------------------------------------------------------------------------------------


def test_whole_map_lists_everything(registry, downtown):
    result = registry.call("query_city_state", downtown, {})
    assert result.ok
    assert _ids(result.result["entities"]) == set(downtown.entity_index)
    assert _ids(result.result["buildings"]) == {b.id for b in downtown.buildings}
    assert _ids(result.result["sensitive_zones"]) == {"school_zone_2"}


def test_region_keeps_only_what_lies_inside(registry, downtown):
    result = registry.call("query_city_state", downtown, {"region": "south"})
    assert result.ok and result.result["area"] == [0.0, 0.0, 800.0, 400.0]
    south = {e.id for e in downtown.entities if e.position[1] <= 400}
    assert _ids(result.result["entities"]) == south
    assert "hospital_B" not in _ids(result.result["entities"])


def test_unknown_region_is_unrecoverable_with_suggestions(registry, downtown):
    result = registry.call("query_city_state", downtown, {"region": "soutth"})
    assert not result.ok and result.error.type == "unknown_region" and not result.error.recoverable
    assert "south" in result.error.suggested_actions[0]


def test_bbox_partly_off_map_is_partial_map_with_the_inside_part(registry, downtown):
    result = registry.call("query_city_state", downtown, {"bbox": [650, 650, 1000, 1000]})
    assert not result.ok and result.error.type == "partial_map" and result.error.recoverable
    assert result.result["area"] == [650.0, 650.0, 800.0, 800.0]
    assert _ids(result.result["entities"]) == {"hospital_B"}


@pytest.mark.parametrize("args", [{"bbox": [10, 10, 5, 50]}, {"bbox": [0, 0, 1]}, {"region": 3}, {"zoom": 2}])
def test_bad_area_arguments(registry, downtown, args):
    result = registry.call("query_city_state", downtown, args)
    assert result.error.type == "bad_arguments" and result.error.recoverable


# --- query_airspace ---------------------------------------------------------------------------------------


def test_active_zones_depend_on_the_time_window(registry, downtown):
    now = registry.call("query_airspace", downtown, {"time_sec": 0})
    later = registry.call("query_airspace", downtown, {"time_sec": 8000})
    window = registry.call("query_airspace", downtown, {"time_sec": 7000, "horizon_sec": 600})
    assert _ids(now.result["no_fly_zones"]) == {"nfz_temp_1", "nfz_gov_1"}
    assert _ids(later.result["no_fly_zones"]) == {"nfz_gov_1"}
    assert "nfz_temp_1" in _ids(window.result["no_fly_zones"])  # active during part of the window


def test_corridors_capacity_and_congestion(registry, downtown):
    result = registry.call("query_airspace", downtown, {})
    corridors = {c["id"]: c for c in result.result["corridors"]}
    assert corridors["corridor_c1"]["free"] == 0 and corridors["corridor_c2"]["free"] == 3
    assert result.result["congested_corridors"] == ["corridor_c1"]
    assert result.result["ceiling_m"] == downtown.grid.ceiling_m


def test_altitude_range_filters_corridors(registry, downtown):
    result = registry.call("query_airspace", downtown, {"alt_min_m": 30, "alt_max_m": 50})
    assert _ids(result.result["corridors"]) == {"corridor_c2"}  # corridor_c1 flies at 60-100 m


def test_capacity_low_is_recoverable_and_keeps_the_result(registry, downtown):
    args = {"region": "north", "require_corridor": True, "capacity_required": 4}
    result = registry.call("query_airspace", downtown, args)
    assert not result.ok and result.error.type == "capacity_low" and result.error.recoverable
    assert _ids(result.result["corridors"]) == {"corridor_c1", "corridor_c2"}
    enough = registry.call("query_airspace", downtown, {**args, "capacity_required": 3})
    assert enough.ok


def test_destination_inside_an_active_nfz_is_restricted_airspace(registry, downtown):
    data = downtown.model_dump(mode="json")
    data["entities"].append({"id": "inside_nfz", "kind": "other", "position": [375, 260]})
    world = World.model_validate(data)
    result = registry.call("query_airspace", world, {"destination": "inside_nfz"})
    assert not result.ok and result.error.type == "restricted_airspace" and not result.error.recoverable
    assert "nfz_temp_1" in result.error.message
    after = registry.call("query_airspace", world, {"destination": "inside_nfz", "time_sec": 8000})
    assert after.ok  # the temporary zone has lifted


def test_unknown_destination_and_bad_altitudes(registry, downtown):
    unknown = registry.call("query_airspace", downtown, {"destination": "acident_site_3"})
    assert unknown.error.type == "unknown_entity" and "accident_site_3" in unknown.error.suggested_actions[0]
    inverted = registry.call("query_airspace", downtown, {"alt_min_m": 100, "alt_max_m": 50})
    assert inverted.error.type == "bad_arguments"


def test_airspace_unknown_region_is_unrecoverable(registry, downtown):
    result = registry.call("query_airspace", downtown, {"region": "uptown"})
    assert result.error.type == "unknown_region" and not result.error.recoverable
