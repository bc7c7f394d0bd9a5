"""The method registry is the one list of methods: every ablation it names is a part the graph can drop, every
part the graph can drop is one method with a line in the ablation table, and names resolve to their classes."""

from __future__ import annotations

import pytest

from evaluation.methods import (
    ABLATION_PREFIX,
    ABLATION_TESTS,
    BASELINES,
    FULL,
    METHOD_NAMES,
    PEERS,
    UnknownMethodError,
    get_method,
    parse_methods,
)
from nodes.context import ABLATABLE


def test_every_ablatable_part_is_one_method_with_what_removing_it_tests():
    ablations = {name for name in METHOD_NAMES if name.startswith(ABLATION_PREFIX)}
    assert ablations == {ABLATION_PREFIX + part for part in ABLATABLE}
    assert set(ABLATION_TESTS) == {FULL, *ablations}


def test_all_lists_baselines_then_peers_then_the_agent_and_its_ablations():
    names = parse_methods("all")
    assert names == [*BASELINES, *PEERS, FULL, *(ABLATION_PREFIX + part for part in ABLATABLE)]
    assert not set(BASELINES) & set(PEERS)


@pytest.mark.parametrize("name", [*BASELINES, *PEERS, FULL, ABLATION_PREFIX + "repair"])
def test_a_registered_name_resolves_to_a_method_of_that_name(name):
    assert get_method(name).name == name


def test_an_unknown_method_is_one_error_naming_the_choices():
    with pytest.raises(UnknownMethodError, match="unknown method cloudbrain_no_gravity; choose from direct_llm"):
        parse_methods("react,cloudbrain_no_gravity")
