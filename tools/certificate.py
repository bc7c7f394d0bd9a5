"""The safety certificate of an execute: what a UTM auditor needs to re-check the decision offline.

It holds the trajectory itself, the exact arguments both safety gates ran with (the verifier's rule set: rules,
LTL / STL specs, altitude band, separation, deadline; the simulator's seeds and stress levels), their verdicts
with robustness margins, the engines and versions that judged, and sha256 digests of the world, the IR, the
trajectory and the rule set. `check_certificate` re-runs both gates from the certificate and a world file alone
and lists every difference: a moved waypoint, another world or an edited rule set fails the check.

The digests make a changed input visible; they are not a signature (anyone who edits a certificate can recompute
them). The re-run verdicts are what the check stands on.

A fleet mission (issue 42) has one certificate for the whole team: `members`, each a member's own certificate as
above (bound to the same world and IR digests), judged with every other member as known traffic for its whole time
in the world (parked at its start, its certified flight, parked where it landed: tools/team_traffic.member_track);
the team's trajectory digest binds every member's trajectory, sub-task, role and share, its rule-set digest every
member's rule set, and given the IR the members must cover its sub-tasks (each flown, split shares summing to its
payload). Its top-level trajectory is empty (no
single UAV flies the mission) and its top-level verdicts and simulations are the members'. `check_certificate`
re-checks every member, the others as traffic. A one-UAV certificate has no `members` key.
"""

from __future__ import annotations

import functools
import hashlib
import json
from importlib import metadata
from typing import Any

from pydantic import BaseModel, Field

from tools.catalog import default_registry
from tools.ltl import default_engine
from tools.team_traffic import member_track, with_members_as_traffic
from tools.trajectory import FlightPhases, flight_phases
from tools.world import TrafficTrack, World

CERTIFICATE_VERSION = "cloudbrain-certificate/1"
ROBUSTNESS_TOLERANCE = 1e-6  # re-run margins may differ by float noise only
VERSIONED_PACKAGES = ("cloudbrain", "rtamt", "spottl", "shapely", "numpy")


def sha256_of(payload: Any) -> str:
    """sha256 of a JSON-able payload in canonical form (sorted keys, no whitespace)."""
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def world_digest(world: World) -> str:
    return sha256_of(world.model_dump(mode="json"))


class CertifiedTrajectory(BaseModel):
    uav_id: str | None
    waypoints: list[list[float]] = Field(description="[x, y, z, t] as executed")
    origin: str | None = None
    goal: str | None = None


class SimulationRecord(BaseModel):
    seed: int
    stress_level: str
    success: bool
    events: list[str] = Field(default_factory=list, description="event types the run saw (none when it passed)")


class Digests(BaseModel):
    world_sha256: str
    ir_sha256: str | None
    trajectory_sha256: str
    rule_set_sha256: str


class SafetyCertificate(BaseModel):
    version: str = CERTIFICATE_VERSION
    trajectory: CertifiedTrajectory
    rule_set: dict[str, Any] = Field(description="the verifier's arguments except the trajectory: what was checked")
    verdicts: dict[str, dict[str, Any]] = Field(description="rule id -> status and robustness margin (m, s, ratio)")
    specs: list[dict[str, Any]] = Field(default_factory=list, description="the LTL / STL specs and their status")
    simulation_args: dict[str, Any] = Field(description="the simulator's arguments except the trajectory and seed")
    simulations: list[SimulationRecord]
    flight_phases: FlightPhases | None = Field(
        default=None,
        description="where the take-off climb ends and the landing descent begins: the altitude band's floor (R3) "
        "binds between the two (not on the verticals over the first and last points); the ceiling and every other "
        "rule bind over the whole flight, ground to ground",
    )
    engines: dict[str, str] = Field(description="which engine judged what, e.g. {'ltl': 'spot', 'stl': 'rtamt'}")
    versions: dict[str, str] = Field(description="package versions of the engines")
    digests: Digests
    members: list[MemberCertificate] | None = Field(
        default=None,
        exclude_if=lambda members: members is None,
        description="a fleet mission: each member's certificate, judged with the other members as known traffic",
    )


class MemberCertificate(BaseModel):
    subtask_id: str
    role: str
    share_kg: float
    certificate: SafetyCertificate = Field(description="the member's route, verdicts and simulations")

    def track_of(self) -> TrafficTrack:
        return member_track(self.subtask_id, self.certificate.trajectory.uav_id, self.certificate.trajectory.waypoints)


SafetyCertificate.model_rebuild()


class CertificateCheck(BaseModel):
    valid: bool
    differences: list[str] = Field(default_factory=list)


@functools.cache  # read from the installed metadata files: ~5 ms a certificate, fixed for the process
def _versions() -> dict[str, str]:
    found = {}
    for package in VERSIONED_PACKAGES:
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "not installed"
    return found


