"""A fleet mission's members round to round (inspector/members.py, what `cloudbrain trace` and the inspector's thread
page show): each change named by sub-task and UAV, members of a split load told apart by UAV, rounds read from
their tool results, and an edited state's junk read as no member rather than a crash."""

from __future__ import annotations

import pytest

from inspector.members import (
    TEAM_TOOL,
    Member,
    decision_members,
    member_changes,
    round_members,
    rounds_member_changes,
)
from tools.catalog import TEAM_TOOL as CATALOG_TEAM_TOOL


def _path(depart: float, cruise: float = 40.0, east: float = 100.0) -> tuple[tuple[float, float, float, float], ...]:
    return (
        (0.0, 0.0, 0.0, depart),
        (0.0, 0.0, cruise, depart + 10),
        (east, 0.0, cruise, depart + 20),
        (east, 0.0, 0.0, depart + 30),
    )


def test_the_tool_name_is_the_tools_own():
    assert TEAM_TOOL == CATALOG_TEAM_TOOL


def test_a_reassigned_member_is_named_by_sub_task_with_both_uavs():
    before = [Member("t1", "deliver", "uav_06", _path(0)), Member("t2", "deliver", "uav_05", _path(15))]
    after = [Member("t1", "deliver", "uav_06", _path(0)), Member("t2", "deliver", "uav_08", _path(15))]
    assert member_changes(before, after) == ["t2: uav_05 -> uav_08"]


def test_a_later_departure_and_a_higher_route_are_named_with_the_uav():
    before = [Member("t1", "film", "uav_07", _path(0)), Member("t2", "deliver", "uav_09", _path(15))]
    after = [Member("t1", "film", "uav_07", _path(0, cruise=60)), Member("t2", "deliver", "uav_09", _path(20))]
    assert member_changes(before, after) == [
        "t1 (uav_07): route changed (cruise 40 -> 60 m, 180 -> 220 m long)",
        "t2 (uav_09): departs 15 s -> 20 s",
    ]


def test_a_split_load_matches_its_members_by_uav_before_pairing_the_rest():
    """Two members of one sub-task: the kept UAV is compared with itself, the other one reads as reassigned."""
    before = [Member("t1", "deliver", "uav_01", _path(0)), Member("t1", "deliver", "uav_03", _path(45))]
    after = [Member("t1", "deliver", "uav_02", _path(0, east=120)), Member("t1", "deliver", "uav_03", _path(50))]
    assert member_changes(before, after) == [
        "t1: uav_01 -> uav_02; route changed (180 -> 200 m long)",
        "t1 (uav_03): departs 45 s -> 50 s",
    ]


def test_members_added_and_removed_and_unchanged_ones_are_silent():
    same = Member("t1", "deliver", "uav_01", _path(0))
    assert member_changes([same], [same]) == []
    assert member_changes([same], [same, Member("t2", "inspect", "uav_07", _path(5))]) == [
        "t2 (uav_07) inspect, departs 5 s: added"
    ]
    assert member_changes([same, Member("t2", "inspect", "uav_07", _path(5))], [same]) == ["t2 (uav_07) removed"]
    assert member_changes([same], [Member("t1", "deliver", "uav_01")]) == ["t1 (uav_01): no route this round"]


def _member(subtask: str, uav: str, depart: float) -> dict:
    """A member as execute_tools writes it to `team_candidates` (the fields read here)."""
    return {"subtask_id": subtask, "role": "deliver", "uav_id": uav, "waypoints": [list(w) for w in _path(depart)]}


def _attempt(team: list[tuple[str, str]] | None, ok: bool = True) -> dict:
    """An attempt record as the graph writes one: the round's IR (a team's, or one UAV's) and assign_team's result."""
    results = []
    if team is not None:
        chosen = [{"subtask_id": s, "uav_id": u, "share_kg": 1.0} for s, u in team]
        results.append({"tool": TEAM_TOOL, "ok": ok, "result": {"team": chosen} if ok else None})
    ir = {"team": {"subtasks": [{"id": "t1", "role": "deliver"}, {"id": "t2", "role": "film"}]}}
    return {"round": 0, "ir": ir if team is not None else {"entities": {}}, "tool_results": results}


def test_a_round_is_what_execute_tools_planned_with_any_chosen_member_it_could_not_route():
    attempt = _attempt([("t1", "uav_01"), ("t2", "uav_02")])
    members = round_members(attempt, [_member("t1", "uav_01", 0), _member("t2", "uav_02", 10)])
    assert [(m.name, m.depart_sec) for m in members] == [("t1 (uav_01)", 0), ("t2 (uav_02)", 10)]
    unrouted = round_members(attempt, [_member("t1", "uav_01", 0)])
    assert unrouted[1] == Member("t2", "film", "uav_02")  # chosen, its route failed: no route, its role from the IR
    assert round_members(_attempt(None), [_member("t1", "uav_01", 0)]) is None  # a one-UAV round
    assert round_members(attempt, None) is None  # it ended before execute_tools
    assert round_members(_attempt([("t1", "uav_01")], ok=False), []) == []  # no team found


def test_rounds_are_compared_with_the_last_team_planned():
    first = [Member("t1", "deliver", "uav_01", _path(0)), Member("t2", "film", "uav_02", _path(15))]
    third = [Member("t1", "deliver", "uav_01", _path(0)), Member("t2", "film", "uav_04", _path(20))]
    assert rounds_member_changes([first, [], None, third, None]) == [
        ["team: t1 (uav_01) deliver, departs 0 s; t2 (uav_02) film, departs 15 s"],
        ["no member planned (the last team: t1 (uav_01), t2 (uav_02))"],
        [],
        ["t2: uav_02 -> uav_04; departs 15 s -> 20 s"],
        [],
    ]


@pytest.mark.parametrize(
    "junk",
    [
        None,
        "team",
        {"team": "x"},
        {"team": {"subtasks": 5}},
        {"team": [None, {"subtask_id": 3}, {"subtask_id": "t1"}]},
        {"team": [{"subtask_id": "t1", "uav_id": "uav_01", "waypoints": [[1, 2, "x", 4]]}]},
        {"team": [{"subtask_id": "t1", "uav_id": "uav_01", "waypoints": [[1, 2, float("nan"), 4]]}]},
    ],
)
def test_an_edited_state_holding_junk_reads_as_no_member_or_no_route(junk):
    assert all(not m.waypoints for m in decision_members(junk))
    attempt = {"ir": {"team": junk}, "tool_results": [{"tool": TEAM_TOOL, "ok": True, "result": junk}]}
    assert all(not m.waypoints for m in round_members(attempt, junk) or [])
    assert round_members(junk, junk) is None


def test_a_member_missing_after_a_planning_failure_is_not_planned_rather_than_removed():
    both = [Member("t1", "deliver", "uav_06", _path(0)), Member("t2", "deliver", "uav_05", _path(15))]
    failed = {"failure": {"stage": "execute_tools"}}
    assert rounds_member_changes([both, both[:1]], [{}, failed])[1] == [
        "t2 (uav_05) not planned (the round's planning failed first)"
    ]
    assert rounds_member_changes([both, both[:1]], [{}, {"failure": None}])[1] == ["t2 (uav_05) removed"]
    unassigned = {"tool_results": [{"tool": TEAM_TOOL, "ok": False, "result": None}]}
    assert rounds_member_changes([[]], [unassigned]) == [["no team assigned"]]
