"""The `ops` split in `bench generate / run / report`: streams with their gold (the oracle through operations mode,
and every request flown alone), a run judged from the decisions and the ledger's rows, and the report's table."""

from __future__ import annotations

import json

import pytest

from benchmark.ops_streams import OPS_SPLITS, OpsSplitSpec
from tests.support.cli import run_cli


@pytest.fixture
def tiny_split(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setitem(OPS_SPLITS, "ops_tiny", OpsSplitSpec("ops_tiny", world_split="dev_mini", streams=1, sizes=(8, 8),
                                                             emergency_share=0.3))  # fmt: skip
    return "ops_tiny"


def test_an_ops_split_generates_runs_and_reports(tiny_split, tmp_path, capsys):
    data, out = tmp_path / "data", tmp_path / "out"
    code, printed, _ = run_cli(capsys, "bench", "generate", "--split", tiny_split, "--out", str(data))
    assert code == 0 and "1 streams" in printed
    sample = json.loads((data / f"{tiny_split}.jsonl").read_text().splitlines()[0])
    assert len(sample["requests"]) == 8 and all(r["gold_ir"] for r in sample["requests"])
    gold = sample["gold"]
    assert gold["metrics"]["conflicting_intent_pairs"] == 0 and gold["metrics"]["requests"] == 8
    assert set(gold["alone_arrival_sec"]) == {r["request_id"] for r in sample["requests"]}

    code, printed, err = run_cli(capsys, "bench", "run", "--split", tiny_split, "--data", str(data), "--method",
                                 "cloudbrain_full", "--model", "rules", "--out", str(out))  # fmt: skip
    assert code == 0, err
    results = json.loads((out / "ops_results.json").read_text())["runs"][0]
    overall = results["overall"]
    assert overall["requests"] == 8 and overall["conflicting_intent_pairs"] == 0
    assert 0 < overall["served_share"] <= 1
    assert results["gold_overall"]["served_share"] == gold["metrics"]["served_share"]

    code, printed, _ = run_cli(capsys, "bench", "report", str(out))
    report = (out / "report.md").read_text()
    assert (
        code == 0 and "Operations mode" in report and "| conflicting approved intent pairs (must be 0) | 0 |" in report
    )


def test_the_ops_split_runs_only_cloudbrains_operations_mode(tiny_split, tmp_path, capsys):
    code, _, err = run_cli(capsys, "bench", "run", "--split", tiny_split, "--method", "react", "--model", "rules",
                           "--out", str(tmp_path / "out"))  # fmt: skip
    assert code == 2 and "cloudbrain_full" in err
