"""Every line of README.md's "Using it" block works as written (issue 39, section 2): each is run by bash, in README
order, in a fresh folder holding what a checkout holds that the lines read (examples/, schemas/, .gitignore, a link
to .venv), after the block's own first lines (`. .venv/bin/activate`, `W=...`, `mkdir -p .cloudbrain`), and must end with an exit code the
README allows it: 0, plus 3 where its comment names exit 3, plus 4 for the agent runs (`run`, `replay`, `fork`,
`ops`: the README's table, "4 an agent run that ended in safe_refusal / human_confirm"). Afterwards `git status` in
that folder is clean: every file the lines write lands in a place the checkout's .gitignore covers, and
`schemas --out schemas/` rewrites the tracked schemas byte for byte.

Not run, each for the reason in SKIPPED: the lines that need a server on localhost, the interactive `step`, the two
servers (`mcp`, `ui`) and the own-words evaluation (minutes; other tests run each of them).

The README's placeholders are filled as it says: `"..."` is an instruction (the block's own first one), `run-...`
the thread of the first `run`, `C` a checkpoint id from `checkpoints --json` (the one before execute_tools, where the
state holds the validated IR a fork sets), `[--compare ...]` is optional and left out.

Made faster, each change in FASTER with its reason (the lines are otherwise as written): the agent lines that name
no model (`run`, `ops`) run with `--model rules`, since the default `local` (the embedded SmolLM2 on llama.cpp)
takes ~35 s a run on two cores, and `make demo` runs it (replay and fork then re-run the thread's own model, rules);
the bench lines run on a few samples with rules only.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.paths import ROOT

LINE_TIMEOUT_SEC = 300
AGENT_RUNS = {"run", "replay", "fork", "ops"}  # exit 4 allowed: a decision that is not execute
SKIPPED = (  # (a piece of the line, why it is not run here)
    ("--base-url http://localhost", "needs an OpenAI-compatible server on localhost (test_real_openai_server.py)"),
    ("cloudbrain step ", "interactive: waits for the operator's commands (test_cli_step.py)"),
    ("cloudbrain mcp ", "an MCP server on stdio until its client leaves (test_mcp_server.py)"),
    ("cloudbrain ui ", "a web server until stopped (test_inspector_pages.py, test_inspector_browser.py)"),
    ("evaluation.own_words", "48 requests through the agent, minutes (test_own_words.py)"),
)
FASTER = (  # (a piece of the line, text it has, text it runs with, why)
    ("cloudbrain run ", " --json", " --json --model rules", "the default model `local` takes ~35 s a run"),
    ("cloudbrain ops ", " --json", " --json --model rules", "`local` takes ~35 s a request"),
    ("bench generate --split dev_mini", "--out ", "--limit 3 --out ", "dev_mini's 200 samples take ~100 s"),
    ("bench run --split dev_mini", "--limit 20", "--limit 2", "two samples show the line works"),
    ("bench run --split dev_mini", "--model rules,local", "--model rules", "`local`: ~35 s a run"),
    ("bench run --split dev_mini", "--repeats 3", "--repeats 1", "repeats change nothing the line shows"),
    ("bench run --split ops", "--out ", "--limit 1 --out ", "one request stream of eight"),
)


def using_it_block() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"^## Using it\n+```bash\n(.*?)^```", text, flags=re.S | re.M)
    assert block, "README.md has no ```bash block under '## Using it'"
    return [line for line in block.group(1).splitlines() if line.strip()]


def _split_comment(line: str) -> tuple[str, str]:
    """The command and its comment (`  # ...` after it)."""
    match = re.search(r"\s+#\s.*$", line)
    return (line[: match.start()], match.group(0).strip()[1:].strip()) if match else (line, "")


def allowed_codes(command: str, comment: str) -> set[int]:
    codes = {0}
    if "exit" in comment:
        codes |= {int(c) for c in re.findall(r"\b(\d)\b", comment.split("exit", 1)[1])}
    words = shlex.split(command)
    if words[0] == "cloudbrain" and words[1] in AGENT_RUNS:
        codes.add(4)
    return codes


class Lines:
    """The block's lines run one after another in `folder`, with the placeholders filled from earlier output."""

    def __init__(self, folder: Path, prelude: list[str], instruction: str):
        self.folder, self.prelude, self.instruction = folder, prelude, instruction
        self.thread: str | None = None
        self.checkpoint: str | None = None
        self.seconds: dict[str, float] = {}

    def fill(self, command: str) -> str:
        command = command.replace('"..."', shlex.quote(self.instruction))
        command = re.sub(r"\s*\[--compare [^\]]*\]", "", command)  # optional
        if "run-..." in command:
            assert self.thread, "a line names run-... before any `run` made a thread"
            command = command.replace("run-...", self.thread)
        if "--checkpoint C" in command:
            command = command.replace("--checkpoint C", f"--checkpoint {self.checkpoint_id()}")
        for piece, old, new, _why in FASTER:
            adds_a_model = "--model" in new and "--model" not in old
            if piece in command and old in command and not (adds_a_model and "--model" in command):
                command = command.replace(old, new, 1)
        return command

    def checkpoint_id(self) -> str:
        if self.checkpoint is None:
            out = self.bash(f"cloudbrain checkpoints --db .cloudbrain/runs.sqlite --thread {self.thread} --json")
            listed = json.loads(out.stdout)["checkpoints"]
            self.checkpoint = next(c["checkpoint_id"] for c in listed if c["next"] == ["execute_tools"])
        return self.checkpoint

    def bash(self, command: str) -> subprocess.CompletedProcess:
        script = "\n".join([*self.prelude, command])
        return subprocess.run(
            ["bash", "-c", script], cwd=self.folder, capture_output=True, text=True, timeout=LINE_TIMEOUT_SEC
        )

    def run(self, command: str) -> subprocess.CompletedProcess:
        started = time.perf_counter()
        done = self.bash(command)
        self.seconds[command] = time.perf_counter() - started
        if self.thread is None and command.startswith("cloudbrain run ") and done.stdout.strip():
            self.thread = json.loads(done.stdout)["thread_id"]
        return done


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """What a checkout holds that the lines read, as a git work tree (committed), so `git status` shows what they
    wrote outside the ignored places."""
    folder = tmp_path / "checkout"
    folder.mkdir()
    for name in ("examples", "schemas"):
        shutil.copytree(ROOT / name, folder / name)
    shutil.copy(ROOT / ".gitignore", folder / ".gitignore")
    (folder / ".venv").symlink_to(ROOT / ".venv")
    git = [
        "git",
        "-C",
        str(folder),
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.org",
        "-c",
        "commit.gpgsign=false",
    ]
    subprocess.run([*git, "init", "-q"], check=True)
    (folder / ".git" / "info" / "exclude").write_text(".venv\n", encoding="utf-8")  # the link, not a folder
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "checkout"], check=True)
    return folder


