"""Split design: sizes and scenario shares, difficulty mixes, and no leakage between splits."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from benchmark.check_splits import _leakage, check_sample
from benchmark.generator import DEFAULT_SEED, derive_seed, generate_one, jobs_for
from benchmark.layouts import SEEN_LAYOUTS, UNSEEN_LAYOUTS
from benchmark.splits import (
    FLEET_SCENARIO,
    SPLITS,
    STANDARD_FLEET_SHARE,
    STANDARD_TARGET_SHARES,
    draw_difficulty,
    scenario_schedule,
)
from benchmark.tasks import SCENARIO_SHARES

REQUIRED_SIZES = {
    "dev_mini": 200,
    "train_like": 3000,
    "validation": 1000,
    "test_seen_city": 1000,
    "test_unseen_city": 1000,
    "test_stress": 1000,
}


def test_split_sizes_meet_the_plan():
    for name, size in REQUIRED_SIZES.items():
        assert SPLITS[name].size == size
    assert SPLITS["test_unsat"].size >= 200
    assert SPLITS["test_real_context_city_a"].size >= 200
    assert sum(s.size for s in SPLITS.values()) >= 7400


@pytest.mark.parametrize("name", sorted(SPLITS))
def test_schedule_hits_the_shares_exactly(name):
    spec = SPLITS[name]
    schedule = scenario_schedule(spec, np.random.default_rng(0))
    assert len(schedule) == spec.size
    for scenario, share in spec.target_shares.items():
        assert abs(schedule.count(scenario) - share * spec.size) < 1
    assert set(schedule) <= {*SCENARIO_SHARES, FLEET_SCENARIO}
    assert abs(sum(spec.target_shares.values()) - 1) < 1e-6


@pytest.mark.parametrize("name", ["dev_mini", "test_seen_city"])
def test_fleet_samples_take_other_places_and_leave_every_other_index_as_drawn_without_them(name):
    spec = SPLITS[name]
    with_fleet = scenario_schedule(spec, np.random.default_rng(7))
    without = scenario_schedule(dataclasses.replace(spec, fleet_share=0.0), np.random.default_rng(7))
    assert with_fleet.count(FLEET_SCENARIO) == round(STANDARD_FLEET_SHARE * spec.size)
    kept = [i for i, scenario in enumerate(with_fleet) if scenario != FLEET_SCENARIO]
    assert all(with_fleet[i] == without[i] for i in kept)
    # taken from every type in proportion, not from one: each type keeps about 90 % of its places
    for scenario in spec.scenario_shares:
        assert abs(with_fleet.count(scenario) - 0.9 * without.count(scenario)) <= 1


def test_standard_splits_use_the_spec_shares_and_unseen_layouts_only_where_held_out():
    for name, spec in SPLITS.items():
        if name in (
            "dev_mini",
            "train_like",
            "validation",
            "test_seen_city",
            "test_unseen_city",
        ):
            assert spec.scenario_shares == SCENARIO_SHARES and spec.fleet_share == STANDARD_FLEET_SHARE
            assert spec.target_shares == STANDARD_TARGET_SHARES
        else:
            assert not spec.fleet_share  # stress, UNSAT, real-context and free-form splits keep their own mixes
        if name == "test_unseen_city":
            assert set(spec.layouts) == set(UNSEEN_LAYOUTS)
        elif spec.data_tier == "synthetic":
            assert set(spec.layouts) <= set(SEEN_LAYOUTS) and not set(spec.layouts) & set(UNSEEN_LAYOUTS)


def test_unsat_split_draws_only_unsat_difficulty():
    rng = np.random.default_rng(1)
    assert {draw_difficulty(SPLITS["test_unsat"], rng, t) for t in SCENARIO_SHARES for _ in range(5)} == {"unsat"}


def test_seeds_differ_per_split_and_index():
    seeds = {derive_seed(DEFAULT_SEED, name, i, 0) for name in SPLITS for i in range(50)}
    assert len(seeds) == 50 * len(SPLITS)


def test_generated_samples_do_not_leak_between_splits():
    identities = {}
    for name in ("dev_mini", "validation", "test_unseen_city"):
        results = [check_sample(generate_one(job)[0]) for job in jobs_for(SPLITS[name], DEFAULT_SEED, 3)]
        assert all(not problems for _, _, problems, _ in results)
        identities[name] = [{"sample_id": sid, **ident} for sid, _, _, ident in results]
    assert _leakage(identities) == []
    assert {i["layout"] for i in identities["test_unseen_city"]} == {"mixed_city"}
    assert not any(i["layout"] == "mixed_city" for n in ("dev_mini", "validation") for i in identities[n])


def test_leakage_check_catches_a_shared_world_and_a_misplaced_layout():
    one = {
        "sample_id": "a-1",
        "world_id": "w1",
        "world_version": "v1",
        "layout": "grid_city",
    }
    two = {
        "sample_id": "b-1",
        "world_id": "w2",
        "world_version": "v1",
        "layout": "mixed_city",
    }
    problems = _leakage({"dev_mini": [one], "validation": [two]})
    assert any("world_version v1" in p for p in problems)
    assert any("mixed_city" in p for p in problems)
