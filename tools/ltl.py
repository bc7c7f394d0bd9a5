"""LTL over trajectory atoms (in_<zone>, at_<entity>, at_origin, at_goal, airborne), in Spot's syntax.

Semantics. A trajectory is a finite run; after its last sample the UAV stays where it ended. A formula is therefore
judged on the infinite word s0 s1 ... s(n-1) s(n-1) s(n-1) ..., the finite trace followed by its last state
forever (a "lasso" with a one-state loop). Satisfiability asks the matching question: is there such an
*ultimately constant* word (any finite trace, then held) that satisfies the specs jointly? That differs from plain
LTL satisfiability only for specs that need infinite alternation (e.g. `G F a & G F !a`), which no finite flight
can meet, so those count as unsatisfiable here.

Engines (the one that judged goes into the tool's provenance):
- "spot": used when `import spot` works: `make install` installs the `spottl` wheel (Spot 2.13 for x86-64 Linux,
  the `spot` extra); elsewhere conda-forge's or Debian's Spot serve too. Spot parses the full syntax, decides
  satisfiability of `specs & F G (p <-> X p for every atom p)` and checks the lasso word.
- FALLBACK_ENGINE: this module's own parser (Spot's core syntax: atoms, true/false/1/0, ! & && | || -> <-> and
  the temporal operators X F G U R W M, with [] and <> for G and F; no PSL, no X[n] / F[a..b]), a linear-time
  lasso evaluator for the trace, and an exact satisfiability check for the semantics above: backward
  reachability over the vectors of subformula truth values. The value of every subformula at position i is a
  function of the letter at i and the vector at i + 1, and at the held last state it is a function of that letter
  alone, so the set of vectors that occur at position 0 of some ultimately constant word is the least set that
  contains the last-state vectors and is closed under prepending a letter. The search enumerates all 2^atoms
  letters, so it is bounded: beyond MAX_SAT_ATOMS atoms or MAX_SAT_VECTORS vectors it answers None (undecided)
  and never claims unsatisfiability. Atoms are treated as independent propositions: a contradiction that only
  follows from geometry (e.g. `F at_x & G !in_z` with x inside z) is not detected.
Both engines split the specs into groups that share no atom and decide each group alone (`atom_groups`): such
groups constrain disjoint letters, so ultimately constant words of each combine into one of all. It keeps the
question small: `F G (p <-> X p ...)` over all the atoms of a city's 18 zones asks Spot for 2^20 states.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

FALLBACK_ENGINE = "fallback-lasso-trace+exact-backward-sat"
MAX_SAT_ATOMS = 12
# The atoms an IR's own LTL specs keep to (the reference IRs of benchmark/gold.py): a short spec list every engine
# decides at once. The engines' bound is MAX_SAT_ATOMS per group of specs that share an atom.
MAX_SPEC_ATOMS = 4
MAX_SAT_VECTORS = 4096

UNARY = ("!", "X", "F", "G")
BINARY_TEMPORAL = ("U", "R", "W", "M")


class LtlSyntaxError(ValueError):
    """The text is not a formula in the accepted syntax."""


@dataclass(frozen=True)
class Formula:
    """A formula tree: op is 'ap' (name holds the atom), 'true', 'false', a unary or a binary operator."""

    op: str
    args: tuple[Formula, ...] = ()
    name: str = ""

    def __str__(self) -> str:
        if self.op == "ap":
            return self.name
        if self.op in ("true", "false"):
            return self.op
        if len(self.args) == 1:
            return f"{self.op}({self.args[0]})"
        return f"({self.args[0]} {self.op} {self.args[1]})"


TRUE, FALSE = Formula("true"), Formula("false")


# --- parser ----------------------------------------------------------------------------------------------------
_TOKEN = re.compile(
    r"\s*(?:(?P<op><->|->|&&|\|\||\[\]|<>|[!&|()])"
    r"|(?P<temporal>[XFG]+|[URWM])(?![A-Za-z0-9_.])"
    r"|(?P<ident>[A-Za-z_][A-Za-z0-9_.]*))"
)
_ALIASES = {"&&": "&", "||": "|", "[]": "G", "<>": "F"}
_CONSTANTS = {"true": TRUE, "1": TRUE, "false": FALSE, "0": FALSE}


def parse_ltl(text: str) -> Formula:
    """Parse Spot's core LTL syntax; precedence from loosest: <->, ->, |, &, U R W M, unary."""
    tokens = _tokenise(text)
    parser = _Parser(tokens, text)
    formula = parser.equivalence()
    if parser.peek() is not None:
        raise LtlSyntaxError(f"unexpected {parser.peek()!r} in {text!r}")
    return formula


