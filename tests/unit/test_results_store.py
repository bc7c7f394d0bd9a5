"""The results database writes one run all or nothing: a run is done exactly when its `runs` row exists, so a
failure (or a kill) part-way through its rows must leave no `runs` row behind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmark.checks import Check
from evaluation import store
from evaluation.records import RunRecord


def _outcome(sample_id: str, attempts: list[dict]) -> dict:
    record = RunRecord(
        sample_id=sample_id,
        method="cloudbrain_full",
        model="rules",
        repeat=0,
        split="dev_mini",
        scenario_type="delivery",
        difficulty="easy",
        label="SAT",
        status="execute",
        judged_success=True,
    )
    return {
        "run_key": store.run_key("cloudbrain_full", "rules", sample_id, 0),
        "record": record.model_dump(mode="json"),
        "decision_row": {"status": "execute", "uav_id": "uav_1"},
        "attempts": attempts,
        "tool_calls": [{"tool": "plan_route", "ok": True}],
    }


def test_a_run_whose_rows_fail_part_way_leaves_nothing(tmp_path: Path):
    db = store.open_db(tmp_path)
    store.write_run(db, _outcome("s0", [{"round": 0, "verdict": "fail"}, {"round": 1, "verdict": "pass"}]))
    # The same round twice breaks the attempts primary key after runs and decisions were inserted.
    duplicated = [{"round": 0, "verdict": "fail"}, {"round": 0, "verdict": "pass"}]
    with pytest.raises(Exception, match="UNIQUE"):
        store.write_run(db, _outcome("s1", duplicated))

    assert store.done_keys(db) == {store.run_key("cloudbrain_full", "rules", "s0", 0)}
    for table in ("decisions", "attempts", "tool_calls"):
        keys = {row["run_key"] for row in db[table].rows}
        assert keys == {store.run_key("cloudbrain_full", "rules", "s0", 0)}, table
    assert [r.sample_id for r in store.load_records(tmp_path)] == ["s0"]


def test_checks_round_trip_and_rows_from_before_checks_still_load(tmp_path: Path):
    db = store.open_db(tmp_path)
    old = _outcome("s0", [])
    old_record = dict(old["record"])
    for field in ("checks", "sample_checks"):  # a row written before these fields existed
        old_record.pop(field)
    db["runs"].insert({"run_key": old["run_key"], "record": json.dumps(old_record)}, pk="run_key")
    new = _outcome("s1", [])
    check = Check(id="via:1:wp_3", kind="via", target="wp_3", requirement="passes wp_3 first")
    new["record"] |= {"checks": {"via:1:wp_3": False, "deadline": None}, "sample_checks": [check.model_dump()]}
    store.write_run(db, new)

    before, after = store.load_records(tmp_path)
    assert (before.checks, before.sample_checks) == ({}, [])
    assert after.checks == {"via:1:wp_3": False, "deadline": None} and after.sample_checks == [check]
    row = db["runs"].get(new["run_key"])
    assert json.loads(row["checks"]) == {"deadline": None, "via:1:wp_3": False}  # a column for SQL too
