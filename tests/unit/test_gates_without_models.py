"""The gates judge a model's plan, so they must not depend on any model: their tests pass with the `models` package
unimportable (the import-linter contract checks the static imports; this checks what runs)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GATE_TESTS = (
    "tests/unit/test_fidelity.py",
    "tests/unit/test_underspecified.py",
    "tests/unit/test_nodes.py",
    "tests/unit/test_validation.py",
    "tests/unit/test_verifier.py",
)
# A finder placed first on sys.meta_path that refuses `models` and everything under it.
WITHOUT_MODELS = """
import importlib.abc, sys
class NoModels(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "models" or name.startswith("models."):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked: the gates must not need it)", name=name)
        return None
sys.meta_path.insert(0, NoModels())
import pytest
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", *sys.argv[1:]]))
"""


def test_the_blocker_blocks_models() -> None:
    probe = WITHOUT_MODELS.split("import pytest")[0] + "import models.rules_parser\n"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "blocked: the gates must not need it" in done.stderr


def test_gate_tests_pass_with_models_absent() -> None:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_MODELS, *GATE_TESTS], cwd=ROOT, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]  # 5 would mean nothing was collected
