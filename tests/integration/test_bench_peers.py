"""The peer systems in `cloudbrain bench run` on the embedded local model: every run judged and stored, the report's
main table and its tokens-and-corrections table list them (a small N keeps it short; the mechanism is the same)."""

from __future__ import annotations

from pathlib import Path

from benchmark.generator import generate_splits
from evaluation.methods import PEERS
from evaluation.store import load_records
from tests.support.cli import run_cli


def test_the_peers_run_on_the_local_model_and_reach_the_report(tmp_path: Path, capsys):
    data = tmp_path / "data"
    generate_splits(["dev_mini"], data, master_seed=91, workers=1, limit=1)
    out = tmp_path / "out"
    code, printed, err = run_cli(
        capsys, "bench", "run", "--split", "dev_mini", "--data", str(data), "--method", ",".join(PEERS),
        "--model", "local,rules", "--plan-samples", "3", "--max-new-tokens", "384", "--max-prompt-tokens", "2048",
        "--workers", "1", "--out", str(out), "--quiet",
    )  # fmt: skip
    assert code == 0, err
    for peer in PEERS:  # rules cannot answer their prompts: skipped with a line, never run
        assert f"skipped {peer} x rules" in printed
    records = load_records(out)
    assert sorted(r.method for r in records) == sorted(PEERS) and {r.model for r in records} == {"local"}
    assert all(r.llm_calls >= 1 and r.prompt_tokens > 0 for r in records)

    code, _, err = run_cli(capsys, "bench", "report", str(out))
    assert code == 0, err
    report = (out / "report.md").read_text(encoding="utf-8")
    tokens_table = report.split("## Tokens and corrections", 1)[1].split("\n## ", 1)[0]
    for peer in PEERS:
        assert f"| {peer} | local |" in tokens_table
