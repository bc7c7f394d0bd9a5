"""RunSettings (graph/settings.py): every setting of a run once, the Context built from it, what is stored and read
back; and the edit guards every front end shares (graph/session.py)."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import ValidationError

from cli.agent import AGENT_OPTIONS, settings_from_args
from cli.main import build_parser
from graph.session import EditError, parse_edit, state_update
from graph.settings import RunSettings
from nodes.context import Context
from nodes.state import override


def test_every_context_setting_is_a_run_setting_with_the_same_default():
    runtime_only = {"memory"}  # an open client, made from memory_path / memory_url
    fields = {spec.name for spec in dataclasses.fields(Context)}
    assert fields - runtime_only <= set(RunSettings.model_fields)
    assert RunSettings(without={"memory"}).to_context() == Context(without=frozenset({"memory"}))


def test_every_run_setting_is_an_agent_option_with_the_settings_default(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert set(AGENT_OPTIONS.values()) == set(RunSettings.model_fields) - {"interactive"}  # interactive: `step`
    args = build_parser("run").parse_args(["run", "--world", "w.json", "--instruction", "x"])
    assert settings_from_args(args) == RunSettings()
    assert settings_from_args(args, interactive=True) == RunSettings(interactive=True)


def test_stored_is_the_non_secret_part_and_reads_back():
    settings = RunSettings(model="rules", api_key="sk-secret", without="repair,memory", memory_path="/m", sim_seed=4)
    stored = settings.stored("examples/downtown.json")
    assert "sk-secret" not in str(stored) and "api_key" not in stored and "memory_path" not in stored
    assert stored["without"] == ["memory", "repair"] and stored["world_path"] == "examples/downtown.json"
    assert RunSettings.from_stored(stored, api_key="sk-secret", memory_path="/m") == settings


def test_a_run_stored_before_stress_scenarios_flew_one_scenario_and_new_runs_fly_three():
    assert RunSettings().stress_scenarios == 3
    older = {"model": "rules", "without": ["memory"], "max_repairs": 2, "world_path": "w.json"}
    assert RunSettings.from_stored(older).stress_scenarios == 1
    assert RunSettings.from_stored({**older, "stress_scenarios": 3}).stress_scenarios == 3
    assert RunSettings.from_stored({}) == RunSettings(stress_scenarios=1)  # every other setting: today's default
    # older versions stored a cap of 0 tokens (no model can answer under it): no cap, so the run can be replayed
    assert RunSettings.from_stored({**older, "max_new_tokens": 0}).max_new_tokens is None


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"model": "nosuch"}, "model"),
        ({"max_repairs": -1}, "max_repairs"),
        ({"stress_scenarios": 0}, "stress_scenarios"),
        ({"without": "repair,teleport"}, "without"),
        ({"ir_format": "yaml"}, "ir_format"),
        ({"stress_level": "extreme"}, "stress_level"),
        ({"temperature": 0.2}, "temperature"),
    ],
)
def test_a_bad_setting_is_refused_naming_it(bad, field):
    with pytest.raises(ValidationError) as caught:
        RunSettings(**bad)
    assert caught.value.errors()[0]["loc"] == (field,)


def test_edits_keep_to_the_states_keys_and_replace_lists_whole():
    values = {"tool_results": [{"tool": "plan_route"}], "ir": {"entities": {"avoid_zones": []}}}
    update = state_update(values, [("tool_results", "[]"), ("ir.entities.avoid_zones", '["nfz_1"]')])
    assert update["tool_results"] == override([])
    assert update["ir"] == {"entities": {"avoid_zones": ["nfz_1"]}} and values["ir"]["entities"]["avoid_zones"] == []
    for edit, reason in [
        (("attempts", "[]"), "the rounds' record"),
        (("run_config.base_url", '"http://elsewhere"'), "the run's settings"),
        (("nonsense", "1"), "not a field of the state"),
        (("ir.constraints", "[1, NaN]"), "NaN is not a number"),
        (("ir.constraints.altitude_max_m", "1e999"), "1e999 is not a number"),
        (("ir.constraints.altitude_max_m", "inf"), "inf is not a number"),  # bare: pydantic would read it as inf
        (("ir.constraints.altitude_max_m", '"-Infinity"'), "-Infinity is not a number"),
        (("candidate.uav_id.x", "1"), "candidate is not an object"),
    ]:
        with pytest.raises(EditError, match=reason):
            state_update({**values, "candidate": None}, [edit])


@pytest.mark.parametrize("text", ["no equals sign", "=1", "ir..x=1", " "])
def test_an_edit_that_is_not_path_value_is_refused(text):
    with pytest.raises(EditError, match="is not PATH=VALUE"):
        parse_edit(text)
