"""Gold labels come from the tools and hold up when the tools are run again (benchmark/check_splits.py)."""

from __future__ import annotations

import json

import pytest

from benchmark.check_splits import check_sample
from benchmark.checks import TEAM_INFEASIBLE
from benchmark.generator import DEFAULT_SEED, generate_one, jobs_for
from benchmark.gold import EXPECTED_FAILURE, PINNED_UAV_INFEASIBLE, PROVEN
from benchmark.splits import SPLITS

PER_SCENARIO = 2


@pytest.fixture(scope="module")
def lines() -> list[str]:
    """dev_mini's first samples of every scenario type (fleet among them), plus the first of test_unsat (UNSAT
    variants)."""
    picked, seen = [], dict.fromkeys(SPLITS["dev_mini"].target_shares, 0)
    for job in jobs_for(SPLITS["dev_mini"], DEFAULT_SEED):
        if seen[job.scenario_type] < PER_SCENARIO:
            seen[job.scenario_type] += 1
            picked.append(job)
    picked += jobs_for(SPLITS["test_unsat"], DEFAULT_SEED, 8)
    return [generate_one(job)[0] for job in picked]


def test_the_tools_confirm_every_gold_label(lines):
    results = [check_sample(line) for line in lines]
    problems = [(sid, p) for sid, _, found, _ in results for p in found]
    assert problems == []
    labels = {label for _, label, _, _ in results}
    assert "SAT" in labels and labels & {"UNSAT", "AMBIGUOUS"}


def test_unsat_samples_state_the_reason_built_in(lines):
    for sample in map(json.loads, lines):
        if sample["label"] != "UNSAT":
            continue
        reason = sample["source_provenance"]["built_in_reason"]
        assert sample["failure_modes"], sample["sample_id"]
        if reason and reason.startswith(f"{TEAM_INFEASIBLE}:"):  # no team: the operator's, naming what binds
            assert sample["gold_decision"]["status"] == "human_confirm"
            assert f"binding constraint: {reason.split(':')[1]}" in sample["gold_decision"]["reason"]
            continue
        proven = [m for m in sample["failure_modes"] if m.startswith(PROVEN)]
        if reason in EXPECTED_FAILURE and not proven:
            tool, error = EXPECTED_FAILURE[reason]
            assert sample["gold_decision"]["reason"].startswith(f"{tool} {error}:")
            assert sample["failure_modes"][0] == reason
        if proven:  # the gold plan failed otherwise: the prover tried every plan, and each failed
            proof = sample["source_provenance"]["proof"]
            assert proof["outcome"] == "unsat" and not proof["bound_hit"]
        if PINNED_UAV_INFEASIBLE in sample["failure_modes"]:  # only another UAV could: the operator's call
            assert sample["gold_decision"]["status"] == "human_confirm"
            assert all(uav in sample["gold_decision"]["reason"] for uav in sample["instruction"]["pinned_uavs"])
        else:
            assert sample["gold_decision"]["status"] == "safe_refusal"
        assert "R8" in sample["gold_ir"]["verification_specs"]["program_rules"] or reason is None


def test_test_unsat_holds_no_executable_task(lines):
    unsat = [json.loads(line) for line in lines if json.loads(line)["split"] == "test_unsat"]
    assert unsat and all(s["label"] in ("UNSAT", "AMBIGUOUS") and s["difficulty"] == "unsat" for s in unsat)


def _first(lines: list[str], label: str, team: bool = False) -> dict:
    return next(
        s for s in map(json.loads, lines) if s["label"] == label and bool(s["gold_decision"].get("team")) == team
    )


@pytest.mark.parametrize("team", [False, True])
def test_checker_rejects_a_sat_decision_that_flies_into_a_no_fly_zone(lines, team):
    sample = _first(lines, "SAT", team)
    zone = next(z for z in sample["world"]["no_fly_zones"] if z["active_window"] is None)
    (x0, y0), (x1, y1) = zone["polygon"][0], zone["polygon"][2]
    middle = [(x0 + x1) / 2, (y0 + y1) / 2, 60.0]
    gold = sample["gold_decision"]
    waypoints = gold["team"][-1]["waypoints"] if team else gold["waypoints"]  # a team: its last member
    half = len(waypoints) // 2
    waypoints[half] = [
        *middle,
        (waypoints[half - 1][3] + waypoints[half + 1][3]) / 2 if half else waypoints[half][3],
    ]
    _, _, problems, _ = check_sample(json.dumps(sample))
    assert any(("SAT team fails again" if team else "SAT decision fails again") in p for p in problems), problems


def test_checker_rejects_an_unsat_reason_the_tools_do_not_give(lines):
    sample = _first(lines, "UNSAT")
    sample["gold_decision"]["reason"] = "plan_route no_path: invented"
    _, _, problems, _ = check_sample(json.dumps(sample))
    assert any("but the tools say" in p for p in problems)


def test_checker_rejects_a_place_named_in_a_language_the_world_does_not_name_it_in(lines):
    sample = _first(lines, "SAT")
    entities = {e["id"]: e for e in sample["world"]["entities"]}
    mention = next(m for m in sample["instruction"]["mentions"] if m["style"] != "id" and m["id"] in entities)
    entity = entities[mention["id"]]
    assert not check_sample(json.dumps(sample))[2]
    entity["names"] = {}
    _, _, problems, _ = check_sample(json.dumps(sample))
    assert any(f"{mention['id']} is named '{mention['zh']}' in the zh request, not in the world" in p for p in problems)


def test_checker_rejects_a_refusal_labelled_sat(lines):
    sample = _first(lines, "SAT")
    sample["gold_decision"]["status"] = "safe_refusal"
    _, _, problems, _ = check_sample(json.dumps(sample))
    assert problems
