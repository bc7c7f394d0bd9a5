"""`cloudbrain run / trace / checkpoints / graph`: an agent run from the command line and what it leaves."""

from __future__ import annotations

from tests.support.cli import DOWNTOWN, run_cli, run_json
from tests.support.graph_fixtures import answer
from tests.support.ir_fixtures import NFZ_FORGOTTEN_IR, SEED_INSTRUCTION
from tests.support.openai_stub_server import OpenAIStubServer, StubReply


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
    assert len(report["rounds"]) == run["rounds"] + 1 and report["rounds"][-1]["stage"] is None
    assert set(report["rounds"][0]) >= {"round", "stage", "error_type", "counterexample", "changes", "ir_diff"}
    code, listing = run_json(capsys, "checkpoints", "--db", db, "--thread", run["thread_id"])
    assert [c["ran"][0] for c in listing["checkpoints"] if c["ran"]][-1] == "finalize"


def test_trace_of_unknown_thread_is_a_clear_error(capsys, tmp_path):
    code, _, err = run_cli(capsys, "trace", "--db", str(tmp_path / "none.sqlite"), "--thread", "nope")
    assert code == 2 and "nope" in err


def test_graph_prints_mermaid_without_the_dropped_node(capsys):
    code, out, _ = run_cli(capsys, "graph", "--without", "simulator")
    assert code == 0 and "graph TD" in out
    assert "simulate(" not in out and "verify(" in out


def test_the_text_output_leads_with_the_outcome_and_the_trace_is_a_line_per_round(capsys, tmp_path):
    """What a person reads first: what will fly and how it was checked; then one line per round naming what the IR
    said or changed and where it failed; the printed re-check command re-checks the certificate. The model (a
    scripted server) forgets the temporary no-fly zone, then chooses the repair the counterexample offers."""
    db = str(tmp_path / "runs.sqlite")
    with OpenAIStubServer(answer(NFZ_FORGOTTEN_IR), StubReply(content='{"repair": "avoid:nfz_temp_1"}')) as server:
        code, out, _ = run_cli(
            capsys, "run", "--world", DOWNTOWN, "--instruction", SEED_INSTRUCTION, "--model", "openai:scripted",
            "--base-url", server.url, "--api-key", "EMPTY", "--without", "memory,rag", "--db", db, "--thread", "t1",
        )  # fmt: skip
        choice = server.bodies()[1]
    assert choice["response_format"]["json_schema"]["schema"]["properties"]["repair"]["enum"] == ["avoid:nfz_temp_1"]
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0].startswith("EXECUTE: uav_03 flies hospital_A -> accident_site_3, ETA ")
    assert lines[1].startswith("  checks: verified and simulated (3 stress scenario(s), seeds 0, 1, 2); 1 repair")
    recheck = f"cloudbrain certify --db {db} --thread t1 --world {DOWNTOWN}"
    assert lines[2].startswith("  certificate: trajectory sha256 ") and lines[2].endswith(f"re-check it: {recheck}")
    code, out, _ = run_cli(capsys, *recheck.split()[1:])
    assert code == 0 and out.strip() == "valid: the certificate re-checks"

    code, out, _ = run_cli(capsys, "trace", "--db", db, "--thread", "t1")
    rounds = [line for line in out.splitlines() if line.startswith("round ")]
    assert not any(line.startswith("  ir ") for line in out.splitlines())
    assert rounds[0].startswith('round 0: wrote entities.origin "hospital_A"; entities.destination "accident_site_3"')
    assert rounds[0].endswith("=> failed at verify: spec_violation (R1, t=48.8 s, robustness -40.0, nfz_temp_1)")
    assert rounds[1] == (
        'round 1: changed entities.avoid_zones +"nfz_temp_1"; verification_specs.ltl +"G !in_nfz_temp_1" => passed'
    )
    code, verbose, _ = run_cli(capsys, "trace", "--db", db, "--thread", "t1", "--verbose")
    assert '"repairs": [{"id": "avoid:nfz_temp_1"' in verbose and "  ir add /entities/avoid_zones/1: " in verbose


def test_a_run_that_is_not_executed_says_what_blocked_it_and_what_to_do(capsys, tmp_path):
    code, out, _ = run_cli(
        capsys, "run", "--world", DOWNTOWN, "--instruction", "Send a drone with a first-aid kit to the hospital.",
        "--model", "rules", "--without", "memory", "--db", str(tmp_path / "runs.sqlite"), "--thread", "t2",
    )  # fmt: skip
    assert code == 4
    headline, *rest = out.splitlines()
    assert headline.startswith(("REFUSED: ", "NEEDS AN OPERATOR: "))
    assert any(line.startswith("  what you can do: ") for line in rest)
    assert "certify" not in out
