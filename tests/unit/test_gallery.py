"""The report's gallery of worst cases: each unsafe, wrong-place or relaxed execute drawn over its sample's world,
with the method's route, the gold route and the judge's timed violations marked; nothing else is drawn."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from evaluation.gallery import GALLERY_DIR, _markers, _tracks, gallery_section
from evaluation.records import RunRecord
from evaluation.store import run_key
from tests.support.records import judged_run
from tools.world import World

ROUTE = [[100.0, 100.0, 0.0, 0.0], [100.0, 100.0, 60.0, 10.0], [600.0, 500.0, 60.0, 60.0]]
SVG = "{http://www.w3.org/2000/svg}"


def _record(sample: int, **fields) -> RunRecord:
    return judged_run("react", sample, **({"right_place": True, "stated_kept": True} | fields))


def _results(tmp_path: Path, world: World, records: list[RunRecord]) -> Path:
    samples = tmp_path / "dev.jsonl"
    gold = {"waypoints": [[100.0, 100.0, 0.0, 0.0], [500.0, 400.0, 60.0, 50.0]], "uav_id": "uav_03"}
    lines = [{"sample_id": r.sample_id, "world": world.model_dump(mode="json"), "gold_decision": gold} for r in records]
    samples.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    (tmp_path / "config.json").write_text(json.dumps({"samples": str(samples)}), encoding="utf-8")
    violation = {"rule": "R1", "time_sec": 35.0, "entity": "nfz_temp_1", "detail": "entered nfz_temp_1"}
    traces = [
        {
            "run_key": run_key(r.method, r.model, r.sample_id, r.repeat),
            "decision": {"status": "execute", "uav_id": "uav_03", "waypoints": ROUTE},
            "judgement": {"violations": [violation] if r.judged_violations else []},
        }
        for r in records
    ]
    (tmp_path / "traces.jsonl").write_text("".join(json.dumps(t) + "\n" for t in traces), encoding="utf-8")
    return tmp_path


def test_each_worst_case_is_drawn_with_both_routes_and_its_violation(tmp_path, downtown):
    records = [
        _record(1, judged_success=False, judged_violations=["R1"]),
        _record(2, judged_success=False, right_place=False),
        _record(3, judged_success=False, stated_kept=False),
        _record(4),  # a success: not a worst case
        _record(5, status="human_confirm", right_place=None, stated_kept=None),
    ]
    section = gallery_section(records, _results(tmp_path, downtown, records))
    drawn = sorted(p.name for p in (tmp_path / GALLERY_DIR).iterdir())
    assert [name.rsplit("-", 1)[0] for name in drawn] == [f"react_m_s{n}_0" for n in (1, 2, 3)]
    for name in drawn:
        assert f"]({GALLERY_DIR}/{name})" in section
    unsafe = ET.parse(tmp_path / GALLERY_DIR / drawn[0]).getroot()
    labels = {g.get("data-label") for g in unsafe.iter(f"{SVG}g") if g.get("class") == "route"}
    assert labels == {"react", "gold"}
    [marker] = [g for g in unsafe.iter(f"{SVG}g") if (g.get("class") or "").startswith("counterexample")]
    assert marker.get("data-rule") == "R1"
    assert "Executes judged unsafe (1)" in section and "Executes at a wrong place (1)" in section


def test_a_folder_without_a_bench_run_gets_no_gallery_and_says_why(tmp_path):
    section = gallery_section([_record(1, judged_violations=["R1"])], tmp_path)
    assert "no gallery" in section and not (tmp_path / GALLERY_DIR).exists()


def test_a_team_run_is_drawn_member_by_member_with_its_violation_on_its_member(tmp_path, downtown):
    record = _record(1, judged_success=False, judged_violations=["R2"])
    folder = _results(tmp_path, downtown, [record])
    other = [[300.0, 100.0, 0.0, 0.0], [300.0, 100.0, 60.0, 10.0], [300.0, 600.0, 60.0, 60.0]]
    team = [
        {"subtask_id": "t1", "role": "deliver", "uav_id": "uav_03", "waypoints": ROUTE},
        {"subtask_id": "t2", "role": "film", "uav_id": "uav_05", "waypoints": other},
    ]
    violation = {"rule": "R2", "time_sec": 35.0, "entity": "intruder_1", "member": "t2:uav_05", "detail": "near miss"}
    trace = {
        "run_key": run_key(record.method, record.model, record.sample_id, record.repeat),
        "decision": {"status": "execute", "uav_id": None, "waypoints": [], "team": team},
        "judgement": {"violations": [violation]},
    }
    (folder / "traces.jsonl").write_text(json.dumps(trace) + "\n", encoding="utf-8")
    gallery_section([record], folder)
    [drawn] = (folder / GALLERY_DIR).iterdir()
    root = ET.parse(drawn).getroot()
    labels = {g.get("data-label") for g in root.iter(f"{SVG}g") if g.get("class") == "route"}
    assert labels == {"react t1 deliver", "react t2 film", "gold"}
    [marker] = _markers([violation], _tracks(trace["decision"]))
    assert (marker.x, marker.y) == (300.0, 100.0 + 500.0 * (35.0 - 10.0) / 50.0)  # on t2's leg, not t1's
    # a one-UAV execute on a fleet sample: the judge names it "mission:<uav>", and its marker stays on its route
    one_uav = {"status": "execute", "uav_id": "uav_03", "waypoints": ROUTE}
    [marker] = _markers([{**violation, "member": "mission:uav_03"}], _tracks(one_uav))
    assert (marker.x, marker.y) == (100.0 + 500.0 * 25.0 / 50.0, 100.0 + 400.0 * 25.0 / 50.0)
