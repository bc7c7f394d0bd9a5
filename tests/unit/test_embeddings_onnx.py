"""The run-time embedder: all-MiniLM-L6-v2 exported to ONNX at install (memory/onnx_export.py), run on ONNX Runtime
without torch; the same vectors as the sentence-transformers pipeline; a typed error naming the build command when the
file is missing; the rule corpus's vectors stored once per model and corpus digest."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memory import rule_vectors as rule_vectors_module
from memory.embeddings import (
    BUILD_COMMAND,
    EMBEDDING_DIM,
    Embedder,
    EmbeddingModelMissingError,
    onnx_paths,
    packaged_model_path,
)
from memory.rule_vectors import rule_vectors, rule_vectors_path, rules_digest
from memory.rules_corpus import RULES, RuleText
from tests.support.paths import ROOT

TEXTS = [
    "keep out of the temporary no-fly zone",
    "spec_violation: R2 separation from school_zone_2 was 6.0 m, below 15 m; re-route with a wider margin",
    "  leading and trailing blanks  ",
    "",
    "R4",
    " ".join(["the battery reserve must hold on arrival, counting payload, wind and detours"] * 40),  # > 256 tokens
]


def _copy_of_install(embeddings_dir: Path, target: Path) -> Path:
    """A private embeddings folder holding the installed ONNX file (a link) and its manifest (a copy)."""
    onnx_file, manifest_file = onnx_paths(embeddings_dir)
    target.mkdir()
    (target / onnx_file.name).symlink_to(onnx_file)
    (target / manifest_file.name).write_text(manifest_file.read_text())
    return target


def test_vectors_match_sentence_transformers(embedder: Embedder) -> None:
    pytest.importorskip("torch")
    sentence_transformers = pytest.importorskip("sentence_transformers")
    reference = sentence_transformers.SentenceTransformer(
        str(packaged_model_path()), device="cpu", local_files_only=True
    ).encode(TEXTS, normalize_embeddings=True, convert_to_numpy=True)

    vectors = embedder.encode(TEXTS)

    assert vectors.shape == (len(TEXTS), EMBEDDING_DIM) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert (np.sum(vectors * reference, axis=1) > 0.999).all()
    assert np.abs(vectors - reference).max() < 1e-4


def test_batching_and_order_do_not_change_a_vector(embedder: Embedder) -> None:
    together = embedder.encode(TEXTS)
    alone = np.stack([embedder.encode([text])[0] for text in TEXTS])
    small_batches = Embedder(batch_size=2).encode(TEXTS[::-1])[::-1]

    assert np.abs(together - alone).max() < 1e-5
    assert np.abs(together - small_batches).max() < 1e-5


ENCODE_THEN_LIST_MODULES = """
import json, sys
from memory.embeddings import Embedder
from memory.access import retrieve_rules
vectors = Embedder().encode(["avoid the temporary no-fly zone"])
rules = retrieve_rules("stay away from the school", 3, None)
heavy = sorted(name for name in ("torch", "transformers", "sentence_transformers") if name in sys.modules)
print(json.dumps({"shape": list(vectors.shape), "rules": len(rules), "heavy": heavy}))
"""


def test_importing_and_encoding_does_not_import_torch() -> None:
    done = subprocess.run(
        [sys.executable, "-c", ENCODE_THEN_LIST_MODULES], cwd=ROOT, capture_output=True, text=True, timeout=120
    )

    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"shape": [1, EMBEDDING_DIM], "rules": 3, "heavy": []}


def test_a_missing_onnx_file_is_a_typed_error_naming_the_build_command(tmp_path: Path) -> None:
    embedder = Embedder(embeddings_dir=tmp_path / "nothing-here")

    with pytest.raises(EmbeddingModelMissingError, match="is missing") as raised:
        embedder.encode(["no-fly zone"])

    assert BUILD_COMMAND.removeprefix("python ") in str(raised.value)
    assert "make install" in str(raised.value)


def test_an_onnx_file_from_other_weights_is_refused(embedder: Embedder, tmp_path: Path) -> None:
    folder = _copy_of_install(embedder.embeddings_dir, tmp_path / "stale")
    manifest_file = onnx_paths(folder)[1]
    manifest = json.loads(manifest_file.read_text())
    manifest["source"]["safetensors_size"] += 1
    manifest_file.write_text(json.dumps(manifest))

    with pytest.raises(EmbeddingModelMissingError, match="not exported from the installed"):
        Embedder(embeddings_dir=folder).encode(["no-fly zone"])


def test_the_installed_rule_vectors_are_the_corpus_encoded_now(embedder: Embedder) -> None:
    stored = rule_vectors(embedder)

    assert stored.shape == (len(RULES), EMBEDDING_DIM)
    assert rule_vectors_path(embedder).is_file()  # the install (or the first use) stored them
    fresh = embedder.encode([rule.embedding_text() for rule in RULES])
    assert np.abs(stored - fresh).max() < 1e-5


def test_a_changed_rule_text_is_another_digest_and_is_recomputed(embedder: Embedder, tmp_path: Path) -> None:
    folder = _copy_of_install(embedder.embeddings_dir, tmp_path / "embeddings")
    private = Embedder(embeddings_dir=folder)
    changed_rule = RuleText.model_validate({**RULES[0].model_dump(), "text": "Stay on the ground at all times."})
    changed = (changed_rule, *RULES[1:])

    assert rules_digest(private, changed) != rules_digest(private, RULES)
    assert rules_digest(private, RULES) == rules_digest(embedder, RULES)  # same model, same corpus
    vectors = rule_vectors(private, changed)

    assert np.abs(vectors[0] - private.encode([changed_rule.embedding_text()])[0]).max() < 1e-5
    assert np.abs(vectors[1:] - rule_vectors(embedder)[1:]).max() < 1e-5
    written = np.load(rule_vectors_path(private, changed))
    assert np.array_equal(written, vectors)  # stored for the next process, beside the model


def test_a_corrupt_rule_vector_file_is_recomputed(embedder: Embedder, tmp_path: Path) -> None:
    folder = _copy_of_install(embedder.embeddings_dir, tmp_path / "embeddings")
    private = Embedder(embeddings_dir=folder)
    np.save(rule_vectors_path(private), np.zeros((2, 3), dtype=np.float32))
    rule_vectors_module._rule_vectors.cache_clear()

    vectors = rule_vectors(private)

    assert vectors.shape == (len(RULES), EMBEDDING_DIM)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