def test_every_line_of_using_it_runs_as_written_with_an_exit_code_the_readme_allows(checkout: Path):
    block = using_it_block()
    prelude = [line for line in block if not line.startswith(("cloudbrain ", "python "))]
    assert prelude == [". .venv/bin/activate", block[1], block[2]] and block[1].startswith("W=")
    assert block[2].startswith("mkdir -p .cloudbrain")  # the lines' outputs' folder, whatever line runs first
    instruction = next(m for m in re.findall(r'--instruction "([^"]*)"', "\n".join(block)) if m != "...")
    lines = Lines(checkout, [_split_comment(line)[0] for line in prelude], instruction)
    ran, skipped, wrong = [], [], []
    for line in block[len(prelude) :]:
        command, comment = _split_comment(line)
        why = next((why for piece, why in SKIPPED if piece in line), None)
        if why:
            skipped.append((command, why))
            continue
        filled = lines.fill(command)
        done = lines.run(filled)
        allowed = allowed_codes(command, comment)
        ran.append(command)
        if done.returncode not in allowed:
            wrong.append(f"{filled}\n  exit {done.returncode}, allowed {sorted(allowed)}\n  {done.stderr[-1500:]}")
    assert not wrong, "\n".join(wrong)
    assert len(ran) >= 25 and len(skipped) == len(SKIPPED), skipped
    assert lines.thread and lines.checkpoint  # the placeholders were filled from real output

    # what the lines wrote lies where the checkout's .gitignore covers it; `schemas --out schemas/` changed nothing
    status = subprocess.run(
        ["git", "-C", str(checkout), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    )
    left = status.stdout.splitlines()
    assert not left, f"README lines wrote outside the ignored places, or changed tracked files: {left}"
    for output in (
        ".cloudbrain/ir.json",
        ".cloudbrain/route.json",
        ".cloudbrain/run.json",
        ".cloudbrain/run.svg",
        ".cloudbrain/intent.json",
    ):
        assert (checkout / output).stat().st_size > 0, output
    slowest = sorted(lines.seconds.items(), key=lambda item: -item[1])[:3]
    print("slowest lines:", "; ".join(f"{seconds:.0f} s {command[:60]}" for command, seconds in slowest))


def test_the_speed_ups_and_skips_name_lines_the_readme_has():
    """A README edit that drops or rewords a line these tables name shows here, not as a silent no-op."""
    block = "\n".join(using_it_block())
    for piece, *_ in (*SKIPPED, *FASTER):
        assert piece in block, piece
    for piece, old, _new, _why in FASTER:
        assert any(piece in line and old in line for line in block.splitlines()), (piece, old)
