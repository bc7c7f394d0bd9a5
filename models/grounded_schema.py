"""The world-grounded answer schema: LLMAnswer's JSON Schema with every world id an enum of what exists now.

One schema serves every backend that can constrain its output to a JSON Schema: the embedded local model
decodes under it (llguidance), OpenAI-compatible servers get it as `response_format` (vLLM turns it into guided
decoding). Entity, zone, region and UAV ids, tool names, rule ids and LTL atoms can then only be ones the world
and the registry have, so a hallucinated id is impossible by construction; which valid id the model picks is
still its own choice, driven by the request and by the repair prompt's counterexample.

Tool arguments are the registry's own argument schemas, grounded the same way, without `required` (an IR's
call may be partial: execution fills the rest) and without run-time data (trajectories, events, results), which
only earlier steps produce. Every list and free string is bounded so that a constrained answer always closes
within a finite token budget.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ir.model import llm_answer_schema
from ir.validation import ARG_KINDS  # tool argument -> kind of world id it names (one source)
from tools.registry import ToolRegistry
from tools.rules import RULE_IDS
from tools.world import UAVStatus, World

SCHEMA_NAME = "LLMAnswer"
MAX_TOOL_STEPS = 12
MAX_TEXT_CHARS = 300
MAX_NOTE_CHARS = 120
MAX_NOTES = 5
MAX_STL_SPECS = 8
MAX_DEADLINE_SEC = 86_400.0
MAX_SEPARATION_M = 1_000.0
MAX_PAYLOAD_KG = 1_000.0
MAX_CORRIDOR_CAPACITY = 100
MAX_NUMBER = 1_000_000  # seconds, metres, kilograms: far beyond any city task
MAX_SUBTASKS = 8  # a fleet mission's shares: beyond what an exact team search is asked to assign
MAX_SUBTASK_ID_CHARS = 40
_SPECIAL_ATOMS = ("at_goal", "at_origin", "airborne")
_UNARY = r"(?:(?:G|F|X) |!)*"
_BINARY = r" (?:&|\||->|U) "


@dataclass(frozen=True)
class WorldIds:
    """The ids a grounded answer may name, by kind (the kinds of ir/validation.py's grounding stage)."""

    entities: tuple[str, ...]
    zones: tuple[str, ...]
    idle_uavs: tuple[str, ...]
    uavs: tuple[str, ...]
    regions: tuple[str, ...]
    sensors: tuple[str, ...] = ()  # what the fleet carries: a sub-task can only require one of these

    @classmethod
    def of(cls, world: World) -> WorldIds:
        return cls(
            entities=tuple(world.entity_index),
            zones=tuple(world.zone_index),
            idle_uavs=tuple(u.id for u in world.fleet if u.status is UAVStatus.idle),
            uavs=tuple(world.uav_index),
            regions=tuple(world.region_index),
            sensors=tuple(dict.fromkeys(sensor for u in world.fleet for sensor in u.sensors)),
        )

    def of_kind(self, kind: str) -> tuple[str, ...]:
        """Only idle UAVs can take a task; a route may start at any UAV ('place')."""
        return {
            "entity": self.entities,
            "place": self.entities + self.uavs,
            "uav": self.idle_uavs,
            "zone": self.zones,
            "region": self.regions,
        }[kind]

    def ltl_atoms(self) -> tuple[str, ...]:
        return (*(f"in_{z}" for z in self.zones), *(f"at_{e}" for e in self.entities), *_SPECIAL_ATOMS)


def ltl_pattern(atoms: tuple[str, ...]) -> str:
    """Formulas over the world's atoms only: unary G/F/X/!, binary &, |, ->, U, one level of parentheses.

    Regular on purpose (a JSON Schema pattern): every match parses as Spot LTL.
    """
    atom = "(?:" + "|".join(re.escape(a) for a in sorted(atoms, key=len, reverse=True)) + ")"
    chain = f"{_UNARY}{atom}(?:{_BINARY}{_UNARY}{atom})*"
    operand = f"(?:{atom}|\\({chain}\\))"
    return f"^{_UNARY}{operand}(?:{_BINARY}{_UNARY}{operand})*$"


def string_enum(values: tuple[str, ...] | list[str]) -> dict[str, Any]:
    return {"type": "string", "enum": list(values)}


def bounded_list(items: dict[str, Any], max_items: int) -> dict[str, Any]:
    return {"type": "array", "items": items, "maxItems": max_items}


def id_list(ids: tuple[str, ...]) -> dict[str, Any]:
    """A list of distinct-looking ids; with no id to offer, only the empty list."""
    if not ids:
        return {"type": "array", "maxItems": 0}
    return bounded_list(string_enum(ids), len(ids))


def nullable_id(ids: tuple[str, ...]) -> dict[str, Any]:
    return {"anyOf": [string_enum(ids), {"type": "null"}]} if ids else {"type": "null"}


# --- tool arguments -----------------------------------------------------------------------------------------
_SCALAR_TYPES = frozenset({"string", "number", "integer", "boolean", "null"})


def _writable(node: dict[str, Any]) -> bool:
    """Scalars, enums, lists of scalars and fixed tuples of numbers (a bbox): what a plan may spell out.

    Lists of lists (trajectories), objects and references (events, tool results) are run-time data.
    """
    if "anyOf" in node:
        return all(_writable(option) for option in node["anyOf"])
    if "enum" in node or "const" in node:
        return True
    kind = node.get("type")
    if kind == "array":
        items = [*node.get("prefixItems", []), *([node["items"]] if "items" in node else [])]
        return all(item.get("type") in _SCALAR_TYPES or "enum" in item for item in items)
    return kind in _SCALAR_TYPES


def _grounded_value(node: dict[str, Any], ids: tuple[str, ...]) -> dict[str, Any] | None:
    """The node with its free strings replaced by the id enum; None when nothing valid is left to write."""
    if "anyOf" in node:
        options = [g for option in node["anyOf"] if (g := _grounded_value(option, ids)) is not None]
        if not options:
            return None
        return {**{k: v for k, v in node.items() if k != "anyOf"}, "anyOf": options}
    if node.get("type") == "string" and "enum" not in node:
        return {**node, "enum": list(ids)} if ids else None
    if node.get("type") == "array" and node.get("items", {}).get("type") == "string":
        grounded = id_list(ids)
        return {**{k: v for k, v in node.items() if k != "items"}, **grounded}
    return node


def _bounded_free_value(node: dict[str, Any]) -> dict[str, Any]:
    """Free strings, lists and numbers get an upper bound, so that every answer has a finite length."""
    if node.get("type") == "string" and "enum" not in node:
        return {**node, "maxLength": MAX_TEXT_CHARS}
    if node.get("type") in ("number", "integer") and "maximum" not in node:
        return {**node, "maximum": MAX_NUMBER}
    if node.get("type") == "array" and "prefixItems" in node:
        return {**node, "prefixItems": [_bounded_free_value(item) for item in node["prefixItems"]]}
    if node.get("type") == "array" and "items" in node and "maxItems" not in node:
        return {**node, "items": _bounded_free_value(node["items"]), "maxItems": MAX_STL_SPECS}
    if "anyOf" in node:
        return {**node, "anyOf": [_bounded_free_value(option) for option in node["anyOf"]]}
    return node


def grounded_tool_args(args_schema: dict[str, Any], ids: WorldIds, atoms_pattern: str) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for name, node in args_schema.get("properties", {}).items():
        if not _writable(node):
            continue
        if name in ARG_KINDS:
            grounded = _grounded_value(node, ids.of_kind(ARG_KINDS[name]))
        elif name == "ltl":
            grounded = {**node, "items": {"type": "string", "pattern": atoms_pattern}, "maxItems": len(ids.zones) + 8}
        else:
            grounded = _bounded_free_value(node)
        if grounded is not None:
            properties[name] = grounded
    return {"type": "object", "additionalProperties": False, "properties": properties}


def step_id(position: int) -> str:
    return f"s{position + 1}"


def tool_plan_schema(registry: ToolRegistry, ids: WorldIds, atoms_pattern: str) -> tuple[dict[str, Any], dict]:
    """(the tool_plan schema, the argument schemas it references, by name).

    Step k has the fixed id s<k> and may depend only on earlier steps: ids are unique and every dependency
    exists, which JSON Schema could not say about free ids. Each step is one of the registry's tools.
    """
    args_defs = {f"Args_{t['name']}": grounded_tool_args(t["args"], ids, atoms_pattern) for t in registry.describe()}

    def step(position: int, tool: str) -> dict[str, Any]:
        earlier = tuple(step_id(i) for i in range(position))
        return {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "id": {"const": step_id(position)},
                "tool": {"const": tool},
                "args": {"$ref": f"#/$defs/Args_{tool}"},
                "depends_on": id_list(earlier),
            },
            "required": ["id", "tool", "args"],
        }

    positions = [{"anyOf": [step(k, t["name"]) for t in registry.describe()]} for k in range(MAX_TOOL_STEPS)]
    plan = {"type": "array", "prefixItems": positions, "items": False, "minItems": 1, "maxItems": MAX_TOOL_STEPS}
    return plan, args_defs


