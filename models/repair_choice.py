"""The grounded repair choice: when the repair node offers candidates (ir/repairs.py), the model picks one of them.

The question is short and closed: the failure in a sentence, then the candidates, each an id and what it changes.
The answer's schema allows only their ids, so a model cannot invent a repair; the chosen candidate is applied to the
failed round's IR by code (ir.repairs.apply_candidate), the way the slots are compiled. A reply that names no
candidate (a server that ignores the schema) takes the first, the repair node's own order, and says so.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ir.repairs import RepairCandidate, apply_candidate
from models.base import GenerationRequest

REPAIR_CHOICE_VERSION = "repair-choice-1"
CHOICE_KEY = "repair"
SYSTEM = (
    "You repair a drone mission plan that failed a safety check. Choose the one repair to apply from the list; each "
    f'keeps what the request states. Answer only JSON: {{"{CHOICE_KEY}": "<id>"}}.'
)


def offered(request: GenerationRequest) -> list[RepairCandidate]:
    """The candidates the repair node offered in this request's feedback (none on a first round)."""
    if request.feedback is None:
        return []
    return [RepairCandidate.model_validate(c) for c in request.feedback.counterexample.get("repairs") or []]


def choice_schema(candidates: list[RepairCandidate]) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": {CHOICE_KEY: {"enum": [c.id for c in candidates]}},
        "required": [CHOICE_KEY],
    }


def choice_messages(request: GenerationRequest, candidates: list[RepairCandidate]) -> list[dict[str, str]]:
    assert request.feedback is not None
    cx = request.feedback.counterexample
    failure = " ".join(
        str(part)
        for part in (
            f"{cx.get('failure_stage')}: {cx.get('failure_type')}",
            f"({cx['violated_rule']})" if cx.get("violated_rule") else "",
            f"at t={cx['time_sec']} s" if cx.get("time_sec") is not None else "",
            f"involving {cx['offending_entity']}" if cx.get("offending_entity") else "",
            ("; reasons: " + "; ".join(cx["reasons"])) if cx.get("reasons") else "",
        )
        if part
    )
    options = "\n".join(f"- {c.id}: {c.summary}" for c in candidates)
    past = "".join(f"\nA similar past repair: {case}" for case in request.retrieved.repair_cases)
    user = f"Request: {request.instruction}\nFailure: {failure}{past}\nRepairs:\n{options}"
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def read_choice(text: str, candidates: list[RepairCandidate]) -> tuple[RepairCandidate, bool]:
    """(the chosen candidate, whether the reply named it): the JSON answer, else the first id the text names."""
    by_id = {c.id: c for c in candidates}
    try:
        chosen = json.loads(text).get(CHOICE_KEY)
    except (json.JSONDecodeError, AttributeError):
        chosen = None
    if chosen in by_id:
        return by_id[chosen], True
    named = [c for c in candidates if re.search(rf"(?<![\w:]){re.escape(c.id)}(?![\w:])", text)]
    return (named[0], True) if named else (candidates[0], False)


def repaired_answer(request: GenerationRequest, candidate: RepairCandidate, *, named: bool = True) -> dict[str, Any]:
    """The answer envelope: the failed round's IR with the chosen candidate applied."""
    assert request.feedback is not None and request.feedback.previous_ir is not None
    previous = request.feedback.previous_ir
    ir = apply_candidate(previous.get("low_altitude_ir", previous), candidate)
    how = "chosen" if named else "taken first (the reply named no candidate)"
    return {
        "low_altitude_ir": ir,
        "rationale_summary": f"repair {candidate.id} {how}: {candidate.summary}",
        "uncertainty": {"needs_human_confirmation": False, "missing_information": []},
    }