def _split(args: dict[str, Any]) -> tuple[CertifiedTrajectory, dict[str, Any]]:
    trajectory = CertifiedTrajectory(
        uav_id=args.get("uav_id"),
        waypoints=args.get("waypoints") or [],
        origin=args.get("origin"),
        goal=args.get("goal"),
    )
    rest = {k: v for k, v in args.items() if k not in CertifiedTrajectory.model_fields}
    return trajectory, rest


def _simulation_record(result: dict[str, Any], args: dict[str, Any]) -> SimulationRecord:
    return SimulationRecord(
        seed=int(args.get("seed", 0)),
        stress_level=str(args.get("stress_level", "medium")),
        success=bool(result.get("success")),
        events=sorted({str(e.get("type")) for e in result.get("events") or []}),
    )


def issue_certificate(
    world: World,
    verify_args: dict[str, Any],
    verdict: dict[str, Any],
    simulate_args: dict[str, Any],
    simulations: list[dict[str, Any]],
    ir: dict[str, Any] | None,
) -> SafetyCertificate:
    """The certificate of a route that passed both gates, from the gates' own arguments and results (one
    simulation result per stress scenario, each naming its seed)."""
    trajectory, rule_set = _split(verify_args)
    _, sim_args = _split(simulate_args)
    sim_args.pop("seed", None)  # each scenario's seed is in its own result
    return SafetyCertificate(
        trajectory=trajectory,
        rule_set=rule_set,
        verdicts=verdict.get("rules") or {},
        specs=[*(verdict.get("ltl") or []), *(verdict.get("stl") or [])],
        simulation_args=sim_args,
        simulations=[_simulation_record(result, {**sim_args, "seed": result["seed"]}) for result in simulations],
        flight_phases=flight_phases(trajectory.waypoints) if trajectory.waypoints else None,
        engines=dict(verdict.get("engine") or {}),
        versions=dict(_versions()),
        digests=Digests(
            world_sha256=world_digest(world),
            ir_sha256=sha256_of(ir) if ir is not None else None,
            trajectory_sha256=sha256_of(trajectory.model_dump(mode="json")),
            rule_set_sha256=sha256_of(rule_set),
        ),
    )


def issue_team_certificate(
    world: World, members: list[MemberCertificate], ir: dict[str, Any] | None
) -> SafetyCertificate:
    """The one certificate of a fleet mission: its members' certificates (from issue_certificate, each in the world
    with the other members as traffic, each bound to `world`'s digest), and digests over all of them."""
    trajectories = _member_bindings(members)
    rule_sets = [m.certificate.rule_set for m in members]
    return SafetyCertificate(
        trajectory=CertifiedTrajectory(uav_id=None, waypoints=[]),
        rule_set={},
        verdicts={},
        simulation_args={},
        simulations=[],
        engines=dict(members[0].certificate.engines) if members else {},
        versions=dict(_versions()),
        digests=Digests(
            world_sha256=world_digest(world),
            ir_sha256=sha256_of(ir) if ir is not None else None,
            trajectory_sha256=sha256_of(trajectories),
            rule_set_sha256=sha256_of(rule_sets),
        ),
        members=members,
    )


def _member_bindings(members: list[MemberCertificate]) -> list[dict[str, Any]]:
    """What the team's trajectory digest binds of each member: its sub-task, role, share and trajectory."""
    return [
        {
            "subtask_id": m.subtask_id,
            "role": m.role,
            "share_kg": m.share_kg,
            "trajectory": m.certificate.trajectory.model_dump(mode="json"),
        }
        for m in members
    ]


def _coverage_differences(members: list[MemberCertificate], ir: dict[str, Any] | None) -> list[str]:
    """With the IR: every team sub-task has members, of its role, whose shares sum to its payload, and no member
    flies a sub-task the IR does not have."""
    subtasks = ((ir or {}).get("team") or {}).get("subtasks")
    if not subtasks:
        return []
    differences = []
    known = {s.get("id") for s in subtasks}
    for member in members:
        if member.subtask_id not in known:
            differences.append(f"team: member {member.subtask_id} flies a sub-task the IR does not have")
    for subtask in subtasks:
        flying = [m for m in members if m.subtask_id == subtask.get("id")]
        if not flying:
            differences.append(f"team: sub-task {subtask.get('id')} has no member")
            continue
        payload = float(subtask.get("payload_kg") or 0.0)
        shares = sum(m.share_kg for m in flying)
        if abs(shares - payload) > 1e-6 * max(1.0, payload):
            differences.append(
                f"team: sub-task {subtask.get('id')}'s members carry {shares:g} kg of its {payload:g} kg payload"
            )
        role = subtask.get("role")
        if role is not None and any(m.role != role for m in flying):
            differences.append(f"team: a member of sub-task {subtask.get('id')} does not fly its role {role}")
    return differences


