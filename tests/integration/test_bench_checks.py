"""The checks of real generated samples (benchmark/checks.py): each gold decision keeps every check it can keep, and
the judge scores them on the samples as written (evaluation/judge.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchmark.checks import GOAL_KINDS, REFUSAL_REASON, derive_checks
from benchmark.generator import DEFAULT_SEED, generate_one, jobs_for
from benchmark.sample import Sample
from benchmark.splits import SPLITS
from evaluation.judge import judge_sample


@pytest.fixture(scope="module")
def samples() -> list[dict[str, Any]]:
    """dev_mini's first sample of every scenario type (a fleet one among them), and the first of test_unsat (its UNSAT / AMBIGUOUS kinds)."""
    picked, seen = [], set()
    for job in jobs_for(SPLITS["dev_mini"], DEFAULT_SEED):
        if job.scenario_type not in seen:
            seen.add(job.scenario_type)
            picked.append(job)
    assert seen == set(SPLITS["dev_mini"].target_shares)  # fleet samples too
    picked += jobs_for(SPLITS["test_unsat"], DEFAULT_SEED, 10)
    return [json.loads(generate_one(job)[0]) for job in picked]


def test_every_gold_decision_keeps_every_check_it_can_keep(samples):
    labels = set()
    for sample in samples:
        verdict = judge_sample(sample["gold_decision"], sample, stress_seeds=())
        labels.add(sample["label"])
        assert verdict.requirements, sample["sample_id"]
        broken = {check: kept for check, kept in verdict.requirements.items() if kept is False}
        if sample["label"] == "UNKNOWN":  # its gold flies nothing: the flight asked for did not happen
            assert set(broken) == {c.id for c in derive_checks(sample) if c.kind in GOAL_KINDS}
            continue
        assert broken == {}, (sample["sample_id"], broken, sample["gold_decision"]["reason"])
        if sample["label"] in ("UNSAT", "AMBIGUOUS"):
            assert verdict.requirements[REFUSAL_REASON] is True
        elif sample["gold_decision"]["status"] == "execute":
            unscored = {check for check, kept in verdict.requirements.items() if kept is None}
            assert unscored <= {"battery_reserve"}, sample["sample_id"]  # no stress seed flown here
    assert {"SAT", "UNSAT", "AMBIGUOUS"} <= labels


def test_checks_are_the_same_from_the_jsonl_dict_and_the_sample_model_and_as_stored(samples):
    for sample in samples:
        derived = derive_checks(sample)
        assert derived == derive_checks(Sample.model_validate(sample))
        assert len({c.id for c in derived}) == len(derived)
        if sample.get("checks"):  # a generator that writes them writes these
            assert [c.model_dump(mode="json") for c in derived] == sample["checks"]


def test_a_gold_flight_on_another_sample_breaks_that_samples_goals(samples):
    """The checks come from the task, not the answer: a SAT sample's gold flight flown on another SAT sample of
    another world does not start or end where that one asks."""
    flights = [s for s in samples if s["label"] == "SAT" and s["gold_decision"]["status"] == "execute"]
    first, second = flights[0], flights[1]
    moved = {**first["gold_decision"], "uav_id": second["gold_decision"]["uav_id"]}
    verdict = judge_sample(moved, second, stress_seeds=())
    goals = [kept for check, kept in verdict.requirements.items() if check in ("origin", "destination")]
    assert goals and False in goals
