"""risk_assess and explain_decision through the registry on examples/downtown.json."""

from __future__ import annotations

import math
import re

import pytest

from tools import explain, risk, verifier
from tools.registry import ToolRegistry


@pytest.fixture(scope="module")
def registry():
    return ToolRegistry([risk.SPEC, explain.SPEC, verifier.SPEC])


def timed(points, z=90.0, speed=12.0):
    out, t = [], 0.0
    for i, p in enumerate(points):
        if i:
            t += math.dist(points[i - 1][:2], p[:2]) / speed
        out.append([p[0], p[1], z, round(t, 3)])
    return out


DETOUR = timed([(100, 100), (300, 140), (450, 140), (650, 420)])
STRAIGHT = timed([(100, 100), (650, 420)], z=60.0)
NORTH = timed([(100, 700), (700, 700)])  # inside the gusty north region (risk medium)


def assess(registry, world, **args):
    return registry.call("risk_assess", world, args)


# --- risk ------------------------------------------------------------------------------------------------------
def test_levels_follow_the_score():
    assert [risk.level_of(s) for s in (0.0, 0.1, 0.3, 0.9)] == ["none", "low", "medium", "high"]


def test_clear_route_in_light_wind_is_low_risk(registry, world):
    res = assess(registry, world, waypoints=DETOUR, uav_id="uav_03")
    assert res.ok and res.result["level"] == "low"
    assert 0 < res.result["score"] < 0.25 and res.result["top_reasons"]


def test_crossing_an_nfz_is_high_risk_without_override(registry, world):
    res = assess(registry, world, waypoints=STRAIGHT)
    assert not res.ok and res.error.type == "high_risk_no_override" and not res.error.recoverable
    assert res.result["level"] == "high" and "nfz_temp_1" in res.result["top_reasons"][0]
    assert assess(registry, world, waypoints=STRAIGHT, max_risk_level="high").ok


def test_gusty_region_is_medium_risk_and_a_low_cap_makes_it_recoverable(registry, world):
    assert assess(registry, world, waypoints=NORTH).result["level"] == "medium"
    capped = assess(registry, world, waypoints=NORTH, max_risk_level="low")
    assert capped.error.type == "medium_risk" and capped.error.recoverable


def test_simulation_events_raise_the_score(registry, world):
    calm = assess(registry, world, waypoints=DETOUR).result["score"]
    event = {"type": "near_miss", "time_sec": 30, "detail": "12.0 m from crossing_1", "entity": "crossing_1"}
    shaken = assess(registry, world, waypoints=DETOUR, sim_events=[event]).result
    assert shaken["score"] > calm and any("near_miss" in r for r in shaken["top_reasons"])
    bad = assess(registry, world, waypoints=DETOUR, sim_events=[{"type": "explosion", "time_sec": 1}])
    assert bad.error.type == "bad_arguments"


def test_wind_above_the_uav_limit_is_high_risk(registry, world):
    # north gusts: 9 m/s wind + 6 m/s gusts > uav_09's 14 m/s limit.
    res = assess(registry, world, waypoints=NORTH, uav_id="uav_09", max_risk_level="high")
    assert res.result["level"] == "high" and "uav_09" in res.result["top_reasons"][0]


# --- explanation -----------------------------------------------------------------------------------------------
BRACKETED = re.compile(r"\[([^\[\]]*)\]")


def _tool_results(registry, world):
    verify_args = {"waypoints": DETOUR, "uav_id": "uav_03", "goal": "accident_site_3"}
    checked = registry.call("verify_ltl_stl", world, verify_args)
    assessed = assess(registry, world, waypoints=STRAIGHT)  # a failed result is cited with its error
    return [checked.model_dump(), assessed.model_dump()]


def test_explanation_cites_only_given_results_and_rules(registry, world):
    results = _tool_results(registry, world)
    decision = {"status": "execute", "uav_id": "uav_03", "reason": "verified, see [made_up-123] and [R9]"}
    args = {"decision": decision, "tool_results": results, "rules": ["R1", "R5"]}
    res = registry.call("explain_decision", world, args)
    assert res.ok
    given = {r["request_id"] for r in results} | {"R1", "R5"}
    cited = set(BRACKETED.findall(res.result["text"]))
    assert cited == given and set(res.result["citations"]) == given
    assert "made_up-123" not in res.result["citations"] and "[made_up-123]" not in res.result["text"]
    assert "R1 (never enter an active no-fly zone): pass [R1]" in res.result["text"]
    assert "high_risk_no_override" in res.result["text"]


def test_explanation_rejects_uncitable_inputs(registry, world):
    results = _tool_results(registry, world)
    results[0]["request_id"] = "fake] [R9"
    forged = registry.call("explain_decision", world, {"decision": {}, "tool_results": results, "rules": []})
    assert forged.error.type == "bad_arguments"
    unknown_rule = registry.call("explain_decision", world, {"decision": {}, "rules": ["R9"]})
    assert unknown_rule.error.type == "bad_arguments"