def _verdict_differences(recorded: dict[str, dict[str, Any]], rerun: dict[str, dict[str, Any]]) -> list[str]:
    differences = []
    for rule in sorted(set(recorded) | set(rerun)):
        was, now = recorded.get(rule) or {}, rerun.get(rule) or {}
        if was.get("status") != now.get("status"):
            differences.append(f"{rule}: certified {was.get('status')}, re-checked {now.get('status')}")
            continue
        a, b = was.get("robustness"), now.get("robustness")
        if a is not None and b is not None and abs(float(a) - float(b)) > ROBUSTNESS_TOLERANCE + 1e-3 * abs(float(a)):
            differences.append(f"{rule}: certified robustness {a}, re-checked {b}")
    return differences


def check_certificate(
    certificate: SafetyCertificate, world: World, ir: dict[str, Any] | None = None
) -> CertificateCheck:
    """Re-verify the certificate offline against `world` (and the IR, when given): digests, then both gates (every
    member's, the other members as traffic, for a team)."""
    if certificate.members is not None:
        differences = _team_differences(certificate, world, ir)
    else:
        differences = _differences(certificate, world, world, ir)
    return CertificateCheck(valid=not differences, differences=differences)


def _team_differences(certificate: SafetyCertificate, world: World, ir: dict[str, Any] | None) -> list[str]:
    members = certificate.members or []
    differences = _digest_differences(certificate, world)
    if not members:
        differences.append("team: the certificate names no member")
    if sha256_of(_member_bindings(members)) != certificate.digests.trajectory_sha256:
        differences.append(
            "team: the members' waypoints, UAVs, ends, sub-tasks, roles or shares differ from the certified ones "
            "(sha256)"
        )
    if sha256_of([m.certificate.rule_set for m in members]) != certificate.digests.rule_set_sha256:
        differences.append("team: a member's rules, specs or limits differ from the certified ones (sha256)")
    differences += _ir_differences(certificate, ir)
    differences += _coverage_differences(members, ir)
    for member in members:
        others = with_members_as_traffic(world, [m.track_of() for m in members if m is not member])
        label = f"member {member.subtask_id} ({member.certificate.trajectory.uav_id})"
        differences += [f"{label}: {d}" for d in _differences(member.certificate, world, others, ir)]
    return differences


def _digest_differences(certificate: SafetyCertificate, world: World) -> list[str]:
    differences = []
    digests = certificate.digests
    if certificate.version != CERTIFICATE_VERSION:
        differences.append(f"certificate version {certificate.version!r}, this checker reads {CERTIFICATE_VERSION!r}")
    if world_digest(world) != digests.world_sha256:
        differences.append(
            f"world: the file given (sha256 {world_digest(world)[:12]}...) is not the certified world "
            f"({digests.world_sha256[:12]}...)"
        )
    return differences


def _ir_differences(certificate: SafetyCertificate, ir: dict[str, Any] | None) -> list[str]:
    if ir is not None and sha256_of(ir) != certificate.digests.ir_sha256:
        return ["IR: the IR given is not the certified IR (sha256)"]
    return []


def _differences(
    certificate: SafetyCertificate, world: World, gate_world: World, ir: dict[str, Any] | None
) -> list[str]:
    """A one-UAV certificate's differences: digests against `world`, both gates re-run in `gate_world` (the world
    itself, or for a team member the world with the other members as traffic)."""
    differences = _digest_differences(certificate, world)
    digests = certificate.digests
    trajectory = certificate.trajectory.model_dump(mode="json")
    if sha256_of(trajectory) != digests.trajectory_sha256:
        differences.append("trajectory: the waypoints, UAV or ends differ from the certified trajectory (sha256)")
    if sha256_of(certificate.rule_set) != digests.rule_set_sha256:
        differences.append("rule set: the rules, specs or limits differ from the certified rule set (sha256)")
    differences += _ir_differences(certificate, ir)
    ltl_engine = default_engine().name
    if certificate.engines.get("ltl") not in (None, ltl_engine):
        differences.append(
            f"engine: certified with LTL engine {certificate.engines['ltl']}, re-checked with {ltl_engine}"
        )

    registry = default_registry()
    verified = registry.call("verify_ltl_stl", gate_world, {**certificate.rule_set, **trajectory})
    if not verified.ok:
        error = verified.error
        differences.append(f"verifier: fails on re-check ({error.type}: {error.message})" if error else "verifier")
    differences += _verdict_differences(certificate.verdicts, (verified.result or {}).get("rules") or {})
    for record in certificate.simulations:
        flown = {"uav_id": certificate.trajectory.uav_id, "waypoints": certificate.trajectory.waypoints}
        args = {**certificate.simulation_args, **flown, "seed": record.seed, "stress_level": record.stress_level}
        simulated = registry.call("simulate_scenario", gate_world, args)
        rerun = _simulation_record(simulated.result or {}, args)
        if not simulated.ok or rerun != record:
            differences.append(
                f"simulator: seed {record.seed} ({record.stress_level}) certified success={record.success} "
                f"events={record.events}, re-checked success={rerun.success} events={rerun.events}"
            )
    return differences
