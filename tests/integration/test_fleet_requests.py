"""Fleet requests (examples/fleet_requests.jsonl, written by hand in English and Chinese) on the rules model, which
writes a team IR for them: the graph assigns, routes, verifies and simulates every member (issue 42). A request the
fleet can serve executes as a team; one it cannot ends with the operator or a refusal naming the binding constraint
from assign_team, never flown as one UAV. One-UAV requests on the same world still execute."""

from __future__ import annotations

import json
import math

import pytest

from graph.runner import run_task
from nodes.context import Context
from tests.support.cli import run_cli
from tests.support.paths import ROOT
from tools.world import World

REQUESTS = [json.loads(line) for line in (ROOT / "examples" / "fleet_requests.jsonl").read_text("utf-8").splitlines()]
CONTEXT = Context(model="rules", without=frozenset({"memory"}))


def _world(path: str) -> World:
    return World.model_validate_json((ROOT / path).read_text("utf-8"))


@pytest.mark.parametrize("request_", REQUESTS, ids=[r["id"] for r in REQUESTS])
def test_a_team_request_is_flown_as_a_team_or_not_at_all(request_):
    out = run_task(_world(request_["world"]), request_["instruction"], context=CONTEXT, db=None)
    expect = request_["expect"]
    # a team is never flown as one UAV: its decision has no single route
    assert not out.decision.get("uav_id") and not out.decision.get("waypoints")
    if expect["decision"] == "execute":
        assert out.status == "execute", out.decision.get("reason")
        team = out.decision["team"]
        assert len({m["uav_id"] for m in team}) == len(team) >= expect["min_uavs"]
        assert out.decision["certificate"]["members"]
        world = _world(request_["world"])
        for site in expect["sites"]:  # every stated site is reached by some member, by the world's own tolerance
            x, y = world.entity_index[site].position
            assert any(math.dist((x, y), w[:2]) <= world.arrival_tolerance_m for m in team for w in m["waypoints"]), (
                site
            )
        if "payload_kg" in expect:  # the whole mass is carried (a relay leg carries on what its first leg took)
            assert sum(m["share_kg"] for m in team if m["role"] != "relay_leg") >= expect["payload_kg"] - 1e-6
        for role, uavs in (expect.get("uavs") or {}).items():  # UAVs the request names fly their part
            assert {m["uav_id"] for m in team if m["role"] == role} == set(uavs), team
        return
    assert out.status in ("human_confirm", "safe_refusal") and not out.decision.get("team"), out.decision
    if "binding" in expect:
        assert f"binding constraint: {expect['binding']}" in out.decision["reason"], out.decision["reason"]


@pytest.mark.parametrize(
    "instruction",
    [
        "Deliver a small parcel from depot_1 to hospital_1.",
        "Take 2 kg of medicine from hospital_1 to the metro station.",
        "用一架无人机把1公斤的零件从warehouse_2送到construction_site_1。",
    ],
)
def test_a_one_uav_request_on_the_fleet_world_still_executes(instruction):
    out = run_task(_world("examples/fleet_city.json"), instruction, context=CONTEXT, db=None)
    assert out.status == "execute", out.decision.get("reason")


@pytest.mark.parametrize(
    "instruction",
    [
        "Two drones: uav_05 takes an AED from City General Hospital to West Gate metro station and uav_06 takes one "
        "to the crash on the eastern ring road, within 2 minutes.",
        "两架无人机从市总医院送AED，2分钟内：uav_05送到西门地铁站，uav_06送到东环路车祸现场。",
    ],
)
def test_uavs_named_for_their_sites_fly_to_those_sites(instruction):
    """Never the swap: uav_05 ends at the metro station and uav_06 at the crash, as the words give them."""
    world = _world("examples/fleet_city.json")
    out = run_task(world, instruction, context=CONTEXT, db=None)
    assert out.status == "execute", out.decision.get("reason")
    ends = {m["uav_id"]: m["waypoints"][-1][:2] for m in out.decision["team"]}
    assert set(ends) == {"uav_05", "uav_06"}
    for uav, site in (("uav_05", "metro_station_1"), ("uav_06", "accident_site_1")):
        assert math.dist(ends[uav], world.entity_index[site].position) <= world.arrival_tolerance_m, (uav, site)


@pytest.mark.parametrize(
    ("instruction", "asked", "flown"),
    [
        ("Split 4 kg of sandbags from the sandbag depot between two drones and fly them to the flood site.", 2, 1),
        (
            "Drop a 2 kg rescue kit at the crash on the eastern ring road and have a second drone with a camera film "
            "the scene while it's delivered.",
            2,
            1,
        ),
        ("从五金仓库运7公斤工具到港口街工地，不要用uav_09，分两架运。", 2, 3),
    ],
)
def test_a_team_of_another_size_than_the_words_ask_for_is_not_flown(instruction, asked, flown):
    """The team tool picks the fewest UAVs the load allows; a team of another size than the request states ("two
    drones", "a second drone", "分两架") is the operator's, named, never flown as if it were what was asked."""
    out = run_task(_world("examples/fleet_city.json"), instruction, context=CONTEXT, db=None)
    assert out.status == "human_confirm" and out.failure["error_type"] == "team_size_not_kept", out.decision
    assert f"asks for {asked} UAVs; the team flies {flown}" in out.decision["reason"]


SPLIT_LOAD = (
    "We've got 8 kg of sandbags sitting at the sandbag depot and the flood site at the Riverside Road underpass needs "
    "them now. That's more than any one of our drones can lift, so split the load between two of them."
)


def test_a_team_execute_is_not_exported_as_one_flight_plan_nor_admitted_to_the_ledger(capsys, tmp_path):
    """What is not built yet for teams (a flight plan per member, a team's intents admitted all or none) is a clear
    refusal with nothing written, never a crash or a plan of one member standing for the mission."""
    fleet, db, out = str(ROOT / "examples" / "fleet_city.json"), str(tmp_path / "runs.sqlite"), tmp_path / "plan.json"
    common = ("--model", "rules", "--without", "memory", "--db", db)
    code, said, _ = run_cli(capsys, "run", "--world", fleet, "--instruction", SPLIT_LOAD, "--thread", "team", *common)
    assert code == 0 and said.startswith("EXECUTE: a team of 2 UAVs") and "None flies" not in said
    assert said.count("(deliver): uav_") == 2  # one line per member, each naming its UAV
    code, _, err = run_cli(
        capsys, "export", "--db", db, "--thread", "team", "--world", fleet, "--format", "f3548", "--out", str(out)
    )
    assert code == 2 and "fleet mission of 2 UAVs" in err and not out.exists()
    requests = tmp_path / "requests.jsonl"
    requests.write_text(json.dumps({"at_sec": 0, "request_id": "bags", "instruction": SPLIT_LOAD}) + "\n", "utf-8")
    code, out_text, _ = run_cli(
        capsys, "ops", "--world", fleet, "--requests", str(requests), *common, "--fresh-ledger", "--json"
    )
    (decision,) = json.loads(out_text)["decisions"]
    assert code == 4 and decision["status"] == "human_confirm" and decision["intent_id"] is None
    assert "does not admit a team's intents" in decision["reason"]
