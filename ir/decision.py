"""The one outcome every method ends in: execute with a UAV and 4D waypoints, or a safe refusal,
or a request for human confirmation.

A fleet mission's execute (issue 42) lists its members in `team`; its own `uav_id` and `waypoints` stay empty, so a
reader that flies `uav_id` / `waypoints` never flies one member as if it were the whole mission. Its `eta_sec` is
the mission's (the last member's arrival) and `energy_wh` the members' sum. A one-UAV decision has no `team` key."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from ir.team_execution import TeamMember
from tools.certificate import SafetyCertificate

Status = Literal["execute", "safe_refusal", "human_confirm"]


class TeamMemberDecision(BaseModel):
    subtask_id: str
    role: str
    uav_id: str
    waypoints: list[list[float]] = Field(description="[x, y, z, t], t on the mission's clock (0 = now)")
    eta_sec: float | None = None
    energy_wh: float | None = None
    share_kg: float = Field(default=0.0, description="the payload this member carries")


class Decision(BaseModel):
    status: Status
    uav_id: str | None = None
    waypoints: list[list[float]] = Field(default_factory=list, description="[x, y, z, t]")
    eta_sec: float | None = None
    energy_wh: float | None = None
    reason: str = ""
    proposal: dict[str, Any] | None = Field(default=None, description="unverified candidate shown for confirmation")
    missing_information: list[str] = Field(
        default_factory=list, description="human_confirm: the facts the request must still give, each 'field: why'"
    )
    blocked_by: list[str] = Field(
        default_factory=list,
        description="not executed: the ids of what the failure that ended the run found in the way (no-fly zones, "
        "buildings, approved intents' reservations <intent id>_leg<k>), as the tools reported them",
    )
    approved_by_operator: bool = False
    verified: bool = False
    simulated: bool = False
    certificate: SafetyCertificate | None = Field(
        default=None, description="execute only: the re-checkable safety certificate (tools/certificate.py)"
    )
    team: list[TeamMemberDecision] | None = Field(
        default=None,
        exclude_if=lambda team: team is None,
        description="a fleet mission: every member's sub-task, role, UAV, route and share (uav_id / waypoints empty)",
    )


def team_fields(members: list[TeamMember]) -> dict[str, Any]:
    """A fleet mission's decision fields from its planned members: one entry each, the mission's arrival (the last
    member's) and energy (their sum), no single route. The agent's finalize and the benchmark's gold both use it."""
    etas = [m.eta_sec for m in members if m.eta_sec is not None]
    return {
        "team": [
            TeamMemberDecision(
                subtask_id=m.subtask_id,
                role=m.role,
                uav_id=m.uav_id,
                waypoints=m.waypoints,
                eta_sec=m.eta_sec,
                energy_wh=m.energy_wh,
                share_kg=m.share_kg,
            )
            for m in members
        ],
        "eta_sec": max(etas) if etas else None,
        "energy_wh": round(sum(m.energy_wh or 0.0 for m in members), 2),
    }
