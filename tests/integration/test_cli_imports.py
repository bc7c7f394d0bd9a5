"""What a command loads (issue 39): `--help` and a mistyped command load no third-party stack at all, and the
read-only commands never load the model stacks (torch, transformers, llama.cpp, Qdrant, the OpenAI client, the
embedding runtime). Each command runs in a fresh interpreter, which reports its sys.modules at exit."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

from cli.main import ALL, COMMAND_MODULES, build_parser
from tests.support.cli import DOWNTOWN
from tests.support.ir_fixtures import GOOD_IR, SEED_INSTRUCTION
from tests.support.paths import ROOT

MODEL_STACKS = (
    "torch",
    "transformers",
    "sentence_transformers",
    "llama_cpp",
    "qdrant_client",
    "langchain_openai",
    "openai",
    "onnxruntime",
)
# `--help` builds the parser from the command modules' tables only
ANY_STACK = (*MODEL_STACKS, "langgraph", "langchain_core", "pydantic", "numpy", "shapely", "rtamt", "pyproj")

REPORTER = """
import atexit, json, sys
report = sys.argv[1]
atexit.register(lambda: open(report, "w").write(json.dumps(sorted(sys.modules))))
from cli.main import entry  # the `cloudbrain` program itself: its warm-process client included
sys.argv = [sys.argv[0], *sys.argv[2:]]
sys.exit(entry())
"""


def _loaded(tmp_path, *argv: str) -> tuple[int, set[str]]:
    report = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", REPORTER, str(report), *argv], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    modules = set(json.loads(report.read_text()))
    return done.returncode, {name.split(".")[0] for name in modules} | modules


@pytest.mark.parametrize("argv", [("--help",), ("no-such-command",), ()])
def test_the_parser_alone_loads_no_stack(tmp_path, argv):
    code, loaded = _loaded(tmp_path, *argv)
    assert code in (0, 2)
    assert not loaded & set(ANY_STACK), sorted(loaded & set(ANY_STACK))


@pytest.fixture(scope="module")
def demo_thread(tmp_path_factory) -> tuple[str, str]:
    db = str(tmp_path_factory.mktemp("runs") / "runs.sqlite")
    return db, _make_thread(db)


def _make_thread(db: str) -> str:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "cli.main",
            "run",
            "--world",
            DOWNTOWN,
            "--instruction",
            SEED_INSTRUCTION,
            "--model",
            "rules",
        ]
        + ["--db", db, "--without", "memory", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["thread_id"]


@pytest.mark.parametrize(
    "argv",
    [
        ("trace", "--db", "{db}", "--thread", "{thread}"),
        ("checkpoints", "--db", "{db}", "--thread", "{thread}"),
        ("show", "--db", "{db}", "--thread", "{thread}", "ir"),
        ("validate", "--world", DOWNTOWN, "--ir", "{ir}"),
        ("zones", "import", "--world", DOWNTOWN, "--file", str(ROOT / "examples/zones/downtown_ed269.json"))
        + ("--mission-start", "2026-06-03T09:00:00Z", "--out", "{out}"),
        ("certify", "--db", "{db}", "--thread", "{thread}", "--world", DOWNTOWN),
        (
            "export",
            "--db",
            "{db}",
            "--thread",
            "{thread}",
            "--world",
            DOWNTOWN,
            "--format",
            "geojson",
            "--out",
            "{out}",
        ),
        ("zones", "export", "--world", DOWNTOWN, "--format", "geojson", "--out", "{out}"),
        ("schemas", "--out", "{out}"),
        ("graph",),
        ("run", "--help"),
    ],
    ids=lambda argv: " ".join(word for word in argv if not word.startswith(("{", "-", "/"))),
)
def test_read_only_commands_load_no_model_stack(tmp_path, demo_thread, argv):
    db, thread = demo_thread
    (tmp_path / "ir.json").write_text(json.dumps(GOOD_IR), encoding="utf-8")
    filled = [word.format(db=db, thread=thread, out=tmp_path / "out", ir=tmp_path / "ir.json") for word in argv]
    code, loaded = _loaded(tmp_path, *filled)
    assert code == 0
    assert not loaded & set(MODEL_STACKS), sorted(loaded & set(MODEL_STACKS))


def test_every_registered_command_is_listed_with_its_help():
    """main lists the commands from the modules' COMMANDS tables; a command registered but not listed would be
    unreachable, and a listed help that differs from the registered one would show two texts."""
    parser = build_parser(ALL)
    registered = {name for action in parser._subparsers._group_actions for name in action.choices}
    helps = {a.dest: a.help for action in parser._subparsers._group_actions for a in action._choices_actions}
    listed = {}
    for module_name in COMMAND_MODULES:
        listed.update(importlib.import_module(module_name).COMMANDS)
    assert set(registered) == set(listed)
    assert helps == listed


def test_a_rules_run_embeds_with_onnx_runtime_and_loads_no_torch_or_llm_stack(tmp_path):
    """The agent's memory and RAG run (Qdrant, the embeddings) without torch or transformers; the rules model
    loads no LLM client or runtime."""
    code, loaded = _loaded(
        tmp_path,
        *("run", "--world", DOWNTOWN, "--instruction", SEED_INSTRUCTION, "--model", "rules"),
        *("--db", str(tmp_path / "runs.sqlite"), "--memory-path", str(tmp_path / "memory")),
    )
    assert code == 0
    assert {"onnxruntime", "qdrant_client"} <= loaded
    unwanted = {"torch", "transformers", "sentence_transformers", "llama_cpp", "langchain_openai", "openai"}
    assert not loaded & unwanted, sorted(loaded & unwanted)
