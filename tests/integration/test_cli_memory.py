"""`cloudbrain memory` commands on a real embedded Qdrant (tmp path): seed, search, stats, and a search from
another process after seeding from the example runs."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from cli import memory as memory_cmd
from cli.common import CommandError
from cli.main import main
from memory.embeddings import Embedder
from tests.support.memory_cases import NFZ_CASE, THREE_CASES
from tests.support.paths import ROOT


def _memory_cli(*argv: str) -> tuple[int, argparse.Namespace]:
    parser = argparse.ArgumentParser(prog="cloudbrain")
    memory_cmd.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv))
    return args.run(args), args


def test_cli_seed_from_jsonl_then_search_as_json(tmp_path: Path, embedder: Embedder, capsys) -> None:
    cases_file = tmp_path / "cases.jsonl"
    cases_file.write_text("\n".join(case.model_dump_json() for case in THREE_CASES) + "\n", encoding="utf-8")
    where = ("--memory-path", str(tmp_path / "mem"))

    assert _memory_cli("memory", "seed", "--from", str(cases_file), *where)[0] == 0
    capsys.readouterr()
    code, _ = _memory_cli(
        "memory",
        "search",
        "UAV battery too weak for the job",
        "--failure-type",
        "low_battery_candidates",
        "--k",
        "2",
        "--json",
        *where,
    )
    results = json.loads(capsys.readouterr().out)["results"]

    assert code == 0
    assert [r["case"]["thread_id"] for r in results] == ["t-battery"]
    assert _memory_cli("memory", "stats", "--json", *where)[0] == 0
    assert json.loads(capsys.readouterr().out)["repair_cases"] == 3


def test_cli_seed_rejects_a_bad_record_with_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(NFZ_CASE.model_dump_json() + "\n" + json.dumps({"instruction": "x"}) + "\n", encoding="utf-8")

    with pytest.raises(CommandError, match="line 2"):
        _memory_cli("memory", "seed", "--from", str(bad), "--memory-path", str(tmp_path / "mem"))


def test_seed_from_example_runs_then_search_from_another_process(tmp_path, capsys):
    location = str(tmp_path / "seeded")
    assert main(["memory", "seed", "--memory-path", location, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["runs"] >= 5 and report["cases_added"] >= 1
    assert main(["memory", "seed", "--memory-path", location, "--json"]) == 0  # the same runs again: no duplicates
    assert json.loads(capsys.readouterr().out)["cases_added"] == 0
    search = subprocess.run(
        [sys.executable, "-m", "cli.main", "memory", "search", "the named drone's battery is too low",
         "--failure-type", "low_battery_candidates", "--memory-path", location, "--json"],
        capture_output=True, text=True, timeout=300, check=True, cwd=ROOT,
    )  # fmt: skip
    results = json.loads(search.stdout)["results"]
    assert results and all(r["case"]["failure_type"] == "low_battery_candidates" for r in results)
    assert results[0]["case"]["outcome"] == "repaired"
