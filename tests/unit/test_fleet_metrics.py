"""Fleet missions in the results (issue 42): what a run on a fleet sample stores (records.FleetRun, runner.fleet_run),
the team metrics (metrics.fleet_summary) and the report's "Fleet missions" table, shown only when such runs exist."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmark.checks import Check
from evaluation import store
from evaluation.judge import judge_sample
from evaluation.metrics import fleet_summary, ir_carries, summarize
from evaluation.records import FleetRun, RunRecord
from evaluation.report import fleet_rows, report_rows, write_report
from evaluation.runner import fleet_run
from tests.support.records import judged_run as run
from tests.unit.test_judge_fleet import SPLIT, split_team


def fleet(**fields) -> FleetRun:
    return FleetRun(**fields)


def fleet_runs() -> list[RunRecord]:
    """Hand-counted runs of one method: 4 on decided fleet samples, one on an UNKNOWN one, one not on a fleet one."""
    return [
        # a team that did it: 20 % slower than gold, one UAV more
        run("cloudbrain_full", 1, fleet=fleet(gold_makespan_sec=100.0, gold_uavs=2, makespan_sec=120.0, uavs_used=3,
                                               members_flown=3)),
        # a team with a member too close to another: unsafe, not a success
        run("cloudbrain_full", 2, ok=False, judged_violations=["R2"],
            fleet=fleet(gold_makespan_sec=100.0, gold_uavs=2, makespan_sec=90.0, uavs_used=2, members_flown=2,
                        members_violating=2, member_violations=1)),
        # refusing an UNSAT fleet task: a success
        run("cloudbrain_full", 3, label="UNSAT", status="human_confirm", ok=False, fleet=fleet()),
        # flying an UNSAT fleet task with one overloaded UAV: R8 and payload
        run("cloudbrain_full", 4, label="UNSAT", ok=False, judged_violations=["payload"],
            fleet=fleet(makespan_sec=80.0, uavs_used=1, members_flown=1, members_violating=1, member_violations=1)),
        run("cloudbrain_full", 5, label="UNKNOWN", fleet=fleet(members_flown=5, members_violating=5)),
        run("cloudbrain_full", 6),
    ]  # fmt: skip


def test_fleet_summary_matches_hand_counts():
    summary = fleet_summary(fleet_runs())
    assert summary["runs"] == 4 and summary["samples"] == 4
    assert summary["team_success"] == pytest.approx(2 / 4)  # s1, and the refusal s3
    assert summary["makespan_ratio"] == pytest.approx(1.2) and summary["uavs_vs_gold"] == 1.0  # s1 only
    assert summary["compared"] == 1
    assert summary["members_flown"] == 6 and summary["member_violation_rate"] == pytest.approx(3 / 6)
    assert summary["unsafe_executes"] == 2  # s2 (R2), s4 (R8 and payload)


def test_fleet_summary_without_a_comparable_run_is_none():
    summary = fleet_summary([run("react", 1, ok=False, status="safe_refusal", fleet=fleet(gold_uavs=2))])
    assert summary["team_success"] == 0.0
    assert summary["makespan_ratio"] is None and summary["member_violation_rate"] is None


def test_summarize_adds_fleet_only_for_runs_on_fleet_samples():
    plain = [run("cloudbrain_full", 6)]
    assert "fleet" not in summarize(plain)
    assert summarize(fleet_runs())["fleet"]["runs"] == 4


def test_a_record_without_fleet_dumps_as_before_and_one_with_it_round_trips(tmp_path: Path):
    assert "fleet" not in run("m", 1).model_dump(mode="json")
    with_fleet = run("m", 2, fleet=fleet(gold_uavs=2, uavs_used=2, members_flown=2))
    db = store.open_db(tmp_path)
    for i, record in enumerate((run("m", 1), with_fleet)):
        store.write_run(
            db,
            {"run_key": f"k{i}", "record": record.model_dump(mode="json"), "decision_row": {"status": "execute"}},
        )
    loaded = store.load_records(tmp_path)
    assert [r.fleet for r in loaded] == [None, with_fleet.fleet]
    old = run("m", 3).model_dump(mode="json")  # a record stored before fleet missions: no key at all
    assert RunRecord.model_validate_json(json.dumps(old)).fleet is None


def test_report_has_a_fleet_table_only_with_fleet_runs(tmp_path: Path):
    plain = write_report([run("cloudbrain_full", 6), run("react", 6, ok=False)], tmp_path / "plain")
    assert "Fleet missions" not in plain.read_text(encoding="utf-8")
    assert report_rows([run("cloudbrain_full", 6)])["fleet"] == []
    records = [*fleet_runs(), run("react", 1, ok=False, status="safe_refusal", fleet=fleet(gold_uavs=2))]
    (react,) = [row for row in fleet_rows(records) if row["method"] == "react"]
    assert react["samples"] == 1 and react["team_success"] == 0.0
    text = write_report(records, tmp_path / "fleet").read_text(encoding="utf-8")
    section = text.split("## Fleet missions")[1].split("\n## ")[0]
    row = next(line for line in section.splitlines() if line.startswith("| cloudbrain_full"))
    assert [cell.strip() for cell in row.strip("|").split("|")] == [
        "cloudbrain_full", "m", "4", "50.0", "1.20", "1.00", "1", "50.0", "2"
    ]  # fmt: skip


def test_fleet_run_reads_the_gold_team_and_the_judged_one():
    gold = split_team(cross=False)
    sample = {**SPLIT, "gold_decision": gold.model_dump(mode="json")}
    verdict = judge_sample(split_team(cross=True, second_departs=60.0), sample, stress_seeds=())
    stored = fleet_run(verdict, sample)
    assert stored.gold_uavs == 2 and stored.gold_makespan_sec == pytest.approx(gold.eta_sec)
    assert stored.makespan_sec == pytest.approx(verdict.team.makespan_sec) and stored.makespan_sec > gold.eta_sec
    assert stored.members_flown == 2 and stored.members_violating == 0
    crossing = fleet_run(judge_sample(split_team(cross=True), sample, stress_seeds=()), sample)
    assert crossing.members_violating == 2 and crossing.member_violations == 2
    assert fleet_run(verdict, {**sample, "scenario_type": "normal_delivery", "gold_ir": {}}) is None


def test_an_ir_carries_a_fleet_site_and_the_pinned_uavs_on_its_sub_tasks():
    ir = {
        "entities": {"origin": "warehouse_1", "destination": "vertiport_1"},
        "constraints": {"payload_kg": 8.0},
        "team": {"subtasks": [{"id": "a", "destination": "flood_site_1", "uavs": ["uav_01"]}]},
    }
    assert ir_carries(Check(id="site:flood_site_1", kind="site", target="flood_site_1", requirement="r"), ir, [])
    assert not ir_carries(Check(id="site:x", kind="site", target="x", requirement="r"), ir, [])
    assert ir_carries(Check(id="pinned_uav", kind="pinned_uav", target=["uav_01"], requirement="r"), ir, [])
    assert not ir_carries(Check(id="pinned_uav", kind="pinned_uav", target=["uav_02"], requirement="r"), ir, [])
    assert ir_carries(Check(id="team_payload", kind="team_payload", target=8.0, requirement="r"), ir, [])
    assert not ir_carries(Check(id="team_payload", kind="team_payload", target=9.0, requirement="r"), ir, [])
