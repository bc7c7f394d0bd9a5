"""The LTL fallback engine: parser, lasso-trace semantics (checked against flloat) and exact satisfiability."""

from __future__ import annotations

import itertools
import sys

import numpy as np
import pytest
from flloat.parser.ltlf import LTLfParser

from tools import ltl
from tools.ltl import Formula, LtlSyntaxError, atoms_of, holds_on_trace, parse_ltl, satisfiable

ATOMS = ("a", "b")


def _random_formula(rng: np.random.Generator, depth: int, ops: tuple[str, ...]) -> Formula:
    if depth == 0 or rng.random() < 0.25:
        return Formula("ap", name=str(rng.choice(ATOMS)))
    op = str(rng.choice(ops))
    if op in ltl.UNARY:
        return Formula(op, (_random_formula(rng, depth - 1, ops),))
    return Formula(op, (_random_formula(rng, depth - 1, ops), _random_formula(rng, depth - 1, ops)))


def _trace(letters: list[tuple[bool, bool]]) -> dict[str, np.ndarray]:
    return {name: np.array([letter[i] for letter in letters]) for i, name in enumerate(ATOMS)}


# --- parser ----------------------------------------------------------------------------------------------------
def test_parser_follows_spot_precedence_and_aliases():
    assert parse_ltl("a & b U c") == parse_ltl("a & (b U c)")
    assert parse_ltl("a | b & c") == parse_ltl("a | (b & c)")
    assert parse_ltl("a -> b -> c") == parse_ltl("a -> (b -> c)")
    assert parse_ltl("[]<> a") == parse_ltl("G F a") == parse_ltl("GF a")
    assert parse_ltl("a && b || !c") == parse_ltl("(a & b) | !c")
    assert parse_ltl("G !in_nfz_temp_1") == Formula("G", (Formula("!", (Formula("ap", name="in_nfz_temp_1"),)),))
    assert atoms_of(parse_ltl("G (in_x -> X at_goal) & true & 1")) == {"in_x", "at_goal"}


@pytest.mark.parametrize("text", ["", "G (a &", "a b", "(a", "G", "a U", "a $ b", "X[2] a"])
def test_malformed_formulas_raise_syntax_errors(text):
    with pytest.raises(LtlSyntaxError):
        parse_ltl(text)


# --- trace semantics -------------------------------------------------------------------------------------------
def test_trace_holds_its_last_state():
    trace = _trace([(False, False), (True, False)])
    assert holds_on_trace(parse_ltl("X X a"), trace)[0]  # beyond the end the UAV stays where it ended
    assert holds_on_trace(parse_ltl("F G a"), trace)[0]
    assert not holds_on_trace(parse_ltl("G a"), trace)[0]
    assert list(holds_on_trace(parse_ltl("a U b"), _trace([(True, False), (True, True), (False, False)]))) == [
        True,
        True,
        False,
    ]


def test_first_violation_of_an_invariant_is_where_it_first_fails():
    trace = _trace([(False, False), (False, False), (True, False), (True, False)])
    assert ltl.first_violation(parse_ltl("G !a"), trace) == 2
    assert ltl.first_violation(parse_ltl("F b"), trace) == 3


def test_trace_check_agrees_with_flloat_on_next_free_formulas():
    # Without X, LTLf (flloat) and the held-last-state semantics coincide, so flloat is an independent oracle.
    rng = np.random.default_rng(7)
    parser = LTLfParser()
    for _ in range(150):
        formula = _random_formula(rng, 3, ("!", "F", "G", "&", "|", "->", "U", "R"))
        letters = [tuple(bool(v) for v in rng.integers(0, 2, 2)) for _ in range(int(rng.integers(1, 6)))]
        expected = parser(str(formula)).truth([dict(zip(ATOMS, letter)) for letter in letters], 0)
        assert holds_on_trace(formula, _trace(letters))[0] == expected, str(formula)


# --- satisfiability --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "specs, expected",
    [
        (["G !at_goal", "F at_goal"], False),
        (["G a", "F !a"], False),
        (["a U b", "G !b"], False),
        (["X a", "X !a"], False),
        (["G (a -> X !a)", "G (!a -> X a)"], False),  # only an endless alternation: no finite flight does it
        (["F a", "F !a"], True),
        (["G !in_nfz_temp_1", "G !in_school_zone_2", "F at_goal"], True),
        (["G (a -> X !a)", "F a"], True),
        (["a W b", "G !b"], True),
    ],
)
def test_satisfiability(specs, expected):
    assert satisfiable([parse_ltl(s) for s in specs]) is expected


def test_satisfiability_never_misses_a_short_witness():
    # Every ultimately constant word with a prefix of up to 2 letters, then a held letter: if one satisfies the
    # formula, the check must say satisfiable (a false "unsat" would refuse a feasible task).
    rng = np.random.default_rng(11)
    letters = list(itertools.product((False, True), repeat=2))
    words = [list(p) + [h] for k in range(3) for p in itertools.product(letters, repeat=k) for h in letters]
    for _ in range(120):
        formula = _random_formula(rng, 3, ("!", "X", "F", "G", "&", "|", "U", "R", "W", "M"))
        witnessed = any(holds_on_trace(formula, _trace(word))[0] for word in words)
        verdict = satisfiable([formula])
        if witnessed:
            assert verdict is True, str(formula)
        else:
            assert verdict is not None


def test_satisfiability_gives_up_instead_of_guessing_on_many_atoms_in_one_group():
    one_group = parse_ltl(" & ".join(f"F p{i}" for i in range(ltl.MAX_SAT_ATOMS + 1)))
    assert satisfiable([one_group]) is None


def test_formulas_sharing_no_atom_are_decided_group_by_group():
    formulas = [parse_ltl(text) for text in ("G !a", "F b", "F a", "G (b -> X c)", "G !d")]
    groups = ltl.atom_groups(formulas, ltl.atoms_of)
    assert [[str(f) for f in group] for group in groups] == [
        [str(formulas[0]), str(formulas[2])],
        [str(formulas[1]), str(formulas[3])],
        [str(formulas[4])],
    ]
    assert satisfiable(formulas) is False  # G !a with F a, whatever the rest


def test_implication_checks_entailment():
    engine = ltl.FallbackEngine()
    premises = [engine.parse("G (!in_nfz_temp_1 & !in_school_zone_2)")]
    assert ltl.implies(engine, premises, engine.parse("G !in_nfz_temp_1")) is True
    assert ltl.implies(engine, [engine.parse("F at_goal")], engine.parse("G !in_nfz_temp_1")) is False


def test_default_engine_falls_back_without_spot(monkeypatch):
    monkeypatch.setitem(sys.modules, "spot", None)  # makes `import spot` raise ImportError
    assert ltl.default_engine().name == ltl.FALLBACK_ENGINE


def test_next_reads_its_operand_one_step_on_not_its_own_value():
    """X a at i is a at i + 1 (found by the Spot agreement table: X once propagated the held last value back)."""
    trace = {"in_a": np.array([0, 0, 1, 0], dtype=bool)}
    assert holds_on_trace(parse_ltl("X X in_a"), trace).tolist() == [True, False, False, False]
    assert holds_on_trace(parse_ltl("X in_a"), trace).tolist() == [False, True, False, False]
    assert satisfiable([parse_ltl("X X in_a"), parse_ltl("G (in_a -> X !in_a)")]) is True
    assert satisfiable([parse_ltl("X in_a"), parse_ltl("G !in_a")]) is False