def _tokenise(text: str) -> list[str]:
    tokens: list[str] = []
    position, text = 0, text.strip()
    while position < len(text):
        if text[position : position + 1] in "01" and not re.match(r"[01][A-Za-z0-9_]", text[position:]):
            tokens.append(text[position])
            position += 1
            continue
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise LtlSyntaxError(f"cannot read {text[position : position + 10]!r} in {text!r}")
        if match.group("temporal"):
            tokens.extend(match.group("temporal"))  # "GF" is G F
        else:
            token = match.group("op") or match.group("ident")
            tokens.append(_ALIASES.get(token, token))
        position = match.end()
        while position < len(text) and text[position].isspace():
            position += 1
    if not tokens:
        raise LtlSyntaxError("empty formula")
    return tokens


class _Parser:
    def __init__(self, tokens: list[str], text: str):
        self.tokens, self.text, self.index = tokens, text, 0

    def peek(self) -> str | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            raise LtlSyntaxError(f"formula ends too early: {self.text!r}")
        self.index += 1
        return token

    def equivalence(self) -> Formula:
        left = self.implication()
        while self.peek() == "<->":
            self.take()
            left = Formula("<->", (left, self.implication()))
        return left

    def implication(self) -> Formula:
        left = self.disjunction()
        if self.peek() == "->":
            self.take()
            return Formula("->", (left, self.implication()))
        return left

    def disjunction(self) -> Formula:
        left = self.conjunction()
        while self.peek() == "|":
            self.take()
            left = Formula("|", (left, self.conjunction()))
        return left

    def conjunction(self) -> Formula:
        left = self.temporal()
        while self.peek() == "&":
            self.take()
            left = Formula("&", (left, self.temporal()))
        return left

    def temporal(self) -> Formula:
        left = self.unary()
        if self.peek() in BINARY_TEMPORAL:
            op = self.take()
            return Formula(op, (left, self.temporal()))
        return left

    def unary(self) -> Formula:
        token = self.take()
        if token in UNARY:
            return Formula(token, (self.unary(),))
        if token == "(":
            inner = self.equivalence()
            if self.take() != ")":
                raise LtlSyntaxError(f"missing ')' in {self.text!r}")
            return inner
        if token in _CONSTANTS:
            return _CONSTANTS[token]
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", token) and token not in BINARY_TEMPORAL:
            return Formula("ap", name=token)
        raise LtlSyntaxError(f"unexpected {token!r} in {self.text!r}")


def atoms_of(formula: Formula) -> set[str]:
    if formula.op == "ap":
        return {formula.name}
    return set().union(*(atoms_of(arg) for arg in formula.args)) if formula.args else set()


def conjunction(formulas: Sequence[Formula]) -> Formula:
    result = TRUE
    for formula in formulas:
        result = formula if result == TRUE else Formula("&", (result, formula))
    return result


# --- evaluation shared by the trace check and the satisfiability search --------------------------------------
def _subformulas(root: Formula) -> list[Formula]:
    """Distinct subformulas, children before parents."""
    order: list[Formula] = []
    seen: set[Formula] = set()

    def visit(node: Formula) -> None:
        if node in seen:
            return
        for arg in node.args:
            visit(arg)
        seen.add(node)
        order.append(node)

    visit(root)
    return order


def _boolean(op: str, values: list[np.ndarray]) -> np.ndarray:
    if op == "!":
        return ~values[0]
    left, right = values
    return {"&": left & right, "|": left | right, "->": ~left | right, "<->": left == right}[op]


def _held_value(op: str, values: list[np.ndarray]) -> np.ndarray:
    """A temporal operator on a constant word, where every suffix equals the word itself."""
    if op in ("X", "F", "G"):
        return values[0]
    left, right = values
    return {"U": right, "R": right, "W": left | right, "M": left & right}[op]


def _step_value(op: str, values: list[np.ndarray], following: np.ndarray) -> np.ndarray:
    """F G U R W M at position i from their operands at i and their own value at i + 1 (`following`). X is not one
    of them: its value at i is its operand's at i + 1, not its own."""
    if op == "F":
        return values[0] | following
    if op == "G":
        return values[0] & following
    left, right = values
    if op in ("U", "W"):
        return right | (left & following)
    return right & (left | following)  # R, M


# --- the trace check --------------------------------------------------------------------------------------------
def holds_on_trace(formula: Formula, trace: Mapping[str, np.ndarray]) -> np.ndarray:
    """Truth of `formula` at every position of the lasso trace (atom -> (n,) bool; the last state is held)."""
    n = len(next(iter(trace.values()))) if trace else 1
    value: dict[Formula, np.ndarray] = {}
    for node in _subformulas(formula):
        operands = [value[arg] for arg in node.args]
        if node.op == "ap":
            value[node] = np.asarray(trace[node.name], dtype=bool)
        elif node.op in ("true", "false"):
            value[node] = np.full(n, node.op == "true")
        elif node.op in ("!", "&", "|", "->", "<->"):
            value[node] = _boolean(node.op, operands)
        elif node.op == "F":
            value[node] = np.logical_or.accumulate(operands[0][::-1])[::-1]
        elif node.op == "G":
            value[node] = np.logical_and.accumulate(operands[0][::-1])[::-1]
        elif node.op == "X":
            value[node] = np.append(operands[0][1:], operands[0][-1:])  # the last state is held
        else:
            value[node] = _scan_backwards(node.op, operands)
    return value[formula]


