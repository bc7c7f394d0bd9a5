"""`cloudbrain run / trace / checkpoints / graph`: an agent run from the command line and what it leaves."""

from __future__ import annotations

from tests.support.cli import DOWNTOWN, run_cli, run_json
from tests.support.graph_fixtures import SEED_INSTRUCTION


def test_run_json_then_trace_and_checkpoints(capsys, tmp_path):
    db = str(tmp_path / "runs.sqlite")
    code, run = run_json(
        capsys,
        "run",
        "--world",
        DOWNTOWN,
        "--instruction",
        SEED_INSTRUCTION,
        "--model",
        "rules",
        "--db",
        db,
        "--without",
        "memory",
    )
    assert code == 0 and run["status"] == "execute"
    assert run["decision"]["uav_id"] == "uav_03"
    assert all(len(wp) == 4 for wp in run["decision"]["waypoints"])
    assert run["db"] == db and run["thread_id"]
    code, report = run_json(capsys, "trace", "--db", db, "--thread", run["thread_id"])
    assert code == 0 and report["final"]["status"] == "execute"
    # Stress scenario 1's crossing traffic comes too close at the parsed 30 m floor: repairs raise it until all pass.
    failed = [(r["stage"], r["error_type"]) for r in report["rounds"][:-1]]
    assert run["rounds"] >= 1 and failed == [("simulate", "near_miss")] * run["rounds"]
    assert set(report["rounds"][0]) >= {"round", "stage", "error_type", "counterexample", "ir_diff"}
    code, listing = run_json(capsys, "checkpoints", "--db", db, "--thread", run["thread_id"])
    assert [c["ran"][0] for c in listing["checkpoints"] if c["ran"]][-1] == "finalize"


def test_trace_of_unknown_thread_is_a_clear_error(capsys, tmp_path):
    code, _, err = run_cli(capsys, "trace", "--db", str(tmp_path / "none.sqlite"), "--thread", "nope")
    assert code == 2 and "nope" in err


def test_graph_prints_mermaid_without_the_dropped_node(capsys):
    code, out, _ = run_cli(capsys, "graph", "--without", "simulator")
    assert code == 0 and "graph TD" in out
    assert "simulate(" not in out and "verify(" in out