# --- the answer ---------------------------------------------------------------------------------------------
def _ground_entities(refs: dict[str, Any], ids: WorldIds) -> None:
    props = refs["properties"]
    for name in ("origin", "destination"):
        props[name] = {**_described(props[name]), **nullable_id(ids.entities)}
    for name, kind_ids in (
        ("waypoints", ids.entities),
        ("handoff_points", ids.entities),
        ("candidate_uavs", ids.idle_uavs),
        ("avoid_zones", ids.zones),
        ("sensitive_zones", ids.zones),
    ):
        props[name] = {**_described(props[name]), **id_list(kind_ids)}


def _described(node: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in node.items() if k in ("title", "description", "default")}


def _bound_constraints(constraints: dict[str, Any], world: World) -> None:
    props = constraints["properties"]
    ceiling = world.grid.ceiling_m
    props["deadline_sec"]["anyOf"] = [
        {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_DEADLINE_SEC},
        {"type": "null"},
    ]
    # min < max cannot be said across two fields; a band that straddles the middle flight layer always has it.
    middle = (world.grid.layer_base_m + ceiling) / 2
    props["altitude_min_m"]["exclusiveMaximum"] = middle
    props["altitude_max_m"].update(minimum=middle, maximum=ceiling)
    props["min_separation_m"]["maximum"] = MAX_SEPARATION_M
    props["battery_reserve_ratio"].update(minimum=0, maximum=1)
    props["corridor_capacity_required"]["maximum"] = MAX_CORRIDOR_CAPACITY
    props["payload_kg"]["maximum"] = MAX_PAYLOAD_KG


