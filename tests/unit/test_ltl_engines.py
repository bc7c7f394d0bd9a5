"""Spot (the `spottl` wheel) and the fallback engine agree: on one table of formulas and traces, trace checks,
first violating positions, satisfiability and entailment are the same; the Spot path runs wherever the wheel
installs (x86-64 Linux, as in CI), and the fallback runs with Spot hidden."""

from __future__ import annotations

import itertools
import platform
import sys

import numpy as np
import pytest

from ir.validation import validate_ir
from tests.support.ir_fixtures import GOOD_IR
from tools import ltl
from tools.catalog import default_registry

SPOT_WHEEL_PLATFORM = sys.platform == "linux" and platform.machine() == "x86_64"
needs_spot = pytest.mark.skipif(not SPOT_WHEEL_PLATFORM, reason="no spottl wheel for this platform")

FORMULAS = [
    "G !in_a",
    "F at_goal",
    "!in_a U at_goal",
    "G (in_a -> F at_goal)",
    "F G at_goal",
    "X in_a",
    "G F in_a",
    "in_a W at_goal",
    "in_a R !at_goal",
    "(in_a M at_goal) | X X in_a",
    "G (at_goal -> G at_goal) & F at_goal",
]
TRACES = [
    {"in_a": [0, 0, 1, 1, 0], "at_goal": [0, 0, 0, 0, 1]},
    {"in_a": [0, 0, 0, 0, 0], "at_goal": [0, 0, 1, 0, 1]},
    {"in_a": [1, 0, 0, 0, 0], "at_goal": [0, 0, 0, 0, 0]},
    {"in_a": [0, 1, 0, 1, 1], "at_goal": [1, 1, 1, 1, 1]},
    {"in_a": [1, 1, 1, 1, 1], "at_goal": [0, 1, 0, 1, 0]},
]
SPEC_SETS = [
    ["G !in_a", "F in_a"],
    ["G !in_a", "F at_goal"],
    ["G F in_a", "G F !in_a"],  # needs infinite alternation: no ultimately constant word
    ["F G at_goal", "G (at_goal -> X !at_goal)"],
    ["in_a U at_goal", "G !at_goal"],
    ["X X in_a", "G (in_a -> X !in_a)"],
]


def _trace(columns: dict[str, list[int]]) -> dict[str, np.ndarray]:
    return {atom: np.array(values, dtype=bool) for atom, values in columns.items()}


@pytest.fixture
def spot_engine() -> ltl.LtlEngine:
    import spot  # noqa: F401  (the wheel must be installed where it can be: no silent skip)

    engine = ltl.default_engine()
    assert engine.name == "spot"
    return engine


@pytest.fixture
def fallback_engine(monkeypatch: pytest.MonkeyPatch) -> ltl.LtlEngine:
    monkeypatch.setitem(sys.modules, "spot", None)  # `import spot` raises ImportError: Spot hidden
    engine = ltl.default_engine()
    assert engine.name == ltl.FALLBACK_ENGINE
    return engine


@needs_spot
@pytest.mark.parametrize(("text", "columns"), list(itertools.product(FORMULAS, TRACES)))
def test_trace_checks_and_first_violations_agree(spot_engine, text, columns):
    fallback, trace = ltl.FallbackEngine(), _trace(columns)
    spot_formula, own_formula = spot_engine.parse(text), fallback.parse(text)
    holds = fallback.check_trace(own_formula, trace)
    assert spot_engine.check_trace(spot_formula, trace) == holds
    if not holds:
        assert spot_engine.first_violation(spot_formula, trace) == fallback.first_violation(own_formula, trace)


@needs_spot
@pytest.mark.parametrize("specs", SPEC_SETS)
def test_satisfiability_and_entailment_agree(spot_engine, specs):
    fallback = ltl.FallbackEngine()
    expected = fallback.satisfiable([fallback.parse(s) for s in specs])
    assert expected is not None
    assert spot_engine.satisfiable([spot_engine.parse(s) for s in specs]) == expected
    for conclusion in ("G !in_a", "F at_goal"):
        own = ltl.implies(fallback, [fallback.parse(s) for s in specs], fallback.parse(conclusion))
        assert ltl.implies(spot_engine, [spot_engine.parse(s) for s in specs], spot_engine.parse(conclusion)) == own


@needs_spot
def test_spot_reports_where_an_invariant_first_broke(spot_engine):
    trace = _trace(TRACES[0])
    assert spot_engine.first_violation(spot_engine.parse("G !in_a"), trace) == 2
    assert spot_engine.first_violation(spot_engine.parse("(in_a xor at_goal) -> G !in_a"), trace) == 0


def test_the_fallback_says_when_it_gives_up():
    one_group = " & ".join(f"F in_z{i}" for i in range(ltl.MAX_SAT_ATOMS + 1))
    assert ltl.FallbackEngine().satisfiable([ltl.parse_ltl(one_group)]) is None


@pytest.mark.parametrize("engine", [pytest.param("spot_engine", marks=needs_spot), "fallback_engine"])
def test_a_citys_worth_of_zones_is_decided_at_once(engine, request):
    # One spec per zone of a real city and the goals: Spot over `F G (p <-> X p)` for all 21 atoms at once never
    # returned (2^21 states; a held-out real-context run hung in the policy stage), the fallback gave up at 12.
    engine = request.getfixturevalue(engine)
    specs = [f"G !in_nfz_{i}" for i in range(18)] + ["F at_goal", "F at_hospital_1", "F at_office_2"]
    assert engine.satisfiable([engine.parse(s) for s in specs]) is True
    assert engine.satisfiable([engine.parse(s) for s in [*specs, "F in_nfz_7"]]) is False


def _contradictory_ir() -> dict:
    ir = {**GOOD_IR, "verification_specs": {**GOOD_IR["verification_specs"]}}
    ir["verification_specs"]["ltl"] = ["G !in_nfz_temp_1", "F in_nfz_temp_1"]
    return ir


@pytest.mark.parametrize("engine", [pytest.param("spot_engine", marks=needs_spot), "fallback_engine"])
def test_contradictory_specs_fail_validation_at_the_policy_stage(engine, request, downtown):
    name = request.getfixturevalue(engine).name
    report = validate_ir(_contradictory_ir(), downtown, default_registry())
    assert not report.valid and (report.stage, report.error_type) == ("policy", "spec_unsat")
    assert name in report.message and "unsatisfiable" in report.message
