"""SafetyMemory: repair cases and rule texts in Qdrant, searched by embedding similarity.

Storage: Qdrant's embedded local mode (`QdrantClient(path=...)`, default `.cloudbrain/memory` under the current
directory) or a Qdrant server (`url=`, or the CLOUDBRAIN_QDRANT_URL environment variable); the same code runs on
both. Local mode has two limits to plan around:

- one client per folder at a time. So a local SafetyMemory opens the folder for each access only, under an
  inter-process file lock (`shared`, the default): two `cloudbrain run`s, or benchmark workers, share one memory
  and see each other's cases; each access pays the folder's load (milliseconds for hundreds of cases, about a
  second at 10,000). `exclusive=True` keeps the folder open for the object's life instead (fast repeated
  queries, e.g. the latency benchmark); another process then gets `MemoryLockedError` until it is closed.
- it is a brute-force index meant for small collections: Qdrant warns past 20,000 points. Use a server beyond.
  Its payload filters run in Python over every point, so a filtered case search first over-fetches unfiltered
  neighbours (exact whenever they hold k matches) and only then falls back to Qdrant's filter.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import threading
import time
import uuid
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

import numpy as np
from pydantic import BaseModel
from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from memory.cases import CASE_ID_NAMESPACE, CaseHit, RepairCase, format_case_for_prompt
from memory.embeddings import EMBEDDING_DIM, Embedder, shared_embedder
from memory.entities import EntityMatch, relevant_entities
from memory.rule_vectors import rule_vectors, rules_digest
from memory.rules_corpus import RULES, RuleText, corpus_fingerprint
from tools.world import World

CASES_COLLECTION = "repair_cases"
RULES_COLLECTION = "rules"
URL_ENV = "CLOUDBRAIN_QDRANT_URL"
DEFAULT_MEMORY_PATH = Path(".cloudbrain") / "memory"
CASE_INDEXED_FIELDS = ("failure_type",)
RULE_INDEXED_FIELDS: tuple[str, ...] = ()  # rules are searched unfiltered
UPSERT_BATCH = 256
# Local-mode filtered search: unfiltered neighbours fetched, in turn, before falling back to Qdrant's filter.
OVERFETCH_LIMITS = (64, 512)
MAX_DUPLICATES_FETCHED = 64  # a search fetches at most k times this many hits to find k distinct cases
SERVER_TIMEOUT_SEC = 10
ACCESS_LOCK_FILE = ".cloudbrain-access.lock"  # beside Qdrant's own files; held for one access at a time
ACCESS_WAIT_SEC = 120.0  # how long an access waits for another process's access to end
CONNECTION_ERRORS = (ResponseHandlingException, UnexpectedResponse, OSError)


class MemoryStoreError(Exception):
    """The safety memory cannot be opened or used; the message says why and what to do."""


class MemoryLockedError(MemoryStoreError):
    """Another Qdrant client holds the local storage folder."""


class RuleHit(BaseModel):
    score: float
    rule: RuleText


def default_memory_path() -> Path:
    return Path.cwd() / DEFAULT_MEMORY_PATH


def _open_local(path: Path) -> QdrantClient:
    try:
        return QdrantClient(path=str(path))
    except RuntimeError as exc:
        if "already accessed" not in str(exc):
            raise
        raise MemoryLockedError(
            f"safety memory {path} is held open by another client (a SafetyMemory opened with exclusive=True, "
            f"or a Qdrant client outside this project). Close it, or run a Qdrant server and pass --qdrant-url / "
            f"set {URL_ENV}."
        ) from None


@contextmanager
def _folder_access(path: Path) -> Iterator[None]:
    """An inter-process lock on the memory folder for one access (released when the process dies, too)."""
    with open(path / ACCESS_LOCK_FILE, "a+") as handle:
        deadline = time.monotonic() + ACCESS_WAIT_SEC
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise MemoryStoreError(
                        f"safety memory {path} stayed busy for {ACCESS_WAIT_SEC:.0f} s (another process is using it)"
                    ) from None
                time.sleep(0.02)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def failure_filter(failure_type: str) -> models.Filter:
    return models.Filter(must=[models.FieldCondition(key="failure_type", match=models.MatchValue(value=failure_type))])


class SafetyMemory:
    """Repair-case memory and rule retrieval. Construct with a local path or a server URL; `close()` when done."""

    def __init__(
        self,
        path: str | Path | None = None,
        url: str | None = None,
        embedder: Embedder | None = None,
        *,
        exclusive: bool = False,
    ):
        if path is not None and url is not None:
            raise ValueError("give a local path or a server url, not both")
        if path is None and url is None:
            url = os.environ.get(URL_ENV) or None
            path = None if url else default_memory_path()
        self.url = url
        self.path = Path(path) if path is not None else None
        self._embedder = embedder
        self._lock = threading.RLock()  # local mode's in-memory index is not safe for concurrent writers
        self._rules_ready = False
        self._depth = 0  # nesting of accesses in this thread (a shared folder is opened by the outermost)
        self.filtered_query_fallbacks = 0
        self.shared = self.path is not None and not exclusive
        self.client: QdrantClient | None = None if self.shared else self._connect()
        try:
            with self._access():
                self._ensure_collections()
        except MemoryStoreError:
            self.close()
            raise

    def _connect(self) -> QdrantClient:
        if self.path is None:
            # The client's version check runs in a background thread and warns into whatever code runs next;
            # an unreachable server is reported by the first real call instead, as a MemoryStoreError.
            return QdrantClient(url=self.url, timeout=SERVER_TIMEOUT_SEC, check_compatibility=False)
        return _open_local(self._folder())

    def _folder(self) -> Path:
        assert self.path is not None
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise MemoryStoreError(f"cannot create the memory folder {self.path}: {exc.strerror or exc}") from None
        return self.path

    @contextmanager
    def _access(self) -> Iterator[QdrantClient]:
        """The client for one access: a shared local folder is opened for it, under the folder's file lock."""
        with self._lock:
            if not self.shared or self._depth:
                self._depth += 1
                try:
                    yield self.client
                finally:
                    self._depth -= 1
                return
            folder = self._folder()
            with _folder_access(folder):
                self.client = _open_local(folder)
                self._depth += 1
                try:
                    yield self.client
                finally:
                    self._depth -= 1
                    self.client.close()
                    self.client = None

    def _ensure_collections(self) -> None:
        try:
            self._ensure_collection(CASES_COLLECTION, CASE_INDEXED_FIELDS)
            self._ensure_collection(RULES_COLLECTION, RULE_INDEXED_FIELDS)
        except CONNECTION_ERRORS as exc:
            raise MemoryStoreError(f"cannot use Qdrant at {self.location}: {exc}") from None

    # So that code holding only the memory can turn its hits into prompt examples.
    format_case_for_prompt = staticmethod(format_case_for_prompt)

    # --- lifecycle ------------------------------------------------------------------------------------------
    @property
    def is_local(self) -> bool:
        return self.path is not None

    @property
    def location(self) -> str:
        return str(self.path) if self.path is not None else str(self.url)

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = shared_embedder()
        return self._embedder

    def snapshot(self, folder: str | Path) -> SafetyMemory:
        """A private copy of a local memory, opened for this process alone: readers that must not see later
        writes (benchmark workers) search it without the per-access open and lock. A server is returned as is."""
        if self.path is None:
            return self
        target = Path(folder)
        with self._access():  # a consistent copy: no writer holds the folder meanwhile
            shutil.copytree(self._folder(), target, ignore=shutil.ignore_patterns(ACCESS_LOCK_FILE, ".lock"))
        return SafetyMemory(path=target, embedder=self._embedder, exclusive=True)

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _ensure_collection(self, name: str, indexed_fields: tuple[str, ...]) -> None:
        if self.client.collection_exists(name):
            size = self.client.get_collection(name).config.params.vectors.size
            if size != EMBEDDING_DIM:
                raise MemoryStoreError(
                    f"collection {name} at {self.location} has vectors of size {size}, "
                    f"expected {EMBEDDING_DIM}: it was built with another embedding model"
                )
            return
        # Vectors are unit length, so DOT is the cosine; it also spares local mode re-normalising every vector.
        self.client.create_collection(
            name, vectors_config=models.VectorParams(size=EMBEDDING_DIM, distance=models.Distance.DOT)
        )
        with warnings.catch_warnings():
            # Local mode ignores payload indexes (and says so); they serve the server, same code for both.
            warnings.filterwarnings("ignore", message="Payload indexes have no effect")
            for field in indexed_fields:
                self.client.create_payload_index(name, field, field_schema=models.PayloadSchemaType.KEYWORD)

    # --- repair cases ---------------------------------------------------------------------------------------
    def store_case(self, case: RepairCase) -> str:
        """Insert or replace the case; returns its point id (uuid5 of thread_id and round)."""
        self.store_cases([case])
        return case.point_id

    def store_cases(self, cases: Iterable[RepairCase], batch_size: int = UPSERT_BATCH) -> int:
        """Batch-encode and upsert; re-storing a (thread_id, round) replaces it. Returns the number written."""
        written = 0
        batch: list[RepairCase] = []
        for case in cases:
            batch.append(case)
            if len(batch) == batch_size:
                written += self._upsert_cases(batch)
                batch = []
        return written + (self._upsert_cases(batch) if batch else 0)

    def _upsert_cases(self, cases: list[RepairCase]) -> int:
        vectors = self.embedder.encode([case.embedding_text() for case in cases])
        self.upsert_case_vectors(cases, vectors)
        return len(cases)

    def upsert_case_vectors(self, cases: list[RepairCase], vectors: np.ndarray) -> None:
        """Upsert cases whose vectors are already computed (unit length, one row per case)."""
        points = [
            models.PointStruct(id=case.point_id, vector=vector.tolist(), payload=case.model_dump(mode="json"))
            for case, vector in zip(cases, vectors, strict=True)
        ]
        with self._access():
            self.client.upsert(CASES_COLLECTION, points=points, wait=True)

    def search_cases(self, query_text: str, failure_type: str | None = None, k: int = 3) -> list[CaseHit]:
        """The k stored cases most similar to the query, only of that failure type when one is given."""
        if k <= 0:
            return []
        return self.search_cases_by_vector(self.embedder.encode_one(query_text), failure_type, k)

    def search_cases_by_vector(self, vector: np.ndarray, failure_type: str | None = None, k: int = 3) -> list[CaseHit]:
        """search_cases for an already embedded (unit-length) query: k distinct cases, each identical case (the
        same content from another thread or round) once, at its best score."""
        limit = k
        while True:
            with self._access():
                found = self._query_cases(vector.tolist(), failure_type, limit)
            distinct: dict[str, CaseHit] = {}
            for score, payload in found:
                hit = CaseHit(score=score, case=RepairCase.model_validate(payload))
                distinct.setdefault(hit.case.content_key(), hit)
            if len(distinct) >= k or len(found) < limit or limit >= k * MAX_DUPLICATES_FETCHED:
                return list(distinct.values())[:k]
            limit *= 4  # duplicates took some of the places: fetch further down

    def _query_cases(self, vector: list[float], failure_type: str | None, k: int) -> list[tuple[float, dict]]:
        if failure_type is not None and self.is_local:
            found = self._overfetch_then_filter(vector, failure_type, k)
            if found is not None:
                return found
            self.filtered_query_fallbacks += 1
        query_filter = failure_filter(failure_type) if failure_type is not None else None
        return [(p.score, p.payload) for p in self._query(CASES_COLLECTION, vector, query_filter, k, True)]

    def _overfetch_then_filter(self, vector: list[float], failure_type: str, k: int) -> list[tuple[float, dict]] | None:
        """Local mode checks a payload filter in Python on every point (~0.1 s at 10k points), so fetch the
        unfiltered top-N with only the failure type instead. That is exact for the filtered top-k once it holds k
        matches (every point not fetched scores lower); None when no N did, and Qdrant's filter must decide."""
        for limit in (max(stage, k) for stage in OVERFETCH_LIMITS):
            candidates = self._query(CASES_COLLECTION, vector, None, limit, ["failure_type"])
            matches = [p for p in candidates if p.payload["failure_type"] == failure_type][:k]
            if len(matches) == k or len(candidates) < limit:
                payloads = {p.id: p.payload for p in self.client.retrieve(CASES_COLLECTION, [p.id for p in matches])}
                return [(p.score, payloads[p.id]) for p in matches]
        return None

    def _query(
        self,
        collection: str,
        vector: list[float],
        query_filter: models.Filter | None,
        limit: int,
        with_payload: bool | list[str],
    ) -> list[models.ScoredPoint]:
        return self.client.query_points(
            collection, query=vector, query_filter=query_filter, limit=limit, with_payload=with_payload
        ).points

    def count_cases(self) -> int:
        with self._access():
            return self.client.count(CASES_COLLECTION, exact=True).count

    # --- rules and entities ---------------------------------------------------------------------------------
    def ensure_rules_indexed(self) -> None:
        """Index the rule corpus once; re-index when its texts changed since the folder was built."""
        with self._access():
            if not self._rules_ready:
                self._index_rules_if_stale()
                self._rules_ready = True

    def _index_rules_if_stale(self) -> None:
        # The payloads (every field) and the vectors (texts and model): either changed re-indexes the folder.
        fingerprint = f"{corpus_fingerprint()}-{rules_digest(self.embedder)}"
        ids = [_rule_point_id(rule) for rule in RULES]
        stored = self.client.retrieve(RULES_COLLECTION, ids=ids, with_payload=["corpus"])
        up_to_date = len(stored) == len(ids) and all(p.payload.get("corpus") == fingerprint for p in stored)
        if not up_to_date or self.client.count(RULES_COLLECTION, exact=True).count != len(ids):
            self.client.delete_collection(RULES_COLLECTION)
            self._ensure_collection(RULES_COLLECTION, RULE_INDEXED_FIELDS)
            vectors = rule_vectors(self.embedder)  # computed once per install and model, not per folder
            points = [
                models.PointStruct(id=pid, vector=vec.tolist(), payload={**rule.model_dump(), "corpus": fingerprint})
                for pid, rule, vec in zip(ids, RULES, vectors, strict=True)
            ]
            self.client.upsert(RULES_COLLECTION, points=points, wait=True)

    def search_rules(self, query: str, k: int = 3) -> list[RuleHit]:
        """The k rule texts (R1-R8 and airspace rules) most similar to the query, best first."""
        if k <= 0:
            return []
        self.ensure_rules_indexed()
        vector = self.embedder.encode_one(query).tolist()
        with self._access():
            points = self._query(RULES_COLLECTION, vector, None, k, True)
        return [RuleHit(score=p.score, rule=_rule_from_payload(p.payload)) for p in points]

    def relevant_entities(self, world: World, instruction: str, k: int = 8) -> list[EntityMatch]:
        return relevant_entities(world, instruction, k, self.embedder)

    # --- reporting ------------------------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        with self._access():
            failure_types = self.client.facet(CASES_COLLECTION, key="failure_type", limit=1000, exact=True)
            rules = self.client.count(RULES_COLLECTION, exact=True).count
        return {
            "backend": "local" if self.is_local else "server",
            "location": self.location,
            "repair_cases": self.count_cases(),
            "rules": rules,
            "failure_types": {str(hit.value): hit.count for hit in failure_types.hits},
        }


def _rule_point_id(rule: RuleText) -> str:
    return str(uuid.uuid5(CASE_ID_NAMESPACE, f"rule/{rule.id}"))


def _rule_from_payload(payload: dict[str, Any]) -> RuleText:
    return RuleText.model_validate({key: payload[key] for key in RuleText.model_fields})
