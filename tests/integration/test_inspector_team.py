"""A fleet mission (issue 42) in the inspector and in `cloudbrain trace`, on real checkpointed team runs of
examples/fleet_city.json with the rules model (as tests/integration/test_fleet_requests.py runs them).

The thread page of a team execute draws every member: its route on the map and its altitude on the one mission
clock, in a colour of its own, the legend naming sub-task, role and UAV; the decision's empty top-level route is
not drawn. No example team run repairs today, so the repaired ones fly a world where one member's UAV is short of
battery: assign_team gives it the share its battery allows on its estimate, the planned route needs a little more,
the verifier's R5 fails that member and the repair reassigns it. (Until 2026-11-28 a known track parked on a
member's route did it; the stagger rule now keeps members clear of known traffic in the first round.) `trace` then
names, per member, what changed between rounds."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from selenium.webdriver.common.by import By

from graph.checkpoint import sqlite_checkpointer
from graph.history import state_values
from graph.runner import run_task
from graph.settings import RunSettings
from inspector import data
from inspector.app import create_app
from nodes.context import Context
from tests.integration.test_inspector_browser import (
    _screenshot,
    browser,  # noqa: F401 (the headless Chromium fixture)
    serve,
)
from tests.support.cli import run_cli, run_json
from tests.support.paths import ROOT
from tools.world import World

RULES = Context(model="rules", without=frozenset({"memory"}))
FLEET = ROOT / "examples" / "fleet_city.json"
REQUESTS = {
    r["id"]: r["instruction"]
    for r in map(json.loads, (ROOT / "examples" / "fleet_requests.jsonl").read_text("utf-8").splitlines())
}
SPLIT, ROLES = REQUESTS["split-2"], REQUESTS["roles-1"]  # two UAVs on one sub-task; a camera UAV and a deliverer


def _short_of_battery(raw: dict[str, Any], decision: dict[str, Any], member: int, ratio: float) -> World:
    """The world with `member`'s UAV charged to `ratio` (found by trying: one that assign_team still picks, and R5
    then fails on the planned route)."""
    uav_id = decision["team"][member]["uav_id"]
    edited = json.loads(json.dumps(raw))
    for uav in edited["fleet"]:
        if uav["id"] == uav_id:
            uav["battery_ratio"] = ratio
    return World.model_validate(edited)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("team") / "runs.sqlite"
    saver = sqlite_checkpointer(db)
    raw = json.loads(FLEET.read_text("utf-8"))
    fleet = World.model_validate(raw)
    split = run_task(fleet, SPLIT, context=RULES, thread_id="split", checkpointer=saver)
    assert split.status == "execute" and len(split.decision["team"]) == 2, split.decision.get("reason")
    run_task(
        _short_of_battery(raw, split.decision, 1, 0.8),
        SPLIT,
        context=RULES,
        thread_id="split-repaired",
        checkpointer=saver,
    )
    roles = run_task(fleet, ROLES, context=RULES, db=None)
    run_task(
        _short_of_battery(raw, roles.decision, 0, 0.27),
        ROLES,
        context=RULES,
        thread_id="roles-repaired",
        checkpointer=saver,
    )
    one = "Deliver a small parcel from depot_1 to hospital_1."
    assert run_task(fleet, one, context=RULES, thread_id="one-uav", checkpointer=saver).status == "execute"
    return db


@pytest.fixture(scope="module")
def client(store: Path) -> TestClient:
    app = create_app(sqlite_checkpointer(store), settings=RunSettings(model="rules", without={"memory"}))
    return TestClient(app, base_url="http://127.0.0.1")


def _values(store: Path, thread: str) -> dict[str, Any]:
    return state_values(sqlite_checkpointer(store), thread)


def _svg(page: str, kind: str) -> ET.Element:
    """The page's inline SVG of that class, parsed as XML."""
    found = re.search(rf'<svg [^>]*class="{kind}".*?</svg>', page, re.S)
    assert found, kind
    return ET.fromstring(found.group(0))


def _polylines(svg: ET.Element) -> dict[str, list[tuple[float, float]]]:
    """Each route's polyline points, by the UAV the route carries."""
    ns = "{http://www.w3.org/2000/svg}"
    return {
        g.get("data-uav"): [tuple(map(float, p.split(","))) for p in g.find(f"{ns}polyline").get("points").split()]
        for g in svg.iter(f"{ns}g")
        if g.get("class") == "route"
    }


def test_a_team_execute_draws_every_member_on_one_mission_clock(client, store):
    team = _values(store, "split")["decision"]["team"]
    page = client.get("/thread/split")
    assert page.status_code == 200
    # the side legend: one row per member, naming its sub-task, role and UAV
    rows = re.findall(r'<tr class="member" data-subtask="([^"]+)" data-uav="([^"]+)">', page.text)
    assert rows == [(m["subtask_id"], m["uav_id"]) for m in team]
    # what the drawing is given: each member's own waypoints, nothing for the decision's empty top-level route
    view = data.thread_view(sqlite_checkpointer(store), "split")
    assert [(m.uav_id, m.route.waypoints) for m in view.members] == [(m["uav_id"], m["waypoints"]) for m in team]
    assert view.final_route is None and not any(r.route for r in view.rounds)
    world_map, profile = _svg(page.text, "world-map"), _svg(page.text, "altitude-profile")
    legend = "".join(world_map.itertext())
    for m in team:
        assert f"{m['subtask_id']} {m['role']} ({m['uav_id']})" in legend
    drawn = _polylines(world_map)
    assert set(drawn) == {m["uav_id"] for m in team}  # no "decision" route, no round drawn as the team
    for m in team:  # the map is in world metres: its x is the member's own
        assert [x for x, _ in drawn[m["uav_id"]]] == pytest.approx([w[0] for w in m["waypoints"]], abs=0.06)
    colours = {g.get("data-uav"): g.find("{http://www.w3.org/2000/svg}polyline").get("stroke") for g in world_map.iter()
               if g.get("class") == "route"}  # fmt: skip
    assert len(set(colours.values())) == len(team)
    # one mission clock: the member departing later starts further right, by its departure over the axis' span
    heights = _polylines(profile)
    first, later = sorted(team, key=lambda m: m["waypoints"][0][3])[:: len(team) - 1]
    assert later["waypoints"][0][3] > first["waypoints"][0][3]
    assert heights[later["uav_id"]][0][0] > heights[first["uav_id"]][0][0]
    assert all(len(heights[m["uav_id"]]) == len(m["waypoints"]) for m in team)


