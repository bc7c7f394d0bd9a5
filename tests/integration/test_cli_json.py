"""`--json` on every command but the two servers (README: "Every command but `mcp` and `ui` takes `--json`"), and
the bench chain the README shows: `bench generate --out D`, then `bench run --data D` reads those samples (it
generated its own before the README linked them), then `bench report`, each with its JSON summary."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from cli.main import ALL, build_parser
from tests.support.cli import DOWNTOWN, run_json

SERVERS = {"mcp", "ui"}  # they serve a protocol on stdio / HTTP until stopped: nothing to print as JSON


def _leaf_commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()):
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subparsers:
        yield prefix, parser
        return
    for name, sub in subparsers[0].choices.items():
        yield from _leaf_commands(sub, (*prefix, name))


def test_every_command_but_the_servers_takes_json():
    commands = dict(_leaf_commands(build_parser(ALL)))
    assert {("bench", "methods"), ("graph",), ("schemas",), ("render",), ("ops",)} <= set(commands)
    without = {
        " ".join(name) for name, p in commands.items() if not any("--json" in a.option_strings for a in p._actions)
    }
    assert without == SERVERS


def test_graph_json_lists_the_drawn_nodes_and_edges(capsys):
    code, graph = run_json(capsys, "graph", "--without", "simulator")
    assert code == 0
    assert "simulate" not in graph["nodes"] and {"verify", "repair", "fallback"} <= set(graph["nodes"])
    assert not any(node.startswith("__error_handler__") for node in graph["nodes"])
    assert {"source": "__start__", "target": "retrieve", "conditional": False} in graph["edges"]
    assert all(e["source"] in graph["nodes"] and e["target"] in graph["nodes"] for e in graph["edges"])


def test_bench_methods_json_names_each_method_with_its_models(capsys):
    from evaluation.methods import METHOD_NAMES

    code, listed = run_json(capsys, "bench", "methods")
    assert code == 0 and [m["name"] for m in listed["methods"]] == list(METHOD_NAMES)
    assert all(m["summary"] and m["models"] for m in listed["methods"])


def test_bench_run_reads_the_samples_bench_generate_wrote(tmp_path, capsys):
    data, out = tmp_path / "bench", tmp_path / "results"
    code, generated = run_json(
        capsys, "bench", "generate", "--split", "dev_mini", "--out", str(data), "--limit", "2", "--workers", "1",
        "--quiet",
    )  # fmt: skip
    assert code == 0 and generated["samples"] == 2
    assert generated["splits"]["dev_mini"]["file"] == str(data / "dev_mini.jsonl")
    written = (data / "dev_mini.jsonl").read_text(encoding="utf-8").splitlines()

    code, ran = run_json(
        capsys, "bench", "run", "--split", "dev_mini", "--data", str(data), "--method", "cloudbrain_full",
        "--model", "rules", "--workers", "1", "--memory-path", str(tmp_path / "memory"), "--out", str(out), "--quiet",
    )  # fmt: skip
    assert code == 0 and ran["samples"] == str(data / "dev_mini.jsonl") and ran["ran"] == 2
    assert not (out / "data").exists()  # nothing generated of its own: the run read what generate wrote
    from evaluation.store import load_records

    assert {r.sample_id for r in load_records(out)} == {json.loads(line)["sample_id"] for line in written}

    code, reported = run_json(capsys, "bench", "report", str(out))
    assert code == 0 and reported["runs"] == 2 and Path(reported["report"]) == out / "report.md"
    # the per-stage and per-check numbers travel in the JSON too
    stages = reported["stages"][0]
    assert stages["method"] == "cloudbrain_full" and stages["grounding_runs"] + stages["planning_runs"] > 0
    assert reported["checks"][0]["method"] == "cloudbrain_full" and reported["unknown"] == []


def test_schemas_and_render_json_name_the_files_written(tmp_path, capsys):
    code, schemas = run_json(capsys, "schemas", "--out", str(tmp_path / "schemas"))
    assert code == 0 and sorted(Path(p).name for p in schemas["written"]) == sorted(
        p.name for p in (tmp_path / "schemas").iterdir()
    )
    run_file = tmp_path / "run.json"
    run_file.write_text(json.dumps({"status": "safe_refusal", "decision": {}}), encoding="utf-8")
    code, rendered = run_json(
        capsys, "render", "--run", str(run_file), "--world", DOWNTOWN, "--out", str(tmp_path / "m.svg")
    )
    assert code == 0 and rendered == {"written": str(tmp_path / "m.svg")} and (tmp_path / "m.svg").exists()
