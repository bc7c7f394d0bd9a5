"""A benchmark worker's set-up: it loads what its methods' first runs would otherwise load, so no run's latency
carries the process's start-up (the embedding model took ~12 s, charged to whichever method ran first)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluation import runner
from evaluation.methods import cloudbrain


def test_a_worker_warms_up_its_methods_before_any_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    encoded: list[list[str]] = []

    class CountingEmbedder:
        def encode(self, texts: list[str]) -> None:
            encoded.append(texts)

    monkeypatch.setattr(cloudbrain, "shared_embedder", CountingEmbedder)
    monkeypatch.setattr(runner.SHARED_CACHE, "share_through", lambda path: None)  # keep this process's cache
    monkeypatch.setattr(runner, "_WORKER", {})
    runner._init_worker(str(tmp_path), None, None, None, ["json_only", "cloudbrain_full", "tool_use_only"])
    assert len(encoded) == 2  # the two graph methods load the embedding model; json_only loads nothing
    assert (tmp_path / runner.CHECKPOINT_DIR).is_dir()
