"""One rule reads the answer out of a model's text (ir/answer_text.py): the validator's IR and the envelope the IR
writers hand on (whose uncertainty finalize reads) come from the same object, on texts where the two readings used to
part: a reasoning block, an object that only looks like an answer, an answer inside a JSON array, a nested answer."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ir.answer_text import NoAnswerObject, answer_object, extract_answer
from ir.model import LowAltitudeIR
from ir.validation import validate_ir
from tests.unit.test_validation import envelope, valid_ir
from tools.catalog import default_registry
from tools.world import World

ANSWER = envelope(valid_ir(), needs_human_confirmation=True, missing_information=["the payload's mass"])
TEXTS: dict[str, str] = {
    "reasoning block first": '<think>{"task_id": "draft", "intent": "delivery"}</think>' + json.dumps(ANSWER),
    "fenced after prose": f"Plan {{as asked}}:\n```json\n{json.dumps(ANSWER, indent=1)}\n```",
    "a bare IR in prose": "The IR: " + json.dumps(valid_ir()) + " done {x}",
    "nested in another object": json.dumps({"result": ANSWER})[:-1] + " trailing",
    "an answer-like fragment first": 'Example {"intent": "delivery"}. Answer: ' + json.dumps(ANSWER),
    "inside a JSON array": json.dumps([ANSWER]),
    "no object": "I cannot help with that.",
}


@pytest.mark.parametrize("name", TEXTS)
def test_the_validator_and_the_writers_read_the_same_answer(name: str, world: World):
    text = TEXTS[name]
    report = validate_ir(text, world, default_registry())
    answer = extract_answer(text)
    if report.ir is None:
        assert report.stage in ("json", "schema")
        if answer is not None:  # an envelope the schema refuses: the same object, judged
            assert report.stage == "schema" and answer == answer_object(text)
        return
    assert answer is not None
    assert LowAltitudeIR.model_validate(answer["low_altitude_ir"]) == report.ir
    stated: dict[str, Any] = answer.get("uncertainty") or {}
    confirm = report.uncertainty.needs_human_confirmation if report.uncertainty is not None else False
    assert confirm == stated.get("needs_human_confirmation", False)


def test_what_each_text_reads_as(world: World):
    registry = default_registry()
    assert extract_answer(TEXTS["reasoning block first"]) == ANSWER
    assert validate_ir(TEXTS["reasoning block first"], world, registry).uncertainty.needs_human_confirmation
    assert extract_answer(TEXTS["a bare IR in prose"]) == {"low_altitude_ir": valid_ir()}
    assert extract_answer(TEXTS["nested in another object"]) == ANSWER
    # a fragment with an IR key comes first: both read it, and neither finds an answer in it
    assert extract_answer(TEXTS["an answer-like fragment first"]) is None
    assert validate_ir(TEXTS["an answer-like fragment first"], world, registry).stage == "schema"
    for name, error_type in (("inside a JSON array", "not_an_object"), ("no object", "invalid_json")):
        assert extract_answer(TEXTS[name]) is None
        with pytest.raises(NoAnswerObject) as raised:
            answer_object(TEXTS[name])
        assert raised.value.error_type == error_type
        assert validate_ir(TEXTS[name], world, registry).error_type == error_type
