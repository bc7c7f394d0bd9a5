"""Calling the `cloudbrain` command in-process, as the CLI tests do."""

from __future__ import annotations

import json

import pytest

from cli.main import main
from tests.support.paths import DOWNTOWN as DOWNTOWN_PATH

DOWNTOWN = str(DOWNTOWN_PATH)


def run_cli(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_json(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, dict]:
    code, out, _ = run_cli(capsys, *argv, "--json")
    return code, json.loads(out)
