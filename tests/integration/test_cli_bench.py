"""`cloudbrain bench generate` end to end on a tiny run."""

from __future__ import annotations

import json

from cli.common import EXIT_USAGE
from cli.main import main


def test_generate_writes_splits_stats_and_schema(tmp_path, capsys):
    code = main(
        [
            "bench",
            "generate",
            "--split",
            "dev_mini,test_unsat",
            "--out",
            str(tmp_path),
            "--limit",
            "2",
            "--workers",
            "1",
            "--seed",
            "3",
            "--quiet",
        ]
    )
    assert code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "bench_sample.schema.json",
        "dev_mini.jsonl",
        "split_stats.json",
        "test_unsat.jsonl",
    ]
    stats = json.loads((tmp_path / "split_stats.json").read_text())
    assert stats["master_seed"] == 3 and stats["overall"]["num_samples"] == 4
    out = capsys.readouterr().out
    assert "4 samples in" in out and "dev_mini: 2 samples" in out


def test_unknown_split_is_a_usage_error(tmp_path, capsys):
    assert main(["bench", "generate", "--split", "dev_maxi", "--out", str(tmp_path)]) == EXIT_USAGE
    assert "unknown split dev_maxi" in capsys.readouterr().err