def _ground_team(defs: dict[str, Any], ids: WorldIds) -> None:
    """A fleet mission's sub-tasks name only places, idle UAVs and sensors the world has; ids, `after` and the
    number of sub-tasks are bounded so that a constrained answer closes. A world with no place: no team to write."""
    if not ids.entities:
        defs["LowAltitudeIR"]["properties"]["team"] = {
            **_described(defs["LowAltitudeIR"]["properties"]["team"]),
            "type": "null",
        }
        for name in ("TeamPlan", "SubTask"):
            defs.pop(name)
        return
    sub = defs["SubTask"]["properties"]
    for name in ("origin", "destination"):
        sub[name] = {**_described(sub[name]), **string_enum(ids.entities)}
    for name, kind_ids in (("waypoints", ids.entities), ("required_sensors", ids.sensors), ("uavs", ids.idle_uavs)):
        sub[name] = {**_described(sub[name]), **id_list(kind_ids)}
    sub["id"] = {**_described(sub["id"]), "type": "string", "minLength": 1, "maxLength": MAX_SUBTASK_ID_CHARS}
    sub["after"] = {
        **_described(sub["after"]),
        **bounded_list({"type": "string", "maxLength": MAX_SUBTASK_ID_CHARS}, MAX_SUBTASKS - 1),
    }
    sub["payload_kg"] = {**sub["payload_kg"], "maximum": MAX_PAYLOAD_KG}
    sub["deadline_sec"] = {
        **_described(sub["deadline_sec"]),
        "anyOf": [{"type": "number", "exclusiveMinimum": 0, "maximum": MAX_DEADLINE_SEC}, {"type": "null"}],
    }
    counts = [{"type": "integer", "minimum": 1, "maximum": len(ids.idle_uavs)}] if ids.idle_uavs else []
    sub["uav_count"] = {**_described(sub["uav_count"]), "anyOf": [*counts, {"type": "null"}]}
    item = {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_PAYLOAD_KG}
    sub["item_kg"] = {**_described(sub["item_kg"]), "anyOf": [item, {"type": "null"}]}
    defs["TeamPlan"]["properties"]["subtasks"]["maxItems"] = MAX_SUBTASKS


def _ground_specs(specs: dict[str, Any], atoms_pattern: str, n_zones: int) -> None:
    props = specs["properties"]
    props["ltl"] = {
        **_described(props["ltl"]),
        **bounded_list({"type": "string", "pattern": atoms_pattern}, n_zones + 8),
    }
    props["stl"] = {
        **_described(props["stl"]),
        **bounded_list({"type": "string", "maxLength": MAX_TEXT_CHARS}, MAX_STL_SPECS),
    }
    props["program_rules"] = {**_described(props["program_rules"]), **id_list(RULE_IDS)}


def grounded_answer_schema(world: World, registry: ToolRegistry, task_id: str | None = None) -> dict[str, Any]:
    """LLMAnswer's JSON Schema grounded in this world and registry (and pinned to the task id when given)."""
    ids = WorldIds.of(world)
    atoms_pattern = ltl_pattern(ids.ltl_atoms())
    schema = llm_answer_schema()
    defs = schema["$defs"]
    _ground_entities(defs["EntityRefs"], ids)
    _bound_constraints(defs["OperationConstraints"], world)
    _ground_specs(defs["VerificationSpecs"], atoms_pattern, len(ids.zones))
    _ground_team(defs, ids)
    plan, args_defs = tool_plan_schema(registry, ids, atoms_pattern)
    defs.pop("ToolCallSpec")
    defs.update(args_defs)
    ir = defs["LowAltitudeIR"]["properties"]
    ir["tool_plan"] = {**_described(ir["tool_plan"]), **plan}
    if task_id is not None:
        ir["task_id"] = {"const": task_id}
    explanation = defs["ExplanationPlan"]["properties"]
    explanation["cite_tools"] = {**_described(explanation["cite_tools"]), **id_list(tuple(registry.names()))}
    explanation["cite_rules"] = {**_described(explanation["cite_rules"]), **id_list(RULE_IDS)}
    missing = defs["Uncertainty"]["properties"]["missing_information"]
    missing.update(items={"type": "string", "maxLength": MAX_NOTE_CHARS}, maxItems=MAX_NOTES)
    schema["properties"]["rationale_summary"]["maxLength"] = MAX_TEXT_CHARS
    schema["title"] = SCHEMA_NAME
    return schema