def _scan_backwards(op: str, operands: list[np.ndarray]) -> np.ndarray:
    n = len(operands[0])
    out = np.empty(n, dtype=bool)
    out[n - 1 :] = _held_value(op, [o[n - 1 :] for o in operands])
    for i in range(n - 2, -1, -1):
        out[i : i + 1] = _step_value(op, [o[i : i + 1] for o in operands], out[i + 1 : i + 2])
    return out


def first_violation(formula: Formula, trace: Mapping[str, np.ndarray]) -> int:
    """Where a failed formula went wrong: for `G phi` the first position where phi fails, for `F phi` the last
    position (phi never came), otherwise position 0."""
    if formula.op == "G":
        failing = np.flatnonzero(~holds_on_trace(formula.args[0], trace))
        return int(failing[0]) if len(failing) else 0
    if formula.op == "F":
        return len(next(iter(trace.values()))) - 1 if trace else 0
    return 0


# --- satisfiability (fallback) ---------------------------------------------------------------------------------
def atom_groups(formulas: Sequence[Any], atoms: Callable[[Any], set[str]]) -> list[list[Any]]:
    """The formulas in groups that share no atom (connected through shared atoms), in first-appearance order."""
    groups: list[tuple[set[str], list[Any]]] = []
    for formula in formulas:
        own = atoms(formula)
        touching = [g for g in groups if g[0] & own]
        merged = (own.union(*(g[0] for g in touching)), [f for g in touching for f in g[1]] + [formula])
        groups = [g for g in groups if not any(g is t for t in touching)] + [merged]
    return [members for _, members in groups]


def jointly(verdicts: Iterable[bool | None]) -> bool | None:
    """One verdict for groups decided alone: unsatisfiable if one is, undecided if one is, else satisfiable."""
    found = list(verdicts)
    return False if False in found else None if None in found else True


def satisfiable(formulas: Sequence[Formula]) -> bool | None:
    """Is there an ultimately constant word satisfying all formulas? None when the bounded search gives up."""
    return jointly(_satisfiable(tuple(group)) for group in atom_groups(formulas, atoms_of))


@functools.lru_cache(maxsize=512)
def _satisfiable(formulas: tuple[Formula, ...]) -> bool | None:
    # Memoised: the validator's policy stage and the verifier ask the same question of one IR.
    root = conjunction(formulas)
    atoms = sorted(atoms_of(root))
    if len(atoms) > MAX_SAT_ATOMS:
        return None
    nodes = _subformulas(root)
    column = {node: i for i, node in enumerate(nodes)}
    operands = [[column[arg] for arg in node.args] for node in nodes]  # hashed once, not per expansion
    letters = ((np.arange(2 ** len(atoms))[:, None] >> np.arange(len(atoms))) & 1).astype(bool)
    held = _expand(nodes, operands, atoms, letters, None)
    seen = {row.tobytes() for row in held}
    frontier = list({row.tobytes(): row for row in held}.values())
    while frontier:
        if any(vector[-1] for vector in frontier):
            return True
        fresh: dict[bytes, np.ndarray] = {}
        for vector in frontier:
            for row in _expand(nodes, operands, atoms, letters, vector):
                key = row.tobytes()
                if key not in seen:
                    seen.add(key)
                    fresh[key] = row
        if len(seen) > MAX_SAT_VECTORS:
            return None
        frontier = list(fresh.values())
    return False


def _expand(
    nodes: list[Formula],
    operands: list[list[int]],
    atoms: list[str],
    letters: np.ndarray,
    following: np.ndarray | None,
) -> np.ndarray:
    """(letters, subformulas) truth table at a position, given the vector at the next position (None: held);
    `operands[i]` are the columns of node i's arguments."""
    table = np.zeros((len(letters), len(nodes)), dtype=bool)
    for i, node in enumerate(nodes):
        args = [table[:, j] for j in operands[i]]
        if node.op == "ap":
            table[:, i] = letters[:, atoms.index(node.name)]
        elif node.op in ("true", "false"):
            table[:, i] = node.op == "true"
        elif node.op in ("!", "&", "|", "->", "<->"):
            table[:, i] = _boolean(node.op, args)
        elif following is None:
            table[:, i] = _held_value(node.op, args)
        elif node.op == "X":
            table[:, i] = following[operands[i][0]]
        else:
            table[:, i] = _step_value(node.op, args, np.full(len(letters), following[i]))
    return table


