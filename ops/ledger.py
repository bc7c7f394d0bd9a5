"""The airspace ledger: the approved operational intents (ASTM F3548-21's 4D volumes, priority, owner, state), kept
in the checkpoint database (a table beside the checkpoints: SQLite by default, PostgreSQL for a `postgres://`
URL), with exact 4D conflict queries and atomic admission.

Two volumes conflict when their footprints intersect (shapely's exact predicate; touching counts), their altitude
ranges overlap and their time spans overlap. `admit` reads the active intents, checks the new one against them and
inserts it in one write transaction (SQLite `BEGIN IMMEDIATE`, PostgreSQL `LOCK TABLE ... EXCLUSIVE`), so two
processes on one ledger can never both approve conflicting intents.

A fleet mission is a set of intents, one per member (`team_id` the id they share, each intent's id
`<team_id>.<member>`): `admit_all` checks and inserts all of them in one such transaction, all or none. The members
must be pairwise conflict-free by the same check (the team's planner separated them); a set whose members conflict
is never admitted (`MembersConflict`). An emergency withdraws a team whole or not at all.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from standards.volumes import LegVolume, overlapping

TABLE = "operational_intents"
BUSY_TIMEOUT_SEC = 60.0
CONNECT_TIMEOUT_SEC = 10


class IntentState(str, Enum):
    accepted = "Accepted"
    activated = "Activated"
    contingent = "Contingent"
    ended = "Ended"


ACTIVE_STATES = (IntentState.accepted, IntentState.activated, IntentState.contingent)
PRIORITIES = {"normal": 0, "emergency": 100}
PRE_EMPTED = "pre-empted by"  # the note of an intent an emergency withdrew: it holds no airspace any more


def priority_words(priority: int) -> str:
    """A stored priority as the request said it ("normal priority", "emergency priority"), for reasons and notes."""
    word = next((name for name, value in PRIORITIES.items() if value == priority), None)
    return f"{word} priority" if word else f"priority {priority}"


class OperationalIntent(BaseModel):
    intent_id: str = Field(default_factory=lambda: f"oi_{uuid.uuid4().hex[:12]}")
    request_id: str
    owner: str = ""
    priority: int = 0
    state: IntentState = IntentState.accepted
    uav_id: str | None = None
    volumes: list[LegVolume] = Field(min_length=1, description="on the ledger's clock (the request stream's)")
    certificate_sha256: str = ""
    requested_at: float = Field(default=0.0, description="when its request arrived, on the ledger's clock")
    instruction: str = Field(
        default="", description="the request it serves: a pre-empted mission is re-planned from it"
    )
    landing_xy: tuple[float, float] | None = Field(default=None, description="where the UAV is once it has ended")
    battery_after: float | None = Field(default=None, description="its battery ratio on landing (the certificate's R5)")
    note: str = ""
    # a fleet mission's member: left out of a one-UAV intent's row, which stays as it was
    team_id: str | None = Field(
        default=None,
        exclude_if=lambda team_id: team_id is None,
        description="the fleet mission this member flies in: the id its member intents share, admitted all or none",
    )
    subtask_id: str | None = Field(
        default=None, exclude_if=lambda subtask_id: subtask_id is None, description="the member's team sub-task"
    )

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
    kind: Literal["airspace", "uav"] = Field(description="shared airspace, or the same UAV booked twice at once")
    leg: int = Field(description="the new intent's leg (-1 for a UAV booked twice)")
    other_leg: int = Field(description="the approved intent's leg (-1 for a UAV booked twice)")
    from_sec: float = Field(description="when the two start to share the airspace, or the UAV")
    of: str | None = Field(default=None, description="the new intent that conflicts (which member, for a team)")

    def describe(self) -> str:
        what = "its UAV" if self.kind == "uav" else "airspace"
        return (
            f"{self.intent_id} ({self.owner or 'no owner'}, {priority_words(self.priority)}), {what} "
            f"from t={self.from_sec:g} s"
        )


class Admission(BaseModel):
    conflicts: list[Conflict] = Field(default_factory=list, description="empty: admitted")
    pre_empted: list[str] = Field(default_factory=list, description="the intents it withdrew")


def conflicts(
    volumes: Sequence[LegVolume], approved: Sequence[OperationalIntent], uav_id: str | None = None
) -> list[Conflict]:
    """Every (new leg, approved intent's leg) pair that shares airspace at some instant (one index query for all),
    and every approved intent that books `uav_id` while the new one flies."""
    found = []
    if uav_id is not None and volumes:
        t0, t1 = min(v.t_start for v in volumes), max(v.t_end for v in volumes)
        for intent in approved:
            if intent.uav_id == uav_id and intent.t_start < t1 and t0 < intent.t_end:
                found.append(
                    Conflict(
                        intent_id=intent.intent_id,
                        owner=intent.owner,
                        priority=intent.priority,
                        kind="uav",
                        leg=-1,
                        other_leg=-1,
                        from_sec=max(t0, intent.t_start),
                    )  # fmt: skip
                )
    pairs = [(intent, volume) for intent in approved for volume in intent.volumes]
    for i, j in overlapping(volumes, [volume for _, volume in pairs]):
        mine, (intent, theirs) = volumes[i], pairs[j]
        found.append(
            Conflict(
                intent_id=intent.intent_id,
                owner=intent.owner,
                priority=intent.priority,
                kind="airspace",
                leg=mine.leg,
                other_leg=theirs.leg,
                from_sec=max(mine.t_start, theirs.t_start),
            )
        )
    return sorted(found, key=lambda c: (c.from_sec, c.intent_id, c.leg))


def conflicts_among(intents: Sequence[OperationalIntent]) -> list[Conflict]:
    """Every conflict between two intents of one set, by `conflicts` itself (`of` the one checked against the
    other): a team's members must have none."""
    found = []
    for index, intent in enumerate(intents):
        others = intents[index + 1 :]
        found += [
            c.model_copy(update={"of": intent.intent_id}) for c in conflicts(intent.volumes, others, intent.uav_id)
        ]
    return found


class MembersConflict(ValueError):
    """A set of intents whose own members conflict by the ledger's check: never admitted. The team's planner and
    verifier keep members apart, so this is a defect upstream, not a busy airspace."""

    def __init__(self, found: list[Conflict]):
        self.conflicts = found
        first: dict[tuple[str | None, str], float] = {}
        for c in found:  # each pair once, from when they first share airspace
            first[(c.of, c.intent_id)] = min(first.get((c.of, c.intent_id), c.from_sec), c.from_sec)
        pairs = "; ".join(f"{of} and {other} from t={t:g} s" for (of, other), t in first.items())
        super().__init__(f"the set's own intents conflict by the ledger's check: {pairs}")


class LedgerError(Exception):
    """The ledger's database cannot be opened, read or written: one line."""


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _database_error(exc: BaseException) -> bool:
    if isinstance(exc, sqlite3.Error):
        return True
    try:
        import psycopg
    except ImportError:
        return False
    return isinstance(exc, psycopg.Error)


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
                f"CREATE TABLE IF NOT EXISTS {TABLE} (intent_id TEXT PRIMARY KEY, state TEXT NOT NULL, "
                "t_start DOUBLE PRECISION NOT NULL, t_end DOUBLE PRECISION NOT NULL, note TEXT NOT NULL, "
                "body TEXT NOT NULL)"
            )
            cursor.execute(f"CREATE INDEX IF NOT EXISTS {TABLE}_active ON {TABLE} (state, t_end)")

    # --- connections ------------------------------------------------------------------------------------------
    def _connect(self) -> Any:
        try:
            if self.postgres:
                import psycopg

                return psycopg.connect(self.where, connect_timeout=CONNECT_TIMEOUT_SEC)
            Path(self.where).parent.mkdir(parents=True, exist_ok=True)
            return sqlite3.connect(self.where, timeout=BUSY_TIMEOUT_SEC, isolation_level=None)
        except Exception as exc:  # psycopg's and sqlite3's own errors: one line either way
            raise LedgerError(f"cannot open the ledger at {self.where}: {_one_line(exc)}") from None

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
        except BaseException as exc:
            connection.rollback()
            if _database_error(exc):  # a lost server, a locked or foreign file: one line, not a traceback
                raise LedgerError(f"the ledger at {self.where} failed: {_one_line(exc)}") from None
            raise
        finally:
            connection.close()

    # --- reads ------------------------------------------------------------------------------------------------
    def _select(self, cursor: Any, where: str, params: Sequence[Any]) -> list[OperationalIntent]:
        cursor.execute(f"SELECT state, note, body FROM {TABLE} WHERE {where} ORDER BY t_start, intent_id", params)
        intents = []
        for state, note, body in cursor.fetchall():
            try:
                intents.append(OperationalIntent.model_validate({**json.loads(body), "state": state, "note": note}))
            except (ValueError, TypeError) as exc:  # JSON and pydantic errors alike: a row this code did not write
                raise LedgerError(f"the ledger at {self.where} holds a malformed intent: {_one_line(exc)}") from None
        return intents

    def _holding(self, t_from: float, t_to: float) -> tuple[str, list[Any]]:
        """The intents that hold airspace in (t_from, t_to): every one not withdrawn by a pre-emption whose volumes
        reach into it. Time decides, not the Ended state the clock gives: processes sharing a ledger each run on
        their own clock, and one ahead must not free airspace for one behind."""
        m = self._mark
        where = f"note NOT LIKE {m} AND t_end > {m} AND t_start < {m}"
        return where, [f"{PRE_EMPTED}%", t_from, t_to]

    def active(self, t_from: float = float("-inf"), t_to: float = float("inf")) -> list[OperationalIntent]:
        """The intents that hold airspace at some instant of (t_from, t_to)."""
        with self._transaction() as cursor:
            return self._select(cursor, *self._holding(t_from, t_to))

    def all(self) -> list[OperationalIntent]:
        with self._transaction() as cursor:
            return self._select(cursor, "1 = 1", [])

    def team(self, team_id: str) -> list[OperationalIntent]:
        """A fleet mission's member intents, withdrawn ones too (their ids start with the team's id)."""
        with self._transaction() as cursor:
            rows = self._select(cursor, f"intent_id LIKE {self._mark}", [f"{team_id}.%"])
        return [i for i in rows if i.team_id == team_id]  # LIKE reads `_` in an id as a wildcard

    def ended_before(self, now_sec: float) -> list[OperationalIntent]:
        """Intents flown to their end by `now_sec` (not withdrawn), the latest last: a UAV's last one says where it
        waits."""
        with self._transaction() as cursor:
            m = self._mark
            rows = self._select(cursor, f"note NOT LIKE {m} AND t_end <= {m}", [f"{PRE_EMPTED}%", now_sec])
        return sorted(rows, key=lambda i: i.t_end)

    # --- writes -----------------------------------------------------------------------------------------------
    def admit(self, intent: OperationalIntent, pre_empting: Sequence[str] = ()) -> Admission:
        """Insert `intent` if it conflicts with no intent holding airspace; else insert nothing and return the
        conflicts. `pre_empting` names intents it may withdraw, checked here, in the same transaction: only those
        of lower priority, not started by the time it starts, and actually in its way are withdrawn."""
        return self.admit_all([intent], pre_empting)

    def admit_all(self, intents: Sequence[OperationalIntent], pre_empting: Sequence[str] = ()) -> Admission:
        """Insert every one of `intents` (a fleet mission's members) if none conflicts with an intent holding
        airspace, else none, in one transaction: the conflicts name the member (`of`). Pre-emption as `admit`'s,
        for the set: the set's earliest start is when it starts, and a team in the way is withdrawn whole (every
        member named, lower priority, not started) or not at all. Raises MembersConflict, admitting nothing, when
        two of `intents` conflict with each other."""
        if not intents:
            raise ValueError("admit_all needs at least one intent")
        if found := conflicts_among(intents):
            raise MembersConflict(found)
        t_start, t_end = min(i.t_start for i in intents), max(i.t_end for i in intents)
        priority = max(i.priority for i in intents)
        with self._transaction(exclusive=True) as cursor:
            holding = self._select(cursor, *self._holding(t_start, t_end))
            in_the_way = {c.intent_id for i in intents for c in conflicts(i.volumes, holding, i.uav_id)}

            def may_end(i: OperationalIntent) -> bool:
                return i.intent_id in pre_empting and i.priority < priority and i.t_start > t_start

            withdrawn = [i for i in holding if i.intent_id in in_the_way and may_end(i)]
            teams = {i.team_id for i in withdrawn if i.team_id is not None}
            if teams:  # a team holds its airspace whole: withdrawn only if every member may end
                rows = self._select(cursor, *self._holding(float("-inf"), float("inf")))
                for team_id in teams:
                    team = [m for m in rows if m.team_id == team_id]
                    withdrawn = [w for w in withdrawn if w.team_id != team_id]
                    if all(may_end(m) for m in team):
                        withdrawn += team
            ids = {i.intent_id for i in withdrawn}
            kept = [i for i in holding if i.intent_id not in ids]
            found = [
                c.model_copy(update={"of": i.intent_id}) for i in intents for c in conflicts(i.volumes, kept, i.uav_id)
            ]
            if found:
                return Admission(conflicts=sorted(found, key=lambda c: (c.from_sec, c.intent_id, c.leg)))
            by = intents[0]
            for ended in withdrawn:
                name = by.team_id or by.intent_id
                note = f"{PRE_EMPTED} {name} (request {by.request_id}, {priority_words(by.priority)})"
                cursor.execute(
                    f"UPDATE {TABLE} SET state = {self._mark}, note = {self._mark} WHERE intent_id = {self._mark}",
                    [IntentState.ended.value, note, ended.intent_id],
                )
            for intent in intents:
                self._insert(cursor, intent)
            return Admission(pre_empted=sorted(ids))

    def _insert(self, cursor: Any, intent: OperationalIntent) -> None:
        cursor.execute(
            f"INSERT INTO {TABLE} VALUES ({', '.join(self._mark for _ in range(6))})",
            [
                intent.intent_id,
                intent.state.value,
                intent.t_start,
                intent.t_end,
                intent.note,
                intent.model_dump_json(exclude={"state", "note"}),
            ],
        )

    def clear(self) -> int:
        """Delete every intent (`ops --fresh-ledger`): the airspace starts empty; the checkpoints stay. How many."""
        with self._transaction(exclusive=True) as cursor:
            cursor.execute(f"DELETE FROM {TABLE}")
            return max(cursor.rowcount, 0)

    def advance_clock(self, now_sec: float) -> None:
        """F3548's life cycle on the stream's clock: an Accepted intent whose flight has begun is Activated, and any
        intent whose volumes have all passed is Ended."""
        m = self._mark
        with self._transaction(exclusive=True) as cursor:
            cursor.execute(
                f"UPDATE {TABLE} SET state = {m} WHERE state = {m} AND t_start <= {m} AND t_end > {m}",
                [IntentState.activated.value, IntentState.accepted.value, now_sec, now_sec],
            )
            states = ", ".join(m for _ in ACTIVE_STATES)
            cursor.execute(
                f"UPDATE {TABLE} SET state = {m} WHERE state IN ({states}) AND t_end <= {m}",
                [IntentState.ended.value, *(s.value for s in ACTIVE_STATES), now_sec],
            )
