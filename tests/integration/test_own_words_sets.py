"""The hand-written request sets (tests/data/own_words_*.jsonl: written by people who read only the example
worlds), through the agent with `rules`: no execute goes against what a request says, and every demand to break a
rule is refused with the rule named and the words quoted. Judged by evaluation.own_words from the world's geometry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.own_words import broken_checks, run, unknown_ids
from tools.world import World, load_world

DATA = Path(__file__).resolve().parents[1] / "data"
SETS = ["own_words_second_pass.jsonl", "own_words_review.jsonl"]


def _requests(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("name", SETS)
def test_no_execute_goes_against_the_words(name):
    rows = run(_requests(name), "rules")
    against = [(r["id"], r["broken"], r["reason"][:120]) for r in rows if r["verdict"] == "execute against the words"]
    assert against == []
    off = [r["id"] for r in rows if r["verdict"].startswith("asked, but") or r["verdict"] == "error"]
    assert off == []


@pytest.mark.parametrize("name", SETS)
def test_every_check_names_ids_the_world_has(name):
    for request in _requests(name):
        assert unknown_ids(load_world(request["world"]), request["checks"]) == [], request["id"]


def test_the_judge_catches_an_excluded_uav_a_visited_keep_out_place_and_a_misread_payload(downtown: World):
    route = [[100.0, 100.0, 40.0, 0.0], [250.0, 400.0, 40.0, 40.0]]  # hospital_A -> police_2
    checks = {"origin": "hospital_A", "destination": "police_2", "not_uav": ["uav_03"], "payload_kg": 1.36}
    decision = {"uav_id": "uav_03", "waypoints": route}
    broken = broken_checks(downtown, checks, decision, {"constraints": {"payload_kg": 3.0}})
    assert any("excludes" in b for b in broken) and any("planned for 3 kg" in b for b in broken)
    via_school = [[100.0, 100.0, 40.0, 0.0], [500.0, 425.0, 40.0, 50.0], [650.0, 420.0, 40.0, 70.0]]
    avoid = {"origin": "hospital_A", "destination": "accident_site_3", "avoid": ["school_2"]}
    assert any(
        "school_2" in b for b in broken_checks(downtown, avoid, {"uav_id": "uav_09", "waypoints": via_school}, None)
    )
