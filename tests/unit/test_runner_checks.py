"""evaluation/runner.py: every stored run carries the judge's verdict on each of its sample's checks, also a run whose
method crashed or whose worker died."""

from __future__ import annotations

import json
from typing import Any

from evaluation import runner
from evaluation.methods.base import MethodRun
from evaluation.records import RunRecord
from ir.decision import Decision
from tests.support.paths import DOWNTOWN
from tools.world import load_world

CONFIG = runner.BenchConfig(samples="unused.jsonl", methods=["json_only"], models=["rules"], stress_seeds=[])


def unsat_sample() -> dict[str, Any]:
    """An UNSAT sample as an old file holds it (no `checks`): the runner's judge derives them."""
    return {
        "sample_id": "t-0",
        "label": "UNSAT",
        "world": json.loads(DOWNTOWN.read_text(encoding="utf-8")),
        "instruction": {"en": "Fly a parcel (1 kg) from hospital_A to accident_site_3 within 10 seconds."},
        "gold_ir": {
            "entities": {"origin": "hospital_A", "destination": "accident_site_3", "avoid_zones": ["nfz_temp_1"]},
            "constraints": {"deadline_sec": 10.0, "payload_kg": 1.0},
        },
        "gold_decision": {"status": "safe_refusal", "reason": "plan_route deadline_risk: arrival at 65 s is late"},
        "failure_modes": ["deadline_impossible"],
    }


def job(sample: dict[str, Any]) -> runner.Job:
    return runner.Job("key", "json_only", "rules", 0, sample)


def stored_checks(outcome: dict[str, Any]) -> dict[str, bool | None]:
    record = RunRecord.model_validate(outcome["record"])
    assert outcome["decision_row"]["requirements"] == record.checks
    return record.checks


def test_a_judged_refusal_stores_its_checks():
    sample = unsat_sample()
    run = MethodRun(decision=Decision(status="safe_refusal", reason="deadline_risk: no route arrives in 10 s"))
    outcome = runner.outcome_of(
        job(sample), CONFIG, load_world(DOWNTOWN), run, thread_id="t", error=None, seconds=1.0, proposed=0
    )
    assert stored_checks(outcome) == {
        "origin": None,
        "destination": None,
        "deadline": None,
        "payload": None,
        "avoid_zone:nfz_temp_1": None,
        "refusal_reason": True,
    }


def test_a_crashed_method_and_a_dead_worker_store_checks_that_name_no_reason():
    sample = unsat_sample()
    error = "KeyError: 'deadline'"  # an error text that happens to hold a reason's token
    crashed = MethodRun(decision=Decision(status="human_confirm", reason=f"method crashed: {error}"))
    outcome = runner.outcome_of(
        job(sample), CONFIG, load_world(DOWNTOWN), crashed, thread_id="t", error=error, seconds=1.0, proposed=0
    )
    assert stored_checks(outcome)["refusal_reason"] is False
    died = stored_checks(runner.died_outcome(job(sample), CONFIG, "killed past the deadline"))
    assert died["refusal_reason"] is False and set(died) == set(stored_checks(outcome))
    sat = {**sample, "label": "SAT", "failure_modes": []}
    assert stored_checks(runner.died_outcome(job(sat), CONFIG, "killed")) == {
        "origin": False,
        "destination": False,
        "deadline": None,
        "payload": None,
        "avoid_zone:nfz_temp_1": None,
    }
