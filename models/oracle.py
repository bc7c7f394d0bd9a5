"""`oracle`: answers with a benchmark sample's gold IR, an upper bound that exercises the whole pipeline.

It does not learn: a repair round gets the gold again.
"""

from __future__ import annotations

import json
import time
from typing import Any

from pydantic import ValidationError

from ir.model import LLMAnswer, LowAltitudeIR
from models.base import GenerationRequest, GenerationResult, IRGenerator
from models.factory import Gold, ModelProvider, ModelSettings
from models.options import ModelSpec
from tools.registry import ToolRegistry

ORACLE_VERSION = "oracle-v1"


def _gold_envelope(sample_gold: dict[str, Any] | LowAltitudeIR | LLMAnswer) -> dict[str, Any]:
    """The gold as an answer envelope; accepts a bare IR or an envelope, as a model or a dict."""
    if isinstance(sample_gold, LowAltitudeIR):
        sample_gold = {"low_altitude_ir": sample_gold}
    elif isinstance(sample_gold, LLMAnswer):
        sample_gold = sample_gold.model_dump(mode="json")
    elif "low_altitude_ir" not in sample_gold:
        sample_gold = {"low_altitude_ir": sample_gold}
    try:
        answer = LLMAnswer.model_validate(sample_gold)
    except ValidationError as exc:
        raise ValueError(f"the oracle's gold IR is not a valid LLMAnswer: {exc.errors()[0]['msg']}") from None
    if not answer.rationale_summary:
        answer.rationale_summary = "oracle: the benchmark's gold IR"
    return answer.model_dump(mode="json")


class OracleGenerator(IRGenerator):
    model = "oracle"

    def __init__(self, sample_gold: dict[str, Any] | LowAltitudeIR | LLMAnswer):
        self._answer = _gold_envelope(sample_gold)
        self._raw_text = json.dumps(self._answer, ensure_ascii=False)

    def generate(self, request: GenerationRequest) -> GenerationResult:
        started = time.perf_counter()
        answer = json.loads(self._raw_text)  # a fresh copy: callers may mutate what they get
        return GenerationResult(
            raw_text=self._raw_text,
            answer=answer,
            latency_sec=time.perf_counter() - started,
            model=self.model,
            prompt_version=ORACLE_VERSION,
        )


class OracleProvider(ModelProvider):
    """`oracle`: writes the sample's gold IR; it has no chat model (a baseline's answer is no IR)."""

    def ir_writer(
        self, spec: ModelSpec, settings: ModelSettings, *, registry: ToolRegistry | None, sample_gold: Gold | None
    ) -> OracleGenerator:
        if sample_gold is None:
            raise ValueError("the oracle backend needs the sample's gold IR (sample_gold)")
        return OracleGenerator(sample_gold)