def test_a_team_certificate_re_checks_and_a_swapped_member_does_not(client, store):
    page = client.post("/thread/split/recheck")
    assert 'id="recheck-result" class="ok"' in page.text
    view = data.thread_view(sqlite_checkpointer(store), "split")
    swapped = [dict(m, uav_id="uav_09") if i == 0 else m for i, m in enumerate(view.decision["team"])]
    check = data.recheck(view.model_copy(update={"decision": {**view.decision, "team": swapped}}))
    assert not check["valid"] and any("team's members" in d for d in check["differences"])


def test_a_one_uav_thread_draws_its_route_as_before(client):
    page = client.get("/thread/one-uav")
    labels = re.findall(r'<g class="route" data-label="([^"]+)"', page.text)
    assert 'id="team"' not in page.text and "member-changes" not in page.text
    assert labels == ["round 0", "decision"] * 2  # the map, then the altitude profile


def _round_block(text: str, number: int) -> str:
    """The trace's lines for one round: its line and the indented ones under it."""
    found = re.search(rf"^round {number}: .*?(?=^\S)", text, re.S | re.M)
    assert found, (number, text)
    return found.group(0)


@pytest.mark.parametrize("thread", ["split-repaired", "roles-repaired"])
def test_trace_tells_how_the_first_team_became_the_one_that_flies(capsys, store, thread):
    """Read against the decision (what flies): every member whose UAV or departure differs from the first round's
    team is named, by sub-task and UAV, on a line of a later round that ends at the decision's value."""
    values = _values(store, thread)
    assert values["status"] == "execute" and len(values["attempts"]) > 1, values["decision"].get("reason")
    code, text, _ = run_cli(capsys, "trace", "--db", str(store), "--thread", thread)
    assert code == 0
    first = _round_block(text, 0)
    departs = dict(re.findall(r"[;:] (\w+ \(uav_\d+\)) \w+, departs ([\d.]+) s", first))
    later = text[len(text.split(first)[0]) + len(first) :]
    changed = 0
    for m in values["decision"]["team"]:
        name, depart = f"{m['subtask_id']} ({m['uav_id']})", m["waypoints"][0][3]
        if name not in departs:  # a UAV the first team did not fly: reassigned to it, or added
            assert re.search(rf"  {m['subtask_id']}: uav_\d+ -> {m['uav_id']}|  {re.escape(name)} .*added", later)
            changed += 1
        elif float(departs[name]) != depart:
            assert re.search(rf"  {re.escape(name)}: departs [\d.]+ s -> {depart:g} s", later), (name, text)
            changed += 1
    assert changed, f"the repair changed no member's UAV or departure:\n{text}"
    for m in values["decision"]["team"]:  # each member certificate's margins
        assert f"  {m['subtask_id']} ({m['uav_id']}): margins: R" in text
    code, report = run_json(capsys, "trace", "--db", str(store), "--thread", thread)
    assert code == 0 and report["rounds"][0]["member_changes"][0].startswith("team: ")


def test_the_page_lists_each_rounds_member_changes(client, store):
    values = _values(store, "roles-repaired")
    page = client.get("/thread/roles-repaired").text
    shown = re.findall(r'<ul class="member-changes">(.*?)</ul>', page, re.S)
    assert len(shown) == len(values["attempts"]) and shown[0].startswith("<li>team: ")
    assert all(re.search(r"<li>t\d+(: uav_\d+ -&gt;| \(uav_\d+\))", s) for s in shown[1:])
    # the map draws the team that flies, not each round's last plan_route as if it were the round's route
    labels = set(re.findall(r'<g class="route" data-label="([^"]+)"', page))
    assert labels == {f"{m['subtask_id']} {m['role']}" for m in values["decision"]["team"]}


# --- the same page in a real browser ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def site(store: Path) -> Iterator[str]:
    yield from serve(create_app(sqlite_checkpointer(store), settings=RunSettings(model="rules", without={"memory"})))


def test_a_team_thread_in_the_browser_shows_every_member(site, browser, store, tmp_path):  # noqa: F811
    team = _values(store, "roles-repaired")["decision"]["team"]
    browser.get(f"{site}/thread/roles-repaired")
    rows = browser.find_elements(By.CSS_SELECTOR, "#team tr.member")
    assert [row.find_element(By.CSS_SELECTOR, "td.uav").text for row in rows] == [m["uav_id"] for m in team]
    for kind in ("world-map", "altitude-profile"):
        routes = browser.find_elements(By.CSS_SELECTOR, f"svg.{kind} g.route")
        assert sorted(g.get_attribute("data-uav") for g in routes) == sorted(m["uav_id"] for m in team)
        # drawn, not only present: every member's line has a visible extent on the page
        assert all(g.rect["width"] > 0 for g in routes)
    changes = browser.find_elements(By.CSS_SELECTOR, "li.round ul.member-changes li")
    assert changes[0].text.startswith("team: ") and len(changes) > 1
    _screenshot(browser, tmp_path, "inspector-team.png")
