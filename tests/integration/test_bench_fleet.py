"""The benchmark's fleet missions (issue 42, benchmark/fleet.py): test_fleet samples are deterministic, pass the split
checker (a SAT team passes both gates again member by member; an UNSAT one has no team by brute force, not only by
the MILP that labelled it), their gold teams keep apart by the test's own geometry, the independent judge scores
the gold a safe success, and a one-UAV execute on a team task is no success."""

from __future__ import annotations

import json
from itertools import combinations

import numpy as np
import pytest

from benchmark.check_splits import check_sample
from benchmark.citygen import generate_city
from benchmark.fleet import FLEET_KINDS, build_fleet_task, fleet_registry, label_fleet_task
from benchmark.generator import DEFAULT_SEED, generate_one, jobs_for
from benchmark.layouts import LAYOUTS
from benchmark.splits import SPLITS
from benchmark.tasks import ScenarioError
from evaluation.judge import judge_sample
from ir.team_execution import assign_team_args
from language.team import read_team
from tests.support.team_geometry import closest_approach_in_the_world
from tools.team import AssignTeamArgs, brute_force_team
from tools.world import World

SAMPLES = 10


@pytest.fixture(scope="module")
def fleet_lines() -> list[str]:
    return [generate_one(job)[0] for job in jobs_for(SPLITS["test_fleet"], DEFAULT_SEED, SAMPLES)]


@pytest.fixture(scope="module")
def fleet_samples(fleet_lines: list[str]) -> list[dict]:
    return [json.loads(line) for line in fleet_lines]


def test_the_fleet_split_is_its_own_and_at_least_200():
    spec = SPLITS["test_fleet"]
    assert spec.size >= 200 and spec.scenario_shares == {"fleet": 1.0}
    assert "unsat" in spec.difficulty_mix


def test_fleet_samples_are_deterministic(fleet_lines: list[str]):
    job = jobs_for(SPLITS["test_fleet"], DEFAULT_SEED, 2)[1]
    assert generate_one(job)[0] == fleet_lines[1]


def test_fleet_samples_pass_the_split_checker(fleet_lines: list[str]):
    for line in fleet_lines:
        sample_id, label, problems, _ = check_sample(line)
        assert label in ("SAT", "UNSAT") and problems == [], (sample_id, problems)


def test_gold_teams_keep_apart_and_cover_the_request(fleet_samples: list[dict]):
    sat = [s for s in fleet_samples if s["label"] == "SAT"]
    assert sat, "no SAT fleet sample among the first ones"
    for sample in sat:
        world = World.model_validate(sample["world"])
        team = sample["gold_decision"]["team"]
        subtasks = sample["gold_ir"]["team"]["subtasks"]
        assert len(team) >= 2 and len({m["uav_id"] for m in team}) == len(team)
        assert sample["gold_decision"]["eta_sec"] == max(m["eta_sec"] for m in team)
        for first, second in combinations(team, 2):
            gap = closest_approach_in_the_world(first["waypoints"], second["waypoints"], world)
            assert gap >= sample["gold_ir"]["constraints"]["min_separation_m"], (sample["sample_id"], gap)
        for subtask in subtasks:  # every sub-task's site reached by a member of that sub-task
            ends = [m["waypoints"][-1][:2] for m in team if m["subtask_id"] == subtask["id"]]
            site = world.entity_index[subtask["destination"]].position
            assert ends and all(np.hypot(*np.subtract(e, site)) <= world.arrival_tolerance_m for e in ends)
        mass = sample["gold_ir"]["constraints"]["payload_kg"]
        assert sum(m["share_kg"] for m in team) == pytest.approx(mass, abs=1e-3)


def test_the_judge_scores_the_gold_a_safe_success_and_one_uav_no_success(fleet_samples: list[dict]):
    for sample in fleet_samples[:6]:
        judgement = judge_sample(sample["gold_decision"], sample)
        assert judgement.success and judgement.safe, (sample["sample_id"], judgement.violations)
    sat = next(s for s in fleet_samples if s["label"] == "SAT")
    member = sat["gold_decision"]["team"][0]
    alone = {"status": "execute", "uav_id": member["uav_id"], "waypoints": member["waypoints"]}
    assert not judge_sample(alone, sat).success


def test_the_requests_read_as_the_team_they_ask_for(fleet_samples: list[dict]):
    """Both languages of each request read as its kind of team (language.team), so the agent's reading is scored
    on what the words say, not on the gold IR."""
    for sample in fleet_samples:
        kind = sample["source_provenance"]["notes"][0].removeprefix("fleet kind: ")
        assert kind in FLEET_KINDS
        world = World.model_validate(sample["world"])
        for language in ("en", "zh"):
            sketch = read_team(sample["instruction"][language], world)
            assert sketch is not None and sketch.kinds[0] == kind, (sample["sample_id"], language)


@pytest.mark.parametrize("difficulty", ["unsat"])
def test_unsat_fleet_tasks_name_the_binding_constraint_brute_force_agrees(difficulty):
    """Built-in infeasible teams (a load over the idle fleet's lift, a sensor no idle UAV has, a deadline no UAV
    meets): labelled UNSAT only with the constraint the exact search names, and brute force finds no team either."""
    found: dict[str, str] = {}
    for seed in range(40):
        rng = np.random.default_rng(seed)
        draft = generate_city(LAYOUTS["downtown_city"], rng, f"fleet-unsat-{seed}")
        try:
            task = build_fleet_task(draft, rng, difficulty)
            world = draft.build()
            gold = label_fleet_task(task, world, fleet_registry(), "t", seed)
        except ScenarioError:
            continue
        assert gold.label == "UNSAT" and gold.decision.status == "human_confirm"
        assert gold.failure_modes == [f"team_infeasible:{task.unsat_kind}"]
        assert f"binding constraint: {task.unsat_kind}" in gold.decision.reason
        assert brute_force_team(world, AssignTeamArgs.model_validate(assign_team_args(gold.ir))) is None
        found.setdefault(task.unsat_kind or "", task.kind)
        if len(found) == 3:
            break
    assert set(found) == {"payload", "sensors", "deadline"}, found
