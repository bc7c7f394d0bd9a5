"""The airspace ledger: the approved operational intents (ASTM F3548-21's 4D volumes, priority, owner, state), kept
in the checkpoint database (a table beside the checkpoints: SQLite by default, PostgreSQL for a `postgres://`
URL), with exact 4D conflict queries and atomic admission.

Two volumes conflict when their footprints intersect (shapely's exact predicate; touching counts), their altitude
ranges overlap and their time spans overlap. `admit` reads the active intents, checks the new one against them and
inserts it in one write transaction (SQLite `BEGIN IMMEDIATE`, PostgreSQL `LOCK TABLE ... EXCLUSIVE`), so two
processes on one ledger can never both approve conflicting intents.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Any

import shapely
from pydantic import BaseModel, Field
from shapely.geometry import Polygon

from standards.volumes import LegVolume

TABLE = "operational_intents"
BUSY_TIMEOUT_SEC = 60.0


class IntentState(str, Enum):
    accepted = "Accepted"
    activated = "Activated"
    contingent = "Contingent"
    ended = "Ended"


ACTIVE_STATES = (IntentState.accepted, IntentState.activated, IntentState.contingent)
PRIORITIES = {"normal": 0, "emergency": 100}


class OperationalIntent(BaseModel):
    intent_id: str = Field(default_factory=lambda: f"oi_{uuid.uuid4().hex[:12]}")
    request_id: str
    owner: str = ""
    priority: int = 0
    state: IntentState = IntentState.accepted
    uav_id: str | None = None
    volumes: list[LegVolume] = Field(min_length=1, description="on the ledger's clock (the request stream's)")
    certificate_sha256: str = ""
    note: str = ""

    @property
    def t_start(self) -> float:
        return min(v.t_start for v in self.volumes)

    @property
    def t_end(self) -> float:
        return max(v.t_end for v in self.volumes)


class Conflict(BaseModel):
    intent_id: str
    owner: str
    priority: int
    leg: int = Field(description="the new intent's leg")
    other_leg: int = Field(description="the approved intent's leg")
    from_sec: float = Field(description="when the two volumes start to share the airspace")

    def describe(self) -> str:
        return f"{self.intent_id} ({self.owner or 'no owner'}, priority {self.priority}) from t={self.from_sec:g} s"


def conflicts(volumes: Sequence[LegVolume], approved: Sequence[OperationalIntent]) -> list[Conflict]:
    """Every (new leg, approved intent's leg) pair that shares airspace at some instant; one index query for all."""
    pairs = [(intent, volume) for intent in approved for volume in intent.volumes]
    if not pairs or not volumes:
        return []
    tree = shapely.STRtree([Polygon(v.ring) for _, v in pairs])
    new_index, old_index = tree.query([Polygon(v.ring) for v in volumes], predicate="intersects")
    found = []
    for i, j in zip(new_index.tolist(), old_index.tolist()):
        mine, (intent, theirs) = volumes[i], pairs[j]
        if mine.lower_m < theirs.upper_m and theirs.lower_m < mine.upper_m and overlap_in_time(mine, theirs):
            found.append(
                Conflict(
                    intent_id=intent.intent_id,
                    owner=intent.owner,
                    priority=intent.priority,
                    leg=mine.leg,
                    other_leg=theirs.leg,
                    from_sec=max(mine.t_start, theirs.t_start),
                )
            )
    return sorted(found, key=lambda c: (c.from_sec, c.intent_id, c.leg))


def overlap_in_time(a: LegVolume, b: LegVolume) -> bool:
    return a.t_start < b.t_end and b.t_start < a.t_end


class LedgerError(Exception):
    """The ledger's database cannot be opened or written: one line."""


class Ledger:
    """The table of operational intents in a SQLite file or a PostgreSQL database."""

    def __init__(self, where: str | Path):
        self.where = str(where)
        self.postgres = self.where.startswith(("postgres://", "postgresql://"))
        self._mark = "%s" if self.postgres else "?"
        with self._transaction() as cursor:
            if self.postgres:  # two processes creating the table at once would race on the catalogue
                cursor.execute("SELECT pg_advisory_xact_lock(hashtext('cloudbrain_operational_intents'))")
            cursor.execute(
                f"CREATE TABLE IF NOT EXISTS {TABLE} (intent_id TEXT PRIMARY KEY, request_id TEXT NOT NULL, "
                "owner TEXT NOT NULL, priority INTEGER NOT NULL, state TEXT NOT NULL, uav_id TEXT, "
                "t_start DOUBLE PRECISION NOT NULL, t_end DOUBLE PRECISION NOT NULL, volumes TEXT NOT NULL, "
                "certificate_sha256 TEXT NOT NULL, note TEXT NOT NULL)"
            )
            cursor.execute(f"CREATE INDEX IF NOT EXISTS {TABLE}_active ON {TABLE} (state, t_end)")

    # --- connections ------------------------------------------------------------------------------------------
    def _connect(self) -> Any:
        try:
            if self.postgres:
                import psycopg

                return psycopg.connect(self.where)
            Path(self.where).parent.mkdir(parents=True, exist_ok=True)
            return sqlite3.connect(self.where, timeout=BUSY_TIMEOUT_SEC, isolation_level=None)
        except Exception as exc:  # psycopg's and sqlite3's own errors: one line either way
            raise LedgerError(f"cannot open the ledger at {self.where}: {exc}") from None

    @contextmanager
    def _transaction(self, exclusive: bool = False) -> Iterator[Any]:
        """One transaction; `exclusive`: no other writer until it ends (the read-check-insert of admission)."""
        connection = self._connect()
        try:
            cursor = connection.cursor()
            if self.postgres:
                if exclusive:
                    cursor.execute(f"LOCK TABLE {TABLE} IN EXCLUSIVE MODE")
            else:
                cursor.execute("BEGIN IMMEDIATE" if exclusive else "BEGIN")
            yield cursor
            if self.postgres:
                connection.commit()
            else:
                cursor.execute("COMMIT")
        except BaseException:
            connection.rollback()
            raise
        finally:
            connection.close()

    # --- reads ------------------------------------------------------------------------------------------------
    def _select(self, cursor: Any, where: str, params: Sequence[Any]) -> list[OperationalIntent]:
        cursor.execute(
            f"SELECT intent_id, request_id, owner, priority, state, uav_id, volumes, certificate_sha256, note "
            f"FROM {TABLE} WHERE {where} ORDER BY t_start, intent_id",
            params,
        )
        return [
            OperationalIntent(
                intent_id=row[0],
                request_id=row[1],
                owner=row[2],
                priority=row[3],
                state=IntentState(row[4]),
                uav_id=row[5],
                volumes=[LegVolume.model_validate(v) for v in json.loads(row[6])],
                certificate_sha256=row[7],
                note=row[8],
            )
            for row in cursor.fetchall()
        ]

    def _active_where(self) -> str:
        states = ", ".join(self._mark for _ in ACTIVE_STATES)
        return f"state IN ({states}) AND t_end > {self._mark} AND t_start < {self._mark}"

    def active(self, t_from: float = float("-inf"), t_to: float = float("inf")) -> list[OperationalIntent]:
        """The intents in an active state that hold airspace at some instant of (t_from, t_to)."""
        with self._transaction() as cursor:
            return self._select(cursor, self._active_where(), [*(s.value for s in ACTIVE_STATES), t_from, t_to])

    def all(self) -> list[OperationalIntent]:
        with self._transaction() as cursor:
            return self._select(cursor, "1 = 1", [])

    # --- writes -----------------------------------------------------------------------------------------------
    def admit(self, intent: OperationalIntent, pre_empting: Sequence[str] = ()) -> list[Conflict]:
        """Insert `intent` if it conflicts with no active intent (those in `pre_empting` first end, in the same
        transaction); else insert nothing and return the conflicts."""
        with self._transaction(exclusive=True) as cursor:
            params = [*(s.value for s in ACTIVE_STATES), intent.t_start, intent.t_end]
            approved = [i for i in self._select(cursor, self._active_where(), params) if i.intent_id not in pre_empting]
            found = conflicts(intent.volumes, approved)
            if found:
                return found
            for ended in pre_empting:
                note = f"pre-empted by {intent.intent_id} (request {intent.request_id}, priority {intent.priority})"
                cursor.execute(
                    f"UPDATE {TABLE} SET state = {self._mark}, note = {self._mark} WHERE intent_id = {self._mark}",
                    [IntentState.ended.value, note, ended],
                )
            cursor.execute(
                f"INSERT INTO {TABLE} VALUES ({', '.join(self._mark for _ in range(11))})",
                [
                    intent.intent_id,
                    intent.request_id,
                    intent.owner,
                    intent.priority,
                    intent.state.value,
                    intent.uav_id,
                    intent.t_start,
                    intent.t_end,
                    json.dumps([v.model_dump() for v in intent.volumes]),
                    intent.certificate_sha256,
                    intent.note,
                ],
            )
            return []

    def set_state(self, intent_id: str, state: IntentState, note: str = "") -> None:
        with self._transaction(exclusive=True) as cursor:
            cursor.execute(
                f"UPDATE {TABLE} SET state = {self._mark}, note = {self._mark} WHERE intent_id = {self._mark}",
                [state.value, note, intent_id],
            )
