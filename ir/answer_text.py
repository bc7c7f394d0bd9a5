"""Reading the answer object out of a model's text: the one rule that both the validator (ir.validation) and the
IR writers (models.base.GenerationResult.answer, which finalize reads the uncertainty from) apply, so the two never
read different answers from the same text.

The rule: reasoning blocks (`<think>...</think>`) are dropped; a text that is JSON as a whole is the answer if it
is an object (whatever its keys: judging them is the schema stage's job) and no answer at all if it is anything
else; otherwise the answer is the first JSON object in the text (bare, in prose or in a code fence) that has a
top-level key of an IR or of the LLMAnswer envelope. Objects without such a key are skipped: prose like
"{as asked}", a reasoning model's notes, or the inner objects of a truncated answer.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from ir.model import LLMAnswer, LowAltitudeIR

MAX_OBJECT_STARTS = 100  # each failed parse costs O(text length); an answer's object starts early
ANSWER_KEYS = frozenset(LowAltitudeIR.model_fields) | frozenset(LLMAnswer.model_fields)
# A bare IR (models often drop the envelope) is wrapped into one only when it has these: less is not an IR.
BARE_IR_KEYS = frozenset({"task_id", "intent", "tool_plan"})
_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_JSON_TYPE_NAMES = {list: "array", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}


class NoAnswerObject(ValueError):
    """The text holds no answer object. `error_type` is how the validator records it: `not_an_object` (the text is
    JSON, but not an object) or `invalid_json` (no object with an answer key could be parsed); `text` is the
    beginning of what was read."""

    def __init__(self, error_type: Literal["invalid_json", "not_an_object"], text: str, message: str):
        super().__init__(message)
        self.error_type = error_type
        self.text = text


def answer_object(raw_text: str) -> dict[str, Any]:
    """The answer object in a model's text (see the module's rule); NoAnswerObject when there is none."""
    text = _THINK_BLOCK.sub("", raw_text).strip()
    try:
        whole = json.loads(text)
    except json.JSONDecodeError as exc:
        first_error = exc
    else:
        if isinstance(whole, dict):
            return whole
        kind = _JSON_TYPE_NAMES.get(type(whole), type(whole).__name__)
        raise NoAnswerObject("not_an_object", kind, f"the answer is a JSON {kind}, not an object")
    embedded = _embedded_answer(text)
    if embedded is not None:
        return embedded
    where = f"line {first_error.lineno} column {first_error.colno}: {first_error.msg}"
    raise NoAnswerObject("invalid_json", raw_text[:200], f"no JSON object could be parsed ({where})")


def _embedded_answer(text: str) -> dict[str, Any] | None:
    """The first JSON object in the text that has a top-level answer key."""
    decoder = json.JSONDecoder()
    starts = [i for i, ch in enumerate(text) if ch == "{"][:MAX_OBJECT_STARTS]
    for start in starts:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict) and value.keys() & ANSWER_KEYS:
            return value
    return None


def extract_answer(raw_text: str) -> dict[str, Any] | None:
    """The answer envelope `{low_altitude_ir, rationale_summary, uncertainty}` of a model's text: its answer object,
    a bare IR wrapped into an envelope; None when the object is neither (the validator records why)."""
    try:
        found = answer_object(raw_text)
    except NoAnswerObject:
        return None
    if "low_altitude_ir" in found:
        return found
    if BARE_IR_KEYS <= found.keys():
        return {"low_altitude_ir": found}
    return None
