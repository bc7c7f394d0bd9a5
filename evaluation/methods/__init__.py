"""The methods CloudBrain-Bench compares (baselines, peer systems, the agent and its ablations), registered by name;
one module each; the one list of methods the runner, the CLI and the report use.

`get_method(name)` imports only the module it needs, so listing methods never loads a model runtime.
"""

from __future__ import annotations

from importlib import import_module

from evaluation.methods.base import Method
from nodes.context import ABLATABLE

# name -> "module:Class"; the CloudBrain variants are one class with an ablation set.
BASELINES: dict[str, str] = {
    "direct_llm": "evaluation.methods.direct_llm:DirectLLM",
    "json_only": "evaluation.methods.json_only:JsonOnly",
    "react": "evaluation.methods.react:ReAct",
    "tool_use_only": "evaluation.methods.tool_use_only:ToolUseOnly",
    "llm_p": "evaluation.methods.llm_p:LLMPlusP",
}
# Reimplementations of the published agent designs CloudBrain is compared with (Tree-Planner, AutoPlan, EMOS).
PEERS: dict[str, str] = {
    "tree_planner": "evaluation.methods.tree_planner:TreePlanner",
    "autoplan": "evaluation.methods.autoplan:AutoPlan",
    "emos": "evaluation.methods.emos:Emos",
    "emos_no_resume": "evaluation.methods.emos:EmosNoResume",
}
FULL = "cloudbrain_full"
ABLATION_PREFIX = "cloudbrain_no_"
# What removing each ablatable part tests (the ablation table's last column), one entry per part of ABLATABLE.
ABLATION_TESTS: dict[str, str] = {
    FULL: "the complete method",
    **{
        ABLATION_PREFIX + part: test
        for part, test in {
            "ir": "the structured interface (typed IR)",
            "verifier": "formal verification",
            "simulator": "stress-simulation feedback",
            "repair": "counterexample repair",
            "memory": "retrieval of past failure cases",
            "rag": "rule and map context",
            "fidelity": "the intent-fidelity gate (stated constraints, grounded places)",
        }.items()
    },
}
METHOD_NAMES: tuple[str, ...] = (*BASELINES, *PEERS, FULL, *(ABLATION_PREFIX + part for part in ABLATABLE))


class UnknownMethodError(ValueError):
    pass


def parse_methods(value: str) -> list[str]:
    """A comma-separated list of method names, or 'all'; unknown names are one clear error."""
    names = list(METHOD_NAMES) if value.strip() == "all" else [n.strip() for n in value.split(",") if n.strip()]
    unknown = [n for n in names if n not in METHOD_NAMES]
    if unknown or not names:
        raise UnknownMethodError(
            f"unknown method {', '.join(unknown) or repr(value)}; choose from {', '.join(METHOD_NAMES)} or all"
        )
    return list(dict.fromkeys(names))


def get_method(name: str) -> Method:
    parse_methods(name)
    if name == FULL or name.startswith(ABLATION_PREFIX):
        from evaluation.methods.cloudbrain import CloudBrain

        return CloudBrain(name, frozenset({name.removeprefix(ABLATION_PREFIX)}) if name != FULL else frozenset())
    module, _, attr = {**BASELINES, **PEERS}[name].partition(":")
    method_class: type[Method] = getattr(import_module(module), attr)
    return method_class()
