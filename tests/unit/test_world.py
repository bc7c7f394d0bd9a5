"""World files: the examples load, malformed ones fail with the offending field named, schemas stay current."""

from __future__ import annotations

import json

import pytest

from ir.schemas import SCHEMA_MODELS, render_schema
from tests.support.paths import ROOT
from tools.catalog import default_registry
from tools.world import WorldFileError, load_world, parse_world

EXAMPLE_WORLDS = sorted((ROOT / "examples").glob("*.json"))


def _downtown() -> dict:
    return json.loads((ROOT / "examples" / "downtown.json").read_text())


def test_there_are_at_least_three_example_worlds_and_they_load():
    assert len(EXAMPLE_WORLDS) >= 3
    for path in EXAMPLE_WORLDS:
        world = load_world(path)
        assert world.entities and world.fleet


def test_downtown_has_the_design_plans_ids_and_situation():
    world = load_world(ROOT / "examples" / "downtown.json")
    assert {"hospital_A", "hospital_B", "accident_site_3"} <= world.entity_index.keys()
    nfz = world.zone_index["nfz_temp_1"]
    assert nfz.temporary and nfz.active_at(0) and nfz.alt_min_m == 0 and nfz.alt_max_m > world.grid.ceiling_m
    from shapely.geometry import LineString

    straight = LineString([world.entity_index["hospital_A"].position, world.entity_index["accident_site_3"].position])
    assert straight.intersects(nfz.shape)
    assert world.zone_index["school_zone_2"].buffer_m > 0
    assert any(c.load >= c.capacity for c in world.corridors)
    uav_03, uav_07 = world.uav_index["uav_03"], world.uav_index["uav_07"]
    assert uav_03.status == "idle" and uav_03.battery_ratio > 0.9
    assert uav_07.battery_ratio < 0.2


@pytest.mark.parametrize("path", EXAMPLE_WORLDS, ids=lambda p: p.stem)
def test_every_example_world_has_a_verified_route_between_two_entities(path):
    world, registry = load_world(path), default_registry()
    idle = next(u for u in world.fleet if u.status == "idle")
    start = min(
        world.entities, key=lambda e: (e.position[0] - idle.position[0]) ** 2 + (e.position[1] - idle.position[1]) ** 2
    )
    goal = next(e for e in world.entities if e.id != start.id and e.kind.value not in ("school",))
    zones = [z.id for z in world.no_fly_zones] + [z.id for z in world.sensitive_zones]
    route = registry.call("plan_route", world, {"start": start.id, "goal": goal.id, "avoid_zones": zones})
    assert route.ok, route.error
    verdict = registry.call("verify_ltl_stl", world, {"waypoints": route.result["waypoints"], "goal": goal.id})
    assert verdict.ok and verdict.result["pass"]


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda w: w["grid"].pop("nx"), "grid.nx"),
        (lambda w: w["fleet"][1].update(status="flying"), "fleet.1.status"),
        (lambda w: w["no_fly_zones"][0].update(polygon=[[0, 0], [1, 1], [2, 2]]), "no_fly_zones.0.polygon"),
        (lambda w: w["no_fly_zones"][0]["active_window"].update(end_sec=-5), "no_fly_zones.0.active_window"),
        (lambda w: w["entities"].append(dict(w["entities"][0])), "entities.9.id"),
        (lambda w: w["entities"][0].update(position=[5000, 5]), "entities.0.position"),
        (lambda w: w["fleet"][0].update(battery_ratio="full"), "fleet.0.battery_ratio"),
    ],
)
def test_malformed_world_names_the_field(mutate, field):
    data = _downtown()
    mutate(data)
    with pytest.raises(WorldFileError) as info:
        parse_world(data, "w.json")
    assert info.value.field == field
    assert field in str(info.value)


def test_unreadable_or_non_json_world_is_a_world_file_error(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text('{"world_id": ')
    with pytest.raises(WorldFileError, match="invalid JSON at line 1"):
        load_world(broken)
    with pytest.raises(WorldFileError, match="cannot read file"):
        load_world(tmp_path / "missing.json")
    with pytest.raises(WorldFileError, match="must be a JSON object"):
        parse_world([1, 2, 3])


def test_world_json_round_trips_and_version_is_content_based():
    world = load_world(ROOT / "examples" / "downtown.json")
    again = parse_world(json.loads(world.model_dump_json()))
    assert again == world and again.version == world.version
    changed = _downtown()
    changed["fleet"][0]["battery_ratio"] = 0.5
    assert parse_world(changed).version != world.version


@pytest.mark.parametrize("filename", sorted(SCHEMA_MODELS))
def test_committed_json_schemas_match_the_models(filename):
    committed = (ROOT / "schemas" / filename).read_text()
    assert committed == render_schema(SCHEMA_MODELS[filename]), f"run `cloudbrain schemas` to refresh {filename}"
