"""Two `cloudbrain run` commands started at once on the project's default memory folder both finish with a
status: the embedded Qdrant folder is opened per access under a file lock, not held by the first process."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.support.ir_fixtures import SEED_INSTRUCTION
from tests.support.paths import DOWNTOWN, ROOT


def test_two_concurrent_runs_on_the_default_memory_folder_both_end_with_a_status(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}

    def start(name: str) -> subprocess.Popen:
        argv = [sys.executable, "-m", "cli.main", "run", "--world", str(DOWNTOWN), "--instruction", SEED_INSTRUCTION]
        argv += ["--model", "rules", "--db", str(tmp_path / f"{name}.sqlite"), "--json"]
        return subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)

    runs = [start("a"), start("b")]
    for run in runs:
        out, err = run.communicate(timeout=600)
        assert "Traceback" not in err, err
        assert run.returncode in (0, 4), err  # 0 execute, 4 safe_refusal / human_confirm
        assert json.loads(out)["status"] in ("execute", "safe_refusal", "human_confirm")
    assert (tmp_path / ".cloudbrain" / "memory").is_dir()  # both used the default folder under their cwd