# --- engines ---------------------------------------------------------------------------------------------------
class LtlEngine(Protocol):
    name: str

    def parse(self, text: str) -> Any: ...

    def atoms(self, formula: Any) -> set[str]: ...

    def satisfiable(self, formulas: Sequence[Any]) -> bool | None: ...

    def negate(self, formula: Any) -> Any: ...

    def check_trace(self, formula: Any, trace: Mapping[str, np.ndarray]) -> bool: ...

    def first_violation(self, formula: Any, trace: Mapping[str, np.ndarray]) -> int: ...


class FallbackEngine:
    name = FALLBACK_ENGINE

    def parse(self, text: str) -> Formula:
        return parse_ltl(text)

    def atoms(self, formula: Formula) -> set[str]:
        return atoms_of(formula)

    def satisfiable(self, formulas: Sequence[Formula]) -> bool | None:
        return satisfiable(formulas)

    def negate(self, formula: Formula) -> Formula:
        return Formula("!", (formula,))

    def check_trace(self, formula: Formula, trace: Mapping[str, np.ndarray]) -> bool:
        return bool(holds_on_trace(formula, trace)[0])

    def first_violation(self, formula: Formula, trace: Mapping[str, np.ndarray]) -> int:
        return first_violation(formula, trace)


class SpotEngine:
    """Spot (https://spot.lre.epita.fr/) for parsing, satisfiability and the lasso-word check."""

    name = "spot"

    def __init__(self, spot_module: Any):
        self.spot = spot_module

    def parse(self, text: str) -> Any:
        try:
            return self.spot.formula(text)
        except SyntaxError as exc:
            raise LtlSyntaxError(str(exc).strip().splitlines()[0]) from None

    def atoms(self, formula: Any) -> set[str]:
        return {str(ap) for ap in self.spot.atomic_prop_collect(formula)}

    def satisfiable(self, formulas: Sequence[Any]) -> bool | None:
        return jointly(self._satisfiable(group) for group in atom_groups(formulas, self.atoms))

    def _satisfiable(self, formulas: Sequence[Any]) -> bool:
        atoms = sorted(set().union(*(self.atoms(f) for f in formulas)))
        held = " & ".join(f"({a} <-> X {a})" for a in atoms) or "1"
        return _spot_nonempty(self.spot, " & ".join([*(f"({f})" for f in formulas), f"F G({held})"]))

    def negate(self, formula: Any) -> Any:
        return self.spot.formula(f"!({formula})")

    def check_trace(self, formula: Any, trace: Mapping[str, np.ndarray]) -> bool:
        automaton = self.spot.translate(formula)
        word = self.spot.parse_word(_lasso_word(trace), automaton.get_dict())
        return bool(automaton.intersects(word.as_automaton()))

    def first_violation(self, formula: Any, trace: Mapping[str, np.ndarray]) -> int:
        """The same position as the fallback's: Spot's formula, xor rewritten away and fully parenthesised, is in
        the core syntax this module parses; a formula beyond it (PSL, bounded operators) reports position 0."""
        text = self.spot.unabbreviate(formula, "^").to_str("spot", True)
        try:
            return first_violation(parse_ltl(text), trace)
        except LtlSyntaxError:
            return 0


@functools.lru_cache(maxsize=1024)
def _spot_nonempty(spot: Any, formula: str) -> bool:
    # Memoised like the fallback's: the validator's policy stage and the verifier ask the same question of one IR,
    # and the mandatory rules recur across tasks; an automaton translation takes ~0.3 ms.
    return not spot.translate(spot.formula(formula)).is_empty()


def _lasso_word(trace: Mapping[str, np.ndarray]) -> str:
    """Spot's word syntax for the trace with its last state held: 'a & !b; ...; cycle{a & b}'."""
    names = sorted(trace)
    n = len(trace[names[0]]) if names else 1

    def letter(i: int) -> str:
        return " & ".join(name if trace[name][i] else f"!{name}" for name in names) or "1"

    prefix = "".join(f"{letter(i)}; " for i in range(n - 1))
    return f"{prefix}cycle{{{letter(n - 1)}}}"


def default_engine() -> LtlEngine:
    """Spot when it is importable, else the fallback."""
    try:
        import spot  # type: ignore[import-not-found]
    except ImportError:
        return FallbackEngine()
    return SpotEngine(spot)


def implies(engine: LtlEngine, premises: Sequence[Any], conclusion: Any) -> bool | None:
    """Do the premises entail the conclusion (on ultimately constant words)? None when undecided."""
    counter = engine.satisfiable([*premises, engine.negate(conclusion)])
    return None if counter is None else not counter
