"""The embedding model loads and encodes with the network cut: nothing is fetched from a hub."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import numpy as np

from memory.embeddings import EMBEDDING_DIM, Embedder
from tests.support.paths import ROOT

# Runs in a fresh interpreter so that the sentence-transformers import itself also happens offline.
CUT_NETWORK_THEN_ENCODE = """
import json, socket
attempts = []
def refuse(*args, **kwargs):
    attempts.append(repr(args[1:] if args else kwargs)[:80])
    raise OSError("network access is cut in this test")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.getaddrinfo = refuse
from memory.embeddings import Embedder
vectors = Embedder().encode(["avoid the temporary no-fly zone", "keep the battery reserve"])
print(json.dumps({"shape": list(vectors.shape), "norms": vectors.astype(float).__pow__(2).sum(1).tolist(),
                  "cosine": float(vectors[0] @ vectors[1]), "attempts": attempts}))
"""


def test_cold_start_loads_and_encodes_with_the_network_cut() -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("HF_", "TRANSFORMERS_"))}
    done = subprocess.run(
        [sys.executable, "-c", CUT_NETWORK_THEN_ENCODE],
        check=False,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["shape"] == [2, EMBEDDING_DIM]
    assert np.allclose(report["norms"], 1.0, atol=1e-4)
    assert report["cosine"] < 0.9  # two different sentences, not a constant vector
    assert report["attempts"] == []


def test_fresh_model_load_touches_no_socket(monkeypatch) -> None:
    attempts: list[object] = []

    def refuse(self, address):
        attempts.append(address)
        raise OSError("network access is cut in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    embedder = Embedder()  # a new instance: its own load from the packaged folder, not the shared model

    first, second = embedder.encode(["no-fly zone", "restricted airspace"]), embedder.encode(["no-fly zone"])

    assert first.shape == (2, EMBEDDING_DIM)
    assert np.allclose(first[0], second[0], atol=1e-5)  # deterministic
    assert attempts == []
